package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
)

func TestMain(m *testing.M) {
	// The runner starts this test binary as its step supervisor, exactly as
	// haloforge starts itself.
	if IsSupervise(os.Args) {
		os.Exit(Supervise(os.Args[2:]))
	}
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperBuild())
	}
	os.Exit(m.Run())
}

const fxPins = "GPU_TARGET=gfx1151\nVLLM_REF=6e448d0ea9bf3d88d898b65449ca6dc2aec170ac\n"

// fx describes one step of a fixture track; scripts are in testdata/scripts/fx.
type fx struct {
	id, script string
	optional   bool
	keeps      bool // KeepsRunning
	deps, pins []string
}

func fxTrack(specs ...fx) steps.Track {
	t := steps.Track{ID: "fx", Title: "fixture track", Env: map[string]string{"FX_UNSET_ME": ""}}
	for _, s := range specs {
		t.Steps = append(t.Steps, steps.Step{ID: s.id, Title: "fixture " + s.id, Script: s.script,
			Optional: s.optional, KeepsRunning: s.keeps, DependsOn: s.deps, Pins: s.pins})
	}
	return t
}

// fxPlan makes a real plan of a fixture track against the state in stateDir.
func fxPlan(t testing.TB, track steps.Track, pinsText, scriptsDir, stateDir string) *steps.Plan {
	t.Helper()
	pf, err := pins.Parse("fx.env", []byte(pinsText))
	if err != nil {
		t.Fatal(err)
	}
	st, err := steps.LoadState(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := steps.NewPlan(track, pf, os.DirFS(scriptsDir), st)
	var mse *steps.MissingScriptError
	if err != nil && !errors.As(err, &mse) {
		t.Fatal(err)
	}
	return p
}

func fxOptions(p *steps.Plan, stateDir string) Options {
	return Options{Plan: p, Workspace: steps.Workspace{StateDir: stateDir, ScriptsDir: "testdata/scripts", ToolboxDir: "/nonexistent-toolbox"},
		Grace: 300 * time.Millisecond, StallCheck: 50 * time.Millisecond}
}

// run runs o to the end, collecting every event; onEvent (may be nil) sees
// each event as it arrives, with the context's cancel.
func run(t *testing.T, o Options, onEvent func(Event, context.CancelFunc)) (*Report, []Event) {
	t.Helper()
	r, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var evs []Event
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range r.Events() {
			evs = append(evs, e)
			if onEvent != nil {
				onEvent(e, cancel)
			}
		}
	}()
	rep, err := r.Run(ctx)
	<-done
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep, evs
}

// kind names an event's type: "RunStarted", "Lines", …
func kind(e Event) string { return strings.TrimPrefix(fmt.Sprintf("%T", e), "runner.") }

// kinds names the events that are not lines, in order.
func kinds(evs []Event) []string {
	var out []string
	for _, e := range evs {
		if _, ok := e.(Lines); !ok {
			out = append(out, kind(e))
		}
	}
	return out
}

// lines is every screen line a step sent, in order.
func lines(evs []Event, step string) []string {
	var out []string
	for _, e := range evs {
		if l, ok := e.(Lines); ok && l.Step == step {
			out = append(out, l.Text...)
		}
	}
	return out
}

// says reports whether e is a Lines event holding the line text.
func says(e Event, text string) bool {
	l, ok := e.(Lines)
	return ok && slices.Contains(l.Text, text)
}

func finished(evs []Event, step string) StepFinished {
	for _, e := range evs {
		if f, ok := e.(StepFinished); ok && f.Step == step {
			return f
		}
	}
	return StepFinished{}
}

