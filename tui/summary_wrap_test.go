package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// The summary wraps what it says of a step under its column and breaks a
// long next command between words with " \": nothing is cut with "…" at
// 80 columns (an 80-column summary once cut "exit 1 afte…").
func TestSummaryWrapsInsteadOfCutting(t *testing.T) {
	st := testCommon().Styles
	s := &stepRun{ID: "aiter", Optional: true, State: stateFailed, ExitCode: 1, Duration: 3 * time.Second}
	text := ansi.Strip(summaryStepLine(s, st, 80))
	flat := strings.Join(strings.Fields(text), " ")
	if !strings.Contains(flat, "failed (optional: the run went on without it): exit 1 after 3s") {
		t.Fatalf("the step line lost its end:\n%s", text)
	}
	for _, l := range strings.Split(text, "\n") {
		if ansi.StringWidth(l) > 80 || strings.Contains(l, "…") {
			t.Errorf("a cut or overlong row: %q", l)
		}
	}
}
