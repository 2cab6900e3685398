// Package safefile is haloforge's one way to open and read a file it did
// not create in this run (a pins file, a bundle, a log, a plan, a model's
// config, a file of the state dir): a FIFO, a device or a socket where a
// file was expected is refused at once instead of hanging the open or
// filling memory, and a file is read to a bound named in the error.
//
// The rule for links: a file the user names on the command line may be a
// symbolic link (Follow), as for any program; a file haloforge finds in
// its own state dir is opened without following one (NoFollow), so that
// nothing there redirects a read.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/haloforge/haloforge/internal/text"
)

// Links says whether a final symbolic link in a path is followed.
type Links bool

const (
	// NoFollow refuses a path whose last element is a symbolic link: the
	// files of haloforge's own state dir.
	NoFollow Links = false
	// Follow opens what a link points at: a path the user named.
	Follow Links = true
)

// NotRegularError is a path that is not a regular file.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, Kind(e.Mode))
}

// TooLargeError is a file larger than the bound it was read with.
type TooLargeError struct {
	Path  string
	Limit int64
	Size  int64 // the size the file said it had; -1 when it only grew past Limit while read
}

func (e *TooLargeError) Error() string {
	if e.Size > e.Limit && text.Bytes(e.Size) != text.Bytes(e.Limit) {
		return fmt.Sprintf("%s is %s, over the %s limit", e.Path, text.Bytes(e.Size), text.Bytes(e.Limit))
	}
	return fmt.Sprintf("%s is over the %s limit", e.Path, text.Bytes(e.Limit))
}

// ReadRegular reads the regular file at path, all of it, when it holds at
// most limit bytes. The open never waits (OpenRegular); a file that is not
// regular is a *NotRegularError, a larger one a *TooLargeError, both
// naming path. A file whose size says 0 (procfs, sysfs) is read to the
// bound all the same.
func ReadRegular(path string, limit int64, links Links) ([]byte, error) {
	f, st, err := OpenRegular(path, links)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, path, st.Size(), limit)
}

// ReadOpen reads f, a regular file already open and checked (CheckRegular)
// whose size says size, all of it when it holds at most limit bytes; a
// larger one is a *TooLargeError naming name.
func ReadOpen(f *os.File, name string, size, limit int64) ([]byte, error) {
	return readAll(f, name, size, limit)
}

func readAll(f *os.File, path string, size, limit int64) ([]byte, error) {
	if size > limit {
		return nil, &TooLargeError{Path: path, Limit: limit, Size: size}
	}
	// One byte more than the bound: a file that grows while it is read, or
	// says less than it holds, is caught too.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: path, Limit: limit, Size: -1}
	}
	return data, nil
}

// OpenRegular opens path for reading without waiting on a FIFO (O_NONBLOCK)
// and without becoming its controlling terminal, then checks what it is on
// the open descriptor, so nothing can be swapped in between. Only a regular
// file is returned; anything else is a *NotRegularError. With NoFollow a
// final symbolic link is refused as one.
func OpenRegular(path string, links Links) (*os.File, fs.FileInfo, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY
	if links == NoFollow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		// O_NOFOLLOW says ELOOP, "too many levels of symbolic links": say
		// what it is instead.
		if links == NoFollow && errors.Is(err, syscall.ELOOP) {
			if st, lerr := os.Lstat(path); lerr == nil && st.Mode()&fs.ModeSymlink != 0 {
				return nil, st, &NotRegularError{Path: path, Mode: st.Mode()}
			}
		}
		return nil, nil, err
	}
	return CheckRegular(f, path)
}

// OpenDir opens a directory to list it without waiting on a FIFO or a
// device that has its name (O_DIRECTORY fails on them at once).
func OpenDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
}

// OpenRegularIn is OpenRegular for a name inside root: links are followed
// only where they stay inside it.
func OpenRegularIn(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	return CheckRegular(f, name)
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

// Cause is err without the operation and path an *fs.PathError adds, for a
// message that names the path itself: "state dir X: permission denied",
// not "state dir X: mkdir X: permission denied". Other errors are returned
// as they are.
func Cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
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
