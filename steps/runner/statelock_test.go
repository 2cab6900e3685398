package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haloforge/haloforge/steps"
)

// startGated starts a run of o whose step waits at its gate (gate.sh) and
// returns once the step says it is ready; stop cancels it and waits.
func startGated(t *testing.T, o Options) (stop func()) {
	t.Helper()
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		once := false
		for e := range r.Events() {
			if says(e, "ready") && !once {
				once = true
				close(ready)
			}
		}
	}()
	go r.Run(ctx)
	select {
	case <-ready:
	case <-done:
		t.Fatal("the gated run ended before its step was ready")
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("the gated step never said ready")
	}
	return func() {
		cancel()
		<-done
	}
}

// runTo runs o to its end and returns New's or Run's error.
func runTo(t *testing.T, o Options) error {
	t.Helper()
	r, err := New(o)
	if err != nil {
		return err
	}
	go func() {
		for range r.Events() {
		}
	}()
	_, err = r.Run(context.Background())
	return err
}

// TestTrackLockKeepsBuildAndServeApart runs real steps on one state dir: a
// track is never rebuilt while haloforge serves it, nor served while it
// is built; servers of one track share it, and other tracks go on.
func TestTrackLockKeepsBuildAndServeApart(t *testing.T) {
	dir := t.TempDir()
	fxA := fxTrack(fx{id: "gate", script: "gate.sh"})
	fyB := fxTrack(fx{id: "hello", script: "hello.sh"})
	fyB.ID = "fy"
	// the fixture scripts for both tracks
	scripts := t.TempDir()
	for _, id := range []string{"fx", "fy"} {
		os.MkdirAll(filepath.Join(scripts, id), 0o755)
		for _, f := range []string{"gate.sh", "hello.sh"} {
			data, err := os.ReadFile(filepath.Join("testdata/scripts/fx", f))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(scripts, id, f), data, 0o755)
		}
	}
	plan := func(tr steps.Track) *steps.Plan { return fxPlan(t, tr, fxPins, scripts, dir) }
	opts := func(tr steps.Track) Options {
		o := fxOptions(plan(tr), dir)
		o.ScriptsDir = scripts
		return o
	}

	t.Run("a build while the track is served", func(t *testing.T) {
		so := opts(fxA)
		so.NoHistory = true
		stop := startGated(t, so)
		defer stop()
		err := runTo(t, opts(fxA))
		var tb *TrackBusyError
		if !errors.As(err, &tb) || !tb.Serving || !errors.Is(err, ErrBusy) || !slices.Contains(tb.PIDs, os.Getpid()) {
			t.Fatalf("build of a served track: %v, want it refused naming the server's pid %d", err, os.Getpid())
		}
		if !strings.Contains(err.Error(), "haloforge serves track fx from the state dir "+dir) {
			t.Errorf("message: %v", err)
		}
		if err := TrackBusy(dir, "fx", false); err != nil {
			t.Errorf("a second server of the track: %v", err)
		}
		if err := runTo(t, opts(fyB)); err != nil {
			t.Errorf("a build of another track: %v", err)
		}
	})
	t.Run("a server while the track is built", func(t *testing.T) {
		stop := startGated(t, opts(fxA))
		defer stop()
		err := TrackBusy(dir, "fx", false)
		var tb *TrackBusyError
		if !errors.As(err, &tb) || tb.Serving || !strings.Contains(tb.Doing, "step gate, since ") {
			t.Fatalf("serve of a track being built: %v, want it refused naming the step", err)
		}
		so := opts(fxA)
		so.NoHistory = true
		if err := runTo(t, so); !errors.As(err, &tb) {
			t.Errorf("the runner's own lock let a server start: %v", err)
		}
		if err := TrackBusy(dir, "fy", false); err != nil {
			t.Errorf("a server of another track: %v", err)
		}
		if err := Busy(dir); !errors.Is(err, ErrBusy) {
			t.Errorf("Busy while a build runs: %v", err)
		}
	})
	t.Run("free again once both ended", func(t *testing.T) {
		if err := TrackBusy(dir, "fx", true); err != nil {
			t.Errorf("after the runs: %v", err)
		}
		if err := Busy(dir); err != nil {
			t.Errorf("after the runs: %v", err)
		}
	})
}

// TestStateDirLockRefusesWhatHaloforgeDidNotMake plants what a restored
// backup or a mistake may leave as the lock files: a link (to a file that
// would be emptied and given a pid, or to one that does not exist yet), a
// FIFO, a directory, a hard link. Each is refused with its path; the file
// a link points at keeps every byte and nothing is created.
func TestStateDirLockRefusesWhatHaloforgeDidNotMake(t *testing.T) {
	for _, name := range []string{LockFile, trackLockName("fx")} {
		for _, tc := range []struct {
			what  string
			plant func(t *testing.T, path, outside string)
			want  string
		}{
			{"a link to a precious file", func(t *testing.T, p, out string) { os.Symlink(out, p) }, "is a symbolic link"},
			{"a link to a file not there yet", func(t *testing.T, p, out string) { os.Symlink(out+".new", p) }, "is a symbolic link"},
			{"a relative link out of the state dir", func(t *testing.T, p, out string) { os.Symlink("../"+filepath.Base(filepath.Dir(out))+"/precious", p) }, "is a symbolic link"},
			{"a FIFO", func(t *testing.T, p, out string) { syscall.Mkfifo(p, 0o600) }, "is a FIFO (named pipe)"},
			{"a directory", func(t *testing.T, p, out string) { os.Mkdir(p, 0o700) }, "is a directory, not a regular file"},
			{"a hard link to a file elsewhere", func(t *testing.T, p, out string) { os.Link(out, p) }, "has 2 names (a hard link)"},
		} {
			t.Run(name+": "+tc.what, func(t *testing.T) {
				base := t.TempDir()
				dir := filepath.Join(base, "state")
				os.Mkdir(dir, 0o755)
				outDir := filepath.Join(base, "outside")
				os.Mkdir(outDir, 0o755)
				out := filepath.Join(outDir, "precious")
				os.WriteFile(out, []byte("precious-data-here\n"), 0o644)
				tc.plant(t, filepath.Join(dir, name), out)
				done := make(chan error, 1)
				go func() {
					done <- runTo(t, fxOptions(fxPlan(t, fxTrack(fx{id: "hello", script: "hello.sh"}), fxPins, "testdata/scripts", dir), dir))
				}()
				var err error
				select {
				case err = <-done:
				case <-time.After(20 * time.Second):
					t.Fatal("the build waited on the lock")
				}
				if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, name)) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("build: %v, want %q naming %s", err, tc.want, filepath.Join(dir, name))
				}
				// Planted after the state dir was checked: the lock's own
				// open refuses it as well.
				var lerr error
				if name == LockFile {
					_, lerr = lockStateDir(dir)
				} else {
					_, lerr = lockTrack(dir, "fx", true)
				}
				if lerr == nil || !strings.Contains(lerr.Error(), filepath.Join(dir, name)) || !strings.Contains(lerr.Error(), tc.want) {
					t.Errorf("the lock itself: %v, want %q", lerr, tc.want)
				}
				if data, _ := os.ReadFile(out); string(data) != "precious-data-here\n" {
					t.Errorf("the file outside is now %q", data)
				}
				if _, err := os.Lstat(out + ".new"); err == nil {
					t.Error("a file was created through the link")
				}
				if name == LockFile {
					if err := Busy(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
						t.Errorf("Busy: %v", err)
					}
				}
			})
		}
	}
}
