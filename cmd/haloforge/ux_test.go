package main

import (
	"strings"
	"testing"

	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/tui"
)

// TestDoctorColoursItsMarks is finding 20: on a terminal doctor's marks
// are coloured as flutter doctor's; nothing else is.
func TestDoctorColoursItsMarks(t *testing.T) {
	in := "Doctor summary\n[✓] GPU: ok\n[!] GTT size: small\n    fix [✗] in text\n[✗] /dev/kfd: missing\n[-] Groups: unknown\n"
	got := colorMarks(in)
	for _, want := range []string{"\x1b[32m[✓]\x1b[0m GPU", "\x1b[33m[!]\x1b[0m GTT", "\x1b[31m[✗]\x1b[0m /dev/kfd", "\x1b[2m[-]\x1b[0m Groups", "    fix [✗] in text"} {
		if !strings.Contains(got, want) {
			t.Errorf("coloured output lacks %q:\n%q", want, got)
		}
	}
	if strings.HasPrefix(got, "\n") {
		t.Errorf("a newline was added: %q", got)
	}
}

// TestRecapLines is finding 7: what each way of leaving prints.
func TestRecapLines(t *testing.T) {
	for _, tc := range []struct {
		res  tui.Result
		want []string
	}{
		{tui.Result{Track: "vllm-image", Status: steps.OutcomeSucceeded, RunDirs: []string{"/s/runs/a", "/s/runs/b"}, Next: []string{"start-vllm.sh <model>"}},
			[]string{"✓ vllm-image is built · logs and report.json in /s/runs/b", "earlier runs of this session: /s/runs/a", "next: start-vllm.sh <model>"}},
		{tui.Result{Track: "t", Status: steps.OutcomeFailed, Failed: "rocm", FailedLog: "/s/runs/a/rocm.log", RunDirs: []string{"/s/runs/a"}, Resume: "haloforge build --track t --resume"},
			[]string{"✗ t failed at rocm · log /s/runs/a/rocm.log", "diagnose: haloforge diagnose /s/runs/a", "resume after the fix: haloforge build --track t --resume"}},
		{tui.Result{Track: "t", Status: steps.OutcomeInterrupted, Stopped: "vllm", RunDirs: []string{"/s/runs/a"}, Resume: "haloforge build --track t --resume --state-dir /hf"},
			[]string{"■ t stopped during vllm · logs in /s/runs/a", "resume: haloforge build --track t --resume --state-dir /hf"}},
		{tui.Result{Track: "t", Planned: true, Build: "haloforge build --track t"}, []string{"Plan reviewed, nothing run. To build it: haloforge build --track t"}},
		{tui.Result{}, nil},
	} {
		got := recapLines(tc.res)
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("recap of %+v:\n%s\nwant\n%s", tc.res, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}
