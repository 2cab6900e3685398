package tui

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/google/go-cmp/cmp"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
)

func testPlan() *Plan {
	return &Plan{Plan: &steps.Plan{Steps: []steps.PlannedStep{{Step: steps.Step{ID: "rocm"}}, {Step: steps.Step{ID: "aiter", Optional: true}}, {Step: steps.Step{ID: "vllm"}}}}}
}

func TestRunStateApply(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	double := diagnose.Finding{Family: "therock-amdsmi-double-free", Line: 7}
	asm := diagnose.Finding{Family: "gfx11-inline-asm-unsupported", Line: 3}
	for _, tc := range []struct {
		name   string
		events []runner.Event
		got    func(*runState) []any
		want   []any
	}{
		{"run started", []runner.Event{runner.RunStarted{Track: "t", RunID: "r1", RunDir: "/d", Total: 3, At: t0}},
			func(rs *runState) []any {
				return []any{rs.RunID, rs.RunDir, rs.Total, rs.Attempts, rs.Started.Equal(t0)}
			},
			[]any{"r1", "/d", 3, 1, true}},
		{"step running", []runner.Event{runner.StepStarted{Step: "rocm", Total: 3, ETA: time.Minute, Log: "/d/rocm.log", At: t0}},
			func(rs *runState) []any {
				s := rs.Step("rocm")
				return []any{rs.Current, s.State == stateRunning, s.Log}
			},
			[]any{"rocm", true, "/d/rocm.log"}},
		{"lines and drops", []runner.Event{
			runner.Lines{Step: "rocm", First: 1, Text: []string{"a", "b"}},
			runner.Lines{Step: "rocm", First: 7, Text: []string{"c"}, Dropped: 4},
			runner.StepFinished{Step: "rocm", Status: steps.OutcomeSucceeded, Dropped: 2}},
			func(rs *runState) []any {
				s := rs.Step("rocm")
				return []any{s.buf.End(), s.buf.Line(2), s.Dropped}
			},
			[]any{3, "c", 6}},
		{"finding counted once per family", []runner.Event{runner.Found{Step: "rocm", Finding: double}, runner.Found{Step: "rocm", Finding: double}},
			func(rs *runState) []any {
				s := rs.Step("rocm")
				return []any{len(s.Findings), s.Findings[0].Count}
			},
			[]any{1, 2}},
		{"failed step pins the hint", []runner.Event{
			runner.StepStarted{Step: "rocm"}, runner.Found{Step: "rocm", Finding: double},
			runner.StepFinished{Step: "rocm", Status: steps.OutcomeFailed, ExitCode: 134, Duration: 3 * time.Second},
			runner.RunFinished{Status: steps.OutcomeFailed}},
			func(rs *runState) []any {
				st, f := rs.Hint()
				return []any{rs.Failed().ID, st.ID, f.Family, rs.Finished, rs.Progress()}
			},
			[]any{"rocm", "rocm", "therock-amdsmi-double-free", true, 33}},
		{"optional failure is not the failure", []runner.Event{
			runner.Found{Step: "aiter", Finding: asm},
			runner.StepFinished{Step: "aiter", Optional: true, Status: steps.OutcomeFailed}},
			func(rs *runState) []any {
				st, f := rs.Hint()
				return []any{rs.Failed() == nil, st.ID, f.Family}
			},
			[]any{true, "aiter", "gfx11-inline-asm-unsupported"}},
		{"skipped", []runner.Event{runner.StepSkipped{Step: "rocm", WhySkipped: "up to date"}},
			func(rs *runState) []any { s := rs.Step("rocm"); return []any{s.State == stateSkipped, s.Reason} },
			[]any{true, "up to date"}},
		{"running step interrupted by the end", []runner.Event{runner.StepStarted{Step: "vllm"}, runner.RunFinished{Status: steps.OutcomeInterrupted, Err: errors.New("stopped")}},
			func(rs *runState) []any {
				return []any{rs.Step("vllm").State == stateInterrupted, rs.Status, rs.Err.Error(), rs.Current}
			},
			[]any{true, "interrupted", "stopped", ""}},
		{"unknown step is ignored", []runner.Event{runner.Lines{Step: "nope", Text: []string{"x"}}, runner.StepFinished{Step: "nope", Status: steps.OutcomeSucceeded}},
			func(rs *runState) []any { return []any{rs.Done, rs.Step("nope") == nil} },
			[]any{1, true}},
		{"not verified", []runner.Event{
			runner.StepFinished{Step: "rocm", Status: steps.OutcomeSucceeded, Verified: []string{"torch imports"}},
			runner.StepFinished{Step: "vllm", Status: steps.OutcomeNotVerified, Verified: []string{"a kernel ran"}, NotVerified: []string{"no model"}},
			runner.RunFinished{Status: steps.OutcomeNotVerified}},
			func(rs *runState) []any {
				v := rs.Step("vllm")
				return []any{v.State == stateNotVerified, v.Verified, v.NotVerified, rs.NotVerified(), rs.Failed() == nil, rs.Status}
			},
			[]any{true, []string{"a kernel ran"}, []string{"no model"}, []string{"vllm"}, true, "not-verified"}},
		{"notice", []runner.Event{runner.Notice{Text: "resuming run r0"}},
			func(rs *runState) []any { return []any{strings.Join(rs.Notices, ";")} },
			[]any{"resuming run r0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := newRunState(testPlan())
			rs.Total = 3
			for _, e := range tc.events {
				rs.Apply(e)
			}
			if diff := cmp.Diff(tc.want, tc.got(rs)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestSummaryTellsNotVerified: the summary never calls a step that could
// not prove its outcome built and fine.
func TestSummaryTellsNotVerified(t *testing.T) {
	rs := newRunState(testPlan())
	rs.Apply(runner.StepFinished{Step: "rocm", Status: steps.OutcomeSucceeded})
	rs.Apply(runner.StepFinished{Step: "vllm", Status: steps.OutcomeNotVerified, NotVerified: []string{"offline: no model", "no GPU"}})
	rs.Apply(runner.RunFinished{Status: steps.OutcomeNotVerified})
	got := ansi.Strip(summaryText(rs, &Plan{Plan: &steps.Plan{Track: steps.Track{ID: "therock-toolbox"}}}, "", false, DefaultStyles(), 120))
	for _, want := range []string{"⚠ therock-toolbox is built, not verified: vllm", "⚠ vllm             not verified: offline: no model; no GPU"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "✓ therock-toolbox is built") {
		t.Errorf("summary calls a not verified run built:\n%s", got)
	}
}

func TestResetForRetryUnpinsTheHint(t *testing.T) {
	rs := newRunState(testPlan())
	rs.Apply(runner.Lines{Step: "rocm", First: 1, Text: []string{"double free"}})
	rs.Apply(runner.Found{Step: "rocm", Finding: diagnose.Finding{Family: "x"}})
	rs.Apply(runner.StepFinished{Step: "rocm", Status: steps.OutcomeFailed})
	rs.Apply(runner.RunFinished{Status: steps.OutcomeFailed})
	rs.ResetForRetry()
	if _, f := rs.Hint(); f != nil || rs.Failed() != nil || rs.Finished {
		t.Errorf("after reset: hint %v failed %v finished %v", f, rs.Failed(), rs.Finished)
	}
	if last := rs.Step("rocm").buf.Line(rs.Step("rocm").buf.End() - 1); !strings.Contains(last, "retry") {
		t.Errorf("no retry separator in the log: %q", last)
	}
}

func TestRemainingCountsDown(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rs := newRunState(testPlan())
	if _, ok := rs.Remaining(t0); ok {
		t.Error("an ETA without data")
	}
	rs.Apply(runner.StepStarted{Step: "rocm", ETA: 10 * time.Minute, At: t0})
	if left, ok := rs.Remaining(t0.Add(4 * time.Minute)); !ok || left != 6*time.Minute {
		t.Errorf("remaining %v %v, want 6m", left, ok)
	}
	if left, _ := rs.Remaining(t0.Add(time.Hour)); left != 0 {
		t.Errorf("overdue ETA is %v, want 0", left)
	}
}

func TestRunStateKnowsAStepWaitsForInput(t *testing.T) {
	rs := newRunState(testPlan())
	w := runner.WaitingForInput{Step: "rocm", Prompt: "[sudo] password for ann:"}
	rs.Apply(runner.StepStarted{Step: "rocm"})
	rs.Apply(w)
	if rs.Waiting == nil || *rs.Waiting != w {
		t.Fatalf("Waiting = %+v", rs.Waiting)
	}
	if got := waitingLine(rs.Waiting); !strings.HasPrefix(got, "? rocm waits for input: [sudo] password for ann: · the wizard cannot answer it") {
		t.Errorf("status line %q", got)
	}
	rs.Apply(runner.Lines{Step: "vllm", Text: []string{"other"}})
	if rs.Waiting == nil {
		t.Error("another step's line ended the wait")
	}
	rs.Apply(runner.Lines{Step: "rocm", Text: []string{"Sorry, try again."}})
	if rs.Waiting != nil {
		t.Error("the step printed again, yet it still waits")
	}
	rs.Apply(w)
	rs.Apply(runner.StepFinished{Step: "rocm", Status: steps.OutcomeInterrupted})
	if rs.Waiting != nil {
		t.Error("the step ended, yet it still waits")
	}
}
