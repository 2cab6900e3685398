package pins

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/haloforge/haloforge/internal/safefile"
)

// MaxFileSize bounds a pins file. The shipped versions.env is about 12 KiB;
// anything near a mebibyte is not a pins file, and reading a device or a
// growing file without a bound would fill memory.
const MaxFileSize = 1 << 20

// Load reads and parses a pins file. Only a regular file (or a symlink to
// one) is read, and at most MaxFileSize bytes: a device such as /dev/zero,
// a FIFO, a socket or a directory is refused at once, without blocking and
// without reading from it.
func Load(path string) (*File, error) {
	data, err := readRegular(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// readRegular opens path without blocking (a FIFO with no writer would
// otherwise hang in open), checks what it really is on the open descriptor,
// so that nothing can be swapped in between, and reads it with a bound.
func readRegular(path string) ([]byte, error) {
	f, st, err := safefile.OpenRegular(path, true)
	if nr := (*safefile.NotRegularError)(nil); errors.As(err, &nr) {
		return nil, fmt.Errorf("%s%s is %s, not a regular file: a pins file must be a regular file",
			path, linkTarget(path), safefile.Kind(nr.Mode))
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > MaxFileSize {
		return nil, sizeErr(path, st.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > MaxFileSize { // it grew while we read it
		return nil, sizeErr(path, int64(len(data)))
	}
	return data, nil
}

func sizeErr(path string, n int64) error {
	return fmt.Errorf("%s: %d bytes, over the %d MiB limit for a pins file", path, n, MaxFileSize>>20)
}

// linkTarget is " (→ target)" when path is a symlink, so the message says
// what was really opened.
func linkTarget(path string) string {
	if t, err := os.Readlink(path); err == nil {
		return " (→ " + t + ")"
	}
	return ""
}
