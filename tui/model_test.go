package tui

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
)

// toRun drives a fresh model from detection to a started run: the three
// Enters of the "done when".
func toRun(t *testing.T, f *fakeBackend, w, h int) *Model {
	t.Helper()
	m := newSized(t, f, w, h)
	drive(t, m, press("enter")) // detection -> picker
	drive(t, m, press("enter")) // picker -> plan
	drive(t, m, press("enter")) // plan -> run
	return m
}

func TestThreeEntersRunAndPinTheHintFakeRunner(t *testing.T) {
	f := newFakeBackend(t)
	m := toRun(t, f, 120, 40)
	if m.top() != m.run {
		t.Fatalf("after three Enters the top screen is %T, want the run", m.top())
	}
	v := plain(m)
	for _, want := range []string{"✗ therock-amdsmi-double-free", "step rocm, log line 7", "Fix: pip uninstall -y amdsmi",
		"double free or corruption (!prev)", "✓ toolbox", "✗ rocm", "Step rocm failed. r: retry"} {
		if !strings.Contains(v, want) {
			t.Errorf("run screen lacks %q:\n%s", want, v)
		}
	}
	if pb := m.View().ProgressBar; pb == nil || pb.State != tea.ProgressBarError {
		t.Errorf("terminal progress bar = %+v, want the error state after a failure", pb)
	}
}

