package tui

// One test (or more) per finding of the UX review (reviews/ux-review.md)
// that screen logic answers; what a person sees end to end is in
// cmd/haloforge/tmux_e2e_test.go, the CLI in its testscripts.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
)

// lastLine is the frame's last line: the footer.
func lastLine(m *Model) string {
	v := strings.TrimRight(plain(m), "\n")
	return v[strings.LastIndex(v, "\n")+1:]
}

// commands is Options.Commands as the real wizard words them.
func commands(c Command) string {
	s := "haloforge build --track " + c.Track
	if c.Resume {
		s += " --resume"
	}
	if c.IgnoreChecks {
		s += " --ignore-checks"
	}
	for _, v := range c.Sets {
		s += " --set " + v
	}
	return s + " --state-dir /hf"
}

// Finding 2: s is offered only on a track with a box of its own, opens the
// command the backend gives for that track, and says why when there is none.
func TestShellIsTheTracksOwnBox(t *testing.T) {
	f := newFakeBackend(t)
	f.shell = exec.Command("true")
	m := toRun(t, f, 120, 40)
	if !strings.Contains(lastLine(m), "s shell in the box") {
		t.Errorf("a track with a box does not offer s:\n%s", lastLine(m))
	}
	if cmd := m.run.shell(); cmd == nil {
		t.Error("s did not hand the terminal to the box's shell")
	}
	f.shell = nil
	m.run.plan.Box = ""
	drive(t, m, press("s"))
	if !strings.Contains(m.run.note, "builds no distrobox") {
		t.Errorf("note %q, want why there is no box", m.run.note)
	}
}