func TestRunSucceedsAndRecordsEverything(t *testing.T) {
	dir := t.TempDir()
	track := fxTrack(fx{id: "hello", script: "hello.sh"}, fx{id: "env", script: "env.sh", deps: []string{"hello"}, pins: []string{"GPU_TARGET"}})
	t.Setenv("FX_UNSET_ME", "inherited") // the track's "" value must remove it
	o := fxOptions(fxPlan(t, track, fxPins, "testdata/scripts", dir), dir)
	o.PinsFile = "/somewhere/versions.env"
	rep, evs := run(t, o, nil)

	if rep.Status != steps.OutcomeSucceeded {
		t.Fatalf("run status %q, want succeeded; report %+v", rep.Status, rep)
	}
	want := []string{"RunStarted", "StepStarted", "StepFinished", "StepStarted", "StepFinished", "RunFinished"}
	if got := kinds(evs); !slices.Equal(got, want) {
		t.Errorf("event kinds %v, want %v", got, want)
	}
	// stderr after stdout, with colour: on the screen without the escapes.
	if got := lines(evs, "hello"); !slices.Equal(got, []string{"hello from hello", "warning: this goes to stderr", "done"}) {
		t.Errorf("hello lines %q", got)
	}
	log, err := os.ReadFile(filepath.Join(dir, "runs", rep.RunID, "hello.log"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "hello from hello\r\n\x1b[1;33mwarning:\x1b[0m this goes to stderr\r\ndone\r\n"; string(log) != want {
		t.Errorf("raw log %q, want %q", log, want)
	}
	env := map[string]string{}
	for _, l := range lines(evs, "env") {
		k, v, _ := strings.Cut(l, "=")
		env[k] = v
	}
	runDir := filepath.Join(dir, "runs", rep.RunID)
	wantEnv := map[string]string{
		"HALOFORGE_TRACK": "fx", "HALOFORGE_STEP": "env", "HALOFORGE_RUN_ID": rep.RunID,
		"HALOFORGE_STATE_DIR": dir, "HALOFORGE_RUN_DIR": runDir, "HALOFORGE_CACHE_DIR": filepath.Join(dir, "cache", "fx"),
		"HALOFORGE_TOOLBOX_DIR": "/nonexistent-toolbox", "HALOFORGE_CACHE_KEY": o.Plan.Steps[1].CacheKey,
		"HALOFORGE_PINS_FILE": filepath.Join(runDir, PinsSnapshot), "HALOFORGE_TOOLBOX_ENV_FILE": "<unset>", "HALOFORGE_DRY_RUN": "<unset>", "HALOFORGE_RESUME": "<unset>",
		"HALOFORGE_RESULT_FILE": filepath.Join(runDir, "env.result"),
		"HALOFORGE_FACTS_FILE":  filepath.Join(runDir, "env.facts"),
		"GPU_TARGET":            "gfx1151", "VLLM_REF": "6e448d0ea9bf3d88d898b65449ca6dc2aec170ac", "FX_UNSET_ME": "<unset>",
		"cwd": runDir, "tty": "yes",
	}
	for k, v := range wantEnv {
		if env[k] != v {
			t.Errorf("step env %s=%q, want %q", k, env[k], v)
		}
	}
	if abs, _ := filepath.Abs("testdata/scripts"); env["HALOFORGE_SCRIPTS_DIR"] != abs {
		t.Errorf("HALOFORGE_SCRIPTS_DIR=%q, want %q", env["HALOFORGE_SCRIPTS_DIR"], abs)
	}

	st, err := steps.LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range o.Plan.Steps {
		ss := st.Tracks["fx"].Steps[s.ID]
		if ss.Status != steps.OutcomeSucceeded || ss.LastSuccess == nil || ss.LastSuccess.CacheKey != s.CacheKey || ss.LastSuccess.Duration <= 0 {
			t.Errorf("state of %s = %+v, last success %+v", s.ID, ss, ss.LastSuccess)
		}
	}
	onDisk, err := ReadReport(filepath.Dir(filepath.Dir(runDir)), filepath.Base(runDir))
	if err != nil {
		t.Fatal(err)
	}
	if onDisk.Status != steps.OutcomeSucceeded || len(onDisk.Steps) != 2 || onDisk.Steps[0].Lines != 3 || onDisk.Steps[0].Bytes != int64(len(log)) {
		t.Errorf("report.json = %+v", onDisk)
	}

	// A second plan from the new state finds everything up to date.
	o2 := fxOptions(fxPlan(t, track, fxPins, "testdata/scripts", dir), dir)
	rep2, evs2 := run(t, o2, nil)
	want2 := []string{"RunStarted", "StepSkipped", "StepSkipped", "RunFinished"}
	if got := kinds(evs2); !slices.Equal(got, want2) || rep2.Status != steps.OutcomeSucceeded {
		t.Errorf("second run: events %v status %s, want %v succeeded", got, rep2.Status, want2)
	}
	if r := evs2[1].(StepSkipped).WhySkipped; !strings.HasPrefix(r, "up to date") {
		t.Errorf("skip reason %q", r)
	}
}

func TestFailureStopsTheRunButNotAnOptionalOne(t *testing.T) {
	dir := t.TempDir()
	track := fxTrack(
		fx{id: "maybe", script: "fail.sh", optional: true},
		fx{id: "hello", script: "hello.sh"},
		fx{id: "broken", script: "fail.sh"},
		fx{id: "after", script: "hello.sh", deps: []string{"broken"}},
	)
	o := fxOptions(fxPlan(t, track, fxPins, "testdata/scripts", dir), dir)
	rep, evs := run(t, o, nil)
	if rep.Status != steps.OutcomeFailed {
		t.Fatalf("run status %q, want failed", rep.Status)
	}
	got := []string{}
	for _, s := range rep.Steps {
		got = append(got, s.ID+":"+s.Status)
	}
	want := []string{"maybe:failed", "hello:succeeded", "broken:failed", "after:" + StatusNotRun}
	if !slices.Equal(got, want) {
		t.Errorf("steps %v, want %v", got, want)
	}
	f := finished(evs, "broken")
	if f.ExitCode != 3 || len(f.Tail) != tailLines || f.Tail[len(f.Tail)-1] != "error: the compiler gave up" {
		t.Errorf("broken finished: exit %d, tail %q", f.ExitCode, f.Tail)
	}
	if rep.Steps[3].Reason != "broken failed" {
		t.Errorf("after: reason %q", rep.Steps[3].Reason)
	}
	st, _ := steps.LoadState(dir)
	if ss := st.Tracks["fx"].Steps["broken"]; ss.Status != steps.OutcomeFailed || ss.ExitCode != 3 || ss.LastSuccess != nil {
		t.Errorf("state of broken: %+v", ss)
	}
}

// pidsAlive returns the pids listed in file that still run (zombies aside).
func pidsAlive(t *testing.T, file string) (all, alive []int) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, pid)
		if _, state, ok := procStat(pid); ok && state != 'Z' {
			alive = append(alive, pid)
		}
	}
	return all, alive
}

