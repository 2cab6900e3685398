package runner

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/steps"
)

// LockFile is the file in the state dir that a build locks (flock(2))
// while it runs. The kernel releases the lock when its holder dies,
// however it dies: a lock is never stale. The file names the holder's
// pid, for the message of the one refused.
const LockFile = "lock"

// ErrBusy means another haloforge build holds the state dir.
var ErrBusy = errors.New("another haloforge build holds the state dir")

// BusyError is a state dir another build holds: who, as far as the
// kernel's lock table, the lock file and state.json tell.
type BusyError struct {
	Dir    string
	PID    int    // 0 when unknown
	Doing  string // "track T step S, since 15:04", "" when unknown
	reason string
}

func (e *BusyError) Error() string {
	var parts []string
	if e.PID > 0 {
		parts = append(parts, "pid "+strconv.Itoa(e.PID))
	}
	if e.Doing != "" {
		parts = append(parts, e.Doing)
	}
	who := ""
	if len(parts) > 0 {
		who = " (" + strings.Join(parts, ", ") + ")"
	}
	return fmt.Sprintf("another haloforge build%s holds the state dir %s; wait for it to end, or use --state-dir DIR for a separate one", who, e.Dir)
}

func (e *BusyError) Unwrap() error { return ErrBusy }

// openLock opens the state dir's lock file, creating it: a regular file of
// the state dir itself, never through a link (a lock planted as a link to
// another file would have that file emptied and given a pid).
func openLock(dir string, create bool) (*os.File, error) {
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE
	}
	f, err := safefile.Tree(dir).OpenFile(LockFile, flag, 0o644)
	if err != nil {
		return nil, fmt.Errorf("state dir lock: %w", err)
	}
	return f, nil
}

// Busy says whether another build holds the state dir dir: nil when it is
// free (or no build ever ran there), a *BusyError (ErrBusy) naming the
// holder when it is held, another error when the lock file is not one
// haloforge could have made (a link, a FIFO, …). The CLI asks before
// anything is planned; the runner's own lock says the same when it loses
// the race.
func Busy(dir string) error {
	f, err := openLock(dir, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("state dir lock %s: %w", f.Name(), err)
	}
	return busy(dir, f)
}

// lockStateDir keeps two builds from sharing a state dir at once: it takes
// the lock (or says who holds it: a *BusyError) and writes this pid in the
// file. The returned func releases it.
func lockStateDir(dir string) (func(), error) {
	f, err := openLock(dir, true)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, busy(dir, f)
		}
		return nil, fmt.Errorf("state dir lock: %w", err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}

// busy describes the holder of the lock f of dir.
func busy(dir string, f *os.File) *BusyError {
	// The pid the holder wrote, while that process lives; else the one
	// the kernel's lock table names (which may be a helper that took the
	// lock for it, as flock(1) does).
	e := &BusyError{Dir: dir}
	if b, err := io.ReadAll(io.LimitReader(f, 64)); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 && alive(pid) {
			e.PID = pid
		}
	}
	if e.PID == 0 {
		e.PID = lockHolder(f)
	}
	if st, err := steps.LoadState(dir); err == nil {
		var doing []string
		for id, ts := range st.Tracks {
			for sid, ss := range ts.Steps {
				if ss != nil && ss.Status == steps.OutcomeRunning {
					p := "track " + id + " step " + sid
					if !ss.Started.IsZero() {
						p += ", since " + ss.Started.Local().Format("15:04")
					}
					doing = append(doing, p)
				}
			}
		}
		slices.Sort(doing)
		e.Doing = strings.Join(doing, ", ")
	}
	return e
}

// alive says whether process pid exists (perhaps another user's).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
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
		if pid, err := strconv.Atoi(fields[4]); err == nil && pid > 0 {
			return pid
		}
	}
	return 0
}
