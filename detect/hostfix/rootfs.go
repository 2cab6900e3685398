package hostfix

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	pathrs "github.com/cyphar/filepath-securejoin/pathrs-lite"
	"golang.org/x/sys/unix"

	"github.com/haloforge/haloforge/internal/safefile"
)

// rootFS is the file system of the system haloforge reads and changes, seen
// as that system's own programs see it under chroot: every symbolic link,
// absolute or with "..", resolves inside the root, so that nothing outside
// it is read or written. For "/" that is the plain file system.
//
// The resolution is the kernel's (openat2 with RESOLVE_IN_ROOT) where the
// kernel has it, and the same walk in user space where it does not
// (github.com/cyphar/filepath-securejoin's pathrs-lite); the descriptor it
// returns is used from then on, so a link swapped in afterwards changes
// nothing.
type rootFS struct{ root string }

func (r rootFS) dir() string {
	if r.root == "" {
		return "/"
	}
	return r.root
}

// name is p as a message names it: the path on this machine, before any
// link is resolved ("/etc/default/grub", or "ROOT/etc/default/grub").
func (r rootFS) name(p string) string { return filepath.Join(r.dir(), filepath.FromSlash(p)) }

// handle opens p (a system path, "/etc/default/grub") inside the root as an
// O_PATH descriptor: links are followed, inside the root only. A path that
// does not exist there, a dangling link included, is fs.ErrNotExist.
func (r rootFS) handle(p string) (*os.File, error) {
	h, err := pathrs.OpenInRoot(r.dir(), p)
	if err != nil {
		return nil, r.pathErr("open", p, err)
	}
	return h, nil
}

// pathErr names p as the system sees it, with the root, whatever the
// library's own path was.
func (r rootFS) pathErr(op, p string, err error) error {
	return &fs.PathError{Op: op, Path: r.name(p), Err: safefile.Cause(err)}
}

// stat is what p is inside the root, links followed there.
func (r rootFS) stat(p string) (fs.FileInfo, error) {
	h, err := r.handle(p)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	return h.Stat()
}

// readFile reads the regular file p inside the root to limit bytes: a
// FIFO, a device or a directory is a *safefile.NotRegularError (checked
// before anything opens it for reading), a larger file a
// *safefile.TooLargeError.
func (r rootFS) readFile(p string, limit int64) ([]byte, error) {
	h, err := r.handle(p)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	st, err := h.Stat()
	if err != nil {
		return nil, r.pathErr("stat", p, err)
	}
	if !st.Mode().IsRegular() {
		return nil, &safefile.NotRegularError{Path: r.name(p), Mode: st.Mode()}
	}
	f, err := pathrs.Reopen(h, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC)
	if err != nil {
		return nil, r.pathErr("open", p, err)
	}
	f, st, err = safefile.CheckRegular(f, r.name(p))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return safefile.ReadOpen(f, r.name(p), st.Size(), limit)
}

// readDir lists the directory p inside the root.
func (r rootFS) readDir(p string) ([]fs.DirEntry, error) {
	h, err := r.handle(p)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	d, err := pathrs.Reopen(h, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return nil, r.pathErr("open", p, err)
	}
	defer d.Close()
	return d.ReadDir(-1)
}

// glob is filepath.Glob inside the root for the patterns haloforge reads:
// only the last element may hold a wildcard. The matches are system
// paths, sorted.
func (r rootFS) glob(pattern string) []string {
	dir, base := path.Split(pattern)
	if !strings.ContainsAny(base, "*?[") {
		if _, err := r.stat(pattern); err == nil {
			return []string{pattern}
		}
		return nil
	}
	entries, err := r.readDir(path.Clean(dir))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if ok, _ := path.Match(base, e.Name()); ok {
			out = append(out, path.Join(dir, e.Name()))
		}
	}
	return out // ReadDir sorts by name
}

// editDir is the directory of a file haloforge edits, resolved inside the
// root and held open: the file itself is then opened, replaced and removed
// relative to it, never through a link of its own.
type editDir struct {
	fs   rootFS
	d    *os.File // the directory, open for reading (the *at calls)
	p    string   // the file's system path
	base string
}