func TestInterruptKillsEveryProcessOfTheStep(t *testing.T) {
	dir := t.TempDir()
	track := fxTrack(fx{id: "stubborn", script: "stubborn.sh"}, fx{id: "after", script: "hello.sh"})
	o := fxOptions(fxPlan(t, track, fxPins, "testdata/scripts", dir), dir)
	var stopAt time.Time
	rep, evs := run(t, o, func(e Event, cancel context.CancelFunc) {
		if says(e, "ready") {
			stopAt = time.Now()
			cancel()
		}
	})
	took := time.Since(stopAt)
	if rep.Status != steps.OutcomeInterrupted || rep.Steps[0].Status != steps.OutcomeInterrupted || rep.Steps[1].Status != StatusNotRun {
		t.Fatalf("statuses run %s, steps %s %s", rep.Status, rep.Steps[0].Status, rep.Steps[1].Status)
	}
	all, alive := pidsAlive(t, filepath.Join(dir, "runs", rep.RunID, "pids"))
	if len(all) != 4 || len(alive) != 0 {
		t.Errorf("step processes %v, still alive %v", all, alive)
	}
	// The script ignores SIGTERM, so only SIGKILL after the grace ended it.
	if took < o.Grace || took > o.Grace+5*time.Second {
		t.Errorf("stop took %v with a grace of %v", took, o.Grace)
	}
	st, _ := steps.LoadState(dir)
	if ss := st.Tracks["fx"].Steps["stubborn"]; ss.Status != steps.OutcomeInterrupted {
		t.Errorf("state says %q", ss.Status)
	}
	if last, ok := evs[len(evs)-1].(RunFinished); !ok || last.Status != steps.OutcomeInterrupted {
		t.Errorf("last event %+v", last)
	}
}

func TestKillSkipsTheGracePeriod(t *testing.T) {
	dir := t.TempDir()
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "stubborn", script: "stubborn.sh"}), fxPins, "testdata/scripts", dir), dir)
	o.Grace = time.Minute
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for e := range r.Events() {
			if says(e, "ready") {
				cancel()
				r.Kill()
			}
		}
	}()
	start := time.Now()
	rep, err := r.Run(ctx)
	if err != nil || rep.Status != steps.OutcomeInterrupted {
		t.Fatalf("Run: %v, status %v", err, rep)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("Kill still waited %v of a one-minute grace", took)
	}
	if _, alive := pidsAlive(t, filepath.Join(dir, "runs", rep.RunID, "pids")); len(alive) != 0 {
		t.Errorf("still alive: %v", alive)
	}
}

