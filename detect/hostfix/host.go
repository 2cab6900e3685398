package hostfix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/haloforge/haloforge/internal/safefile"
)

// ownWritable is true when this user may replace the file itself, keeping
// its owner: a system image in the user's own directory needs no root.
func ownWritable(full string, uid, gid int) bool {
	if uid != os.Geteuid() || gid != os.Getegid() {
		return false
	}
	return unix.Access(filepath.Dir(full), unix.W_OK) == nil
}

// Host is the system --apply and --rollback change: this machine ("/") or a
// system installed under a directory (an image, a chroot), whose tools then
// run with chroot. haloforge itself never runs as root: what needs root goes
// through sudo, one command at a time, unless it already is root.
type Host struct {
	Root   string    // "/" or the directory the system is installed under
	Out    io.Writer // where commands' output and progress go
	Runner Runner
}

// Runner runs one command. asRoot asks for root (via sudo when not root).
type Runner interface {
	Run(ctx context.Context, argv []string, asRoot bool, out io.Writer) error
}

// ExecRunner runs commands for real.
type ExecRunner struct {
	IsRoot bool // running as root already: no sudo
}

// NewExecRunner is a runner for this process's privileges.
func NewExecRunner() ExecRunner { return ExecRunner{IsRoot: os.Geteuid() == 0} }

// Argv is the command as it will really run: with sudo in front when root
// is needed and this is not root.
func (r ExecRunner) Argv(argv []string, asRoot bool) []string {
	if asRoot && !r.IsRoot {
		return append([]string{"sudo", "--"}, argv...)
	}
	return argv
}

// Run runs argv with stdin from the terminal (sudo may ask for a password)
// and its output to out.
func (r ExecRunner) Run(ctx context.Context, argv []string, asRoot bool, out io.Writer) error {
	full := r.Argv(argv, asRoot)
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	cmd.Stdin = os.Stdin
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", shellJoin(full), err)
	}
	return nil
}

func (h *Host) root() string {
	if h.Root == "" {
		return "/"
	}
	return h.Root
}

// chrooted is true when the system lives under another directory.
func (h *Host) chrooted() bool { return filepath.Clean(h.root()) != "/" }

// abs is a system path as seen from here.
func (h *Host) abs(p string) string { return filepath.Join(h.root(), filepath.FromSlash(p)) }

// toolArgv is a system tool's command line: chroot into the root when the
// system lives elsewhere.
func (h *Host) toolArgv(argv []string) []string {
	if h.chrooted() {
		return append([]string{"chroot", h.root()}, argv...)
	}
	return argv
}

// runTool runs a tool of the system as root.
func (h *Host) runTool(ctx context.Context, argv []string) error {
	return h.Runner.Run(ctx, h.toolArgv(argv), true, h.out())
}

func (h *Host) out() io.Writer {
	if h.Out == nil {
		return io.Discard
	}
	return h.Out
}

// fileState is what a file was: content and metadata, or absent.
type fileState struct {
	exists   bool
	data     []byte
	mode     fs.FileMode
	uid, gid int
}

// readState reads a system file. A file this user cannot read is read with
// sudo cat (root-only boot partitions).
func (h *Host) readState(ctx context.Context, p string) (fileState, error) {
	full := h.abs(p)
	st, err := os.Lstat(full)
	if errors.Is(err, fs.ErrNotExist) {
		return fileState{}, nil
	}
	if err != nil {
		return fileState{}, err
	}
	if !st.Mode().IsRegular() {
		return fileState{}, fmt.Errorf("%s is not a regular file: haloforge does not edit it", p)
	}
	if st.Size() > maxEvidenceFile {
		return fileState{}, &safefile.TooLargeError{Path: p, Limit: maxEvidenceFile, Size: st.Size()}
	}
	fst := fileState{exists: true, mode: st.Mode().Perm()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		fst.uid, fst.gid = int(sys.Uid), int(sys.Gid)
	}
	// The Lstat above refused a link; a file swapped for a FIFO since is
	// refused too, not waited on.
	fst.data, err = safefile.ReadRegular(full, maxEvidenceFile, safefile.NoFollow)
	if errors.Is(err, fs.ErrPermission) {
		var buf bytes.Buffer
		if rerr := h.Runner.Run(ctx, []string{"cat", "--", full}, true, &buf); rerr != nil {
			return fileState{}, rerr
		}
		fst.data, err = buf.Bytes(), nil
	}
	return fst, err
}

// writeFile replaces a system file with data, keeping the mode and owner
// given. As root it writes a temporary file beside it and renames it over;
// otherwise it stages the data in staging (a directory of the user's) and
// installs it with sudo install.
func (h *Host) writeFile(ctx context.Context, p string, data []byte, mode fs.FileMode, uid, gid int, staging string) error {
	full := h.abs(p)
	_, perr := os.Stat(filepath.Dir(full))
	parentMissing := errors.Is(perr, fs.ErrNotExist)
	if os.Geteuid() == 0 || ownWritable(full, uid, gid) {
		if parentMissing {
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return err
			}
		}
		tmp, err := os.CreateTemp(filepath.Dir(full), ".haloforge-*")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		if _, err := tmp.Write(data); err != nil {
			tmp.Close()
			return err
		}
		if err := tmp.Chmod(mode); err != nil {
			tmp.Close()
			return err
		}
		if os.Geteuid() == 0 {
			if err := tmp.Chown(uid, gid); err != nil {
				tmp.Close()
				return err
			}
		}
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return err
		}
		if err := tmp.Close(); err != nil {
			return err
		}
		return os.Rename(tmp.Name(), full)
	}
	f, err := os.CreateTemp(staging, "stage-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	argv := []string{"install", "-m", fmt.Sprintf("%04o", mode), "-o", strconv.Itoa(uid), "-g", strconv.Itoa(gid)}
	if parentMissing {
		argv = append(argv, "-D")
	}
	argv = append(argv, "-T", f.Name(), full)
	return h.Runner.Run(ctx, argv, true, h.out())
}

// removeFile deletes a system file haloforge created.
func (h *Host) removeFile(ctx context.Context, p string) error {
	full := h.abs(p)
	if os.Geteuid() == 0 || unix.Access(filepath.Dir(full), unix.W_OK) == nil {
		err := os.Remove(full)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return h.Runner.Run(ctx, []string{"rm", "-f", "--", full}, true, h.out())
}

// canBecomeRoot checks, before anything changes, that the commands needing
// root can get it: as root, or through sudo.
func (h *Host) canBecomeRoot(w *work) error {
	r, ok := h.Runner.(ExecRunner)
	if !ok || r.IsRoot {
		return nil
	}
	needs := len(w.steps()) > 0
	for _, e := range w.edits {
		if !ownWritable(h.abs(e.path), e.before.uid, e.before.gid) {
			needs = true
		}
	}
	if _, err := exec.LookPath("sudo"); needs && err != nil {
		return fmt.Errorf("these changes need root and sudo is not installed: run haloforge as root for them: %w", ErrMismatch)
	}
	return nil
}