// openEdit opens p's directory inside the root. A directory that is
// missing is fs.ErrNotExist, unless a link leading nowhere in the root
// stands in its way: that is refused, with where the link points.
func (r rootFS) openEdit(p string) (*editDir, error) {
	dir, base := path.Split(p)
	h, err := r.handle(path.Clean(dir))
	if errors.Is(err, fs.ErrNotExist) {
		if lerr := r.danglingLink(path.Clean(dir)); lerr != nil {
			return nil, lerr
		}
	}
	if err != nil {
		return nil, err
	}
	defer h.Close()
	d, err := pathrs.Reopen(h, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return nil, r.pathErr("open", path.Clean(dir), err)
	}
	return &editDir{fs: r, d: d, p: p, base: base}, nil
}

// makeEdit is openEdit that first makes the missing directories, inside
// the root, as mkdir -p in a chroot would (never through a link that leads
// nowhere).
func (r rootFS) makeEdit(p string) (*editDir, error) {
	if _, err := r.stat(path.Dir(p)); errors.Is(err, fs.ErrNotExist) {
		if lerr := r.danglingLink(path.Dir(p)); lerr != nil {
			return nil, lerr
		}
		root, err := os.OpenFile(r.dir(), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		d, err := pathrs.MkdirAllHandle(root, path.Dir(p), 0o755)
		root.Close()
		if err != nil {
			return nil, r.pathErr("mkdir", path.Dir(p), err)
		}
		d.Close()
	}
	return r.openEdit(p)
}

// ErrLink is a link in the way of a file haloforge edits: it does not
// edit through one (exit 2: nothing changed).
var ErrLink = errors.New("a symbolic link is in the way")

// refusal is a file haloforge will not edit, said in full: it is
// ErrMismatch (exit 2), and ErrLink when a link is the reason.
type refusal struct {
	msg  string
	link bool
}

func (e *refusal) Error() string { return e.msg + "; nothing was changed" }

func (e *refusal) Is(target error) bool {
	return target == ErrMismatch || (e.link && target == ErrLink)
}

// danglingLink explains why dir does not resolve inside the root when one
// of its elements is a symbolic link leading nowhere there (an image's
// "/etc/default -> /outside/default"); nil when it is plainly missing.
func (r rootFS) danglingLink(dir string) error {
	parts := strings.Split(strings.Trim(dir, "/"), "/")
	for i := range parts {
		prefix := "/" + strings.Join(parts[:i+1], "/")
		if _, err := r.stat(prefix); err == nil {
			continue
		}
		parent, err := r.handle(path.Dir(prefix))
		if err != nil {
			return nil
		}
		target, err := readlinkAt(parent, parts[i])
		parent.Close()
		if err != nil {
			return nil // not a link: plainly missing
		}
		return &refusal{fmt.Sprintf("%s is a symbolic link to %s, which does not exist inside %s: haloforge does not create what a link points at",
			r.name(prefix), target, r.dir()), true}
	}
	return nil
}

// readlinkAt is the target of the link name in the directory h (an O_PATH
// or ordinary descriptor).
func readlinkAt(h *os.File, name string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(int(h.Fd()), name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func (e *editDir) close() { e.d.Close() }

func (e *editDir) fd() int { return int(e.d.Fd()) }

// lstat is the file itself (a link is not followed): ok false when absent.
func (e *editDir) lstat() (st unix.Stat_t, ok bool, err error) {
	err = unix.Fstatat(e.fd(), e.base, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return st, false, nil
	}
	if err != nil {
		return st, false, e.fs.pathErr("stat", e.p, err)
	}
	return st, true, nil
}

// refuseKind says why haloforge does not edit a file that is not regular.
func (e *editDir) refuseKind(st unix.Stat_t) error {
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		target, _ := readlinkAt(e.d, e.base)
		return &refusal{fmt.Sprintf("%s is a symbolic link to %s: haloforge edits only regular files (put a copy of the file in the link's place to let it)",
			e.fs.name(e.p), target), true}
	}
	return &refusal{fmt.Sprintf("%s is %s, not a regular file: haloforge does not edit it", e.fs.name(e.p), safefile.Kind(safefile.StatMode(st.Mode))), false}
}

// open opens the file for reading, never through a link and never waiting
// on a FIFO.
func (e *editDir) open() (*os.File, fs.FileInfo, error) {
	fd, err := unix.Openat(e.fd(), e.base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, e.fs.pathErr("open", e.p, err)
	}
	return safefile.CheckRegular(os.NewFile(uintptr(fd), e.p), e.fs.name(e.p))
}

// real is the file's path on this machine as the directory resolved now:
// for the commands that run through sudo (cat, install, rm), which take a
// path. Only someone who may write that directory (root, for a system's
// /etc) could move it between this and the command.
func (e *editDir) real() (string, error) {
	dir, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(e.fd()))
	if err != nil {
		return "", e.fs.pathErr("resolve", path.Dir(e.p), err)
	}
	if !filepath.IsAbs(dir) || strings.HasSuffix(dir, " (deleted)") {
		return "", e.fs.pathErr("resolve", path.Dir(e.p), fs.ErrNotExist)
	}
	return filepath.Join(dir, e.base), nil
}

// writable is true when this user may create and rename files in the
// directory (unix.Access's real-user rule, as the commands it replaces).
func (e *editDir) writable() bool {
	return unix.Faccessat(e.fd(), ".", unix.W_OK, 0) == nil
}

// replace writes data to a new file beside the old one and renames it
// over: a reader sees the old or the new content, and a link put in the
// file's place is replaced, never written through.
func (e *editDir) replace(data []byte, mode fs.FileMode, uid, gid int, chown bool) error {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := ".haloforge-" + hex.EncodeToString(rnd[:])
	fd, err := unix.Openat(e.fd(), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return e.fs.pathErr("create", path.Join(path.Dir(e.p), tmp), err)
	}
	f := os.NewFile(uintptr(fd), path.Join(path.Dir(e.p), tmp))
	werr := func() error {
		if _, err := f.Write(data); err != nil {
			return err
		}
		if err := f.Chmod(mode); err != nil {
			return err
		}
		if chown {
			if err := f.Chown(uid, gid); err != nil {
				return err
			}
		}
		return f.Sync()
	}()
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(e.fd(), tmp, e.fd(), e.base)
	}
	if werr != nil {
		_ = unix.Unlinkat(e.fd(), tmp, 0)
		return e.fs.pathErr("write", e.p, werr)
	}
	_ = e.d.Sync() // the rename durable; best effort on odd file systems
	return nil
}