func TestResumeContinuesWhereTheRunStopped(t *testing.T) {
	dir := t.TempDir()
	track := fxTrack(fx{id: "hello", script: "hello.sh"}, fx{id: "gate", script: "gate.sh", deps: []string{"hello"}})
	o := fxOptions(fxPlan(t, track, fxPins, "testdata/scripts", dir), dir)
	rep, _ := run(t, o, func(e Event, cancel context.CancelFunc) {
		if says(e, "ready") {
			cancel()
		}
	})
	if rep.Status != steps.OutcomeInterrupted {
		t.Fatalf("first run %s", rep.Status)
	}
	if err := os.WriteFile(filepath.Join(dir, "cache", "fx", "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	o = fxOptions(fxPlan(t, track, fxPins, "testdata/scripts", dir), dir)
	o.Resume = true
	rep2, evs := run(t, o, nil)
	if rep2.Status != steps.OutcomeSucceeded || rep2.Steps[0].Status != steps.OutcomeSkipped || rep2.Steps[1].Status != steps.OutcomeSucceeded {
		t.Fatalf("resumed run: %+v", rep2)
	}
	if got := lines(evs, "gate"); !slices.Equal(got, []string{"resume=1", "gate open"}) {
		t.Errorf("gate printed %q", got)
	}
	if len(rep2.Notices) == 0 || !strings.Contains(rep2.Notices[0], "resuming run "+rep.RunID+": gate (interrupted)") {
		t.Errorf("notices %q", rep2.Notices)
	}
}

func TestResumeAfterPinsChangedReplansAndSaysWhy(t *testing.T) {
	dir := t.TempDir()
	track := fxTrack(
		fx{id: "hello", script: "hello.sh", pins: []string{"GPU_TARGET"}},
		fx{id: "env", script: "env.sh", pins: []string{"VLLM_REF"}},
		fx{id: "broken", script: "fail.sh", deps: []string{"env"}},
	)
	rep, _ := run(t, fxOptions(fxPlan(t, track, fxPins, "testdata/scripts", dir), dir), nil)
	if rep.Status != steps.OutcomeFailed {
		t.Fatalf("first run %s", rep.Status)
	}
	bumped := strings.Replace(fxPins, "6e448d0ea9bf3d88d898b65449ca6dc2aec170ac", "0123456789abcdef0123456789abcdef01234567", 1)
	o := fxOptions(fxPlan(t, track, bumped, "testdata/scripts", dir), dir)
	o.Resume = true
	rep2, _ := run(t, o, nil)
	got := []string{}
	for _, s := range rep2.Steps {
		got = append(got, s.ID+":"+s.Status)
	}
	if want := []string{"hello:skipped", "env:succeeded", "broken:failed"}; !slices.Equal(got, want) {
		t.Errorf("resumed steps %v, want %v", got, want)
	}
	joined := strings.Join(rep2.Notices, "\n")
	for _, want := range []string{"resuming run " + rep.RunID, "VLLM_REF 6e448d0ea9bf3d88d898b65449ca6dc2aec170ac -> 0123456789abcdef0123456789abcdef01234567", "runs again: env"} {
		if !strings.Contains(joined, want) {
			t.Errorf("notices %q lack %q", joined, want)
		}
	}
}

func TestResumeWithoutAnEarlierRunIsBadInput(t *testing.T) {
	dir := t.TempDir()
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "hello", script: "hello.sh"}), fxPins, "testdata/scripts", dir), dir)
	o.Resume = true
	if _, err := New(o); err == nil || !strings.Contains(err.Error(), "nothing to resume") {
		t.Errorf("New: %v", err)
	}
}