// Finding 3: the hint panel wraps the fix instead of cutting it; w wraps
// the log; v opens the shown step's log in the pager at the window's line.
func TestLongLinesWrapAndThePagerOpensTheLog(t *testing.T) {
	f := newFakeBackend(t)
	long := "error: running as root: distrobox refuses that (\"Running distrobox-create as sudo is not supported\"). Run haloforge as your normal user; HALOFORGE_DISTROBOX_ROOT=1"
	f.failLog = append(f.failLog, long)
	var opened []string
	m := New(context.Background(), f, Options{Pager: func(path string, line int) *exec.Cmd {
		opened = append(opened, path+":"+itoa(line))
		return exec.Command("true")
	}})
	drive(t, m, tea.WindowSizeMsg{Width: 80, Height: 24}, m.Init()(), press("enter"), press("enter"), press("enter"))
	st := m.run.rs.Step("rocm")
	st.Findings[0].Fix = "sed -i 's/rtld_global: bool = True/rtld_global: bool = False/' \"$(python -c 'import rocm_sdk,os;print(os.path.dirname(rocm_sdk.__file__))')/__init__.py\""
	drive(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	v := plain(m)
	if !strings.Contains(v, "')/__init__.py\"") || !strings.Contains(v, "↪") {
		t.Errorf("the fix's end (the file to edit) is cut:\n%s", v)
	}
	if strings.Contains(v, "HALOFORGE_DISTROBOX_ROOT=1") {
		t.Fatalf("the long line fits already; the test needs a longer one:\n%s", v)
	}
	drive(t, m, press("w"))
	if v := plain(m); !strings.Contains(v, "HALOFORGE_DISTROBOX_ROOT=1") || !strings.Contains(v, "wrapped") {
		t.Errorf("w did not wrap the long line:\n%s", v)
	}
	drive(t, m, press("w"), press("x"))
	if strings.Contains(plain(m), "therock-amdsmi-double-free") {
		t.Errorf("x did not hide the hint panel:\n%s", plain(m))
	}
	if cmd := m.run.openPager(); cmd == nil || len(opened) != 1 || !strings.HasPrefix(opened[0], "/state/runs/fake-run/rocm.log:") {
		t.Errorf("v opened %v, want rocm's log at a line", opened)
	}
}

// Finding 5: on the run screen / searches forward from the window, ?
// backward, n goes on in the same direction, and the status line counts.
func TestRunScreenSearchesLikeLess(t *testing.T) {
	m := toRun(t, newFakeBackend(t), 120, 40)
	drive(t, m, press("g"), press("/"))
	for _, r := range ">>>" {
		drive(t, m, press(string(r)))
	}
	drive(t, m, press("enter"))
	if got := m.run.log.buf.Line(m.run.log.match); !strings.Contains(got, ">>> import torch") {
		t.Fatalf("/ from the top found %q, want the first >>> line", got)
	}
	if !strings.Contains(m.run.note, "match 1/2") {
		t.Errorf("note %q does not count the matches", m.run.note)
	}
	drive(t, m, press("n"))
	if got := m.run.log.buf.Line(m.run.log.match); !strings.Contains(got, "reprod") {
		t.Errorf("n found %q, want the next one down", got)
	}
	drive(t, m, press("n"))
	if !strings.Contains(m.run.note, "search hit BOTTOM, continuing at TOP") {
		t.Errorf("n past the last match: note %q", m.run.note)
	}
	drive(t, m, press("G"), press("?"))
	if !m.run.search.IsOpen() || m.help.ShowAll {
		t.Fatal("? on the run screen is the backward search (as in less), not the help")
	}
	for _, r := range ">>>" {
		drive(t, m, press(string(r)))
	}
	drive(t, m, press("enter"))
	if got := m.run.log.buf.Line(m.run.log.match); !strings.Contains(got, "reprod") {
		t.Errorf("? from the tail found %q, want the last >>> line", got)
	}
}

// Finding 6: a retry and a skip keep the plan's numbering ("step 4/7"
// stays 4/7), a step that succeeded keeps its ✓, the summary tells the
// attempts and who skipped what, never "not in --only", and lists every
// run's directory.
func TestRetryAndSkipKeepTheSessionsHistory(t *testing.T) {
	f := newFakeBackend(t)
	f.lineGap = time.Millisecond
	f.extra = 300
	m := newSized(t, f, 120, 40)
	drive(t, m, press("enter"), press("enter"))
	drive(t, m, press("enter")) // runs to rocm's failure
	if h := plain(m); !strings.Contains(h, "step 3/7 · rocm") {
		t.Fatalf("header after the failure:\n%s", h)
	}
	driveHeld(t, m, press("r"))
	for m.run.rs.Current != "aiter" {
		if !pump(t, m) {
			t.Fatalf("aiter never ran (current %q)", m.run.rs.Current)
		}
	}
	v := plain(m)
	if !strings.Contains(v, "step 4/7 · aiter") || !strings.Contains(v, "✓ toolbox") || !strings.Contains(v, "✓ rocm") {
		t.Errorf("after the retry the numbering or the history changed:\n%s", v)
	}
	driveHeld(t, m, press("S"), press("y"))
	drive(t, m, waitEvents(m.run.ch)())
	if m.top().Crumb() != "summary" {
		t.Fatalf("top %T", m.top())
	}
	v = plain(m)
	mustContain(t, "summary", v, "✓ rocm             2s (2nd attempt; 1st: therock-amdsmi-double-free)",
		"↷ aiter            skipped by you (optional)", "✓ toolbox          2s",
		"run 1/3 /state/runs/fake-run", "run 2/3 /state/runs/fake-run-2", "run 3/3 /state/runs/fake-run-3")
	if strings.Contains(v, "--only") {
		t.Errorf("the summary speaks of --only, which nobody typed:\n%s", v)
	}
}

// Finding 7: leaving the wizard hands cmd a recap: the next commands after
// a build, the exact resume command (with --track and the user's flags)
// after a stop, in the stop note too.
func TestQuittingGivesTheNextCommands(t *testing.T) {
	f := newFakeBackend(t)
	f.fixed = true
	m := New(context.Background(), f, Options{Commands: commands})
	drive(t, m, tea.WindowSizeMsg{Width: 120, Height: 40}, m.Init()(), press("enter"), press("enter"), press("enter"))
	if !drive(t, m, press("q")) {
		t.Fatal("q on the summary did not quit")
	}
	r := m.Result()
	if len(r.Next) != 3 || !strings.HasPrefix(r.Next[0], "haloforge serve --track therock-toolbox") || len(r.RunDirs) != 1 {
		t.Errorf("result after a build: %+v", r)
	}

	f = newFakeBackend(t)
	f.lineGap = 20 * time.Millisecond
	f.extra = 1000
	m = New(context.Background(), f, Options{Commands: commands})
	drive(t, m, tea.WindowSizeMsg{Width: 120, Height: 40}, m.Init()(), press("enter"), press("enter"))
	driveHeld(t, m, press("enter"))
	pump(t, m)
	driveHeld(t, m, press("q"))
	if v := plain(m); !strings.Contains(v, "Resume it later with: haloforge build --track therock-toolbox --resume --state-dir /hf") {
		t.Errorf("the quit question does not say how to resume:\n%s", v)
	}
	driveHeld(t, m, press("y"))
	drive(t, m, waitEvents(m.run.ch)())
	r = m.Result()
	if r.Stopped != "toolbox" || r.Resume != "haloforge build --track therock-toolbox --resume --state-dir /hf" || !r.Interrupted {
		t.Errorf("result after a quit mid-run: %+v", r)
	}
}

// Finding 8: Esc while typing a filter keeps it, Esc with a filter set
// clears it, only Esc without one goes back; the footer names / filter.
func TestPickerEscClearsTheFilterFirst(t *testing.T) {
	m := newSized(t, newFakeBackend(t), 120, 40)
	drive(t, m, press("enter"))
	if !strings.Contains(lastLine(m), "/ filter") {
		t.Errorf("the footer does not name the filter:\n%s", lastLine(m))
	}
	drive(t, m, press("/"), press("o"), press("l"), press("l"))
	if !m.picker.TakesText() {
		t.Fatal("typing the filter is not text: q would quit")
	}
	drive(t, m, press("q"))
	if m.top() != m.picker {
		t.Fatal("q while filtering left the picker")
	}
	drive(t, m, press("backspace"))
	drive(t, m, press("esc"))
	if m.top() != m.picker || !strings.Contains(plain(m), "ollama") || strings.Contains(plain(m), "vllm-image") {
		t.Fatalf("esc while typing did not keep the filter:\n%s", plain(m))
	}
	drive(t, m, press("esc"))
	if m.top() != m.picker || !strings.Contains(plain(m), "vllm-image") {
		t.Fatalf("esc with a filter did not clear it:\n%s", plain(m))
	}
	drive(t, m, press("esc"))
	if m.top() != m.detect {
		t.Errorf("esc without a filter did not go back: top %T", m.top())
	}
}

// Finding 9: q quits at once when nothing runs; Ctrl-C on an idle screen
// is an interruption (exit 130); after a run ended its outcome stands.
func TestCtrlCIsAnInterruption(t *testing.T) {
	m := newSized(t, newFakeBackend(t), 100, 30)
	if !drive(t, m, press("ctrl+c")) || !m.Result().Interrupted {
		t.Errorf("ctrl+c on detection: result %+v, want interrupted", m.Result())
	}
	f := newFakeBackend(t)
	m = toRun(t, f, 100, 30) // the run failed
	if !drive(t, m, press("ctrl+c")) || m.Result().Interrupted || m.Result().Status != steps.OutcomeFailed {
		t.Errorf("ctrl+c after a failed run: result %+v, want its failure", m.Result())
	}
}

// Finding 10: the hint belongs to the step whose log is shown; notes go
// once another step has run a while; an optional failure is a warning.
func TestHintAndNoteDoNotGoStale(t *testing.T) {
	c := testCommon()
	now := fixedClock
	c.now = func() time.Time { return now }
	tr, _ := steps.Lookup("therock-toolbox")
	p, _ := newFakeBackend(t).Plan("therock-toolbox")
	p.Track = tr
	s := newRunScreen(withBackend(c, newFakeBackend(t)), p, false)
	s.SetSize(120, 38)
	asm := diagnose.Finding{Family: "gfx11-inline-asm-unsupported", Summary: "CDNA-only assembly", Fix: "skip aiter"}
	s.setNote("Applied the fix for therock-amdsmi-double-free; retrying rocm.", "rocm")
	for _, e := range []runner.Event{
		runner.StepStarted{Step: "aiter", Optional: true, At: now},
		runner.Found{Step: "aiter", Finding: asm},
		runner.StepFinished{Step: "aiter", Optional: true, Status: steps.OutcomeFailed, ExitCode: 1},
	} {
		s.Update(eventsMsg{events: []runner.Event{e}})
	}
	v := ansi.Strip(s.View())
	if !strings.Contains(v, "! gfx11-inline-asm-unsupported") || !strings.Contains(v, "optional: the run goes on without it") || !strings.Contains(v, "! aiter") {
		t.Errorf("an optional failure is not drawn as a warning:\n%s", v)
	}
	now = now.Add(10 * time.Second)
	s.Update(eventsMsg{events: []runner.Event{runner.StepStarted{Step: "flash-attention", At: now}}})
	v = ansi.Strip(s.View())
	if strings.Contains(v, "gfx11-inline-asm-unsupported") {
		t.Errorf("aiter's hint stays pinned over flash-attention's log:\n%s", v)
	}
	if strings.Contains(v, "Applied the fix") {
		t.Errorf("the retry's note is still there while flash-attention runs:\n%s", v)
	}
}

// Finding 11: at 80 and 120 columns, on every screen and state, the footer
// fits one line and ends with help and quit.
func TestFooterAlwaysShowsHelpAndQuit(t *testing.T) {
	for _, w := range []int{80, 120} {
		f := newFakeBackend(t)
		f.shell = exec.Command("true")
		m := newSized(t, f, w, 30)
		check := func(where string) {
			t.Helper()
			foot := lastLine(m)
			if ansi.StringWidth(foot) > w || !strings.Contains(foot, "help") || !strings.HasSuffix(foot, "q quit") {
				t.Errorf("%d columns, %s: footer %q", w, where, foot)
			}
		}
		check("detect")
		drive(t, m, press("enter"))
		check("picker")
		drive(t, m, press("enter"))
		check("plan")
		drive(t, m, press("enter"))
		check("run, failed")
		drive(t, m, press("enter"))
		check("summary")
	}
}

// Finding 12: a value the plan needs is asked for before the run starts,
// set through the backend, and the run starts with it.
func TestPlanAsksForWhatTheTrackNeeds(t *testing.T) {
	f := newFakeBackend(t)
	f.fixed = true
	f.needs = []string{"LLAMA_MODEL"}
	m := newSized(t, f, 120, 40)
	drive(t, m, press("enter"), press("enter"))
	if v := plain(m); !strings.Contains(v, "needs LLAMA_MODEL (GGUF model for llama-bench and the ladder), which is empty") || !strings.Contains(lastLine(m), "enter set LLAMA_MODEL") {
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

// Finding 16: no ETA on a first run says so; past the estimate the header
// says by how much, not "ETA ~0s"; a silent step says for how long.
func TestHeaderTimeLeftAndSilence(t *testing.T) {
	c := testCommon()
	now := fixedClock
	c.now = func() time.Time { return now }
	s := newRunScreen(withBackend(c, newFakeBackend(t)), testPlan(), false)
	s.SetSize(120, 30)
	s.Update(eventsMsg{events: []runner.Event{runner.StepStarted{Step: "rocm", At: now}}})
	if h := s.header(); !strings.Contains(h, "no ETA on a first run") {
		t.Errorf("first run: %q", h)
	}
	s.Update(eventsMsg{events: []runner.Event{runner.StepStarted{Step: "rocm", ETA: time.Minute, At: now}}})
	now = now.Add(73 * time.Second)
	if h := ansi.Strip(s.header()); !strings.Contains(h, "+13s over the last run's time") || strings.Contains(h, "ETA ~0s") {
		t.Errorf("overrun: %q", h)
	}
	if h := ansi.Strip(s.header()); !strings.Contains(h, "no output for 1m13s") {
		t.Errorf("silence: %q", h)
	}
}

// Finding 21: the plan's words fit a first run, URLs are not broken inside,
// blocking checks are not cut, the cost is said.
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

// Finding 22: the picker marks detection's pick, says which tracks do not
// build for this GPU, shows the blocking checks' verdicts, and on a machine
// without an AMD GPU stars nothing.
func TestPickerUsesDetection(t *testing.T) {
	det := strixHalo()
	det.Checks = append(det.Checks, detect.Check{ID: "kfd-access", Status: detect.StatusFail, Summary: "/dev/kfd is missing"})
	p := newPickerScreen(testCommon(), steps.Catalogue(), "therock-toolbox", det)
	p.SetSize(120, 40)
	p.Update(p.Init()())
	v := ansi.Strip(p.View())
	mustContain(t, "picker", v, "therock-toolbox   ★ for this box", "legacy-gfx803     not for gfx1151", "✗ /dev/kfd: /dev/kfd is missing", "✓ GPU: Radeon 8060S")
	p = newPickerScreen(testCommon(), steps.Catalogue(), "", &Detection{Report: &detect.Report{}, Source: "this machine"})
	p.SetSize(120, 40)
	p.Update(p.Init()())
	if v := ansi.Strip(p.View()); strings.Contains(v, "★") || !strings.Contains(v, "No AMD GPU here") {
		t.Errorf("no GPU, yet:\n%s", v)
	}
	p.SetSize(80, 20)
	before := ansi.Strip(p.View())
	p.Update(press("pgdown"))
	if after := ansi.Strip(p.View()); after == before || !strings.Contains(before, "more lines: pgdn") {
		t.Errorf("the details do not scroll at 80×20:\n%s", before)
	}
}

// Finding 23: t on a failed run scans the failed log at once, the
// summary's commands stand alone on their lines, the run shows the log's
// path.
func TestTroubleshootScansTheFailedLogAtOnce(t *testing.T) {
	f := newFakeBackend(t)
	m := toRun(t, f, 120, 40)
	m.run.rs.Step("rocm").Findings = nil // a failure no rule knew
	drive(t, m, press("t"))
	if v := plain(m); strings.Contains(v, "log or bundle:") || !strings.Contains(v, "llamacpp-rocm-load-hang-sdma") {
		t.Errorf("t did not scan the failed log at once:\n%s", v)
	}
	drive(t, m, press("esc"))
	if !strings.Contains(plain(m), "/state/runs/fake-run/rocm.log") {
		t.Errorf("the run screen does not show the log's path:\n%s", plain(m))
	}
	drive(t, m, press("enter"))
	for _, l := range strings.Split(plain(m), "\n") {
		if strings.Contains(l, "$ haloforge build") && strings.Contains(l, "after the fix") {
			t.Errorf("a command shares its line with words: %q", l)
		}
	}
}

// Finding 24: j/k scroll the log; the detection screen has g/G; d runs
// the demo where there is no AMD GPU.
func TestKeyboardGaps(t *testing.T) {
	f := newFakeBackend(t)
	f.extra = 100
	m := toRun(t, f, 120, 40)
	drive(t, m, press("k"))
	if m.run.log.follow {
		t.Error("k did not scroll the log up")
	}
	drive(t, m, press("j"))
	s := newDetectScreen(testCommon(), true)
	s.SetSize(100, 14)
	s.Update(detectedMsg{det: manyChecks(30)})
	s.Update(press("G"))
	if s.offset == 0 {
		t.Error("G did not go to the end of the checks")
	}
	s.Update(press("g"))
	if s.offset != 0 {
		t.Error("g did not go back to the top")
	}
	if msgOf(s.Update(press("d"))) != nil {
		t.Error("d ran the demo on a machine with a GPU")
	}
	s.Update(detectedMsg{det: &Detection{Report: &detect.Report{}, Source: "this machine"}})
	if _, ok := msgOf(s.Update(press("d"))).(runDemoMsg); !ok || !strings.Contains(ansi.Strip(s.View()), "(press d)") {
		t.Error("d does not run the demo on a machine without an AMD GPU")
	}
}

// Finding 25: the size guard's words wrap to the window; during a run it
// does not offer --plain, which cannot help then.
func TestSizeGuardWraps(t *testing.T) {
	msg := tooSmall(40, 10, false)
	for _, l := range strings.Split(msg, "\n") {
		if ansi.StringWidth(l) > 40 {
			t.Errorf("row %q is wider than the 40-column window", l)
		}
	}
	if !strings.Contains(strings.ReplaceAll(msg, "\n", " "), "at least 80×24") {
		t.Errorf("message: %q", msg)
	}
	if run := tooSmall(60, 20, true); strings.Contains(run, "--plain") || !strings.Contains(run, "the run goes on") {
		t.Errorf("mid-run: %q", run)
	}
}

// Finding 17: another build holding the state dir is said on the plan,
// before anything starts, and Enter starts nothing.
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

// Finding 21: a pin wider than the plan's row is shown whole, on the next
// rows marked ↪, never cut.
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

// Round 2, B1: a track chosen through the filter, then Esc from its plan,
// brings back the list as it was left: the filter, the cursor on the
// track, the footer for a set filter; Enter plans the same track again.
func TestPickerComesBackAsLeft(t *testing.T) {
	m := newSized(t, newFakeBackend(t), 120, 40)
	drive(t, m, press("enter"))
	drive(t, m, press("/"), press("o"), press("l"), press("l"), press("enter"))
	if _, ok := m.top().(*planScreen); !ok {
		t.Fatalf("enter on the filtered list did not open the plan: %T", m.top())
	}
	drive(t, m, press("esc"))
	v := plain(m)
	if m.top() != m.picker || !strings.Contains(v, "> ollama") || strings.Contains(v, "vllm-image") {
		t.Fatalf("back from the plan, the filtered list is not as left:\n%s", v)
	}
	if !strings.Contains(lastLine(m), "esc clear the filter") {
		t.Errorf("the footer is not the filtered list's: %s", lastLine(m))
	}
	drive(t, m, press("enter"))
	if p, ok := m.top().(*planScreen); !ok || p.plan.Track.ID != "ollama" {
		t.Fatalf("enter again did not plan ollama: %T", m.top())
	}
	drive(t, m, press("esc"), press("esc"))
	if v := plain(m); !strings.Contains(v, "vllm-image") || !strings.Contains(v, "> ollama") {
		t.Errorf("esc did not clear the filter with the cursor kept on ollama:\n%s", v)
	}
}
