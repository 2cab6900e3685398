package runner

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// SuperviseArg is the hidden first argument that makes the haloforge binary
// act as a step's supervisor; main must hand the rest to Supervise before
// anything else runs.
const SuperviseArg = "__supervise"

// IsSupervise reports whether a process's arguments (os.Args) ask it to be
// a step's supervisor; then Supervise(args[2:]) is all it should do.
func IsSupervise(args []string) bool { return len(args) > 1 && args[1] == SuperviseArg }

// Control bytes the runner writes to a supervisor on fd 3. Closing the pipe
// (haloforge exited, even by kill -9) means ctlStop while the script runs,
// ctlClean once it has ended.
const (
	ctlStop = 't' // SIGTERM everything, wait the grace period, SIGKILL the rest
	ctlKill = 'k' // SIGKILL everything now (after the script ended: its strays)
	// After the script ended by itself and the supervisor reported what it
	// left running (fd 4):
	ctlClean   = 'c' // stop the strays (SIGTERM, grace, SIGKILL), leave the container runtime's, exit
	ctlRelease = 'r' // leave everything running (a service the step starts on purpose), exit
	ctlEOF     = 0   // the control pipe closed: haloforge is gone
)

// The report a supervisor writes on fd 4 when the script ends by itself,
// one line each, tab-separated: "exit CODE", then "left PID KIND COMMAND"
// for every outermost process still running below it (KIND stray or
// container, the command line with tabs and line ends made spaces; the
// processes below one go with it), then "end". With
// nothing left it exits right after; otherwise it waits, its terminal let
// go, for ctlClean or ctlRelease.
const (
	reportExit = "exit"
	reportLeft = "left"
	reportEnd  = "end"
	kindStray  = "stray"
	kindRun    = "container"
	maxLeft    = 100 // processes reported at most
)

// killWait bounds how long the supervisor waits for SIGKILLed processes.
const killWait = 10 * time.Second

// Supervise runs one step script and makes sure it leaves nothing behind
// when the step is stopped or haloforge dies. args are GRACE SCRIPT [ARG...].
//
// Why a separate process: the step's pty hang-up reaches only processes
// that keep the terminal and do not ignore SIGHUP, and a process group
// misses grandchildren that call setsid. The supervisor is a child
// subreaper (prctl PR_SET_CHILD_SUBREAPER, see prctl(2)), so every orphaned
// descendant is re-parented to it and stays findable; it reads a control
// pipe from haloforge, whose end-of-file tells it haloforge is gone.
//
// When the script ends by itself, whatever it left running (a nohup, a
// setsid or double-forked daemon) is still below the supervisor: it reports
// them to the runner (fd 4), which decides their fate (ctlClean after a
// failure or at the end of the run, ctlRelease for a step that keeps a
// service running); until then they stay below it, so that even a kill -9
// of haloforge ends them. The container runtime's processes (conmon, the
// container below it, podman's pause process) are podman's to manage and
// are only reported.
// It returns the script's exit code (128+N when killed by signal N).
func Supervise(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "haloforge "+SuperviseArg+": usage: GRACE SCRIPT [ARG...]")
		return 2
	}
	grace, err := time.ParseDuration(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "haloforge %s: grace: %v\n", SuperviseArg, err)
		return 2
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "haloforge: cannot become a subreaper: %v\n", err)
		return 126
	}
	// Notify, not Ignore: ignored signals would stay ignored in the script.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	ctl := make(chan byte, 4)
	// fd 3 is the control pipe and fd 4 the report pipe when haloforge
	// started us; run by hand, they are absent.
	var report *os.File
	if _, err := unix.FcntlInt(3, unix.F_GETFD, 0); err == nil {
		syscall.CloseOnExec(3)
		go watchControl(os.NewFile(3, "control"), ctl)
		if _, err := unix.FcntlInt(4, unix.F_GETFD, 0); err == nil {
			syscall.CloseOnExec(4)
			report = os.NewFile(4, "report")
		}
	}
	var parked atomic.Bool // the script has ended: a SIGHUP is the terminal going away
	go func() {
		for sig := range sigs {
			if sig == syscall.SIGHUP && parked.Load() {
				continue
			}
			ctl <- ctlStop
		}
	}()
	attr := &os.ProcAttr{Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}}
	if report != nil {
		// The script leads a process group of its own, in the foreground of
		// the step's terminal: the supervisor, which leads the session, can
		// then take the foreground back before it exits, so that the
		// hang-up its exit sends goes to nobody else (a service it leaves).
		attr.Sys = &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: 0}
	}
	proc, err := os.StartProcess(args[1], args[1:], attr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "haloforge: cannot run %s: %v\n", args[1], err)
		return 126
	}
	status, gone := make(chan int, 1), make(chan struct{})
	go reap(proc.Pid, status, gone)
	for {
		select {
		case code := <-status:
			if report == nil {
				// Same-session leftovers get SIGHUP from the kernel when we exit.
				return code
			}
			parked.Store(true)
			left := settledLeftovers(os.Getpid(), leftoverSettle)
			writeLeftovers(report, code, left)
			report.Close()
			if len(left) == 0 {
				return code
			}
			letGoOfTerminal()
			afterScript(grace, ctl, gone)
			return code
		case c := <-ctl:
			if c == ctlClean || c == ctlRelease {
				continue // meaningful only once the script has ended
			}
			terminate(c == ctlKill, grace, ctl, gone)
			return <-status
		}
	}
}

