package safefile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Tree is a directory haloforge owns: its state dir, or a backup directory
// in it. The directory itself may be reached through a link (a path the
// user named, a home on another disk), but nothing beneath it is: each
// element of a name in the tree is opened on its own, relative to the one
// before and with O_NOFOLLOW, so a link planted there (by a restored
// backup, a CI cache, a mistake) is refused with its path, never followed,
// and a FIFO or a device is refused without being waited on.
//
// Names are relative, slash-separated paths ("runs/ID/report.json"); ""
// is the tree itself.
type Tree string

// NotDirError is an element of a name in a Tree that is not a directory
// (a link, a FIFO, a file) where haloforge keeps one.
type NotDirError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotDirError) Error() string {
	return fmt.Sprintf("%s is %s, not a directory: haloforge follows no link in its own directories and replaces nothing it did not make (remove it if you did not put it there)", e.Path, Kind(e.Mode))
}

// Path is name as a path on this machine, for messages and for the
// programs haloforge hands it to.
func (t Tree) Path(name string) string { return filepath.Join(string(t), filepath.FromSlash(name)) }

// elements splits a name, refusing one that could leave the tree.
func (t Tree) elements(name string) ([]string, error) {
	if name == "" || name == "." {
		return nil, nil
	}
	clean := filepath.ToSlash(filepath.Clean(filepath.FromSlash(name)))
	if filepath.IsAbs(name) || clean == ".." || strings.HasPrefix(clean, "../") || clean != strings.TrimSuffix(name, "/") {
		return nil, fmt.Errorf("%s: not a name inside %s", name, string(t))
	}
	if clean == "." {
		return nil, nil
	}
	return strings.Split(clean, "/"), nil
}

// describe is the error for an element at dir/elem that could not be
// opened as what was wanted: what it is instead, when that is the reason.
func (t Tree) describe(dir int, elem, path string, err error, wantDir bool) error {
	var st unix.Stat_t
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ENXIO) || errors.Is(err, unix.EISDIR) {
		if unix.Fstatat(dir, elem, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			m := StatMode(st.Mode)
			if wantDir && !m.IsDir() {
				return &NotDirError{Path: path, Mode: m}
			}
			if !wantDir && !m.IsRegular() {
				return &NotRegularError{Path: path, Mode: m}
			}
		}
	}
	return &fs.PathError{Op: "open", Path: path, Err: err}
}

// StatMode is a stat(2) mode (st_mode) as an fs.FileMode.
func StatMode(mode uint32) fs.FileMode {
	m := fs.FileMode(mode & 0o777)
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	return m
}

// openDir opens the directory name in the tree, element by element,
// making the missing ones with perm when create is set.
func (t Tree) openDir(name string, create bool, perm fs.FileMode) (*os.File, error) {
	elems, err := t.elements(name)
	if err != nil {
		return nil, err
	}
	if create {
		if err := os.MkdirAll(string(t), perm); err != nil {
			return nil, err
		}
	}
	fd, err := unix.Open(string(t), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: string(t), Err: err}
	}
	path := string(t)
	for _, e := range elems {
		path = filepath.Join(path, e)
		next, err := unix.Openat(fd, e, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if merr := unix.Mkdirat(fd, e, uint32(perm.Perm())); merr != nil && !errors.Is(merr, unix.EEXIST) {
				unix.Close(fd)
				return nil, &fs.PathError{Op: "mkdir", Path: path, Err: merr}
			}
			next, err = unix.Openat(fd, e, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			derr := t.describe(fd, e, path, err, true)
			unix.Close(fd)
			return nil, derr
		}
		unix.Close(fd)
		fd = next
	}
	return os.NewFile(uintptr(fd), path), nil
}

// parent opens the directory of name and returns it with name's last
// element.
func (t Tree) parent(name string, create bool) (*os.File, string, error) {
	elems, err := t.elements(name)
	if err != nil {
		return nil, "", err
	}
	if len(elems) == 0 {
		return nil, "", fmt.Errorf("%s: a file name is needed", string(t))
	}
	d, err := t.openDir(strings.Join(elems[:len(elems)-1], "/"), create, 0o755)
	if err != nil {
		return nil, "", err
	}
	return d, elems[len(elems)-1], nil
}

// MkdirAll makes the directory name and the missing ones above it with
// perm, refusing any element that is not a directory.
func (t Tree) MkdirAll(name string, perm fs.FileMode) error {
	d, err := t.openDir(name, true, perm)
	if err != nil {
		return err
	}
	return d.Close()
}

// Mkdir makes the directory name, which must not exist (fs.ErrExist);
// the directories above it must.
func (t Tree) Mkdir(name string, perm fs.FileMode) error {
	d, base, err := t.parent(name, false)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := unix.Mkdirat(int(d.Fd()), base, uint32(perm.Perm())); err != nil {
		return &fs.PathError{Op: "mkdir", Path: t.Path(name), Err: err}
	}
	return nil
}

