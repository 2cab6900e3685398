package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
)

// TestStepsReadOnlyTheValidatedPins is a time-of-check to time-of-use attempt
// through the real runner and the real scripts/lib/common.sh: a step appends
// a command substitution to the pins and toolbox files it was handed; the
// next step loads them as every real step does, and must get the validated
// values and nothing else, with nothing run.
func TestStepsReadOnlyTheValidatedPins(t *testing.T) {
	dir := t.TempDir()
	toolbox := t.TempDir()
	writeFile(t, filepath.Join(toolbox, ToolboxEnvName), "# build variables\nWORK_DIR=/workspace\nGPU_TARGET=gfx1151\nGPU_ARCHS=${GPU_TARGET}\n")
	track := fxTrack(fx{id: "tamper", script: "pins-tamper.sh"}, fx{id: "read", script: "pins-read.sh"})
	o := fxOptions(fxPlan(t, track, "GPU_TARGET=gfx1100\nVLLM_REF=6e448d0ea9bf3d88d898b65449ca6dc2aec170ac\n", "testdata/scripts", dir), dir)
	o.ToolboxDir = toolbox
	rep, evs := run(t, o, nil)
	if rep.Status != steps.OutcomeSucceeded {
		t.Fatalf("run %s: %+v\n%q", rep.Status, rep.Steps, lines(evs, "read"))
	}
	got := lines(evs, "read")
	// The pin wins over toolbox.env's GPU_TARGET, and GPU_ARCHS follows it.
	if want := "GPU_TARGET=gfx1100 WORK_DIR=/workspace GPU_ARCHS=gfx1100 HF_EVIL=unset"; !slices.Contains(got, want) {
		t.Errorf("the reading step printed %q, want a line %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(rep.RunDir, "pwned")); err == nil {
		t.Error("a command appended to the pins ran")
	}
	for _, name := range []string{PinsSnapshot, ToolboxSnapshot} {
		path := filepath.Join(rep.RunDir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "HF_EVIL") || !strings.HasPrefix(string(b), SnapshotHead+"\n") || !strings.HasSuffix(string(b), SnapshotEnd+"\n") {
			t.Errorf("%s after the run:\n%s", name, b)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o444 {
			t.Errorf("%s mode %v, want read-only", name, fi.Mode())
		}
	}
}

// TestToolboxEnvIsValidatedBeforeAnythingRuns: a
// toolbox.env holding a command substitution (a ./toolbox in the current
// directory) is refused with its file and line before any step, dry run or
// not.
func TestToolboxEnvIsValidatedBeforeAnythingRuns(t *testing.T) {
	dir := t.TempDir()
	toolbox := t.TempDir()
	writeFile(t, filepath.Join(toolbox, ToolboxEnvName), "# looks like a harmless env file\nWORK_DIR=/workspace$(touch "+dir+"/pwned-tbx)\n")
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "hello", script: "hello.sh"}), fxPins, "testdata/scripts", dir), dir)
	o.ToolboxDir, o.DryRun = toolbox, true
	_, err := New(o)
	want := filepath.Join(toolbox, ToolboxEnvName) + ":2:20: command substitution $(…) is not allowed"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("New: %v, want %q", err, want)
	}
	for _, bad := range []string{"ROCM_VERSION=7.14.0\n", "WORK_DIR=relative\n"} {
		writeFile(t, filepath.Join(toolbox, ToolboxEnvName), bad)
		if _, err := New(o); err == nil {
			t.Errorf("toolbox.env %q accepted", bad)
		}
	}
	// A FIFO must not hang the runner.
	os.Remove(filepath.Join(toolbox, ToolboxEnvName))
	if err := mkfifo(filepath.Join(toolbox, ToolboxEnvName)); err != nil {
		t.Fatal(err)
	}
	if _, err := New(o); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO toolbox.env: %v", err)
	}
}

// TestSnapshotIsAPinsFileWithTheSameValues: what the shell reads is what
// pins.Parse reads back (pins lock relies on it), quotes included.
func TestSnapshotIsAPinsFileWithTheSameValues(t *testing.T) {
	values := map[string]string{"TOOLBOX_NAME": "box", "LLAMA_MODEL": "/m/it's.gguf", "TORCH_INDEX_URL": ""}
	names := []string{"TOOLBOX_NAME", "LLAMA_MODEL", "TORCH_INDEX_URL"}
	b, err := snapshot("test", names, values)
	if err != nil {
		t.Fatal(err)
	}
	want := SnapshotHead + "\n# test.\n# Written by haloforge before each step; the step scripts read only this file. Do not edit.\n" +
		"TOOLBOX_NAME='box'\nLLAMA_MODEL='/m/it'\"'\"'s.gguf'\nTORCH_INDEX_URL=''\n" + SnapshotEnd + "\n"
	if string(b) != want {
		t.Errorf("snapshot:\n%s\nwant:\n%s", b, want)
	}
	// LLAMA_MODEL is a path pin, which may not hold a quote: the parser
	// says so, which shows it read the quoting as the shell does.
	if _, err := pins.Parse("snap.env", b); err == nil || !strings.Contains(err.Error(), `LLAMA_MODEL="/m/it's.gguf"`) {
		t.Errorf("pins.Parse: %v", err)
	}
	if _, err := snapshot("test", []string{"A"}, map[string]string{"A": "x\ny"}); err == nil {
		t.Error("a newline in a value was written")
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }
