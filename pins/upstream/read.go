package upstream

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/haloforge/haloforge/pins/safefile"
)

// readRegular reads the regular file at path, to max bytes: never waiting
// on a FIFO, never a device. follow false is for haloforge's own files (the
// state dir), where a final symbolic link is refused, named as one; true is
// for a file the user keeps (a credentials file may be a link).
func readRegular(path string, max int64, follow bool) ([]byte, error) {
	f, st, err := safefile.OpenRegular(path, follow)
	if !follow && errors.Is(err, syscall.ELOOP) {
		if lst, lerr := os.Lstat(path); lerr == nil && lst.Mode()&fs.ModeSymlink != 0 {
			return nil, &safefile.NotRegularError{Path: path, Mode: lst.Mode()}
		}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes, over the %d KiB limit", path, st.Size(), max>>10)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: over the %d KiB limit", path, max>>10)
	}
	return data, nil
}
