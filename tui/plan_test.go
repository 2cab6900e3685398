package tui

// The plan screen: what runs and why, its cost, and what stops it.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/steps"
)

// TestPlanAsksForWhatTheTrackNeeds: a value the plan needs is asked for
// before the run starts, set through the backend, and the run starts with it.
func TestPlanAsksForWhatTheTrackNeeds(t *testing.T) {
	f := newFakeBackend(t)
	f.fixed = true
	f.needs = []string{"LLAMA_MODEL"}
	m := newSized(t, f, 120, 40)
	drive(t, m, press("enter"), press("enter"))
	if v := plain(m); !strings.Contains(v, "needs LLAMA_MODEL (GGUF model for llama-bench, the ladder and the ollama verify), which is empty") || !strings.Contains(lastLine(m), "enter set LLAMA_MODEL") {
		t.Fatalf("the plan does not ask for LLAMA_MODEL:\n%s", v)
	}
	drive(t, m, press("enter"))
	if m.run != nil || !m.top().TakesText() {
		t.Fatal("enter started the run without the model")
	}
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny.gguf")
	if err := os.WriteFile(model, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, r := range filepath.Join(dir, "ti") {
		drive(t, m, press(string(r)))
	}
	drive(t, m, press("tab")) // completes the path, as a shell does
	drive(t, m, press("enter"))
	if len(f.sets) != 1 || f.sets[0] != "LLAMA_MODEL="+model {
		t.Fatalf("the backend was asked to set %v", f.sets)
	}
	if v := plain(m); strings.Contains(v, "which is empty") {
		t.Fatalf("the plan still asks after the value was set:\n%s", v)
	}
	drive(t, m, press("enter"))
	if m.run == nil {
		t.Fatal("enter did not start the run once the model was set")
	}
	if got := m.common.command(Command{Track: "llamacpp-rocm", Resume: true}); got != "" {
		t.Errorf("without Commands the wizard suggests %q", got)
	}
	m.common.commands = commands
	if got := m.run.resumeCommand("ladder"); !strings.Contains(got, "--set LLAMA_MODEL="+model) {
		t.Errorf("the resume command forgets the model: %q", got)
	}
}

// TestPlanWording: the plan's words fit a first run, URLs are not broken
// inside, blocking checks are not cut, the cost is said.
func TestPlanWording(t *testing.T) {
	tr, _ := steps.Lookup("therock-toolbox")
	p := &Plan{Plan: &steps.Plan{Track: tr, Steps: []steps.PlannedStep{
		{Step: steps.Step{ID: "rocm", Title: "ROCm"}, WillRun: true, Reason: "first run", PinValues: map[string]string{"VLLM_REPO": "https://github.com/vllm-project/vllm.git", "A": "1", "B": "2"}},
		{Step: steps.Step{ID: "vllm", Title: "vLLM"}, WillRun: true, Reason: "first run"},
	}}}
	det := strixHalo()
	det.Checks = append(det.Checks, detect.Check{ID: "kfd-access", Status: detect.StatusFail,
		Summary: "/dev/kfd is missing: the amdgpu driver is not loaded, or the GPU is not enabled in the BIOS and the kernel cannot see it"})
	s := newPlanScreen(testCommon(), p, det)
	s.SetSize(80, 30)
	v := ansi.Strip(s.View())
	mustContain(t, "plan", v, "All 2 steps run.", "VLLM_REPO=https://github.com/vllm-project/vllm.git", "kernel cannot see it",
		"Time: no estimate before a first run", "Disk: needs about 60 GB free")
	if strings.Contains(v, "the others are up to date") {
		t.Errorf("a first run speaks of others:\n%s", v)
	}
}

// TestPlanSaysAnotherBuildRuns: another build holding the state dir is said
// on the plan, before anything starts, and Enter starts nothing.
func TestPlanSaysAnotherBuildRuns(t *testing.T) {
	tr, _ := steps.Lookup("vllm-image")
	p := &Plan{Plan: &steps.Plan{Track: tr, Steps: []steps.PlannedStep{{Step: steps.Step{ID: "pull", Title: "Pull"}, WillRun: true, Reason: "first run"}}}, Busy: "another haloforge build (pid 4242, track therock-toolbox step vllm, since 14:59) holds the state dir /s"}
	s := newPlanScreen(testCommon(), p, nil)
	s.SetSize(100, 20)
	mustContain(t, "plan", ansi.Strip(s.View()), "✗ another haloforge build (pid 4242", "Another build runs: enter starts nothing until it ends.")
	if msg := msgOf(s.Update(press("enter"))); msg != nil {
		t.Errorf("enter on a busy state dir sent %#v", msg)
	}
}

// TestPlanShowsLongPinsWhole: a pin wider than the plan's row is shown whole,
// on the next rows marked ↪, never cut.
func TestPlanShowsLongPinsWhole(t *testing.T) {
	tr, _ := steps.Lookup("llamacpp-rocm")
	img := "docker.io/kyuz0/amd-strix-halo-toolboxes:rocm-7.14-with-a-long-suffix-that-does-not-fit-anywhere"
	p := &Plan{Plan: &steps.Plan{Track: tr, Steps: []steps.PlannedStep{{Step: steps.Step{ID: "pull", Title: "Pull"}, WillRun: true, Reason: "first run", PinValues: map[string]string{"LLAMACPP_ROCM_IMAGE": img}}}}}
	s := newPlanScreen(testCommon(), p, nil)
	s.SetSize(80, 20)
	v := ansi.Strip(s.View())
	joined := strings.NewReplacer("\n", "", " ", "", "↪", "").Replace(v)
	if !strings.Contains(joined, "LLAMACPP_ROCM_IMAGE="+img) || !strings.Contains(v, "↪") {
		t.Errorf("the long pin is not whole:\n%s", v)
	}
}