func TestNewRefusesBadInputBeforeAnythingRuns(t *testing.T) {
	scripts := t.TempDir()
	if err := os.CopyFS(scripts, os.DirFS("testdata/scripts")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(scripts, "fx", "hello.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		track  steps.Track
		change func(*Options)
		want   string
	}{
		{"missing script", fxTrack(fx{id: "a", script: "env.sh"}, fx{id: "b", script: "no-such.sh"}), nil, "step b: script " + filepath.Join(scripts, "fx", "no-such.sh") + ": no such file"},
		{"script not executable", fxTrack(fx{id: "a", script: "hello.sh"}), nil, "is not executable (chmod +x"},
		{"state dir under a file", fxTrack(fx{id: "a", script: "env.sh"}), func(o *Options) { o.StateDir = filepath.Join(notDir, "state") }, "cannot be created: not a directory"},
		{"unknown --only step", fxTrack(fx{id: "a", script: "env.sh"}), func(o *Options) { o.Only = []string{"a", "zz"} }, `has no step "zz"`},
		{"unknown --from step", fxTrack(fx{id: "a", script: "env.sh"}), func(o *Options) { o.From = "zz" }, `has no step "zz"`},
		{"--from with --only", fxTrack(fx{id: "a", script: "env.sh"}), func(o *Options) { o.From, o.Only = "a", []string{"a"} }, "do not go together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			o := fxOptions(fxPlan(t, tt.track, fxPins, scripts, dir), dir)
			o.ScriptsDir = scripts
			if tt.change != nil {
				tt.change(&o)
			}
			_, err := New(o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v, want an error with %q", err, tt.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "runs")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a runs dir exists after a refused start: %v", err)
			}
		})
	}
}

func TestSelection(t *testing.T) {
	dir := t.TempDir()
	track := fxTrack(fx{id: "a", script: "hello.sh"}, fx{id: "b", script: "hello.sh"}, fx{id: "c", script: "hello.sh"})
	// Everything succeeded once, so the cache alone would skip all.
	run(t, fxOptions(fxPlan(t, track, fxPins, "testdata/scripts", dir), dir), nil)
	tests := []struct {
		name   string
		change func(*Options)
		want   []string
	}{
		{"cache", func(*Options) {}, []string{"a:skipped", "b:skipped", "c:skipped"}},
		{"from", func(o *Options) { o.From = "b" }, []string{"a:skipped", "b:succeeded", "c:succeeded"}},
		{"only", func(o *Options) { o.Only = []string{"c", "a"} }, []string{"a:succeeded", "b:skipped", "c:succeeded"}},
		{"skip", func(o *Options) { o.From, o.Skip = "a", []string{"b"} }, []string{"a:succeeded", "b:skipped", "c:succeeded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := fxOptions(fxPlan(t, track, fxPins, "testdata/scripts", dir), dir)
			tt.change(&o)
			rep, _ := run(t, o, nil)
			var got []string
			for _, s := range rep.Steps {
				got = append(got, s.ID+":"+s.Status)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if len(o.Skip) > 0 && rep.Steps[1].Reason != "skipped by you" {
				t.Errorf("a skipped step says %q", rep.Steps[1].Reason)
			}
		})
	}
}

func TestDryRunRunsEverythingAndChangesNoState(t *testing.T) {
	dir := t.TempDir()
	track := fxTrack(fx{id: "dry", script: "dryrun.sh", pins: []string{"VLLM_REF"}})
	o := fxOptions(fxPlan(t, track, fxPins, "testdata/scripts", dir), dir)
	o.DryRun = true
	for range 2 { // the second time it must run again: no cache in a dry run
		rep, evs := run(t, o, nil)
		if rep.Status != steps.OutcomeSucceeded || !rep.DryRun {
			t.Fatalf("dry run: %+v", rep)
		}
		if got := lines(evs, "dry"); !slices.Equal(got, []string{"+ would run: podman pull 6e448d0ea9bf3d88d898b65449ca6dc2aec170ac"}) {
			t.Errorf("dry run printed %q", got)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, steps.StateFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dry run wrote state.json: %v", err)
	}
}

func TestHostileOutputNeverReachesTheScreen(t *testing.T) {
	dir := t.TempDir()
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "hostile", script: "hostile.sh"}), fxPins, "testdata/scripts", dir), dir)
	o.KeepColor = true
	rep, evs := run(t, o, nil)
	want := []string{"clipboard", "title", "link", "upclear", "bell", "nulbytes", "bad\ufffd\ufffdutf8", "100%"}
	if got := lines(evs, "hostile"); !slices.Equal(got, want) {
		t.Errorf("screen lines %q, want %q", got, want)
	}
	raw, err := os.ReadFile(rep.Steps[0].Log)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{[]byte("\x1b]52;c;cm0gLXJmIH4vCg==\x07"), {0, 0}, {0xff, 0xfe}} {
		if !bytes.Contains(raw, b) {
			t.Errorf("log lacks raw bytes %q", b)
		}
	}
}