// leftoverSettle is how long the step's own processes get to finish
// exiting after its script ended before they count as left running: sudo's
// monitor process outlives `sudo podman exec` by milliseconds, and so may a
// pipeline's last member. A real daemon costs the step this much once.
const leftoverSettle = 300 * time.Millisecond

// settledLeftovers is Leftovers(root) once no process outside the container
// runtime is left, or when within has passed (podman's conmon and friends
// stay by design, so they are not waited for).
func settledLeftovers(root int, within time.Duration) []Leftover {
	deadline := time.Now().Add(within)
	for {
		left := Leftovers(root)
		if !slices.ContainsFunc(left, func(l Leftover) bool { return !l.Container }) || time.Now().After(deadline) {
			return left
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// watchControl turns the control pipe into control bytes; its end is ctlEOF.
func watchControl(pipe *os.File, ctl chan<- byte) {
	b := make([]byte, 1)
	for {
		n, err := pipe.Read(b)
		if n == 1 {
			ctl <- b[0]
			continue
		}
		if err != nil {
			ctl <- ctlEOF
			return
		}
	}
}

// afterScript waits for the runner's word on what the script left running:
// release leaves it all, anything else (clean, stop, haloforge gone, a
// signal) stops the strays. It returns early when nothing is left at all.
func afterScript(grace time.Duration, ctl <-chan byte, gone <-chan struct{}) {
	select {
	case <-gone:
	case c := <-ctl:
		if c != ctlRelease {
			stopStrays(c == ctlKill, grace, ctl)
		}
	}
}

// letGoOfTerminal takes the terminal's foreground for the supervisor's own
// process group (the kernel hangs up the foreground group, or the one that
// had it when the terminal was hung up, when a session leader exits), then
// points stdin, stdout and stderr at /dev/null, so that a supervisor
// waiting for the runner's word does not hold the step's pty.
func letGoOfTerminal() {
	signal.Ignore(syscall.SIGTTOU) // a background group may not take the foreground otherwise
	_ = unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, unix.Getpgrp())
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer null.Close()
	for fd := 0; fd <= 2; fd++ {
		_ = unix.Dup2(int(null.Fd()), fd)
	}
}

// writeLeftovers writes the report (see reportExit) to the runner.
func writeLeftovers(w *os.File, code int, left []Leftover) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\t%d\n", reportExit, code)
	n := 0
	for _, l := range left {
		if l.nested {
			continue // its parent is listed, and goes with it
		}
		if n++; n > maxLeft {
			break
		}
		kind := kindStray
		if l.Container {
			kind = kindRun
		}
		fmt.Fprintf(&b, "%s\t%d\t%s\t%s\n", reportLeft, l.PID, kind, oneLine(l.Command))
	}
	b.WriteString(reportEnd + "\n")
	_, _ = w.WriteString(b.String())
}

// oneLine makes a command line fit one report field.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}

// reap collects every child, direct or re-parented, until none is left;
// the script's own exit code goes to status.
func reap(script int, status chan<- int, gone chan<- struct{}) {
	defer close(gone)
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return // ECHILD: no child, hence no descendant, is left
		}
		if pid == script {
			status <- exitCode(ws)
		}
	}
}

func exitCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// terminate stops every descendant: SIGTERM and the grace period first
// unless hard, then SIGKILL until none is left (ctlKill meanwhile: at once).
func terminate(hard bool, grace time.Duration, ctl <-chan byte, gone <-chan struct{}) {
	if !hard {
		signalTree(syscall.SIGTERM)
		signalTree(syscall.SIGCONT) // a stopped process cannot act on SIGTERM
		timer := time.NewTimer(grace)
		defer timer.Stop()
	wait:
		for {
			select {
			case <-gone:
				return
			case <-timer.C:
				break wait
			case c := <-ctl:
				if c == ctlKill {
					break wait
				}
			}
		}
	}
	deadline := time.Now().Add(killWait)
	for time.Now().Before(deadline) {
		signalTree(syscall.SIGKILL)
		select {
		case <-gone:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stopStrays stops what the script left running except the container
// runtime's processes: SIGTERM and the grace period first unless hard,
// then SIGKILL until no stray is left.
func stopStrays(hard bool, grace time.Duration, ctl <-chan byte) {
	strays := func() []int {
		var pids []int
		for _, l := range Leftovers(os.Getpid()) {
			if !l.Container {
				pids = append(pids, l.PID)
			}
		}
		return pids
	}
	send := func(sig syscall.Signal) bool {
		pids := strays()
		for _, pid := range pids {
			_ = syscall.Kill(pid, sig)
		}
		return len(pids) > 0
	}
	tick := 20 * time.Millisecond
	if !hard {
		send(syscall.SIGTERM)
		send(syscall.SIGCONT)
		for deadline := time.Now().Add(grace); time.Now().Before(deadline) && len(strays()) > 0; {
			select {
			case c := <-ctl:
				if c == ctlKill {
					deadline = time.Now()
				}
			case <-time.After(tick):
			}
		}
	}
	for deadline := time.Now().Add(killWait); time.Now().Before(deadline) && send(syscall.SIGKILL); {
		time.Sleep(tick)
	}
}

// signalTree sends sig to every live descendant of this process.
func signalTree(sig syscall.Signal) {
	for _, pid := range Descendants(os.Getpid()) {
		_ = syscall.Kill(pid, sig)
	}
}

// Descendants lists the live (non-zombie) processes below root, read from
// /proc; a process that daemonised is still below a subreaper root.
func Descendants(root int) []int {
	var out []int
	walkTree(root, func(pid int, _ []int) { out = append(out, pid) })
	return out
}

// walkTree calls visit for every live process below root, breadth first,
// with the chain of its ancestors below root (nearest last).
func walkTree(root int, visit func(pid int, ancestors []int)) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	kids := map[int][]int{}
	live := map[int]bool{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, state, ok := procStat(pid)
		if !ok {
			continue
		}
		kids[ppid] = append(kids[ppid], pid)
		live[pid] = state != 'Z' && state != 'X'
	}
	type item struct {
		pid int
		up  []int
	}
	queue := []item{{pid: root}}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range kids[p.pid] {
			if live[c] {
				visit(c, p.up)
			}
			queue = append(queue, item{pid: c, up: append(slices.Clip(p.up), c)})
		}
	}
}

// procStat reads the parent pid and state from /proc/<pid>/stat, whose
// second field (the command) may itself hold spaces and parentheses.
func procStat(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(string(f[1]))
	return ppid, f[0][0], err == nil
}