// remove deletes the file (a regular one: a link or anything else in its
// place is refused).
func (e *editDir) remove() error {
	st, ok, err := e.lstat()
	if err != nil || !ok {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return e.refuseKind(st)
	}
	if err := unix.Unlinkat(e.fd(), e.base, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return e.fs.pathErr("remove", e.p, err)
	}
	return nil
}

// owner is a stat's owner and group.
func owner(st unix.Stat_t) (int, int) { return int(st.Uid), int(st.Gid) }

// ownWritable is true when this user may replace the file itself, keeping
// its owner: a system image in the user's own directory needs no root.
func (e *editDir) ownWritable(uid, gid int) bool {
	return uid == os.Geteuid() && gid == os.Getegid() && e.writable()
}

// realMissing is p's path on this machine when its directory does not
// exist yet: the nearest directory that does, resolved inside the root,
// and the rest of p beneath it (for sudo install -D).
func (r rootFS) realMissing(p string) (string, error) {
	if err := r.danglingLink(path.Dir(p)); err != nil {
		return "", err
	}
	for dir := path.Dir(p); ; dir = path.Dir(dir) {
		e, err := r.openEdit(path.Join(dir, "x"))
		if err == nil {
			real, err := e.real()
			e.close()
			if err != nil {
				return "", err
			}
			rest, _ := filepath.Rel(dir, p)
			return filepath.Join(filepath.Dir(real), rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) || dir == "/" {
			return "", err
		}
	}
}
