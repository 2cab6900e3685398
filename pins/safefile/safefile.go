// Package safefile opens the files haloforge reads from its users (pins
// files, bundles, logs) so that a FIFO, a device or a socket where a file
// was expected is refused at once instead of hanging or filling memory.
// pins, detect and diagnose share it, so the three say the same thing.
package safefile

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// NotRegularError is a path that is not a regular file.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, Kind(e.Mode))
}

// OpenRegular opens path for reading without waiting on a FIFO (O_NONBLOCK)
// and without becoming its controlling terminal, then checks what it is on
// the open descriptor, so nothing can be swapped in between. Only a regular
// file is returned; anything else is a *NotRegularError. With follow false a
// final symlink is refused by the kernel (O_NOFOLLOW: ELOOP).
func OpenRegular(path string, follow bool) (*os.File, fs.FileInfo, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY
	if !follow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, nil, err
	}
	return CheckRegular(f, path)
}

// CheckRegular returns f when it is a regular file; otherwise it closes f
// and returns a *NotRegularError naming name.
func CheckRegular(f *os.File, name string) (*os.File, fs.FileInfo, error) {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, st, &NotRegularError{Path: name, Mode: st.Mode()}
	}
	return f, st, nil
}

// Kind names what a non-regular file is, for a message: "a FIFO (named
// pipe)", "a character device", "a directory", …
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsRegular():
		return "a regular file"
	}
	return "a special file"
}