func TestRetryAppliesFixAndReachesSummaryFakeRunner(t *testing.T) {
	f := newFakeBackend(t)
	m := toRun(t, f, 120, 40)
	drive(t, m, press("r"))
	if strings.Join(f.retried, ",") != "rocm" {
		t.Fatalf("PrepareRetry saw %v, want [rocm]", f.retried)
	}
	if len(f.requests) != 2 || !f.requests[1].Resume {
		t.Fatalf("run requests %+v, want a second, resumed one", f.requests)
	}
	if m.top().Crumb() != "summary" {
		t.Fatalf("after a clean retry the top screen is %T, want the summary", m.top())
	}
	v := plain(m)
	for _, want := range []string{"✓ therock-toolbox is built", "Results", "✓ toolbox", "✓ rocm", "✓ verify",
		"$ distrobox enter $TOOLBOX_NAME", "report  /state/runs/fake-run-2/report.json"} {
		if !strings.Contains(v, want) {
			t.Errorf("summary lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "torch crashes at exit") {
		t.Errorf("the summary of the clean retry still pins the old finding:\n%s", v)
	}
	if m.Result().Status != steps.OutcomeSucceeded {
		t.Errorf("result %+v, want succeeded", m.Result())
	}
}

func TestQuitAsksThenStopsTheRunFakeRunner(t *testing.T) {
	f := newFakeBackend(t)
	f.lineGap = 20 * time.Millisecond
	f.extra = 1000 // long enough to still run when q arrives
	m := newSized(t, f, 100, 30)
	drive(t, m, press("enter"), press("enter"))
	driveHeld(t, m, press("enter")) // the run starts; the test pumps its events
	pump(t, m)
	driveHeld(t, m, press("q"))
	if v := plain(m); !strings.Contains(v, "Quit? The running step toolbox is stopped cleanly") {
		t.Fatalf("q did not ask:\n%s", v)
	}
	driveHeld(t, m, press("n"))
	if m.confirm || m.quitting {
		t.Fatal("n did not cancel the question")
	}
	driveHeld(t, m, press("q"))
	quit := driveHeld(t, m, press("y"))
	if quit || !m.run.stopping {
		t.Fatal("y did not stop the run first")
	}
	// The run ends with the interrupted step; then the program quits.
	if m.run.ch != nil {
		quit = drive(t, m, waitEvents(m.run.ch)()) // follow the run to its end
	}
	if !quit {
		t.Error("the wizard did not quit once the run stopped")
	}
	if !m.Result().Interrupted {
		t.Errorf("result %+v, want interrupted", m.Result())
	}
	if st := m.run.rs.Step("toolbox"); st.State != stateInterrupted {
		t.Errorf("toolbox is %v, want interrupted", st.State)
	}
}

// TestQuitWithoutRunQuitsAtOnce: q asks only while a step
// runs; elsewhere it quits at once, as TUTORIAL's key table says.
func TestQuitWithoutRunQuitsAtOnce(t *testing.T) {
	m := newSized(t, newFakeBackend(t), 80, 24)
	if !drive(t, m, press("q")) {
		t.Fatalf("q on the detection screen did not quit:\n%s", plain(m))
	}
	if m.Result().Interrupted {
		t.Error("q is not an interruption (exit 0)")
	}
}

func TestTooSmallTerminal(t *testing.T) {
	for _, tc := range []struct {
		w, h  int
		small bool
	}{{79, 24, true}, {80, 23, true}, {80, 24, false}, {200, 60, false}} {
		t.Run(fmt.Sprintf("%dx%d", tc.w, tc.h), func(t *testing.T) {
			m := newSized(t, newFakeBackend(t), tc.w, tc.h)
			v := plain(m)
			if got := strings.Contains(v, "needs a terminal of at least 80×24"); got != tc.small {
				t.Errorf("%d×%d: too-small message = %v, want %v:\n%s", tc.w, tc.h, got, tc.small, v)
			}
			if !tc.small {
				if n := strings.Count(v, "\n") + 1; n > tc.h {
					t.Errorf("%d×%d: the frame has %d lines", tc.w, tc.h, n)
				}
			}
		})
	}
}

func TestResizeKeepsFrameInside(t *testing.T) {
	f := newFakeBackend(t)
	m := toRun(t, f, 120, 40)
	for _, size := range [][2]int{{80, 24}, {150, 50}, {90, 30}} {
		drive(t, m, tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		v := plain(m)
		lines := strings.Split(v, "\n")
		if len(lines) > size[1] {
			t.Errorf("%v: %d lines", size, len(lines))
		}
		for i, l := range lines {
			if w := len([]rune(l)); w > size[0] {
				t.Errorf("%v: line %d is %d cells: %q", size, i, w, l)
			}
		}
		if !strings.Contains(v, "therock-amdsmi-double-free") {
			t.Errorf("%v: the hint panel is gone after resizing:\n%s", size, v)
		}
	}
}

// TestHelpShowsEveryRunKey: on the run screen h is the help (? searches
// backwards there, as in less), and the full help lists every key.
func TestHelpShowsEveryRunKey(t *testing.T) {
	m := toRun(t, newFakeBackend(t), 120, 40)
	drive(t, m, press("h"))
	v := plain(m)
	for _, want := range []string{"retry", "skip optional step", "follow/pause", "search", "search back", "next/prev match",
		"shell in the box", "steps/log", "wrap lines", "open log in $PAGER", "scroll sideways", "hide/show hint", "copy the fix", "quit"} {
		if !strings.Contains(v, want) {
			t.Errorf("full help lacks %q:\n%s", want, v)
		}
	}
	drive(t, m, press("h"))
	if strings.Contains(plain(m), "skip optional step") {
		t.Error("h did not close the full help")
	}
}

func TestSearchPausesAndHighlightsFakeRunner(t *testing.T) {
	m := toRun(t, newFakeBackend(t), 120, 40)
	drive(t, m, press("/"))
	for _, r := range "import torch" {
		drive(t, m, press(string(r)))
	}
	drive(t, m, press("enter"))
	if m.run.log.follow {
		t.Error("a search match did not pause following")
	}
	if got := m.run.rs.Step("rocm").buf.Line(m.run.log.match); !strings.Contains(got, "import torch") {
		t.Errorf("match is line %d %q", m.run.log.match, got)
	}
	if !strings.Contains(m.View().Content, "\x1b[7m") {
		t.Error("the match is not highlighted (reverse video)")
	}
	drive(t, m, press("f"))
	if !m.run.log.follow {
		t.Error("f did not resume following")
	}
}

func TestStepsPaneShowsAnotherLog(t *testing.T) {
	m := toRun(t, newFakeBackend(t), 120, 40)
	drive(t, m, press("tab"), press("up"), press("up"))
	if m.run.steps.Selected().ID != "toolbox" {
		t.Fatalf("selected %s, want toolbox", m.run.steps.Selected().ID)
	}
	if v := plain(m); !strings.Contains(v, "toolbox log · 1 line ·") || !strings.Contains(v, "+ 00-setup-toolbox.sh") {
		t.Errorf("the log pane does not show toolbox's log:\n%s", v)
	}
}

func TestSkipOptionalStepFakeRunner(t *testing.T) {
	f := newFakeBackend(t)
	f.fixed = true // rocm passes
	f.lineGap = time.Millisecond
	f.extra = 200
	m := newSized(t, f, 120, 40)
	drive(t, m, press("enter"), press("enter"))
	driveHeld(t, m, press("enter"))
	for m.run.rs.Current != "aiter" {
		if !pump(t, m) {
			t.Fatalf("aiter never ran (current %q)", m.run.rs.Current)
		}
	}
	driveHeld(t, m, press("S"))
	if m.run.skipping != "" || !strings.Contains(plain(m), "Skip aiter?") {
		t.Fatalf("S skipped without asking:\n%s", plain(m))
	}
	driveHeld(t, m, press("y"))
	drive(t, m, waitEvents(m.run.ch)()) // follow the stop, the restart and the rest
	if len(f.requests) != 2 || strings.Join(f.requests[1].Skip, ",") != "aiter" {
		t.Fatalf("requests %+v, want a second one skipping aiter", f.requests)
	}
	if st := m.run.rs.Step("aiter"); st.State != stateSkipped || !strings.Contains(st.Reason, "skipped by you") {
		t.Errorf("aiter: %v %q", st.State, st.Reason)
	}
	if m.run.rs.Step("verify").State != stateOK {
		t.Error("the run did not go on to verify")
	}
}

func TestSkipRefusesRequiredStep(t *testing.T) {
	f := newFakeBackend(t)
	f.lineGap = 20 * time.Millisecond
	f.extra = 100
	m := newSized(t, f, 120, 40)
	drive(t, m, press("enter"), press("enter"))
	driveHeld(t, m, press("enter"))
	pump(t, m)
	driveHeld(t, m, press("S"))
	if m.run.skipping != "" || m.run.askSkip != "" || !strings.Contains(m.run.note, "Only an optional step") {
		t.Errorf("S on toolbox: skipping %q, note %q", m.run.skipping, m.run.note)
	}
	m.run.Stop()
}

func TestTroubleshootLadderForHang(t *testing.T) {
	m := newSized(t, newFakeBackend(t), 120, 40)
	drive(t, m, press("t"))
	for _, r := range "llama.log" {
		drive(t, m, press(string(r)))
	}
	drive(t, m, press("enter"))
	v := plain(m)
	for _, want := range []string{"llamacpp-rocm-load-hang-sdma", "climb the ladder", "1. Confirm it is the load hang ▶ now"} {
		if !strings.Contains(v, want) {
			t.Errorf("troubleshoot lacks %q:\n%s", want, v)
		}
	}
	drive(t, m, press("enter"))
	v = plain(m)
	if !strings.Contains(v, "1. Confirm it is the load hang ✗ tried") || !strings.Contains(v, "2. Copy without SDMA ▶ now") ||
		!strings.Contains(v, "HSA_ENABLE_SDMA=0") {
		t.Errorf("enter did not climb one rung:\n%s", v)
	}
	drive(t, m, press("esc"))
	if m.top() != m.detect {
		t.Errorf("esc left %T on top, want detection", m.top())
	}
}

// TestTroubleshootPointsAtAnUnknownError checks the fallback when no rule
// knows the failure: the lines that look like its error, from the real
// file, with a bell in the log removed rather than rung.
func TestTroubleshootPointsAtAnUnknownError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "unknown.log")
	log := "[1/9] Building HIP object kern.o\nkern.hip:3:1: error: unknown type name 'hipFoo'\a\nFAILED: kern.o\n"
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newSized(t, newFakeBackend(t), 120, 40)
	drive(t, m, press("t"))
	for _, r := range path {
		drive(t, m, press(string(r)))
	}
	drive(t, m, press("enter"))
	v := plain(m)
	for _, want := range []string{"No known failure in " + path, "These lines look like the error",
		"line 2  kern.hip:3:1: error: unknown type name 'hipFoo'", "line 3  FAILED: kern.o"} {
		if !strings.Contains(v, want) {
			t.Errorf("troubleshoot lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "\a") {
		t.Errorf("the bell reached the screen")
	}
}

func TestTroubleshootShowsScanError(t *testing.T) {
	m := newSized(t, newFakeBackend(t), 120, 40)
	drive(t, m, press("t"))
	for _, r := range "missing" {
		drive(t, m, press(string(r)))
	}
	drive(t, m, press("enter"))
	if v := plain(m); !strings.Contains(v, "no such file or directory") {
		t.Errorf("scan error not shown:\n%s", v)
	}
}

func TestPickerPreselectsTrack(t *testing.T) {
	for _, tc := range []struct{ opt, want string }{{"", "therock-toolbox"}, {"ollama", "ollama"}} {
		t.Run(cmp.Or(tc.opt, "recommended"), func(t *testing.T) {
			m := New(context.Background(), newFakeBackend(t), Options{Track: tc.opt})
			drive(t, m, tea.WindowSizeMsg{Width: 120, Height: 40})
			drive(t, m, m.Init()())
			drive(t, m, press("enter"))
			if got := m.picker.Hovered().ID; got != tc.want {
				t.Errorf("Track %q: hovered %s, want %s", tc.opt, got, tc.want)
			}
			if !strings.Contains(plain(m), "> "+tc.want) {
				t.Errorf("the cursor is not on %s:\n%s", tc.want, plain(m))
			}
		})
	}
}

func TestPickerMovesAndEscGoesBack(t *testing.T) {
	m := newSized(t, newFakeBackend(t), 120, 40)
	drive(t, m, press("enter"), press("down"))
	if got := m.picker.Hovered().ID; got != "vllm-image" {
		t.Fatalf("hovered %s after down, want vllm-image", got)
	}
	if v := plain(m); !strings.Contains(v, "A prebuilt vLLM image") {
		t.Errorf("details do not follow the cursor:\n%s", v)
	}
	drive(t, m, press("enter"))
	if p, ok := m.top().(*planScreen); !ok || p.plan.Track.ID != "vllm-image" {
		t.Fatalf("enter planned %T", m.top())
	}
	drive(t, m, press("esc"))
	if m.top() != m.picker || m.picker.Hovered().ID != "vllm-image" {
		t.Errorf("esc from the plan: top %T, hovered %s", m.top(), m.picker.Hovered().ID)
	}
	drive(t, m, press("down"))
	if m.picker.Hovered().ID != "llamacpp-vulkan" {
		t.Error("the picker is not live again after esc")
	}
}

func TestNoGPUOffersDemo(t *testing.T) {
	m := New(context.Background(), newFakeBackend(t), Options{})
	drive(t, m, tea.WindowSizeMsg{Width: 100, Height: 30})
	drive(t, m, detectedMsg{det: &Detection{Report: &detect.Report{}, Source: "this machine"}})
	if v := plain(m); !strings.Contains(v, "No AMD GPU found") || !strings.Contains(v, "haloforge demo") {
		t.Errorf("no-GPU card:\n%s", v)
	}
}

// syncBuffer is a goroutine-safe output that remembers when the first
// frame was written.
type syncBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first time.Time
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.first.IsZero() && bytes.Contains(p, []byte("haloforge")) {
		b.first = time.Now()
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.buf.String() }

func (b *syncBuffer) firstAt() time.Time { b.mu.Lock(); defer b.mu.Unlock(); return b.first }

// runProgram runs the wizard as a real program on a fake terminal until
// stop returns true or the timeout passes.
func runProgram(t *testing.T, b Backend, env []string, stop func(*syncBuffer) bool) (*syncBuffer, time.Time) {
	t.Helper()
	out := &syncBuffer{}
	pr, pw := io.Pipe()
	defer pw.Close()
	m := New(context.Background(), b, Options{})
	p := tea.NewProgram(m, tea.WithInput(pr), tea.WithOutput(out), tea.WithEnvironment(env), tea.WithWindowSize(120, 40))
	start := time.Now()
	done := make(chan error, 1)
	go func() { _, err := p.Run(); done <- err }()
	deadline := time.Now().Add(5 * time.Second)
	for !stop(out) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	p.Quit()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return out, start
}

func TestFirstFrameUnder200ms(t *testing.T) {
	f := newFakeBackend(t)
	f.detDelay = 3 * time.Second // detection must not hold the first frame
	out, start := runProgram(t, f, []string{"TERM=xterm-256color"}, func(b *syncBuffer) bool { return !b.firstAt().IsZero() })
	first := out.firstAt()
	if first.IsZero() {
		t.Fatal("no frame at all")
	}
	took := first.Sub(start)
	t.Logf("first frame after %v", took)
	if took > 200*time.Millisecond {
		t.Errorf("first frame after %v, want < 200 ms", took)
	}
	if !strings.Contains(out.String(), "Looking at your GPU") {
		t.Error("the first frame does not say detection is under way")
	}
}

// sgrColour matches SGR sequences that set a foreground or background colour.
var sgrColour = regexp.MustCompile(`\x1b\[[0-9;]*(3[0-7]|9[0-7]|38;5;\d+)m`)

func TestNoColorHonoured(t *testing.T) {
	for _, tc := range []struct {
		env    []string
		colour bool
	}{
		// The output is a buffer, not a tty: TTY_FORCE (colorprofile) stands for one.
		{[]string{"TERM=xterm-256color", "TTY_FORCE=1"}, true}, // so the test can fail
		{[]string{"TERM=xterm-256color", "TTY_FORCE=1", "NO_COLOR=1"}, false},
	} {
		t.Run(strings.Join(tc.env, " "), func(t *testing.T) {
			out, _ := runProgram(t, newFakeBackend(t), tc.env, func(b *syncBuffer) bool { return strings.Contains(b.String(), "Recommended") })
			if got := sgrColour.MatchString(out.String()); got != tc.colour {
				t.Errorf("env %v: colour sequences = %v, want %v", tc.env, got, tc.colour)
			}
		})
	}
}

// TestFlowTeatestFakeRunner drives the real program with teatest: three
// Enters, the hint panel, r, and the summary.
func TestFlowTeatestFakeRunner(t *testing.T) {
	f := newFakeBackend(t)
	f.lineGap = time.Millisecond
	tm := teatest.NewTestModel(t, New(context.Background(), f, Options{}), teatest.WithInitialTermSize(120, 40))
	waitText := func(s string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(s)) },
			teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	}
	waitText("gfx1151")
	tm.Send(press("enter"))
	waitText("Pick a track")
	tm.Send(press("enter"))
	waitText("steps run")
	tm.Send(press("enter"))
	waitText("therock-amdsmi-double-free")
	tm.Send(press("r"))
	waitText("Results")
	tm.Send(press("q"))
	tm.Send(press("y"))
	final := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
	if final.Result().Status != steps.OutcomeSucceeded || final.Result().Track != "therock-toolbox" {
		t.Errorf("final result %+v", final.Result())
	}
}

func TestBlockingCheckNeedsASecondEnter(t *testing.T) {
	m := New(context.Background(), newFakeBackend(t), Options{})
	drive(t, m, tea.WindowSizeMsg{Width: 120, Height: 40})
	det := strixHalo()
	det.Checks = append(det.Checks, detect.Check{ID: "kfd-access", Status: detect.StatusFail, Summary: "/dev/kfd is missing", Fix: "sudo modprobe amdgpu"})
	drive(t, m, detectedMsg{det: det}, press("enter"), press("enter"))
	v := plain(m)
	if !strings.Contains(v, "✗ Blocking checks fail: /dev/kfd (kfd-access). The build stops at them") || !strings.Contains(v, "/dev/kfd: /dev/kfd is missing") {
		t.Fatalf("plan does not warn about the blocking check:\n%s", v)
	}
	drive(t, m, press("enter"))
	if m.run != nil || !strings.Contains(plain(m), "enter again: run anyway") {
		t.Fatalf("the first enter started the run despite a failing blocking check")
	}
	drive(t, m, press("enter"))
	if m.run == nil {
		t.Error("the second enter did not start the run")
	}
}

func TestShellWithoutToolboxSaysWhy(t *testing.T) {
	f := newFakeBackend(t)
	m := New(context.Background(), f, Options{Demo: true})
	drive(t, m, tea.WindowSizeMsg{Width: 120, Height: 40})
	drive(t, m, m.Init()(), press("enter"), press("enter"), press("enter"))
	if strings.Contains(plain(m), "s shell") {
		t.Errorf("the footer offers s on a track without a box:\n%s", plain(m))
	}
	drive(t, m, press("s"))
	if v := plain(m); !strings.Contains(v, "builds no distrobox, so there is no box to enter") {
		t.Errorf("s without a toolbox:\n%s", v)
	}
	if v := plain(m); !strings.Contains(v, "[demo: sample data, nothing is installed]") {
		t.Errorf("the demo banner is missing:\n%s", v)
	}
}

// TestPlanModeRunsAndEndsOnTheSummaryFakeRunner is the TUI of `haloforge
// build`: it starts at the run screen and, once the run
// succeeds, shows the summary with the next commands instead of vanishing;
// q then quits at once, and the result carries the recap.
func TestPlanModeRunsAndEndsOnTheSummaryFakeRunner(t *testing.T) {
	f := newFakeBackend(t)
	f.fixed = true
	m := New(context.Background(), f, Options{Plan: mustPlan(t, f)})
	drive(t, m, tea.WindowSizeMsg{Width: 100, Height: 30})
	if m.top() != m.run {
		t.Fatalf("plan mode starts at %T", m.top())
	}
	if drive(t, m, m.Init()()) {
		t.Fatal("the session ended by itself after a clean run: the summary was never seen")
	}
	if v := plain(m); m.top().Crumb() != "summary" || !strings.Contains(v, "✓ therock-toolbox is built") || !strings.Contains(v, "$ distrobox enter") {
		t.Fatalf("after a clean run the screen is %T:\n%s", m.top(), v)
	}
	if !drive(t, m, press("q")) {
		t.Fatal("q on the summary did not quit")
	}
	r := m.Result()
	if r.Status != steps.OutcomeSucceeded || r.Track != "therock-toolbox" || len(r.Next) == 0 || len(r.RunDirs) != 1 {
		t.Errorf("result %+v", r)
	}
}

// TestTroubleshootHeaderWrapsALongPath: at 80 columns a long log path in
// the troubleshoot header is wrapped whole: no row is cut with "…".
func TestTroubleshootHeaderWrapsALongPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "runs", "20261124-194234-60a434-a-long-run-directory-name")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rocm.log")
	if err := os.WriteFile(path, []byte("kern.hip:3:1: error: unknown type name 'hipFoo'\nFAILED: kern.o\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newSized(t, newFakeBackend(t), 80, 24)
	drive(t, m, press("t"))
	for _, r := range path {
		drive(t, m, press(string(r)))
	}
	drive(t, m, press("enter"))
	v := plain(m)
	if !strings.Contains(strings.ReplaceAll(v, "\n", ""), path) {
		t.Errorf("the path is not whole on screen:\n%s", v)
	}
	for _, l := range strings.Split(v, "\n") {
		if strings.Contains(l, path[:20]) && strings.HasSuffix(strings.TrimRight(l, " "), "…") {
			t.Errorf("row cut: %q", l)
		}
	}
}

// TestQuittingGivesTheNextCommands: leaving the wizard hands cmd a recap: the
// next commands after a build, the exact resume command (with --track and the
// user's flags) after a stop, in the stop note too.
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

// TestCtrlCIsAnInterruption: q quits at once when nothing runs; Ctrl-C on an
// idle screen is an interruption (exit 130); after a run ended its outcome
// stands.
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

// TestFooterAlwaysShowsHelpAndQuit: at 80 and 120 columns, on every screen
// and state, the footer fits one line and ends with help and quit.
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
		for name, build := range screenExamples {
			m := newSized(t, newFakeBackend(t), w, 30)
			drive(t, m, openMsg{s: build(m.common)})
			check(name)
		}
	}
}

