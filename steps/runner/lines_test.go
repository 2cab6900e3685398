package runner

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
)

func TestPrintLines(t *testing.T) {
	f := diagnose.Finding{Family: "hip-no-binary-for-gpu", Line: 3, Text: "hipErrorNoBinaryForGpu", Summary: "no code object for this GPU",
		Fix: "export PYTORCH_ROCM_ARCH=gfx1151\npip install …", Links: []string{"https://example.invalid/1"}}
	events := []Event{
		{Kind: EventRunStarted, Step: "fx", RunID: "r1", Total: 2},
		{Kind: EventNotice, Reason: "resuming run r0: b (interrupted)"},
		{Kind: EventStepSkipped, Step: "a", Reason: "up to date (succeeded 2026-11-20 10:00)"},
		{Kind: EventStepStarted, Step: "b", Title: "Build B", Index: 1, Total: 2, Elapsed: 2 * time.Second, ETA: 3*time.Minute + 12*time.Second},
		{Kind: EventLine, Step: "b", Line: "one"},
		{Kind: EventLine, Step: "b", Line: "two", Dropped: 5, Cut: 100},
		{Kind: EventLine, Step: "b", Lines: []string{"three", "four"}},
		{Kind: EventFinding, Step: "b", Finding: &f},
		{Kind: EventStepFinished, Step: "b", Status: steps.OutcomeFailed, ExitCode: 2, Duration: 75 * time.Second,
			Log: "/s/runs/r1/b.log", Tail: []string{"three", "four"}, Findings: []diagnose.Finding{f}, Optional: true, Reason: "CDNA only"},
		{Kind: EventStepStarted, Step: "c", Title: "Build C (optional)", Index: 2, Total: 2, Optional: true},
		{Kind: EventStepFinished, Step: "c", Status: steps.OutcomeInterrupted, Duration: time.Hour + 2*time.Minute, Log: "/s/runs/r1/c.log", Err: errors.New("log incomplete")},
		{Kind: EventRunFinished, Status: steps.OutcomeInterrupted, Duration: 2 * time.Hour, RunDir: "/s/runs/r1"},
	}
	ch := make(chan Event, len(events))
	for _, e := range events {
		ch <- e
	}
	close(ch)
	var out bytes.Buffer
	last := PrintLines(&out, ch, PrintOptions{Resume: "haloforge build --track fx --resume"})
	want := `fx: 2 steps to run · run r1
note: resuming run r0: b (interrupted)
- a skipped: up to date (succeeded 2026-11-20 10:00)
▶ [1/2] b: Build B · elapsed 2s · ETA 3m12s
[b] one
[b] … 5 lines not shown here (all in the log)
[b] two … (100 more bytes in the log)
[b] three
[b] four
! [b] hip-no-binary-for-gpu: no code object for this GPU (line 3)
✗ b failed (exit 2) after 1m15s (optional: the build goes on)
  why it is optional: CDNA only
  last lines of b:
  │ three
  │ four
  diagnosis hip-no-binary-for-gpu: no code object for this GPU
    line 3: hipErrorNoBinaryForGpu
    fix: export PYTORCH_ROCM_ARCH=gfx1151
         pip install …
    see: https://example.invalid/1
  log: /s/runs/r1/b.log
▶ [2/2] c: Build C (optional) · elapsed 0.0s
■ c interrupted after 1h02m
  error: log incomplete
  log: /s/runs/r1/c.log
■ fx interrupted after 2h00m
  resume with: haloforge build --track fx --resume
report: /s/runs/r1/report.json
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("line mode (-want +got):\n%s", diff)
	}
	if last.Kind != EventRunFinished || last.Status != steps.OutcomeInterrupted {
		t.Errorf("returned %+v", last)
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		400 * time.Millisecond: "0.4s", 12 * time.Second: "12s", 3*time.Minute + 12*time.Second: "3m12s",
		time.Hour + 2*time.Minute + 59*time.Second: "1h02m",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestPrintLinesPointsAtAnUnknownError checks the fallback for a failure
// no rule knows: the lines that look like its error, with the log's line
// numbers, after the last lines.
func TestPrintLinesPointsAtAnUnknownError(t *testing.T) {
	log := filepath.Join(t.TempDir(), "b.log")
	text := "[1/9] Building HIP object kern.o\nkern.hip:3:1: error: unknown type name 'hipFoo'\nFAILED: kern.o\nninja: build stopped\n"
	if err := os.WriteFile(log, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ch := make(chan Event, 1)
	ch <- Event{Kind: EventStepFinished, Step: "b", Status: steps.OutcomeFailed, ExitCode: 1, Log: log, Tail: []string{"ninja: build stopped"}}
	close(ch)
	var out bytes.Buffer
	PrintLines(&out, ch, PrintOptions{})
	want := "  diagnosis: no known failure recognised in the log\n" +
		"  the error may be at:\n" +
		"    line 2: kern.hip:3:1: error: unknown type name 'hipFoo'\n" +
		"    line 3: FAILED: kern.o\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("output lacks the suspects:\n%s\nwant:\n%s", out.String(), want)
	}
}
