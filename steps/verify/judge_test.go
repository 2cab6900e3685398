package verify

import (
	"strings"
	"testing"
)

func TestJudgeLines(t *testing.T) {
	ref := goodRecord()
	ref.Model = "model-a.gguf"
	same := goodRecord()
	same.Model = "model-a.gguf"
	other := goodRecord()
	other.Model = "model-b.gguf"
	other.Answers[2] = shift(other.Answers[2], 1, 0, 2)
	tests := []struct {
		name    string
		res     Result
		prefix  string
		reason  string
		details string
	}{
		{"right against a reference", JudgeReference(same, ref, DefaultTolerance), "right: 6 prompts agree with the reference recorded on CPU by llama.cpp b1 on 2026-11-29",
			"(24 of 24 positions compared, max logprob distance 0, tolerance 0.3)", "4/4 tokens agree, max distance 0"},
		{"wrong, another model named", JudgeReference(other, ref, DefaultTolerance), "WRONG OUTPUT: prompt 3 (weekdays, ",
			`(the reference was recorded with model "model-a.gguf", this server serves "model-b.gguf": the same model file?)`, "WRONG: position 1: the distributions differ by 2 nats"},
		{"known answers missing", JudgeKnownAnswers(same), "not verified: 4 of 4 known answers missing",
			"a random-weights, base or very small model", `not verified: no "Paris" in the answer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := tt.res.Line()
			if !strings.HasPrefix(line, tt.prefix) || !strings.Contains(line, tt.reason) {
				t.Errorf("line %q\nwant %q … %q", line, tt.prefix, tt.reason)
			}
			if d := strings.Join(tt.res.Details(), "\n"); !strings.Contains(d, tt.details) {
				t.Errorf("details:\n%s\nwant %q", d, tt.details)
			}
			if hostile(line + strings.Join(tt.res.Details(), "")) {
				t.Error("unsanitised text")
			}
		})
	}
}
