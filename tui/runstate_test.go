package tui

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
)

func testPlan() *Plan {
	return &Plan{Steps: []PlanStep{{ID: "rocm"}, {ID: "aiter", Optional: true}, {ID: "vllm"}}}
}

func TestRunStateApply(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	double := &diagnose.Finding{Family: "therock-amdsmi-double-free", Line: 7}
	asm := &diagnose.Finding{Family: "gfx11-inline-asm-unsupported", Line: 3}
	for _, tc := range []struct {
		name   string
		events []runner.Event
		check  func(*runState) string
	}{
		{"run started", []runner.Event{{Kind: runner.EventRunStarted, RunID: "r1", RunDir: "/d", Total: 3, At: t0}},
			func(rs *runState) string {
				return fmt.Sprint(rs.RunID, rs.RunDir, rs.Total, rs.Attempts, rs.Started.Equal(t0))
			}},
		{"step running", []runner.Event{{Kind: runner.EventStepStarted, Step: "rocm", Total: 3, ETA: time.Minute, Log: "/d/rocm.log", At: t0}},
			func(rs *runState) string {
				s := rs.Step("rocm")
				return fmt.Sprint(rs.Current, s.State == stateRunning, s.Log)
			}},
		{"lines and drops", []runner.Event{{Kind: runner.EventLine, Step: "rocm", Line: "a"}, {Kind: runner.EventLine, Step: "rocm", Line: "b", Dropped: 4}},
			func(rs *runState) string { s := rs.Step("rocm"); return fmt.Sprint(s.buf.End(), s.Dropped) }},
		{"finding counted once per family", []runner.Event{{Kind: runner.EventFinding, Step: "rocm", Finding: double}, {Kind: runner.EventFinding, Step: "rocm", Finding: double}},
			func(rs *runState) string {
				s := rs.Step("rocm")
				return fmt.Sprint(len(s.Findings), s.Findings[0].Count)
			}},
		{"failed step pins the hint", []runner.Event{
			{Kind: runner.EventStepStarted, Step: "rocm"}, {Kind: runner.EventFinding, Step: "rocm", Finding: double},
			{Kind: runner.EventStepFinished, Step: "rocm", Status: steps.OutcomeFailed, ExitCode: 134, Duration: 3 * time.Second},
			{Kind: runner.EventRunFinished, Status: steps.OutcomeFailed}},
			func(rs *runState) string {
				st, f := rs.Hint()
				return fmt.Sprint(rs.Failed().ID, st.ID, f.Family, rs.Finished, rs.Progress())
			}},
		{"optional failure is not the failure", []runner.Event{
			{Kind: runner.EventFinding, Step: "aiter", Finding: asm},
			{Kind: runner.EventStepFinished, Step: "aiter", Status: steps.OutcomeFailed}},
			func(rs *runState) string {
				st, f := rs.Hint()
				return fmt.Sprint(rs.Failed() == nil, st.ID, f.Family)
			}},
		{"skipped", []runner.Event{{Kind: runner.EventStepSkipped, Step: "rocm", Reason: "up to date"}},
			func(rs *runState) string { s := rs.Step("rocm"); return fmt.Sprint(s.State == stateSkipped, s.Reason) }},
		{"running step interrupted by the end", []runner.Event{{Kind: runner.EventStepStarted, Step: "vllm"}, {Kind: runner.EventRunFinished, Status: steps.OutcomeInterrupted, Err: errors.New("stopped")}},
			func(rs *runState) string {
				return fmt.Sprint(rs.Step("vllm").State == stateInterrupted, rs.Status, rs.Err, rs.Current == "")
			}},
		{"unknown step is ignored", []runner.Event{{Kind: runner.EventLine, Step: "nope", Line: "x"}, {Kind: runner.EventStepFinished, Step: "nope", Status: steps.OutcomeSucceeded}},
			func(rs *runState) string { return fmt.Sprint(rs.Done, rs.Step("nope") == nil) }},
		{"notice", []runner.Event{{Kind: runner.EventNotice, Reason: "resuming run r0"}},
			func(rs *runState) string { return strings.Join(rs.Notices, ";") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := newRunState(testPlan())
			rs.Total = 3
			for _, e := range tc.events {
				rs.Apply(e)
			}
			got := tc.check(rs)
			want := map[string]string{
				"run started":                         "r1/d3 1 true",
				"step running":                        "rocmtrue/d/rocm.log",
				"lines and drops":                     "2 4",
				"finding counted once per family":     "1 2",
				"failed step pins the hint":           "rocmrocmtherock-amdsmi-double-freetrue 33",
				"optional failure is not the failure": "trueaitergfx11-inline-asm-unsupported",
				"skipped":                             "trueup to date",
				"running step interrupted by the end": "trueinterruptedstopped true",
				"unknown step is ignored":             "1 true",
				"notice":                              "resuming run r0",
			}[tc.name]
			if got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

func TestResetForRetryUnpinsTheHint(t *testing.T) {
	rs := newRunState(testPlan())
	rs.Apply(runner.Event{Kind: runner.EventLine, Step: "rocm", Line: "double free"})
	rs.Apply(runner.Event{Kind: runner.EventFinding, Step: "rocm", Finding: &diagnose.Finding{Family: "x"}})
	rs.Apply(runner.Event{Kind: runner.EventStepFinished, Step: "rocm", Status: steps.OutcomeFailed})
	rs.Apply(runner.Event{Kind: runner.EventRunFinished, Status: steps.OutcomeFailed})
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
	rs.Apply(runner.Event{Kind: runner.EventStepStarted, Step: "rocm", ETA: 10 * time.Minute, At: t0})
	if left, ok := rs.Remaining(t0.Add(4 * time.Minute)); !ok || left != 6*time.Minute {
		t.Errorf("remaining %v %v, want 6m", left, ok)
	}
	if left, _ := rs.Remaining(t0.Add(time.Hour)); left != 0 {
		t.Errorf("overdue ETA is %v, want 0", left)
	}
}

func TestFormatting(t *testing.T) {
	for in, want := range map[time.Duration]string{
		0: "0s", 4 * time.Second: "4s", 59499 * time.Millisecond: "59s", 125 * time.Second: "2m05s",
		time.Hour + 2*time.Minute: "1h02m",
	} {
		if got := fmtDuration(in); got != want {
			t.Errorf("fmtDuration(%v) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[int64]string{512 << 20: "512 MiB", 124 << 30: "124 GiB", 16363974656: "15.2 GiB", 1536: "1.5 KiB", 67108864 * 1024: "64 GiB"} {
		if got := humanBytes(in); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", in, got, want)
		}
	}
}
