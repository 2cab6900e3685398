package runner

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
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
	if holders := lockHolders(f); e.PID == 0 && len(holders) > 0 {
		e.PID = holders[0]
	}
	e.Doing = strings.Join(runningSteps(dir, ""), ", ")
	return e
}

// runningSteps are the steps state.json says run now ("track T step S,
// since 15:04"), of track only when track is given.
func runningSteps(dir, track string) []string {
	st, err := steps.LoadState(dir)
	if err != nil {
		return nil
	}
	var doing []string
	for id, ts := range st.Tracks {
		if track != "" && id != track {
			continue
		}
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
	return doing
}

// alive says whether process pid exists (perhaps another user's).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// lockHolders finds the processes holding a flock on f in /proc/locks;
// none when it cannot tell.
func lockHolders(f *os.File) []int {
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return nil
	}
	defer locks.Close()
	ino := ":" + strconv.FormatUint(sys.Ino, 10)
	var pids []int
	sc := bufio.NewScanner(locks)
	for sc.Scan() {
		// 1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || !strings.HasSuffix(fields[5], ino) {
			continue
		}
		if pid, err := strconv.Atoi(fields[4]); err == nil && pid > 0 && !slices.Contains(pids, pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// trackLockName is the file a run of track locks beside the state dir's
// lock: a build holds it exclusively, a serve or bench run shared, so that
// a track is never rebuilt under a server it runs, nor served half-built.
// Builds of other tracks, and servers of other tracks, go on beside.
func trackLockName(track string) string { return LockFile + "." + track }

// reTrackName is what a track ID looks like, so that its lock is one file
// of the state dir.
var reTrackName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// TrackBusyError is a track another haloforge run holds: being built when
// a serve asks, or served when a build asks.
type TrackBusyError struct {
	Dir, Track string
	PIDs       []int
	Serving    bool   // the holder serves (or benchmarks) the track; else it builds it
	Doing      string // the build's step, when it builds
}

func (e *TrackBusyError) Error() string {
	who := ""
	if len(e.PIDs) > 0 {
		var ps []string
		for _, p := range e.PIDs {
			ps = append(ps, strconv.Itoa(p))
		}
		who = " (pid " + strings.Join(ps, ", ") + ")"
	}
	if e.Serving {
		return fmt.Sprintf("haloforge serves track %s from the state dir %s%s: stop that server (Ctrl-C in its terminal) before building the track again", e.Track, e.Dir, who)
	}
	doing := ""
	if e.Doing != "" {
		doing = ", " + e.Doing
	}
	return fmt.Sprintf("track %s is being built in the state dir %s%s%s: serve it once the build ends", e.Track, e.Dir, who, doing)
}

func (e *TrackBusyError) Unwrap() error { return ErrBusy }

// lockTrack takes track's lock: exclusive for a build, shared for a serve
// or bench run. The returned func releases it.
func lockTrack(dir, track string, build bool) (func(), error) {
	if !reTrackName.MatchString(track) {
		return nil, fmt.Errorf("track lock: %q is not a track ID", track)
	}
	f, err := safefile.Tree(dir).OpenFile(trackLockName(track), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("track lock: %w", err)
	}
	how := syscall.LOCK_SH
	if build {
		how = syscall.LOCK_EX
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, trackBusy(dir, track, f, build)
		}
		return nil, fmt.Errorf("track lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// TrackBusy says whether a build (build true) or a serve or bench run of
// track could start now: nil, or a *TrackBusyError (ErrBusy) naming who
// holds the track, or an error about the lock file itself.
func TrackBusy(dir, track string, build bool) error {
	if !reTrackName.MatchString(track) {
		return nil // not a track: the plan says so
	}
	if _, err := safefile.Tree(dir).Lstat(trackLockName(track)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	unlock, err := lockTrack(dir, track, build)
	if err != nil {
		return err
	}
	unlock()
	return nil
}

// trackBusy describes the holders of f, track's lock: every process the
// kernel's lock table names, and the build's step when a build holds it.
func trackBusy(dir, track string, f *os.File, build bool) *TrackBusyError {
	e := &TrackBusyError{Dir: dir, Track: track, Serving: build, PIDs: lockHolders(f)}
	if !build {
		var doing []string
		for _, d := range runningSteps(dir, track) {
			doing = append(doing, strings.TrimPrefix(d, "track "+track+" "))
		}
		e.Doing = strings.Join(doing, ", ")
	}
	return e
}
