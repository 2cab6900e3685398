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
	"os/signal"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
)

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

// StopGrace is how long a command haloforge was told to stop (SIGINT,
// SIGTERM, SIGHUP) has between SIGTERM and SIGKILL.
const StopGrace = 5 * time.Second

// ErrInterrupted: a signal stopped --apply or --rollback (exit 130).
var ErrInterrupted = errors.New("interrupted")

// Run runs argv with stdin from the terminal (sudo may ask for a password)
// and its output to out, in a process group of its own. When ctx ends
// (haloforge was told to stop), the whole group gets SIGTERM, then SIGKILL
// after StopGrace, and Run returns once it has ended: nothing it started
// runs on. While it runs, the group has the terminal, as a shell gives it
// to a job: Ctrl-C reaches the command and everything it started.
func (r ExecRunner) Run(ctx context.Context, argv []string, asRoot bool, out io.Writer) error {
	full := r.Argv(argv, asRoot)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s did not run: %w", shellJoin(full), ErrInterrupted)
	}
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Stdin = os.Stdin
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = StopGrace
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	tty, fg := foregroundTTY()
	if fg {
		cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, tty
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", shellJoin(full), err)
	}
	if fg {
		defer takeTerminal(tty)
	}
	group := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGINT {
			stopGroup(group, nil)
			return fmt.Errorf("%s was stopped (Ctrl-C): %w", shellJoin(full), ErrInterrupted)
		}
		// A command that ended well but left something holding its output
		// (a daemon it started) is not a failure: its output stops there.
		if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
			return fmt.Errorf("%s: %w", shellJoin(full), err)
		}
		return nil
	case <-ctx.Done():
		stopGroup(group, done)
		return fmt.Errorf("%s was stopped: %w", shellJoin(full), ErrInterrupted)
	}
}

// stopGroup sends SIGTERM to a process group and waits for its leader
// (done, when still running) and every other member to end, with SIGKILL
// after StopGrace.
func stopGroup(group int, done <-chan error) {
	_ = syscall.Kill(-group, syscall.SIGTERM)
	deadline := time.Now().Add(StopGrace)
	if done != nil {
		select {
		case <-done:
		case <-time.After(StopGrace):
			_ = syscall.Kill(-group, syscall.SIGKILL)
			<-done
		}
	}
	for groupRuns(group) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-group, syscall.SIGKILL)
			deadline = time.Now().Add(StopGrace)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupRuns says whether a process of the group still runs: one that has
// ended but waits for its parent to reap it (a zombie) does not.
func groupRuns(group int) bool {
	if syscall.Kill(-group, 0) != nil {
		return false
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell: the kernel says the group has members
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		if state, pgrp, ok := procStat(pid); ok && pgrp == group && running(state) {
			return true
		}
	}
	return false
}

// ProcessRuns says whether process pid runs: one that has ended but waits
// for its parent to reap it (a zombie) does not.
func ProcessRuns(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && running(state)
}

func running(state string) bool { return state != "Z" && state != "X" }

// procStat is a process's state letter and process group from
// /proc/PID/stat; ok is false when it is gone.
func procStat(pid int) (state string, pgrp int, ok bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid pgrp …; comm may hold spaces and parentheses
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 3 {
		return "", 0, false
	}
	pgrp, _ = strconv.Atoi(f[2])
	return f[0], pgrp, true
}

// foregroundTTY is the terminal on stdin when this process's group has it
// (a job in the foreground); false otherwise (no terminal, or haloforge
// runs in the background).
func foregroundTTY() (int, bool) {
	fd := int(os.Stdin.Fd())
	pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	return fd, err == nil && pg == unix.Getpgrp()
}

// takeTerminal gives the terminal back to haloforge's process group after
// a command had it. Taking it from the background would stop haloforge
// with SIGTTOU, so that signal is ignored meanwhile.
func takeTerminal(tty int) {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	_ = unix.IoctlSetPointerInt(tty, unix.TIOCSPGRP, unix.Getpgrp())
}

func (h *Host) root() string {
	if h.Root == "" {
		return "/"
	}
	return h.Root
}

// chrooted is true when the system lives under another directory.
func (h *Host) chrooted() bool { return filepath.Clean(h.root()) != "/" }

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

// same is true when two states are the same file, byte for byte, with the
// same mode and owner.
func (a fileState) same(b fileState) bool {
	return a.exists == b.exists && bytes.Equal(a.data, b.data) && (!a.exists || a.mode == b.mode && a.uid == b.uid && a.gid == b.gid)
}

// fs is the system's files, resolved inside the root.
func (h *Host) fs() rootFS { return rootFS{root: h.root()} }

// readState reads a system file: resolved inside the root, never through a
// link of its own (refused, as anything but a regular file is). A file
// this user cannot read is read with sudo cat (root-only boot partitions).
func (h *Host) readState(ctx context.Context, p string) (fileState, error) {
	e, err := h.fs().openEdit(p)
	if errors.Is(err, fs.ErrNotExist) {
		return fileState{}, nil
	}
	if err != nil {
		return fileState{}, err
	}
	defer e.close()
	st, ok, err := e.lstat()
	if err != nil || !ok {
		return fileState{}, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fileState{}, e.refuseKind(st)
	}
	if st.Size > maxEvidenceFile {
		return fileState{}, &safefile.TooLargeError{Path: p, Limit: maxEvidenceFile, Size: st.Size}
	}
	fst := fileState{exists: true, mode: fs.FileMode(st.Mode & 0o777)}
	fst.uid, fst.gid = owner(st)
	f, info, err := e.open()
	if errors.Is(err, fs.ErrPermission) {
		real, rerr := e.real()
		if rerr != nil {
			return fileState{}, rerr
		}
		var buf bytes.Buffer
		if rerr := h.Runner.Run(ctx, []string{"cat", "--", real}, true, &buf); rerr != nil {
			return fileState{}, rerr
		}
		if buf.Len() > maxEvidenceFile {
			return fileState{}, &safefile.TooLargeError{Path: p, Limit: maxEvidenceFile, Size: -1}
		}
		fst.data = buf.Bytes()
		return fst, nil
	}
	if err != nil {
		return fileState{}, err
	}
	defer f.Close()
	fst.data, err = safefile.ReadOpen(f, p, info.Size(), maxEvidenceFile)
	return fst, err
}

