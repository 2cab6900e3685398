package runner

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
)

func TestWriteJUnit(t *testing.T) {
	rep := &Report{Track: "therock-toolbox", Started: time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC), Duration: time.Minute, Steps: []StepReport{
		{ID: "toolbox", Status: steps.OutcomeSkipped, Reason: "up to date"},
		{ID: "rocm", Status: steps.OutcomeSucceeded, Duration: 1500 * time.Millisecond, Log: "/s/rocm.log"},
		{ID: "aiter", Status: steps.OutcomeFailed, Optional: true, ExitCode: 1},
		{ID: "vllm", Status: steps.OutcomeFailed, ExitCode: 2, Log: "/s/vllm.log", Tail: []string{"a <b> & c", "\x1b[31mno escapes\x1b[0m"},
			Findings: []diagnose.Finding{{Family: "hip-no-binary-for-gpu", Line: 7, Summary: "no code object", Fix: "export PYTORCH_ROCM_ARCH=gfx1151"}}},
		{ID: "verify", Status: StatusNotRun, Reason: "vllm failed"},
	}}
	var out bytes.Buffer
	if err := rep.WriteJUnit(&out); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("not XML: %v\n%s", err, out.String())
	}
	s := got.Suites[0]
	if s.Name != "haloforge.therock-toolbox" || s.Tests != 5 || s.Failures != 1 || s.Skipped != 3 || s.Errors != 0 {
		t.Errorf("suite %+v", s)
	}
	v := s.Cases[3]
	if v.Failure == nil || v.Failure.Type != "hip-no-binary-for-gpu" || !strings.HasPrefix(v.Failure.Message, "vllm failed (exit 2): hip-no-binary-for-gpu: no code object") {
		t.Fatalf("vllm case %+v", v)
	}
	for _, want := range []string{"a <b> & c", "diagnosis hip-no-binary-for-gpu (line 7): no code object", "fix: export PYTORCH_ROCM_ARCH=gfx1151", "log: /s/vllm.log"} {
		if !strings.Contains(v.Failure.Body, want) {
			t.Errorf("failure body lacks %q:\n%s", want, v.Failure.Body)
		}
	}
	if s.Cases[1].Time != "1.500" || s.Cases[4].Skipped == nil || s.Cases[4].Skipped.Message != "not-run: vllm failed" {
		t.Errorf("cases %+v", s.Cases)
	}
}
