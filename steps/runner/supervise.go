package runner

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
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
// (haloforge exited, even by kill -9) means ctlStop.
const (
	ctlStop = 't' // SIGTERM everything, wait the grace period, SIGKILL the rest
	ctlKill = 'k' // SIGKILL everything now
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
	stop := make(chan bool, 4) // true: kill now
	// fd 3 is the control pipe when haloforge started us; run by hand, it is absent.
	if _, err := unix.FcntlInt(3, unix.F_GETFD, 0); err == nil {
		syscall.CloseOnExec(3)
		go watchControl(os.NewFile(3, "control"), stop)
	}
	go func() {
		for range sigs {
			stop <- false
		}
	}()
	proc, err := os.StartProcess(args[1], args[1:], &os.ProcAttr{Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "haloforge: cannot run %s: %v\n", args[1], err)
		return 126
	}
	status, gone := make(chan int, 1), make(chan struct{})
	go reap(proc.Pid, status, gone)
	select {
	case code := <-status:
		// Same-session leftovers get SIGHUP from the kernel when we exit;
		// a daemon the step started on purpose (a container) stays.
		return code
	case hard := <-stop:
		terminate(hard, grace, stop, gone)
		return <-status
	}
}

// watchControl turns the control pipe into stop requests.
func watchControl(ctl *os.File, stop chan<- bool) {
	b := make([]byte, 1)
	for {
		n, err := ctl.Read(b)
		if n == 1 {
			stop <- b[0] == ctlKill
			continue
		}
		if err != nil {
			stop <- false
			return
		}
	}
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
// unless hard, then SIGKILL until none is left.
func terminate(hard bool, grace time.Duration, stop <-chan bool, gone <-chan struct{}) {
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
			case hard = <-stop:
				if hard {
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

// signalTree sends sig to every live descendant of this process.
func signalTree(sig syscall.Signal) {
	for _, pid := range Descendants(os.Getpid()) {
		_ = syscall.Kill(pid, sig)
	}
}

// Descendants lists the live (non-zombie) processes below root, read from
// /proc; a process that daemonised is still below a subreaper root.
func Descendants(root int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
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
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range kids[p] {
			if live[c] {
				out = append(out, c)
			}
			queue = append(queue, c)
		}
	}
	return out
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
