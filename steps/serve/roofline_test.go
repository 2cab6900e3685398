package serve

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/haloforge/haloforge/steps/bench"
)

// The real tiny MoE GGUF python3-gguf wrote (steps/bench/testdata/README.md):
// its header's tensors add up to llama-bench's model_size of the same file,
// and a token reads the shared weights plus 2 of 8 experts, less the token
// embedding (the model has its own output matrix). By hand, from
// scripts/tests/tiny_moe_model.py's shapes: per layer the experts are 3 × 8 ×
// 32 × 64 F16 = 98304 bytes and the rest 27264; the two layers, the 34560-byte
// output matrix and its 256-byte norm make 89344 shared bytes; 2 × 98304 ×
// 2/8 = 49152 of experts: 138496.
func TestModelWeightsOfARealGGUF(t *testing.T) {
	w, err := ModelWeights("../bench/testdata/tiny-moe.gguf")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../bench/testdata/llama-bench-moe-lavapipe.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	run, err := bench.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := int64(w.TotalBytes); got != run.Results[0].ModelSize || got != 320512 {
		t.Fatalf("header %d bytes, llama-bench's model_size %d", got, run.Results[0].ModelSize)
	}
	if w.ReadBytes != 138496 || !w.MoE || !w.FromGGUF || w.File != "tiny-moe.gguf" ||
		!strings.Contains(w.Method, "89344 bytes of shared weights + 196608 bytes of expert weights × 2/8 experts used") {
		t.Fatalf("%+v", w)
	}
	// Elements: 4096+2048+2048+4096+16+16+64+64+512 per layer outside the
	// experts (norms, router, attention), the output matrix and its norm;
	// 3 × 8 × 32 × 64 expert elements per layer × 2/8.
	shared := 2*(4096+2048+2048+4096+16+16+64+64+512) + 270*64 + 64
	if want := float64(shared + 2*3*8*32*64/4); w.ActiveParams != want {
		t.Fatalf("active params %v, want %v", w.ActiveParams, want)
	}
	// What serve would do with it on a Strix Halo: 256 GB/s ÷ 138496 bytes.
	rf := bench.GenerationRoofline("AMD Radeon 8060S Graphics", *w, 1e6, 0, "Vulkan", bench.References())
	if math.Abs(rf.CeilingPerS-256e9/138496) > 1e-6 || !strings.Contains(rf.Sentence(), "tuned Strix Halo runs of mixture-of-experts models on Vulkan reach 47–67 %") {
		t.Fatalf("%+v\n%s", rf, rf.Sentence())
	}
	// A file that is not a GGUF is refused, with its name.
	if _, err := ModelWeights("roofline_test.go"); err == nil || !strings.Contains(err.Error(), "not a GGUF file") {
		t.Fatalf("err %v", err)
	}
}

// serve's first request is put against the same roofline as bench's
// results: the launch's estimate reads what a token reads from the GGUF
// header, detection names the GPU, and the smoke sentence (line mode, the
// serve screen, the step's verdict) and its JSON carry the share.
func TestSmokeRoofline(t *testing.T) {
	model := "../bench/testdata/tiny-moe.gguf"
	l := Launch{Engine: "llama.cpp", Model: model}
	l.Estimate(Request{}, Ceiling{Bytes: 64 << 30, Unified: true, Source: "the GTT", GPU: "Radeon 8060S Graphics"})
	if l.Fit == nil || l.roof.weights == nil || l.roof.weights.ReadBytes != 138496 {
		t.Fatalf("%+v %+v", l.Fit, l.roof)
	}
	sr := SmokeResult{Endpoint: SmokeEndpoint, TTFT: 40 * time.Millisecond, Tokens: 16, TokensPerSecond: 900000, EngineTokensPerSecond: 1e6}
	l.roof.add(&sr)
	// By hand: 256e9 / 138496 = 1848428.84 t/s; the engine's 1e6 t/s is 54.1 % of it.
	if sr.RooflinePerS == nil || *sr.RooflinePerS != 1848428.84 || sr.RooflinePct == nil || *sr.RooflinePct != 54.1 {
		t.Fatalf("%+v", sr)
	}
	want := "; roofline: 1000000.0 t/s is 54 % of the 1848428.8 t/s this model could reach at 256 GB/s"
	if s := sr.Sentence(); !strings.HasSuffix(s, want) {
		t.Fatalf("%q", s)
	}
	b, _ := json.Marshal(sr)
	if !strings.Contains(string(b), `"roofline_tokens_per_s":1848428.84,"roofline_pct":54.1,"roofline":"1000000.0 t/s is 54 %`) {
		t.Fatalf("%s", b)
	}

	// No GPU (llvmpipe): it says so instead of a number.
	l = Launch{Engine: "llama.cpp", Model: model}
	l.Estimate(Request{NoGPU: true}, Ceiling{Bytes: 24 << 30, Unified: true, Source: "system RAM"})
	sr = SmokeResult{Endpoint: SmokeEndpoint, Tokens: 9, TokensPerSecond: 160.6, EngineTokensPerSecond: 135.1}
	l.roof.add(&sr)
	if sr.RooflinePerS != nil || !strings.HasSuffix(sr.Sentence(), "(engine: 135.1 tok/s); roofline: no known memory bandwidth: llvmpipe (Mesa's CPU Vulkan device) runs on the CPU, whose speed is this machine's RAM") {
		t.Fatalf("%q", sr.Sentence())
	}
	b, _ = json.Marshal(sr)
	if !strings.Contains(string(b), `"roofline_tokens_per_s":null,"roofline_pct":null`) {
		t.Fatalf("%s", b)
	}

	// A failed request, or a model whose size is not known, adds nothing.
	sr = SmokeResult{Err: "connection refused"}
	l.roof.add(&sr)
	if sr.Roofline != "" || (Launch{}).roof.weights != nil {
		t.Fatalf("%+v", sr)
	}
}