func TestHugeLineAndUnendedOutput(t *testing.T) {
	dir := t.TempDir()
	track := fxTrack(fx{id: "big", script: "bigline.sh"}, fx{id: "nonl", script: "nonl.sh"})
	o := fxOptions(fxPlan(t, track, fxPins, "testdata/scripts", dir), dir)
	o.MaxLine = 1000
	rep, evs := run(t, o, nil)
	if rep.Status != steps.OutcomeSucceeded {
		t.Fatalf("status %s", rep.Status)
	}
	if fi, err := os.Stat(rep.Steps[0].Log); err != nil || fi.Size() != int64(10<<20+len("\r\nafter\r\n")) {
		t.Errorf("big log: %v, %d bytes", err, fi.Size())
	}
	var big []string
	var cut []int
	for _, e := range evs {
		if l, ok := e.(Lines); ok && l.Step == "big" {
			big = append(big, l.Text...)
			if l.Cut == nil {
				l.Cut = make([]int, len(l.Text))
			}
			cut = append(cut, l.Cut...)
		}
	}
	if len(big) != 2 || len(big[0]) != 1000 || big[1] != "after" || !slices.Equal(cut, []int{10<<20 - 1000, 0}) {
		t.Errorf("big lines: %d, first %d bytes, cut %v; want 1000 bytes, then after, cut %d", len(big), len(big[0]), cut, 10<<20-1000)
	}
	nonl := lines(evs, "nonl")
	if len(nonl) != 1 || !strings.HasPrefix(nonl[0], "chunk1 chunk2 ") {
		t.Errorf("unended output gave %d lines", len(nonl))
	}
	if rep.Steps[1].Lines != 1 {
		t.Errorf("report counts %d lines for the unended output", rep.Steps[1].Lines)
	}
}

// fakeAnalyzer stands in for diagnose.Matcher (tested in its own package):
// it flags lines holding "error:" and a silence longer than stall.
type fakeAnalyzer struct {
	stall    time.Duration
	found    []diagnose.Finding
	stalled  bool
	errored  bool
	lineSeen int
}

func (a *fakeAnalyzer) Line(n int, text string) []diagnose.Finding {
	a.lineSeen++
	if !strings.Contains(text, "error:") || a.errored {
		return nil
	}
	a.errored = true
	// One line that starts two families at once, as a real one can.
	fs := []diagnose.Finding{
		{Family: "FX-ERROR", Line: n, Text: text, Summary: "the fixture failed", Fix: "touch it", Count: 1},
		{Family: "FX-ALSO", Line: n, Text: text, Summary: "and something else", Fix: "look", Count: 1},
	}
	a.found = append(a.found, fs...)
	return fs
}

func (a *fakeAnalyzer) Idle(since time.Duration) []diagnose.Finding {
	if since < a.stall || a.stalled {
		return nil
	}
	a.stalled = true
	f := diagnose.Finding{Family: "FX-STALL", Summary: "no output", Fix: "wait", Stall: true}
	a.found = append(a.found, f)
	return []diagnose.Finding{f}
}

func (a *fakeAnalyzer) End() []diagnose.Finding {
	return append(a.found, diagnose.Finding{Family: "FX-END", Summary: "seen at the end"})
}

// TestDiagnosisIsTheMatcher checks the real analyser end to end on a real
// excerpt (corpus row f002, ROCm/TheRock#2269): the finding comes with its
// line, once, and again at the end.
func TestDiagnosisIsTheMatcher(t *testing.T) {
	a := Diagnosis("therock-toolbox", "rocm")
	var got []string
	for i, l := range []string{">>> import torch", "double free or corruption (!prev)", "double free or corruption (!prev)", "Aborted (core dumped)"} {
		for _, f := range a.Line(i+1, l) {
			got = append(got, fmt.Sprintf("%s@%d", f.Family, f.Line))
		}
	}
	if want := []string{"therock-amdsmi-double-free@2"}; !slices.Equal(got, want) {
		t.Errorf("live findings %v, want %v", got, want)
	}
	if fs := a.Idle(time.Hour); fs != nil {
		t.Errorf("idle after a crash: %v", fs)
	}
	if end := a.End(); len(end) != 1 || end[0].Family != "therock-amdsmi-double-free" || end[0].Count != 2 {
		t.Errorf("end %+v", end)
	}
}

func TestFindingsReachEventsAndReport(t *testing.T) {
	for _, color := range []bool{false, true} {
		t.Run(fmt.Sprintf("color=%v", color), func(t *testing.T) { testFindings(t, color) })
	}
}