// TestSizeGuardWraps: the size guard's words wrap to the window; during a run
// it does not offer --plain, which cannot help then.
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

// TestFailureWhoseFixExportsSaysToQuit: a fix that exports a variable
// cannot reach this run's retry (an export in another shell never does),
// so the note says to quit, run it and resume with the printed command
// instead of offering r as if it would help.
func TestFailureWhoseFixExportsSaysToQuit(t *testing.T) {
	f := newFakeBackend(t)
	f.failLog = []string{"[229/400] Building CXX object csrc/attention.o", "c++: fatal error: Killed signal terminated program cc1plus"}
	i := slices.IndexFunc(diagnose.Rules(), func(r diagnose.Rule) bool { return r.ID == "build-oom-killed" })
	if i < 0 {
		t.Fatal("no build-oom-killed rule")
	}
	rule := diagnose.Rules()[i]
	f.failFinding = &diagnose.Finding{Family: rule.ID, Text: "Killed signal terminated program", Summary: rule.Summary, Fix: rule.Fix}
	m := toRun(t, f, 200, 40)
	v := plain(m)
	for _, want := range []string{"Step rocm failed. Its fix sets MAX_JOBS, CMAKE_BUILD_PARALLEL_LEVEL, which this run cannot see: quit (q), run the fix, then build it again with --resume"} {
		if !strings.Contains(v, want) {
			t.Errorf("run screen lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "Step rocm failed. r: retry") {
		t.Errorf("the note offers r for an export:\n%s", v)
	}
}

func TestFixExports(t *testing.T) {
	for _, tc := range []struct{ name, fix, want string }{
		{"none", "pip uninstall -y amdsmi", ""},
		{"one a line", "export MAX_JOBS=4   # about RAM / 4\nexport CMAKE_BUILD_PARALLEL_LEVEL=$MAX_JOBS", "MAX_JOBS, CMAKE_BUILD_PARALLEL_LEVEL"},
		{"several on one", "export PYTORCH_ROCM_ARCH=gfx1151 GPU_ARCHS=gfx1151   # then rebuild VAR=x", "PYTORCH_ROCM_ARCH, GPU_ARCHS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fixExports([]diagnose.Finding{{Fix: tc.fix}}); got != tc.want {
				t.Errorf("fixExports(%q) = %q, want %q", tc.fix, got, tc.want)
			}
		})
	}
}