// writeFile replaces a system file with data, keeping the mode and owner
// given, inside the root. When this user may (root, or a system image of
// its own) it writes a temporary file beside it and renames it over;
// otherwise it stages the data in staging (a directory of the user's) and
// installs it with sudo install. With expect, a file that is no longer
// that (edited since it was read) is left as it is: a *changedError.
func (h *Host) writeFile(ctx context.Context, p string, data []byte, mode fs.FileMode, uid, gid int, staging string, expect *fileState) error {
	if expect != nil {
		now, err := h.readState(ctx, p)
		if err != nil {
			return err
		}
		if !now.same(*expect) {
			return &changedError{[]string{p}}
		}
	}
	e, err := h.fs().openEdit(p)
	parentMissing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !parentMissing {
		return err
	}
	if !parentMissing {
		defer e.close()
	}
	if os.Geteuid() == 0 || (!parentMissing && e.ownWritable(uid, gid)) {
		if parentMissing {
			if e, err = h.fs().makeEdit(p); err != nil {
				return err
			}
			defer e.close()
		}
		return e.replace(data, mode, uid, gid, os.Geteuid() == 0)
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
	var real string
	if parentMissing {
		real, err = h.fs().realMissing(p)
	} else {
		real, err = e.real()
	}
	if err != nil {
		return err
	}
	argv := []string{"install", "-m", fmt.Sprintf("%04o", mode), "-o", strconv.Itoa(uid), "-g", strconv.Itoa(gid)}
	if parentMissing {
		argv = append(argv, "-D")
	}
	argv = append(argv, "-T", f.Name(), real)
	return h.Runner.Run(ctx, argv, true, h.out())
}

// removeFile deletes a system file haloforge created.
func (h *Host) removeFile(ctx context.Context, p string) error {
	e, err := h.fs().openEdit(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer e.close()
	if os.Geteuid() == 0 || e.writable() {
		return e.remove()
	}
	st, ok, err := e.lstat()
	if err != nil || !ok {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return e.refuseKind(st)
	}
	real, err := e.real()
	if err != nil {
		return err
	}
	return h.Runner.Run(ctx, []string{"rm", "-f", "--", real}, true, h.out())
}

// reachable refuses, before anything is shown or asked, a file the apply
// would back up or write that a link keeps out of the root, or that is a
// link or anything but a regular file itself.
func (h *Host) reachable(paths []string) error {
	for _, p := range paths {
		e, err := h.fs().openEdit(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		st, ok, err := e.lstat()
		if err == nil && ok && st.Mode&unix.S_IFMT != unix.S_IFREG {
			err = e.refuseKind(st)
		}
		e.close()
		if err != nil {
			return err
		}
	}
	return nil
}

// mayWrite is true when this user may replace p itself, keeping its owner.
func (h *Host) mayWrite(p string, uid, gid int) bool {
	e, err := h.fs().openEdit(p)
	if err != nil {
		return false
	}
	defer e.close()
	return e.ownWritable(uid, gid)
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
		if !h.mayWrite(e.path, e.before.uid, e.before.gid) {
			needs = true
		}
	}
	if _, err := exec.LookPath("sudo"); needs && err != nil {
		return fmt.Errorf("these changes need root and sudo is not installed: run haloforge as root for them: %w", ErrMismatch)
	}
	return nil
}

// roomFor checks that each file system the restores write to has room for
// their data (and a block each for the temporary file), before anything is
// written. Root may use the blocks reserved for it; a user may not.
func (h *Host) roomFor(restores []restore) error {
	type fsNeed struct {
		free, need uint64
		first      string
	}
	needs := map[[2]int32]*fsNeed{}
	var order [][2]int32
	for _, rs := range restores {
		if rs.remove {
			continue
		}
		p := rs.mf.Path
		e, err := h.fs().openEdit(p)
		for errors.Is(err, fs.ErrNotExist) && p != "/" { // a directory to make: its parent's file system
			p = path.Dir(p)
			e, err = h.fs().openEdit(p)
		}
		if err != nil {
			return err
		}
		var st unix.Statfs_t
		err = unix.Fstatfs(e.fd(), &st)
		e.close()
		if err != nil {
			continue // a file system that says nothing: the write will tell
		}
		key := st.Fsid.Val
		n := needs[key]
		if n == nil {
			free := st.Bavail
			if os.Geteuid() == 0 {
				free = st.Bfree
			}
			n = &fsNeed{free: free * uint64(st.Bsize), first: rs.mf.Path}
			needs[key] = n
			order = append(order, key)
		}
		n.need += uint64(len(rs.data)) + uint64(st.Bsize)
	}
	for _, k := range order {
		if n := needs[k]; n.need > n.free {
			return fmt.Errorf("the file system of %s has %s free, and the rollback needs %s", h.fs().name(n.first), text.Bytes(int64(n.free)), text.Bytes(int64(n.need)))
		}
	}
	return nil
}
