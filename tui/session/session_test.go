package session

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/tui"
	"github.com/haloforge/haloforge/tui/demo"
)

// TestMain lets this test binary be the runner's step supervisor, as the
// haloforge binary is (/proc/self/exe __supervise).
func TestMain(m *testing.M) {
	if runner.IsSupervise(os.Args) {
		os.Exit(runner.Supervise(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func newTestDemo(t *testing.T) *Demo {
	t.Helper()
	t.Setenv(demo.SpeedEnv, "1000")
	e, err := NewDemo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestDemoDetectionIsStrixHalo(t *testing.T) {
	e := newTestDemo(t)
	d, err := e.Detect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if g := d.Primary(); g == nil || deref(g.GFX) != "gfx1151" || deref(g.PCIID) != "1002:1586" {
		t.Fatalf("demo GPU = %+v, want gfx1151 1002:1586", g)
	}
	if d.RecommendedTrack != demo.TrackID {
		t.Errorf("recommended = %q, want %s", d.RecommendedTrack, demo.TrackID)
	}
	if len(d.Checks) == 0 {
		t.Error("no doctor checks on the demo machine")
	}
}

// TestDemoPlansOnlyItsTrack: the demo runs its own track; every other
// track's plan can be read, but not run.
func TestDemoPlansOnlyItsTrack(t *testing.T) {
	e := newTestDemo(t)
	p, err := e.Plan(demo.TrackID)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(p.Steps); got != 7 {
		t.Fatalf("demo plan has %d steps, want 7", got)
	}
	for _, s := range p.Steps {
		if !s.WillRun {
			t.Errorf("step %s is cached in a fresh demo", s.ID)
		}
	}
	if p.ReadOnly != "" {
		t.Errorf("the demo's own track is read-only: %q", p.ReadOnly)
	}
	other, err := e.Plan("ollama")
	if err != nil {
		t.Fatalf("the demo refuses even to show another track's plan: %v", err)
	}
	if len(other.Steps) == 0 || !strings.Contains(other.ReadOnly, "The demo runs therock-toolbox only") {
		t.Errorf("another track's plan in the demo: %d steps, read-only %q", len(other.Steps), other.ReadOnly)
	}
	if _, err := e.Start(context.Background(), tui.RunRequest{Track: "ollama"}); err == nil || !strings.Contains(err.Error(), "for reading") {
		t.Errorf("starting another track in the demo: err = %v, want the demo's explanation", err)
	}
}

// TestDemoStoryLineMode runs the real runner on the demo's replay scripts:
// rocm fails with the family, the fix is applied, the retry goes to the end.
func TestDemoStoryLineMode(t *testing.T) {
	e := newTestDemo(t)
	e.Run.Supervisor = []string{os.Args[0], runner.SuperviseArg}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Story(ctx, e, &out, StoryOptions{Run: true, Retries: 1})
	if err != nil {
		t.Fatalf("story: %v\n%s", err, out.String())
	}
	text := out.String()
	if res.Status != steps.OutcomeSucceeded {
		t.Fatalf("status = %q, want succeeded:\n%s", res.Status, text)
	}
	for _, want := range []string{
		"gfx1151", "[rocm] double free or corruption (!prev)", "\n✗ rocm failed (exit 134) after ", "\n  diagnosis " + demo.FailureFamily,
		"Applied the fix for " + demo.FailureFamily, "\nnote: resuming run ", ": rocm (failed)\n", "\n✓ verify ", "== therock-toolbox is built",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("story lacks %q:\n%s", want, text)
		}
	}
	if !demo.FixApplied(e.StateDir) {
		t.Error("the demo's fix marker is missing after the story")
	}
	fail := strings.Index(text, "diagnosis "+demo.FailureFamily)
	if done := strings.Index(text, "\n✓ verify "); fail < 0 || done < fail {
		t.Error("the story does not fail first and finish after the fix")
	}
}

func TestStoryWithoutRunStopsAtThePlan(t *testing.T) {
	e := newTestDemo(t)
	var out bytes.Buffer
	res, err := Story(context.Background(), e, &out, StoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "" || !strings.Contains(out.String(), "Start it with: haloforge build --track therock-toolbox") {
		t.Errorf("status %q, output:\n%s", res.Status, out.String())
	}
	if _, err := os.Stat(filepath.Join(e.StateDir, "runs")); err == nil {
		t.Error("a story without Run started a run")
	}
}

func TestDiagnoseFileAndBundle(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "rocm.log")
	// The real excerpt of corpus row f002 (ROCm/TheRock#2269).
	text := ">>> import torch\n>>> [reprod: Press Ctrl-D to quit]\ndouble free or corruption (!prev)\nAborted (core dumped)\n"
	if err := os.WriteFile(log, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	e := &Engine{}
	for _, path := range []string{log, dir} {
		fs, err := e.Diagnose(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != 1 || fs[0].Family != demo.FailureFamily || fs[0].Line != 3 {
			t.Errorf("Diagnose(%s) = %+v, want one %s at line 3", path, fs, demo.FailureFamily)
		}
	}
	if _, err := e.Diagnose(filepath.Join(dir, "missing.log")); err == nil {
		t.Error("a missing file diagnosed without error")
	}
}

func TestRunnableExceptDropsSkippedAndCached(t *testing.T) {
	p := &steps.Plan{Steps: []steps.PlannedStep{
		{Step: steps.Step{ID: "rocm"}, WillRun: false},
		{Step: steps.Step{ID: "aiter"}, WillRun: true},
		{Step: steps.Step{ID: "vllm"}, WillRun: true},
		{Step: steps.Step{ID: "verify"}, WillRun: true},
	}}
	got := strings.Join(runnableExcept(p, []string{"aiter"}), ",")
	if got != "vllm,verify" {
		t.Errorf("runnableExcept = %s, want vllm,verify", got)
	}
}

// TestDetectPassesTheReport: the detection screen gets the detector's own
// report, with the track steps recommends for it and where it came from.
func TestDetectPassesTheReport(t *testing.T) {
	r, err := demoDetector(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{Source: "x", Detector: func(context.Context) (*detect.Report, error) { return r, nil }}
	d, err := e.Detect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.Report != r || d.Source != "x" || d.RecommendedTrack == "" || d.RecommendedTrack != steps.RecommendFor(r) {
		t.Errorf("detection %+v of report %p, recommended %q", d, r, steps.RecommendFor(r))
	}
}

// TestStoryWithoutGPUOffersDemo analyses an empty bundle (a machine where
// nothing was found) and expects the story to say so and offer the demo.
func TestStoryWithoutGPUOffersDemo(t *testing.T) {
	e := &Engine{Source: "this machine", Detector: func(context.Context) (*detect.Report, error) {
		return detect.Analyse(detect.NewBundle()), nil
	}}
	var out bytes.Buffer
	res, err := Story(context.Background(), e, &out, StoryOptions{Run: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NoGPU || res.Status != "" {
		t.Errorf("outcome %+v, want no GPU and nothing run", res)
	}
	for _, want := range []string{"No AMD GPU found", "haloforge demo", "No track fits this machine"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("story lacks %q:\n%s", want, out.String())
		}
	}
}

// TestStoryOnAnNVIDIAMachine: on a machine whose only GPU is NVIDIA's the
// story names it, offers the demo, lists the checks that still matter and
// folds those about an AMD GPU into one line, with no advice to load
// amdgpu.
func TestStoryOnAnNVIDIAMachine(t *testing.T) {
	b, err := detect.ReadBundle("../../detect/testdata/bundles/nvidia-h100-sysfs")
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{Source: "this machine", Detector: func(context.Context) (*detect.Report, error) { return detect.Analyse(b), nil }}
	var out bytes.Buffer
	if _, err := Story(context.Background(), e, &out, StoryOptions{}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"NVIDIA H100", "haloforge demo", "container-engine", "checks about an AMD GPU: this machine has none"} {
		if !strings.Contains(got, want) {
			t.Errorf("story lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"modprobe amdgpu", "kfd-access", detect.SkipNoAMD} {
		if strings.Contains(got, not) {
			t.Errorf("story says %q:\n%s", not, got)
		}
	}
}

func TestPlanViewExpandsNextCommands(t *testing.T) {
	e := newTestDemo(t)
	p, err := e.Plan(demo.TrackID)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Next[2]; !strings.HasPrefix(got, "distrobox enter haloforge-therock -- ") {
		t.Errorf("next[2] = %q, want the toolbox name filled in", got)
	}
	got := expandNext([]string{"$HALOFORGE_STATE_DIR/x.sh $UNKNOWN <model>"}, map[string]string{}, "/s")
	if got[0] != "/s/x.sh $UNKNOWN <model>" {
		t.Errorf("expandNext = %q", got[0])
	}
}

// TestStoryInterrupted cancels the story mid-step, as Ctrl-C does: the
// runner stops the step and records it; the story says how to go on.
func TestStoryInterrupted(t *testing.T) {
	t.Setenv(demo.SpeedEnv, "1") // realistic pace: the first step is still running
	e, err := NewDemo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e.Run.Grace = time.Second
	e.Run.Supervisor = []string{os.Args[0], runner.SuperviseArg}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	var out bytes.Buffer
	res, err := Story(ctx, e, &out, StoryOptions{Run: true, Retries: 1, Demo: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != steps.OutcomeInterrupted || !res.Interrupted {
		t.Fatalf("outcome %+v, want interrupted:\n%s", res, out.String())
	}
	if !strings.Contains(out.String(), "== Interrupted. `haloforge demo` tells the story again") {
		t.Errorf("story end:\n%s", out.String())
	}
	st, err := steps.LoadState(e.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if s := st.Track(demo.TrackID).Steps["toolbox"]; s == nil || s.Status != steps.OutcomeInterrupted {
		t.Errorf("state of toolbox: %+v, want interrupted", s)
	}
}

// TestStoryEndSaysNotVerified: the story's last word on a run whose outcome
// could not be proven is "not verified", with the steps, never "built" alone.
func TestStoryEndSaysNotVerified(t *testing.T) {
	var out bytes.Buffer
	p := &printer{w: &out}
	p.end(Outcome{Track: "therock-toolbox", Status: steps.OutcomeNotVerified, NotVerified: []string{"verify"}}, []string{"distrobox enter x"}, "")
	if want := "\n== therock-toolbox is built, not verified: verify\nnext: distrobox enter x\n"; out.String() != want {
		t.Errorf("end = %q, want %q", out.String(), want)
	}
}

// TestShellEntersOnlyTheTracksOwnExistingBox: s opens the
// track's own box (therock-toolbox: TOOLBOX_NAME; llamacpp-distro:
// LLAMACPP_DISTRO_BOX), only when the container exists, and never asks
// distrobox to create one; a track without a box says so.
func TestShellEntersOnlyTheTracksOwnExistingBox(t *testing.T) {
	bin := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("distrobox", "exit 0")
	write("podman", `[ "$5" = haloforge-therock ] || [ "$5" = haloforge-llamacpp ]`) // container inspect --format X NAME
	t.Setenv("PATH", bin)
	t.Setenv("DBX_CONTAINER_MANAGER", "")
	t.Setenv("HALOFORGE_DISTROBOX_ROOT", "")
	pf, err := demo.Pins()
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{Workspace: steps.Workspace{Pins: pf}}
	c, why := e.Shell("therock-toolbox")
	if c == nil || strings.Join(c.Args[1:], " ") != "enter haloforge-therock" {
		t.Fatalf("therock-toolbox: %v %q, want distrobox enter haloforge-therock", c, why)
	}
	if c, why := e.Shell("vllm-image"); c != nil || !strings.Contains(why, "vllm-image builds no distrobox") {
		t.Errorf("vllm-image: %v %q", c, why)
	}
	if err := pf.Set("TOOLBOX_NAME=not-created-yet"); err != nil {
		t.Fatal(err)
	}
	if c, why := e.Shell("therock-toolbox"); c != nil || !strings.Contains(why, "The box not-created-yet does not exist yet") || !strings.Contains(why, "--only toolbox") {
		t.Errorf("a box that does not exist: %v %q, want how to create it", c, why)
	}
}

// The track's next commands carry the user's global flags, so that typed
// as printed they find the same state dir, scripts and pins; a launcher
// script is left as it is.
func TestNextCommandsCarryFlags(t *testing.T) {
	tr, err := steps.Lookup("vllm-image")
	if err != nil {
		t.Fatal(err)
	}
	next := NextCommands(&steps.Plan{Track: tr, Env: map[string]string{}}, "/tmp/st", "--scripts", "/s", "--state-dir", "/tmp/st")
	want := []string{
		"haloforge serve --track vllm-image --model <model> --scripts /s --state-dir /tmp/st",
		"/tmp/st/vllm-image/start-vllm.sh <model>",
	}
	if strings.Join(next, "\n") != strings.Join(want, "\n") {
		t.Errorf("next = %q, want %q", next, want)
	}
	if bare := NextCommands(&steps.Plan{Track: tr}, ""); bare[0] != "haloforge serve --track vllm-image --model <model>" {
		t.Errorf("without flags: %q", bare[0])
	}
}

// TestDemoRetryNamesThePanelsFix: the demo's retry note names the fix the
// hint panel showed first (the finding's), not another one.
func TestDemoRetryNamesThePanelsFix(t *testing.T) {
	d := newTestDemo(t)
	note, err := d.PrepareRetry(context.Background(), "rocm", &diagnose.Finding{Family: demo.FailureFamily, Fix: "pip uninstall -y amdsmi   # in the venv\n# or: sed …"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Applied the fix for " + demo.FailureFamily + " (pip uninstall -y amdsmi); retrying rocm."; note != want {
		t.Errorf("note %q, want %q", note, want)
	}
}