func testFindings(t *testing.T, color bool) {
	dir := t.TempDir()
	track := fxTrack(fx{id: "quiet", script: "quiet.sh"}, fx{id: "broken", script: "fail.sh"})
	o := fxOptions(fxPlan(t, track, fxPins, "testdata/scripts", dir), dir)
	o.KeepColor = color
	t.Setenv("FX_QUIET", "0.6")
	var mu sync.Mutex
	made := map[string]*fakeAnalyzer{}
	o.Analyzer = func(track, step string) Analyzer {
		mu.Lock()
		defer mu.Unlock()
		a := &fakeAnalyzer{stall: time.Hour}
		if step == "quiet" { // only this one is silent on purpose; a loaded machine may pause the others
			a.stall = 300 * time.Millisecond
		}
		made[track+"/"+step] = a
		return a
	}
	rep, evs := run(t, o, nil)
	var got []string
	for _, e := range evs {
		if f, ok := e.(Found); ok {
			got = append(got, f.Step+":"+f.Finding.Family)
		}
	}
	want := []string{"quiet:FX-STALL", "quiet:FX-END", "broken:FX-ERROR", "broken:FX-ALSO", "broken:FX-END"}
	if !slices.Equal(got, want) {
		t.Errorf("finding events %v, want %v", got, want)
	}
	// The screen gets the failing line before the finding about it.
	var screen []string
	for _, e := range evs {
		switch e := e.(type) {
		case Lines:
			if e.Step == "broken" {
				screen = append(screen, e.Text...)
			}
		case Found:
			if e.Finding.Family == "FX-ERROR" {
				screen = append(screen, "FINDING")
			}
		}
	}
	if i := slices.Index(screen, "FINDING"); i < 1 || !slices.Contains(screen[:i], "error: the compiler gave up") {
		t.Errorf("finding came before its line: %q", screen)
	}
	b := rep.Steps[1]
	if len(b.Findings) != 3 || b.Findings[0].Line != 31 || b.Findings[0].Step != "broken" {
		t.Errorf("broken findings %+v", b.Findings)
	}
	if made["fx/broken"].lineSeen != 31 {
		t.Errorf("analyser saw %d lines, want 31", made["fx/broken"].lineSeen)
	}
	if f := finished(evs, "broken"); len(f.Findings) != 3 {
		t.Errorf("finished event findings %+v", f.Findings)
	}
}

func TestSlowConsumerDropsLinesNotBytes(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("FX_LINES", "20000") // 2 MB
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "lines", script: "lines.sh"}), fxPins, "testdata/scripts", dir), dir)
	// One event of room and a consumer far slower than the step: 2 MB is
	// at least 8 reads of the log (256 KiB each), so some must be dropped.
	o.Events = 1
	shown, dropped := 0, 0
	rep, _ := run(t, o, func(e Event, _ context.CancelFunc) {
		switch e := e.(type) {
		case Lines:
			shown += len(e.Text)
			dropped += e.Dropped
			time.Sleep(20 * time.Millisecond)
		case StepFinished:
			dropped += e.Dropped
		}
	})
	if fi, err := os.Stat(rep.Steps[0].Log); err != nil || fi.Size() != int64(20000*101) {
		t.Fatalf("log: %v %d bytes, want %d", err, fi.Size(), 20000*101)
	}
	if shown+dropped != 20000 || dropped == 0 {
		t.Errorf("shown %d + dropped %d, want 20000 with some dropped", shown, dropped)
	}
	if rep.Steps[0].Lines != 20000 {
		t.Errorf("report lines %d", rep.Steps[0].Lines)
	}
}

func TestLockKeepsASecondRunOut(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "hello", script: "hello.sh"}), fxPins, "testdata/scripts", dir), dir)
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range r.Events() {
		}
	}()
	_, err = r.Run(context.Background())
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), fmt.Sprintf("(pid %d)", os.Getpid())) {
		t.Errorf("Run with the state dir locked: %v (want the holder's pid)", err)
	}
}

