package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/haloforge/haloforge/steps"
)

// lockFile is the file the runner locks (flock) while a build runs with a
// state dir (steps/runner: lockStateDir).
const lockFile = "lock"

// stateDirBusy answers, before anything is planned or run, whether another
// build holds the state dir, in one line that says who and what to do:
// the runner would only find out once the run starts.
func stateDirBusy(dir string) error {
	if t := busyText(dir); t != "" {
		return usageErr(errors.New(t))
	}
	return nil
}

// busyText is stateDirBusy's line, "" when the state dir is free.
func busyText(dir string) string {
	path := filepath.Join(dir, lockFile)
	f, err := os.Open(path)
	if err != nil {
		return "" // no lock file: no build ever ran here
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return ""
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		return "" // the runner will say what is wrong with the lock
	}
	return fmt.Sprintf("another haloforge build%s holds the state dir %s; wait for it to end, or use --state-dir DIR for a separate one", busyHolder(dir, f), dir)
}

// busyHolder describes the build that holds the lock: " (pid N, track
// T step S, since 14:59)", or "" when nothing is known about it.
func busyHolder(dir string, f *os.File) string {
	var parts []string
	if pid := lockHolder(f); pid > 0 {
		parts = append(parts, "pid "+strconv.Itoa(pid))
	}
	if st, err := steps.LoadState(dir); err == nil {
		for id, ts := range st.Tracks {
			for sid, ss := range ts.Steps {
				if ss != nil && ss.Status == steps.OutcomeRunning {
					p := "track " + id + " step " + sid
					if !ss.Started.IsZero() {
						p += ", since " + ss.Started.Local().Format("15:04")
					}
					parts = append(parts, p)
				}
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// lockHolder finds the process holding a flock on f in /proc/locks; 0 when
// it cannot tell.
func lockHolder(f *os.File) int {
	st, err := f.Stat()
	if err != nil {
		return 0
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer locks.Close()
	ino := ":" + strconv.FormatUint(sys.Ino, 10)
	sc := bufio.NewScanner(locks)
	for sc.Scan() {
		// 1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || !strings.HasSuffix(fields[5], ino) {
			continue
		}
		if pid, err := strconv.Atoi(fields[4]); err == nil && pid != os.Getpid() {
			return pid
		}
	}
	return 0
}
