package serve

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/steps/verify"
	"github.com/haloforge/haloforge/steps/verify/standin"
)

// The check of a ready server's answers against stand-ins of the servers
// (vLLM cannot run here; the real llama-server, CPU against Vulkan and a
// perturbed GGUF: scripts/tests/integration-distro.sh).
func TestCheckAnswers(t *testing.T) {
	right := standin.New(standin.Right, standin.Llama)
	defer right.Close()
	ref := filepath.Join(t.TempDir(), "ref.json")
	_, rec, err := verify.Verify(context.Background(), verify.Options{URL: right.URL, Backend: "CPU"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	data, err := verify.MarshalReference(rec)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(ref, data, 0o644)
	tests := []struct {
		name     string
		mode     standin.Mode
		engine   string
		model    string
		ref      string
		sentence string
		how      string
		family   string
	}{
		{name: "vLLM has no trusted backend here: known answers", mode: standin.Right, engine: EngineVLLM, model: "Qwen/Qwen3-0.6B",
			sentence: "answers right: the 4 known answers are there", how: "known answers and degenerate output (no trusted backend to record a reference from for vllm here)"},
		{name: "all \"!\": WRONG OUTPUT, the junk-token family", mode: standin.Bangs, engine: EngineVLLM, model: "Qwen/Qwen3-0.6B",
			sentence: "WRONG OUTPUT: prompt 1 (capital, \"The capital of France is\"): degenerate output: a run of 8", family: "wrong-output-junk-tokens"},
		{name: "a different computation against the user's reference: the perplexity family", mode: standin.Shifted, engine: EngineLlamaCpp, model: "m.gguf", ref: ref,
			sentence: "WRONG OUTPUT: prompt 1 (capital, \"The capital of France is\"), position 0", how: "the reference " + ref + " (recorded on CPU)", family: "wrong-output-perplexity"},
		{name: "GPU-like rounding against the user's reference: right", mode: standin.Noisy, engine: EngineLlamaCpp, model: "m.gguf", ref: ref,
			sentence: "answers right: 6 prompts agree with the reference recorded on CPU"},
		{name: "a random model without a reference file: not verified", mode: standin.Random, engine: EngineOllama, model: "qwen3:8b",
			sentence: "answers not verified: 4 of 4 known answers missing"},
		{name: "no usable server: not checked", mode: standin.NotOpenAI, engine: EngineVLLM, model: "x",
			sentence: "answers not checked: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := standin.New(tc.mode, standin.VLLM)
			defer s.Close()
			l := Launch{Engine: tc.engine, URL: s.URL, Served: standin.ModelName, Model: tc.model}
			var said []string
			c := CheckAnswers(context.Background(), l, CheckOptions{Reference: tc.ref, StateDir: t.TempDir()}, func(w string) { said = append(said, w) })
			if !strings.HasPrefix(c.Sentence(), tc.sentence) {
				t.Errorf("sentence %q, want it to begin %q", c.Sentence(), tc.sentence)
			}
			if tc.how != "" && c.How != tc.how {
				t.Errorf("how %q, want %q", c.How, tc.how)
			}
			switch {
			case tc.family == "" && c.Finding != nil:
				t.Errorf("finding %s for a %s verdict", c.Finding.Family, tc.mode)
			case tc.family != "" && (c.Finding == nil || c.Finding.Family != tc.family || c.Finding.Fix == "" || c.Finding.Line != 0):
				t.Errorf("finding %+v, want family %s with its fix", c.Finding, tc.family)
			}
			if c.Err == "" && (len(said) == 0 || !strings.HasPrefix(said[len(said)-1], "checking the answers")) {
				t.Errorf("progress %q", said)
			}
		})
	}
}

// A llama.cpp model file already recorded by haloforge: its reference is
// found by the weights' hash, and said.
func TestCheckAnswersUsesTheKeptReference(t *testing.T) {
	state := t.TempDir()
	model := filepath.Join(t.TempDir(), "m.gguf")
	os.WriteFile(model, []byte("weights"), 0o644)
	cpu := standin.New(standin.Right, standin.Llama)
	defer cpu.Close()
	_, rec, err := verify.Verify(context.Background(), verify.Options{URL: cpu.URL, Backend: "CPU"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	key, _ := verify.ModelKey(state, model)
	file, err := verify.StoreReference(state, key, rec)
	if err != nil {
		t.Fatal(err)
	}
	gpu := standin.New(standin.Shifted, standin.Llama)
	defer gpu.Close()
	c := CheckAnswers(context.Background(), Launch{Engine: EngineLlamaCpp, URL: gpu.URL, Model: model}, CheckOptions{StateDir: state}, nil)
	if !c.Wrong() || !strings.HasPrefix(c.How, "haloforge's reference for this model file, recorded on the CPU backend on ") || !strings.Contains(c.How, file) {
		t.Fatalf("check %q, how %q", c.Sentence(), c.How)
	}
}

// The watch runs the check after the smoke request, shows its progress and
// outcome, pins the family of a wrong answer, and a server that answered
// wrong ends failed when the user stops it, the evidence in the verdict.
func TestWatchChecksTheAnswers(t *testing.T) {
	wrong := AnswerCheck{How: "the reference r.json (recorded on CPU)",
		Result: &verify.Result{Verdict: verify.Wrong, Reason: "prompt 1 (capital, \"The capital of France is\"), position 0: expected \" Paris\", got \" Lyon\""}}
	wrong.Finding = WrongOutputFinding(wrong.Result.Line())
	check := func(_ context.Context, progress func(string)) AnswerCheck {
		progress("checking the answers against the reference r.json")
		return wrong
	}
	s := serveFixture(t, EngineLlamaCpp, "llama-server-sid-lavapipe.log", 8, nil, WatchOptions{Smoke: true, Check: check},
		func(e runner.Event, w *Watcher) {
			if _, ok := e.(Checked); ok {
				w.Stop()
			}
		})
	if c := only[Checking](s.events); len(c) != 1 || c[0].What != "checking the answers against the reference r.json" {
		t.Fatalf("checking %+v", c)
	}
	if c := only[Checked](s.events); len(c) != 1 || !c[0].Wrong() {
		t.Fatalf("checked %+v", c)
	}
	if f := only[runner.Found](s.events); len(f) != 1 || f[0].Finding.Family != "wrong-output-perplexity" {
		t.Fatalf("found %+v", f)
	}
	fin := only[runner.StepFinished](s.events)
	if len(fin) != 1 || fin[0].Status != steps.OutcomeFailed ||
		fin[0].Why != "served, but its answers are wrong: "+wrong.Result.Line() || len(fin[0].Findings) != 1 {
		t.Fatalf("finished %+v", fin)
	}
	if s.res.Answers == nil || !s.res.Answers.Wrong() || s.res.RunStatus != steps.OutcomeFailed {
		t.Fatalf("result %+v", s.res)
	}
	report, err := os.ReadFile(filepath.Join(s.dir, "report.json"))
	if err != nil || !strings.Contains(string(report), `"why": "served, but its answers are wrong: WRONG OUTPUT: prompt 1`) ||
		!strings.Contains(string(report), `"family": "wrong-output-perplexity"`) {
		t.Fatalf("report.json: %v\n%s", err, report)
	}
}
