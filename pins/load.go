package pins

import (
	"errors"
	"fmt"
	"os"

	"github.com/haloforge/haloforge/internal/safefile"
)

// MaxFileSize bounds a pins file. The shipped versions.env is about 12 KiB;
// anything near a mebibyte is not a pins file, and reading a device or a
// growing file without a bound would fill memory.
const MaxFileSize = 1 << 20

// Load reads and parses a pins file (ReadFile, then Parse).
func Load(path string) (*File, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// ReadFile reads a pins file's bytes. Only a regular file (or a symlink to
// one) is read, and at most MaxFileSize bytes: a device such as /dev/zero,
// a FIFO, a socket or a directory is refused at once, without blocking and
// without reading from it.
func ReadFile(path string) ([]byte, error) {
	// Never waits on a FIFO, never reads past the bound.
	data, err := safefile.ReadRegular(path, MaxFileSize, safefile.Follow)
	var nr *safefile.NotRegularError
	var tl *safefile.TooLargeError
	switch {
	case errors.As(err, &nr):
		return nil, fmt.Errorf("%s%s is %s, not a regular file: a pins file must be a regular file",
			path, linkTarget(path), safefile.Kind(nr.Mode))
	case errors.As(err, &tl):
		return nil, fmt.Errorf("%w for a pins file", err)
	case err != nil:
		return nil, err
	}
	return data, nil
}

// linkTarget is " (→ target)" when path is a symlink, so the message says
// what was really opened.
func linkTarget(path string) string {
	if t, err := os.Readlink(path); err == nil {
		return " (→ " + t + ")"
	}
	return ""
}
