package demo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
)

func TestTrackIsTheRealTrackWithTheSameSteps(t *testing.T) {
	real, err := steps.Lookup(TrackID)
	if err != nil {
		t.Fatal(err)
	}
	got := Track()
	if diff := cmp.Diff(real, got); diff != "" {
		t.Fatalf("demo track differs from the catalogue (-real +demo):\n%s", diff)
	}
	// Track must hand out copies: a caller editing them cannot change the catalogue.
	got.Steps[0].DependsOn = append(got.Steps[0].DependsOn, "x")
	got.Steps[1].Pins[0] = "MUTATED"
	again, _ := steps.Lookup(TrackID)
	if diff := cmp.Diff(real, again); diff != "" {
		t.Fatalf("editing Track() changed the catalogue:\n%s", diff)
	}
	if _, ok := got.Step(FailingStep); !ok {
		t.Fatalf("demo track has no step %q", FailingStep)
	}
}

func TestEveryStepHasItsScript(t *testing.T) {
	tr := Track()
	for _, s := range tr.Steps {
		data, err := fs.ReadFile(Scripts(), tr.ScriptPath(s))
		if err != nil {
			t.Fatalf("step %s: %v", s.ID, err)
		}
		if !bytes.HasPrefix(data, []byte("#!/usr/bin/env bash\n")) || !bytes.Contains(data, []byte("set -Eeuo pipefail")) {
			t.Errorf("step %s: script is not a strict bash script", s.ID)
		}
	}
}

// runStep runs one demo script for real, in a pty-less subprocess, and
// returns its exit code and output.
func runStep(t *testing.T, root, stateDir, script, speed string) (int, string) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(root, TrackID, script))
	cmd.Env = append(os.Environ(), SpeedEnv+"="+speed, "HALOFORGE_STATE_DIR="+stateDir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	default:
		t.Fatalf("%s: %v", script, err)
		return -1, ""
	}
}

func TestScriptsReplayTheStory(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	if err := WriteScripts(root); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"rocm": 134, "aiter": 1}
	tr := Track()
	for _, s := range tr.Steps {
		code, out := runStep(t, root, state, s.Script, "1000")
		if code != want[s.ID] {
			t.Errorf("step %s: exit %d, want %d\n%s", s.ID, code, want[s.ID], out)
		}
		if !strings.HasPrefix(out, "haloforge demo: replaying a recorded log (") {
			t.Errorf("step %s: the log does not say it is a replay:\n%s", s.ID, out)
		}
	}

	_, out := runStep(t, root, state, "02-install-rocm.sh", "1000")
	if !strings.Contains(out, "double free or corruption (!prev)\nAborted (core dumped)\n") {
		t.Errorf("first rocm run does not end with the double free:\n%s", out)
	}
	if FixApplied(state) {
		t.Fatal("FixApplied before ApplyFix")
	}
	if err := ApplyFix(state); err != nil {
		t.Fatal(err)
	}
	if !FixApplied(state) {
		t.Fatal("FixApplied false after ApplyFix")
	}
	code, out := runStep(t, root, state, "02-install-rocm.sh", "1000")
	if code != 0 || strings.Contains(out, "double free") || !strings.Contains(out, "CUDA available: True") {
		t.Errorf("rocm after the fix: exit %d\n%s", code, out)
	}
	// Another state dir has not had the fix: the story starts over.
	if code, _ := runStep(t, root, t.TempDir(), "02-install-rocm.sh", "1000"); code != 134 {
		t.Errorf("rocm in a fresh state dir: exit %d, want 134", code)
	}
}

func TestSpeedPacesTheReplay(t *testing.T) {
	root := t.TempDir()
	if err := WriteScripts(root); err != nil {
		t.Fatal(err)
	}
	// 00-setup-toolbox.sh replays over 5 s at speed 1: 0.5 s at speed 10.
	start := time.Now()
	if code, out := runStep(t, root, t.TempDir(), "00-setup-toolbox.sh", "10"); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if d := time.Since(start); d < 400*time.Millisecond || d > 5*time.Second {
		t.Errorf("speed 10 took %v, want about 0.5 s", d)
	}
	for _, bad := range []string{"0", "-3", "fast", "1.5"} {
		if code, out := runStep(t, root, t.TempDir(), "00-setup-toolbox.sh", bad); code != 2 || !strings.Contains(out, SpeedEnv) {
			t.Errorf("speed %q: exit %d, want 2 with a message\n%s", bad, code, out)
		}
	}
}

// corpusLines returns every line of every log in the shared failure corpus
// (a copy in testdata).
func corpusLines(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open("testdata/failures.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var row struct{ Log string }
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		for l := range strings.SplitSeq(row.Log, "\n") {
			lines[l] = true
		}
	}
	return lines
}

func TestCorpusExcerptsAreVerbatim(t *testing.T) {
	corpus := corpusLines(t)
	for _, name := range []string{"rocm-fail.log", "aiter.log", "vllm-configure.log", "verify.log"} {
		data, err := fs.ReadFile(Scripts(), "logs/"+name)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if !corpus[l] {
				t.Errorf("logs/%s:%d is not a corpus line: %q", name, i+1, l)
			}
		}
	}
}

func TestEveryLogHasItsSource(t *testing.T) {
	sources, err := fs.ReadFile(Scripts(), "logs/SOURCES.md")
	if err != nil {
		t.Fatal(err)
	}
	logs, err := fs.Glob(Scripts(), "logs/*.log")
	if err != nil || len(logs) == 0 {
		t.Fatalf("no logs: %v", err)
	}
	for _, l := range logs {
		if !bytes.Contains(sources, []byte("`"+filepath.Base(l)+"`")) {
			t.Errorf("%s is not in logs/SOURCES.md", l)
		}
	}
}

func TestShellcheck(t *testing.T) {
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Skip("shellcheck not installed (apt-get install shellcheck)")
	}
	root := t.TempDir()
	if err := WriteScripts(root); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.sh"))
	cmd := exec.Command("shellcheck", append([]string{"-x"}, files...)...)
	cmd.Dir = filepath.Join(root, TrackID) // -x follows `source` paths from here
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("shellcheck: %v\n%s", err, out)
	}
}

func TestPinsAreTheEmbeddedVersionsEnv(t *testing.T) {
	f, err := Pins()
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Values()["GPU_TARGET"]; got != "gfx1151" {
		t.Errorf("GPU_TARGET = %q, want gfx1151", got)
	}
	for _, name := range Track().PinNames() {
		if _, ok := f.Values()[name]; !ok {
			t.Errorf("pin %s of the demo track is not in versions.env", name)
		}
	}
}

func TestFixCommandIsTheFamilysFix(t *testing.T) {
	fix := FixCommand()
	for _, want := range []string{"rtld_global: bool = False", "rocm_sdk", "pip uninstall -y amdsmi"} {
		if !strings.Contains(fix, want) {
			t.Errorf("FixCommand lacks %q:\n%s", want, fix)
		}
	}
	if err := ApplyFix(""); err == nil {
		t.Error("ApplyFix with no state dir did not fail")
	}
}

// TestFixCommandPatchesRocmSDK runs the fix's first line for real against the
// real rocm_sdk signatures. `python` is a fake (no TheRock venv here): it
// prints where rocm_sdk/__init__.py is, as the real import would.
func TestFixCommandPatchesRocmSDK(t *testing.T) {
	dir := t.TempDir()
	orig, err := os.ReadFile("testdata/rocm_sdk_init_excerpt.py")
	if err != nil {
		t.Fatal(err)
	}
	initPy := filepath.Join(dir, "__init__.py")
	if err := os.WriteFile(initPy, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	fakePython := "#!/bin/sh\necho '" + initPy + "'\n"
	if err := os.WriteFile(filepath.Join(dir, "python"), []byte(fakePython), 0o755); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(FixCommand(), "\n")
	cmd := exec.Command("bash", "-c", first)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", first, err, out)
	}
	got, _ := os.ReadFile(initPy)
	if n := strings.Count(string(got), "rtld_global: bool = False"); n != 2 || strings.Contains(string(got), "rtld_global: bool = True") {
		t.Fatalf("after the fix, %d signatures say False:\n%s", n, got)
	}
}

// TestReplaysDiagnoseAsTheStorySays runs every step through the real
// diagnosis: the first rocm run shows exactly therock-amdsmi-double-free, the
// optional aiter step gfx11-inline-asm-unsupported, and every healthy replay,
// noise included, nothing.
func TestReplaysDiagnoseAsTheStorySays(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	if err := WriteScripts(root); err != nil {
		t.Fatal(err)
	}
	families := func(script string) []string {
		_, out := runStep(t, root, state, script, "1000")
		found, err := diagnose.Scan(strings.NewReader(out), diagnose.MatcherOptions{Track: TrackID})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, f := range found {
			ids = append(ids, f.Family)
		}
		return ids
	}
	want := map[string][]string{"rocm": {FailureFamily}, "aiter": {"gfx11-inline-asm-unsupported"}}
	for _, s := range Track().Steps {
		if diff := cmp.Diff(want[s.ID], families(s.Script)); diff != "" {
			t.Errorf("step %s findings (-want +got):\n%s", s.ID, diff)
		}
	}
	if err := ApplyFix(state); err != nil {
		t.Fatal(err)
	}
	if got := families("02-install-rocm.sh"); len(got) != 0 {
		t.Errorf("rocm after the fix still shows %v", got)
	}
}

// TestTutorialShowsEveryScreenshot: each screenshot TUTORIAL.md shows exists,
// make.sh makes it, and no made screenshot goes unused.
func TestTutorialShowsEveryScreenshot(t *testing.T) {
	tutorial, err := os.ReadFile("../../TUTORIAL.md")
	if err != nil {
		t.Fatal(err)
	}
	makeSh, err := os.ReadFile("screenshots/make.sh")
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	for _, part := range strings.Split(string(tutorial), "](tui/demo/screenshots/")[1:] {
		name, _, _ := strings.Cut(part, ")")
		shown[name] = true
		if _, err := os.Stat(filepath.Join("screenshots", name)); err != nil {
			t.Errorf("TUTORIAL.md shows %s: %v", name, err)
		}
		if !bytes.Contains(makeSh, []byte("mark "+strings.TrimSuffix(name, ".png")+"\n")) {
			t.Errorf("make.sh does not make %s", name)
		}
	}
	pngs, _ := filepath.Glob("screenshots/*.png")
	for _, p := range pngs {
		if !shown[filepath.Base(p)] {
			t.Errorf("%s is not shown in TUTORIAL.md", p)
		}
	}
	if len(shown) < 5 {
		t.Errorf("TUTORIAL.md shows %d screenshots, want the whole walkthrough", len(shown))
	}
}
