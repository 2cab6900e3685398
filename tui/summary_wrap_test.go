package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/steps"
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

// TestModelHintFitsTheTrack: the <model> placeholder is explained as the
// track's commands take it: a GGUF file for llama.cpp's, a Hub ID or a
// path for vLLM's.
func TestModelHintFitsTheTrack(t *testing.T) {
	for _, tc := range []struct{ track, want, not string }{
		{"llamacpp-vulkan", "<model>.gguf: the path of a GGUF model file", "Hugging Face"},
		{"vllm-image", "<model>: a Hugging Face model ID or a local path", ".gguf"},
	} {
		t.Run(tc.track, func(t *testing.T) {
			tr, err := steps.Lookup(tc.track)
			if err != nil {
				t.Fatal(err)
			}
			got := modelHint(&Plan{Plan: &steps.Plan{Track: tr}, Next: tr.Next})
			if !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) {
				t.Errorf("modelHint = %q, want %q and no %q", got, tc.want, tc.not)
			}
		})
	}
}
