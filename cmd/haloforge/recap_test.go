package main

import (
	"strings"
	"testing"

	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/tui"
)

// TestRecapLines: what each way of leaving the wizard prints.
func TestRecapLines(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  tui.Result
		want []string
	}{
		{"built", tui.Result{Track: "vllm-image", Status: steps.OutcomeSucceeded, RunDirs: []string{"/s/runs/a", "/s/runs/b"}, Next: []string{"start-vllm.sh <model>"}},
			[]string{"✓ vllm-image is built · logs and report.json in /s/runs/b", "earlier runs of this session: /s/runs/a", "next: start-vllm.sh <model>"}},
		{"failed", tui.Result{Track: "t", Status: steps.OutcomeFailed, Failed: "rocm", FailedLog: "/s/runs/a/rocm.log", RunDirs: []string{"/s/runs/a"}, Resume: "haloforge build --track t --resume"},
			[]string{"✗ t failed at rocm · log /s/runs/a/rocm.log", "diagnose: haloforge diagnose /s/runs/a", "resume after the fix: haloforge build --track t --resume"}},
		{"stopped", tui.Result{Track: "t", Status: steps.OutcomeInterrupted, Stopped: "vllm", RunDirs: []string{"/s/runs/a"}, Resume: "haloforge build --track t --resume --state-dir /hf"},
			[]string{"■ t stopped during vllm · logs in /s/runs/a", "resume: haloforge build --track t --resume --state-dir /hf"}},
		{"planned only", tui.Result{Track: "t", Planned: true, Build: "haloforge build --track t"}, []string{"Plan reviewed, nothing run. To build it: haloforge build --track t"}},
		{"nothing", tui.Result{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := recapLines(tc.res)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("recap of %+v:\n%s\nwant\n%s", tc.res, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