// TestLockOfADeadBuildIsNotStale: a build killed with -9 leaves its lock
// file, naming its pid; the next build takes the lock all the same.
func TestLockOfADeadBuildIsNotStale(t *testing.T) {
	dir := t.TempDir()
	holder := exec.Command("sh", "-c", `exec 9>>"$1/lock"; flock -x 9; echo "$$" >"$1/lock"; echo locked; exec sleep 60`, "sh", dir)
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := out.Read(make([]byte, 7)); err != nil {
		t.Fatal(err)
	}
	if _, err := lockStateDir(dir); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), fmt.Sprintf("(pid %d)", holder.Process.Pid)) {
		t.Fatalf("while another process holds it: %v", err)
	}
	_ = holder.Process.Kill()
	_ = holder.Wait()
	unlock, err := lockStateDir(dir)
	if err != nil {
		t.Fatalf("after its holder died: %v", err)
	}
	unlock()
}

func TestStateJSONIsValidAfterEachStep(t *testing.T) {
	// state.json is read while the step runs: it must be whole and say running.
	dir := t.TempDir()
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "gate", script: "gate.sh"}), fxPins, "testdata/scripts", dir), dir)
	var during *steps.State
	run(t, o, func(e Event, cancel context.CancelFunc) {
		if says(e, "ready") {
			b, err := os.ReadFile(filepath.Join(dir, steps.StateFile))
			if err == nil {
				during = steps.NewState()
				err = json.Unmarshal(b, during)
			}
			if err != nil {
				t.Errorf("state.json during the step: %v", err)
			}
			cancel()
		}
	})
	if during == nil || during.Tracks["fx"].Steps["gate"].Status != steps.OutcomeRunning {
		t.Errorf("state during the step: %+v", during)
	}
}

func TestLogKeepsEveryByte(t *testing.T) {
	// 4 MiB of random bytes: escapes, NULs, invalid UTF-8, no newline (the
	// pty would turn "\n" into "\r\n"): the log must be the same bytes.
	data := make([]byte, 4<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.IntN(256))
		if data[i] == '\n' {
			data[i] = 'n'
		}
	}
	file := filepath.Join(t.TempDir(), "random")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FX_FILE", file)
	dir := t.TempDir()
	for _, color := range []bool{false, true} {
		o := fxOptions(fxPlan(t, fxTrack(fx{id: "cat", script: "cat.sh"}), fxPins, "testdata/scripts", dir), dir)
		o.KeepColor, o.DryRun = color, true // dry run: no cache, it runs twice
		rep, _ := run(t, o, nil)
		got, err := os.ReadFile(rep.Steps[0].Log)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) || rep.Steps[0].Bytes != int64(len(data)) {
			t.Errorf("color=%v: log has %d bytes (report %d), want the %d bytes printed", color, len(got), rep.Steps[0].Bytes, len(data))
		}
	}
}

func TestPeakRSSStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 160 MiB")
	}
	// The fast version of BenchmarkPeakRSS: a separate process streams
	// 160 MiB of build output through the runner and line mode.
	file := writeBuildLog(t, 160<<20)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir, "FX_FILE="+file)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	status := string(mustRead(t, filepath.Join(dir, "status")))
	i := strings.Index(status, "VmHWM:")
	if i < 0 {
		t.Fatalf("no VmHWM in %s", status)
	}
	kb, err := strconv.Atoi(strings.Fields(status[i+len("VmHWM:"):])[0])
	if err != nil {
		t.Fatal(err)
	}
	if kb > 100_000 {
		t.Errorf("peak RSS %d kB streaming 160 MiB; want under 100 MB", kb)
	}
	t.Logf("peak RSS %d kB", kb)
}

func TestLeftoverProcessDoesNotHangTheStep(t *testing.T) {
	// The step exits, but a process it left keeps the pty open, so the
	// reader never sees EIO: the step must still end, after the drain time.
	dir := t.TempDir()
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "leftover", script: "leftover.sh"}, fx{id: "hello", script: "hello.sh"}), fxPins, "testdata/scripts", dir), dir)
	start := time.Now()
	rep, evs := run(t, o, nil)
	took := time.Since(start)
	t.Cleanup(func() {
		_, alive := pidsAlive(t, filepath.Join(rep.RunDir, "pids"))
		for _, pid := range alive {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if rep.Status != steps.OutcomeSucceeded || rep.Steps[0].Status != steps.OutcomeSucceeded {
		t.Fatalf("statuses: %+v", rep)
	}
	if got := lines(evs, "leftover"); !slices.Equal(got, []string{"left one behind"}) {
		t.Errorf("leftover printed %q", got)
	}
	if took > drainAfterExit+10*time.Second {
		t.Errorf("the run took %v", took)
	}
}
