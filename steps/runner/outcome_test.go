package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/haloforge/haloforge/steps"
)

// TestOutcomeOfAnIncompleteLog: a step whose script exits 0 but whose log
// could not be written whole (a full disk) is failed, and says why; the
// summary used to read "✗ rocm failed (exit 0)" and nothing else.
func TestOutcomeOfAnIncompleteLog(t *testing.T) {
	logErr := errors.New("log /state/runs/x/rocm.log: no space left on device")
	for _, tc := range []struct {
		name       string
		e          ended
		streamErr  error
		wantStatus string
		wantWhy    string
	}{
		{"exit 0, log whole", ended{}, nil, steps.OutcomeSucceeded, ""},
		{"exit 0, log cut", ended{}, logErr, steps.OutcomeFailed, "the script exited 0, but haloforge could not keep its whole log"},
		{"exit 2, log cut", ended{code: 2, parked: true}, logErr, steps.OutcomeFailed, ""},
		{"stopped, log cut", ended{stopped: true}, logErr, steps.OutcomeInterrupted, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := (&Runner{}).outcomeOf(tc.e, tc.streamErr)
			if out.status != tc.wantStatus {
				t.Errorf("status %q, want %q", out.status, tc.wantStatus)
			}
			if tc.wantWhy == "" && out.why != "" || !strings.Contains(out.why, tc.wantWhy) {
				t.Errorf("why %q, want %q", out.why, tc.wantWhy)
			}
			if tc.wantWhy != "" && !strings.Contains(out.why, "no space left on device") {
				t.Errorf("why %q does not name the error", out.why)
			}
		})
	}
}