// OpenDir opens the directory name for reading (ReadDir).
func (t Tree) OpenDir(name string) (*os.File, error) { return t.openDir(name, false, 0) }

// ReadDir lists the directory name, sorted by name.
func (t Tree) ReadDir(name string) ([]fs.DirEntry, error) {
	d, err := t.OpenDir(name)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// Lstat is what name is, itself: a link is not followed.
func (t Tree) Lstat(name string) (fs.FileInfo, error) {
	d, base, err := t.parent(name, false)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var st unix.Stat_t
	if err := unix.Fstatat(int(d.Fd()), base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: t.Path(name), Err: err}
	}
	return treeInfo{base, st}, nil
}

// OpenFile opens the file name with flag (os.O_RDONLY, os.O_RDWR|os.O_CREATE,
// …), never through a link and never waiting on a FIFO; the directories
// above it must exist. Only a regular file is returned: anything else is
// a *NotRegularError naming its path. A file opened for writing must have
// no other name (a hard link planted to a file elsewhere): it is checked
// before O_TRUNC empties it.
func (t Tree) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	d, base, err := t.parent(name, false)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	trunc := flag&os.O_TRUNC != 0
	fd, err := unix.Openat(int(d.Fd()), base, flag&^os.O_TRUNC|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, t.describe(int(d.Fd()), base, t.Path(name), err, false)
	}
	// Back to blocking: O_NONBLOCK was for the open only (a FIFO).
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: t.Path(name), Err: err}
	}
	f, st, err := CheckRegular(os.NewFile(uintptr(fd), t.Path(name)), t.Path(name))
	if err != nil {
		return nil, err
	}
	if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Nlink > 1 {
			f.Close()
			return nil, fmt.Errorf("%s has %d names (a hard link): haloforge does not write to a file of its state dir that is also elsewhere; remove it if you did not put it there", t.Path(name), sys.Nlink)
		}
	}
	if trunc {
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// Open opens the regular file name for reading.
func (t Tree) Open(name string) (*os.File, fs.FileInfo, error) {
	f, err := t.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// ReadFile reads the regular file name, all of it when it holds at most
// limit bytes (a *TooLargeError otherwise).
func (t Tree) ReadFile(name string, limit int64) ([]byte, error) {
	f, st, err := t.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, t.Path(name), st.Size(), limit)
}

// WriteFile replaces the file name with data, atomically: a new file
// beside it, synced, renamed over it, so a reader sees the old or the new
// content, never a torn write, even after a crash. The directories above
// it are made when missing. Whatever was in its place (a link included)
// is replaced, never written through.
func (t Tree) WriteFile(name string, data []byte, perm fs.FileMode) error {
	d, base, err := t.parent(name, true)
	if err != nil {
		return err
	}
	defer d.Close()
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + base + ".tmp-" + hex.EncodeToString(rnd[:])
	dir := int(d.Fd())
	fd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return &fs.PathError{Op: "create", Path: t.Path(name), Err: err}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(filepath.Dir(t.Path(name)), tmp))
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Chmod(perm) // whatever the umask took away
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(dir, tmp, dir, base)
	}
	if werr != nil {
		_ = unix.Unlinkat(dir, tmp, 0)
		return &fs.PathError{Op: "write", Path: t.Path(name), Err: Cause(werr)}
	}
	_ = d.Sync() // the rename durable; best effort on odd file systems
	return nil
}

// Remove deletes the file (or empty directory) name; a link is removed,
// not followed. A name already gone is no error.
func (t Tree) Remove(name string) error {
	d, base, err := t.parent(name, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	err = unix.Unlinkat(int(d.Fd()), base, 0)
	if errors.Is(err, unix.EISDIR) {
		err = unix.Unlinkat(int(d.Fd()), base, unix.AT_REMOVEDIR)
	}
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove", Path: t.Path(name), Err: err}
	}
	return nil
}

// Rename moves oldname to newname in the tree (both directories above
// them must exist); it fails when newname is a directory that is not
// empty.
func (t Tree) Rename(oldname, newname string) error {
	od, ob, err := t.parent(oldname, false)
	if err != nil {
		return err
	}
	defer od.Close()
	nd, nb, err := t.parent(newname, false)
	if err != nil {
		return err
	}
	defer nd.Close()
	if err := unix.Renameat(int(od.Fd()), ob, int(nd.Fd()), nb); err != nil {
		return &os.LinkError{Op: "rename", Old: t.Path(oldname), New: t.Path(newname), Err: err}
	}
	return nil
}

// treeInfo is a stat as fs.FileInfo.
type treeInfo struct {
	name string
	st   unix.Stat_t
}

func (i treeInfo) Name() string       { return i.name }
func (i treeInfo) Size() int64        { return i.st.Size }
func (i treeInfo) Mode() fs.FileMode  { return StatMode(i.st.Mode) }
func (i treeInfo) ModTime() time.Time { return time.Unix(i.st.Mtim.Unix()) }
func (i treeInfo) IsDir() bool        { return i.Mode().IsDir() }
func (i treeInfo) Sys() any           { return &i.st }
