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
		{"planned, checks fail", tui.Result{Track: "t", Planned: true, Build: "haloforge build --track t", Blocked: []string{"gpu", "kfd-access"}, BuildAnyway: "haloforge build --track t --ignore-checks"},
			[]string{"Plan reviewed, nothing run. A build stops at the checks that fail here (gpu, kfd-access): haloforge doctor shows their fixes.",
				"To build it once they pass: haloforge build --track t", "To build it anyway: haloforge build --track t --ignore-checks"}},
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

// TestRecapRows: on a terminal a recap line wraps to its width: prose
// between words, a path only after a '/', a command on rows of its own
// broken between its words with " \", so that pasted it still runs.
func TestRecapRows(t *testing.T) {
	const cmd = "haloforge build --track therock-toolbox --resume --state-dir /home/ada/hf-state --pins /home/ada/pins/versions.env"
	for _, tc := range []struct {
		name  string
		line  string
		width int
		want  []string
	}{
		{"not a terminal", "resume: " + cmd, 0, []string{"resume: " + cmd}},
		{"fits", "resume: haloforge build --track t", 80, []string{"resume: haloforge build --track t"}},
		{"a command on its own rows", "resume after the fix: " + cmd, 80, []string{
			"resume after the fix:",
			"  haloforge build --track therock-toolbox --resume \\",
			"      --state-dir /home/ada/hf-state --pins /home/ada/pins/versions.env"}},
		{"a path breaks after a slash", "✓ vllm-image is built · logs and report.json in /home/ada/.local/state/haloforge/runs/20261129-062932-1e70a5", 60, []string{
			"✓ vllm-image is built · logs and report.json in /home/ada/",
			"  .local/state/haloforge/runs/20261129-062932-1e70a5"}},
		{"the demo's sentence", "On your Strix Halo: haloforge doctor, then haloforge (the same wizard, for real). `haloforge demo` starts the story again.", 80, []string{
			"On your Strix Halo: haloforge doctor, then haloforge (the same wizard, for",
			"  real). `haloforge demo` starts the story again."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := recapRows(tc.line, tc.width)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("recapRows at %d:\n%s\nwant\n%s", tc.width, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			for _, r := range got {
				if tc.width > 0 && len([]rune(r)) >= tc.width && len(strings.Fields(r)) > 1 {
					t.Errorf("row %q fills the terminal", r)
				}
			}
		})
	}
}
