package main

import (
	"testing"

	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/serve"
)

// A serve's outcome as docs/cli.md's exit codes: served and stopped 0,
// stopped before ready 130, failed or stalled 1.
func TestServeExit(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  serve.Result
		code int
	}{
		{"ready, stopped by the user", serve.Result{Ready: true, StoppedByUser: true, RunStatus: steps.OutcomeSucceeded}, exitOK},
		{"ready, first completion failed", serve.Result{Ready: true, StoppedByUser: true, RunStatus: steps.OutcomeNotVerified}, exitOK},
		{"stopped before ready", serve.Result{StoppedByUser: true, RunStatus: steps.OutcomeInterrupted}, exitInterrupted},
		{"stalled", serve.Result{Stalled: true, Failed: "no progress", RunStatus: steps.OutcomeFailed}, exitFailed},
		{"the engine exited", serve.Result{Failed: "the engine exited (code 1)", RunStatus: steps.OutcomeFailed}, exitFailed},
		{"ready, then the engine died", serve.Result{Ready: true, RunStatus: steps.OutcomeFailed}, exitFailed},
		{"the run never finished", serve.Result{}, exitFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := exitCode(serveExit(tc.res)); got != tc.code {
				t.Fatalf("exit %d, want %d", got, tc.code)
			}
		})
	}
}
