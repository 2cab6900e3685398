package bench

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestLookupDevice(t *testing.T) {
	for _, tc := range []struct{ gpu, name, missing string }{
		{"AMD Radeon 8060S Graphics (RADV GFX1151)", "Radeon 8060S", ""},
		{"Radeon 8060S Graphics (RADV STRIX_HALO)", "Radeon 8060S", ""},
		{"AMD Radeon 8060S Graphics", "Radeon 8060S", ""},
		{"AMD Radeon 8050S Graphics", "Radeon 8050S", ""},
		{"AMD Radeon 8065S Graphics", "Radeon 8065S", ""},
		{"AMD Radeon Graphics (RADV GFX1151)", "Strix Halo (gfx1151: Radeon 8060S or 8050S)", ""},
		{"AMD Radeon RX 7900 XTX", "Radeon RX 7900 XTX", ""},
		{"AMD Radeon RX 7900 XT (RADV NAVI31)", "Radeon RX 7900 XT", ""},
		{"AMD Instinct MI300X", "Instinct MI300X", ""},
		{"llvmpipe (LLVM 22.1.8, 256 bits)", "", "runs on the CPU, whose speed is this machine's RAM"},
		{"AMD Radeon 890M Graphics (RADV GFX1150)", "", "shares the machine's RAM"},
		{"NVIDIA GeForce RTX 4090", "", "no known memory bandwidth for NVIDIA GeForce RTX 4090 (haloforge knows Radeon 8060S"},
		{"", "", "the run names no device"},
	} {
		t.Run(tc.gpu, func(t *testing.T) {
			d, why := LookupDevice(tc.gpu)
			if d.Name != tc.name || !strings.Contains(why, tc.missing) || (tc.missing == "") != (why == "") {
				t.Fatalf("%q: %q, %q", tc.gpu, d.Name, why)
			}
			if d.Name != "" && (d.BandwidthGBs <= 0 || d.BandwidthSource == "" || d.Memory == "") {
				t.Fatalf("%+v: a device without its bandwidth and source", d)
			}
		})
	}
	// The table's own rule: every figure has its source.
	for _, d := range devices {
		if (d.MeasuredGBs > 0) != (d.MeasuredSource != "") || (d.FP16TFLOPS > 0) != (d.FP16Source != "") {
			t.Errorf("%s: a figure without its source, or a source without its figure", d.Name)
		}
	}
}

// The arithmetic of llama-bench's own fields, dense and mixture-of-experts,
// each row's expectation worked out by hand.
func TestWeightsFromResult(t *testing.T) {
	for _, tc := range []struct {
		name, modelType, file string
		size, params          int64
		read, active          float64
		moe                   bool
		missing               string
	}{
		{"dense: all its weights", "gemma4 ?B Q4_0", "gemma-4-12B-it-qat-UD-Q4_K_XL.gguf", 6700531904, 11907350576, 6700531904, 11907350576, false, ""},
		{"dense 27B", "qwen35 27B Q8_0", "Qwen3.6-27B-UD-Q8_K_XL", 35315368591, 26900000000, 35315368591, 26900000000, false, ""},
		{"30B.A3B: 3/30 of the weights", "qwen3moe 30B.A3B Q4_K - Medium", "x.gguf", 17659361280, 30532122624, 1765936128, 3e9, true, ""},
		{"35B.A3B: 3/35", "qwen35moe 35B.A3B Q4_0", "x.gguf", 19704064512, 34660610688, 19704064512 * 3.0 / 35, 3e9, true, ""},
		{"8B.A1B: 1/8", "lfm2moe 8B.A1B Q4_K - Medium", "x.gguf", 5147326208, 8467856832, 643415776, 1e9, true, ""},
		{"fractional active: 31B.A3.5B", "nemotron_h_moe 31B.A3.5B Q4_K - Medium", "x.gguf", 18e9, 31.6e9, 18e9 * 3.5 / 31, 3.5e9, true, ""},
		{"active only (A13B): of llama-bench's parameters", "hunyuan-moe A13B Q4_K - Medium", "x.gguf", 48e9, 80393183232, 48e9 * 13 / 80.39, 13e9, true, ""},
		{"active per expert count (Scout)", "llama4 17Bx16E (Scout) Q4_K - Medium", "x.gguf", 60e9, 107768115200, 60e9 * 17 / 107.77, 17e9, true, ""},
		{"the file name's total and active", "qwen3moe ?B F16", "Qwen3-Coder-30B-A3B-Instruct-Q8_0.gguf", 32e9, 30532122624, 3.2e9, 3e9, true, ""},
		{"Mixtral's 8x7B: active unknown", "llama 8x7B Q4_K - Medium", "mixtral.gguf", 26e9, 46.7e9, 0, 0, false, "mixture-of-experts"},
		{"gpt-oss: active unknown", "gpt-oss 120B MXFP4 MoE", "gpt-oss-120b-mxfp4-00001-of-00003.gguf", 63374323968, 116829156672, 0, 0, false, `"gpt-oss 120B MXFP4 MoE" is a mixture-of-experts model`},
		{"a tiny qwen3moe: active unknown", "qwen3moe ?B F16", "tiny-moe.gguf", 320512, 158848, 0, 0, false, "--model FILE.gguf"},
		{"deepseek4: active unknown", "deepseek4 ?B IQ3_XXS - 3.0625 bpw", "DeepSeek-V4-Flash-0731-UD-IQ3_XXS-00001-of-00004.gguf", 104207848032, 284330000000, 0, 0, false, "mixture-of-experts"},
		{"no model_size (vLLM)", "", "Qwen/Qwen3-8B", 0, 0, 0, 0, false, "model_size"},
		{"an active share that is not one is not used", "llama 30B.A40B Q4_0", "x.gguf", 10e9, 10e9, 10e9, 10e9, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, why := WeightsFromResult(Result{ModelType: tc.modelType, ModelFile: tc.file, ModelSize: tc.size, ModelParams: tc.params})
			if tc.missing != "" {
				if !strings.Contains(why, tc.missing) {
					t.Fatalf("why %q, want %q", why, tc.missing)
				}
				return
			}
			if why != "" || math.Abs(w.ReadBytes-tc.read) > 1 || w.ActiveParams != tc.active || w.MoE != tc.moe ||
				w.TotalBytes != float64(tc.size) || w.Method == "" {
				t.Fatalf("%+v (%q), want read %.0f, active %.0f, moe %v", w, why, tc.read, tc.active, tc.moe)
			}
		})
	}
}

// The arithmetic of a GGUF header's tensors.
func TestWeightsFromTensors(t *testing.T) {
	layer := []Tensor{{"blk.0.attn_q.weight", 100, 200}, {"blk.0.ffn_norm.weight", 10, 40}}
	experts := []Tensor{{"blk.0.ffn_gate_exps.weight", 800, 1600}, {"blk.0.ffn_up_exps.weight", 800, 1600}, {"blk.0.ffn_down_exps.weight", 800, 1600}}
	embd := Tensor{"token_embd.weight", 300, 600}
	output := Tensor{"output.weight", 300, 600}
	join := func(parts ...[]Tensor) []Tensor {
		var all []Tensor
		for _, p := range parts {
			all = append(all, p...)
		}
		return all
	}
	for _, tc := range []struct {
		name          string
		tensors       []Tensor
		experts, used uint64
		read, active  float64
		total         float64
		moe           bool
		err           string
	}{
		{"dense with its own output matrix: the embedding is looked up, not read", join([]Tensor{embd, output}, layer), 0, 0, 840, 410, 1440, false, ""},
		{"tied embedding: it is the output matrix too", join([]Tensor{embd}, layer), 0, 0, 840, 410, 840, false, ""},
		{"per-layer embeddings are looked up", join([]Tensor{output, {"per_layer_token_embd.weight", 5000, 10000}}, layer), 0, 0, 840, 410, 10840, false, ""},
		{"MoE: shared + experts × 2/8", join([]Tensor{embd, output}, layer, experts), 8, 2, 840 + 4800*2/8.0, 410 + 2400*2/8.0, 6240, true, ""},
		{"MoE: a shared expert is always read", join([]Tensor{output, {"blk.0.ffn_up_shexp.weight", 50, 100}}, layer, experts), 4, 1, 940 + 1200, 460 + 600, 5740, true, ""},
		{"expert tensors without expert_count", join(layer, experts), 0, 0, 0, 0, 0, false, "0 of 0 experts used"},
		{"more experts used than there are", join(layer, experts), 8, 9, 0, 0, 0, false, "9 of 8 experts used"},
		{"expert_count without expert tensors", layer, 8, 2, 0, 0, 0, false, "lists no expert tensors"},
		{"a tensor of an unknown type", join(layer, []Tensor{{"blk.0.x.weight", 10, 0}}), 0, 0, 0, 0, 0, false, "does not know the size"},
		{"no tensors", nil, 0, 0, 0, 0, 0, false, "no tensors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := WeightsFromTensors("m.gguf", tc.tensors, tc.experts, tc.used)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || w.ReadBytes != tc.read || w.ActiveParams != tc.active || w.TotalBytes != tc.total || w.MoE != tc.moe || !w.FromGGUF {
				t.Fatalf("%+v, %v; want read %v active %v total %v", w, err, tc.read, tc.active, tc.total)
			}
		})
	}
}

// The references' own rows land in a plausible band: token generation at
// depth 0 between a third and all of the memory-bandwidth roofline, less at
// depth; prompt processing a small share of the compute peak.
func TestRooflineOfTheReferences(t *testing.T) {
	refs := References()
	counted := 0
	depth0 := map[string]float64{}
	for _, ref := range refs {
		rf := resultRoofline(ref.asResult(), "", nil, refs)
		if ref.ModelSize == 0 || strings.Contains(ref.ModelType, "gpt-oss") {
			if rf.Available() {
				t.Errorf("%s %s: a roofline without what a token reads: %+v", ref.Label, ref.ModelFile, rf)
			}
			continue
		}
		if !rf.Available() {
			t.Errorf("%s %s %s: no roofline: %s", ref.Label, ref.ModelFile, ref.Test, rf.Missing)
			continue
		}
		counted++
		key := ref.Label + ref.ModelFile
		switch {
		case ref.Kind() == kindGeneration && ref.Depth == 0:
			if rf.Pct < 35 || rf.Pct > 95 {
				t.Errorf("%s %s: %.1f %% of the memory roofline", ref.Label, ref.ModelFile, rf.Pct)
			}
			depth0[key] = rf.Pct
		case ref.Kind() == kindPrompt:
			if rf.Bound != BoundCompute || rf.Pct < 2 || rf.Pct > 40 {
				t.Errorf("%s %s %s: %.1f %% of the compute peak", ref.Label, ref.ModelFile, ref.Test, rf.Pct)
			}
		}
	}
	for _, ref := range refs {
		if ref.Kind() == kindGeneration && ref.Depth > 0 && ref.ModelSize > 0 {
			rf := resultRoofline(ref.asResult(), "", nil, refs)
			if d0, ok := depth0[ref.Label+ref.ModelFile]; !ok || rf.Pct >= d0 {
				t.Errorf("%s %s at depth %d: %.1f %%, not below depth 0's %.1f %%", ref.Label, ref.ModelFile, ref.Depth, rf.Pct, d0)
			}
		}
	}
	if counted < 20 {
		t.Errorf("only %d reference rows have a roofline", counted)
	}
	// The bands the sentences quote (docs/facts.md shows the same figures).
	for _, tc := range []struct {
		moe       bool
		backend   string
		low, high float64
		runs      int
	}{
		{true, "Vulkan", 46.9, 66.7, 4}, {true, "ROCm", 39.5, 47.1, 3},
		{false, "Vulkan", 90.6, 90.6, 1}, {false, "ROCm", 90.5, 90.5, 1},
	} {
		b, ok := TunedBand(refs, tc.moe, tc.backend)
		if !ok || math.Abs(b.Low-tc.low) > 0.1 || math.Abs(b.High-tc.high) > 0.1 || b.Runs != tc.runs {
			t.Errorf("moe %v on %s: %+v, want %.1f–%.1f over %d runs", tc.moe, tc.backend, b, tc.low, tc.high, tc.runs)
		}
	}
}

var (
	reSentence = regexp.MustCompile(`roofline: ([0-9.]+) t/s is ([0-9]+) % of the ([0-9.]+) t/s this model could reach at ([0-9.]+) GB/s`)
	reWorking  = regexp.MustCompile(`([0-9.]+) GB/s ÷ ([0-9.]+) (GB|MB) read per token = ([0-9.]+) t/s`)
)

// bench --from on published 8060S rows of models no reference names, dense
// and mixture-of-experts: the share a reader can redo by hand from the
// numbers printed is the one printed, within a few percent (rounding).
func TestRooflinePrintedArithmetic(t *testing.T) {
	run, err := Parse(readFile(t, "llama-bench-8060s-published.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	out := Compare(run, References(), Host{}).Text()
	blocks := strings.Split(out, "\ntg")
	for _, tc := range []struct {
		model    string
		tps, pct float64
		ceiling  float64
		inLine   string
	}{
		{"gemma-4-12B-it-qat-UD-Q4_K_XL.gguf", 29.3, 77, 38.2, "below them"},
		{"Qwen3-30B-A3B-Instruct-2507-IQ4_XS-3.63bpw.gguf", 100.4, 54, 184.7, "in line with them"},
		{"LFM2.5-8B-A1B-Q4_K_M.gguf", 171.2, 43, 397.9, "in line with them"},
		{"hogeheer vulkan b9049", 96.8, 67, 145.0, "in line with them"}, // Qwen3-Coder, a reference's own row
	} {
		t.Run(tc.model, func(t *testing.T) {
			var block string
			for _, b := range blocks {
				if strings.Contains(b, "this model could reach") && strings.Contains(b, tc.model) &&
					strings.Contains(b, strconv.FormatFloat(tc.tps, 'f', 1, 64)+" t/s is") {
					block = b
				}
			}
			m, w := reSentence.FindStringSubmatch(block), reWorking.FindStringSubmatch(block)
			if m == nil || w == nil {
				t.Fatalf("no roofline lines for %s in\n%s", tc.model, out)
			}
			f := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
			tps, pct, ceiling, bw := f(m[1]), f(m[2]), f(m[3]), f(m[4])
			read := f(w[2]) * 1e9
			if w[3] == "MB" {
				read = f(w[2]) * 1e6
			}
			// By hand: bandwidth ÷ bytes per token, then the speed's share of it.
			hand := bw * 1e9 / read
			if math.Abs(hand-ceiling)/ceiling > 0.02 || math.Abs(100*tps/hand-pct) > 2 {
				t.Errorf("printed %.1f t/s and %.0f %%; by hand %.1f t/s and %.1f %%", ceiling, pct, hand, 100*tps/hand)
			}
			if ceiling != tc.ceiling || pct != tc.pct || bw != 256 || !strings.Contains(block, tc.inLine) {
				t.Errorf("%s: %.1f t/s, %.0f %% at %v GB/s\n%s", tc.model, ceiling, pct, bw, block)
			}
		})
	}
	// gpt-oss's type name gives no active share: it says so instead of a number.
	if !strings.Contains(out, `roofline: "gpt-oss 120B MXFP4 MoE" is a mixture-of-experts model and llama-bench's output does not say`) {
		t.Errorf("gpt-oss:\n%s", out)
	}
	// A run no reference names is judged by its roofline.
	run.Results = run.Results[:2]
	if v := Compare(run, References(), Host{}).Verdict; !strings.HasPrefix(v, "tg128: no published figure for this model, but by the memory-bandwidth roofline 29.3 t/s is 77 % of the 38.2 t/s") {
		t.Errorf("verdict %q", v)
	}
}

// The real lavapipe runs: a CPU device has no bandwidth, and says so instead
// of a number, in the text and in the JSON (null).
func TestRooflineLavapipe(t *testing.T) {
	for _, file := range []string{"llama-bench-lavapipe.json", "llama-bench-moe-lavapipe.jsonl"} {
		run, err := Parse(readFile(t, file))
		if err != nil {
			t.Fatal(err)
		}
		rep := Compare(run, References(), Host{})
		for _, c := range rep.Comparisons {
			if c.Roofline == nil || c.Roofline.Available() || !strings.Contains(c.Roofline.Missing, "llvmpipe (LLVM 22.1.8, 256 bits) runs on the CPU") {
				t.Fatalf("%s %s: %+v", file, c.Result.Test, c.Roofline)
			}
		}
		b, _ := json.Marshal(rep.ToJSON())
		if !strings.Contains(string(b), `"roofline_tokens_per_s":null,"roofline_pct":null`) || !strings.Contains(string(b), `"missing":"no known memory bandwidth: llvmpipe`) {
			t.Fatalf("%s", b)
		}
	}
}

func TestRooflineSentences(t *testing.T) {
	refs := References()
	dense := Weights{TotalBytes: 35e9, ReadBytes: 35e9, ActiveParams: 27e9, Method: "all 35.00 GB of weights (a dense model)"}
	moe := Weights{TotalBytes: 17.66e9, ReadBytes: 1.766e9, ActiveParams: 3e9, MoE: true, Method: "m"}
	for _, tc := range []struct {
		name   string
		device string
		w      Weights
		tps    float64
		depth  int
		want   string
	}{
		{"dense, in line", radv, dense, 6.5, 0, "6.5 t/s is 89 % of the 7.3 t/s this model could reach at 256 GB/s; tuned Strix Halo runs of dense models on Vulkan reach about 91 % (1 published run): this run is in line with them"},
		{"MoE, below", radv, moe, 50, 0, "50.0 t/s is 34 % of the 145.0 t/s this model could reach at 256 GB/s; tuned Strix Halo runs of mixture-of-experts models on Vulkan reach 47–67 % (4 published runs): this run is below them"},
		{"MoE, above", radv, moe, 120, 0, ": this run is above them"},
		{"at depth: the band is depth 0's", radv, moe, 60, 32768, "; at depth 0 tuned Strix Halo runs of mixture-of-experts models on Vulkan reach 47–67 % (4 published runs), less as the context fills"},
		{"faster than the memory allows", radv, dense, 9, 0, "faster than the memory can deliver the bytes counted"},
		{"a discrete GPU: no band", "AMD Radeon RX 7900 XTX", dense, 20, 0, "20.0 t/s is 73 % of the 27.4 t/s this model could reach at 960 GB/s"},
		{"8065S: its own bus", "AMD Radeon 8065S Graphics", moe, 80, 0, "80.0 t/s is 52 % of the 154.6 t/s this model could reach at 273 GB/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rf := GenerationRoofline(tc.device, tc.w, tc.tps, tc.depth, "Vulkan", refs)
			if s := rf.Sentence(); !strings.Contains(s, tc.want) {
				t.Fatalf("%q\nwant %q", s, tc.want)
			}
			if tc.device == "AMD Radeon RX 7900 XTX" && rf.Band != nil {
				t.Fatal("a band of Strix Halo runs on another GPU")
			}
			if tc.depth > 0 && !strings.Contains(rf.Working(), "at depth 32768 the KV cache is read too") {
				t.Fatal(rf.Working())
			}
		})
	}
	p := PromptRoofline(radv, moe, 1320, 0)
	if s, w := p.Sentence(), p.Working(); s != "1320.0 t/s is 13 % of a rough compute ceiling of 9900 t/s" ||
		!strings.HasPrefix(w, "59.4 TFLOPS FP16 ÷ (2 × 3.00 B active parameters) = 9900 t/s") {
		t.Fatalf("%q / %q", s, w)
	}
	if p := PromptRoofline("AMD Radeon RX 7900 XTX", moe, 1000, 0); p.Available() || p.Missing != "no known compute peak for Radeon RX 7900 XTX" {
		t.Fatalf("%+v", p)
	}
	if p := PromptRoofline("llvmpipe (LLVM 22.1.8, 256 bits)", moe, 1000, 0); p.Missing != "no known compute peak: llvmpipe (LLVM 22.1.8, 256 bits) runs on the CPU" {
		t.Fatalf("%q", p.Missing)
	}
}

// FuzzRoofline: whatever llama-bench's model fields and device say, the
// roofline is finite and non-negative, its text printable, its JSON valid.
func FuzzRoofline(f *testing.F) {
	f.Add("qwen3moe 30B.A3B Q4_K - Medium", int64(17659361280), int64(30532122624), "Radeon 8060S Graphics (RADV STRIX_HALO)", "Qwen3-Coder-30B-A3B.gguf", 96.76, 0, true)
	f.Add("gemma4 ?B Q4_0", int64(6700531904), int64(11907350576), "AMD Radeon 8060S Graphics", "g.gguf", 29.3, 4096, false)
	f.Add("llama4 17Bx16E (Scout) Q4_K", int64(60e9), int64(107768115200), "AMD Radeon RX 7900 XTX", "s.gguf", 12.0, 0, true)
	f.Add("hunyuan-moe A13B", int64(1), int64(0), "llvmpipe", "", 1e300, 1<<30, false)
	f.Fuzz(func(t *testing.T, modelType string, size, params int64, gpu, file string, tps float64, depth int, gen bool) {
		r := Result{ModelType: modelType, ModelSize: size, ModelParams: params, GPU: gpu, ModelFile: file,
			TokensPerS: math.Abs(tps), Depth: depth, Backend: "Vulkan", Kind: kindPrompt, Test: "pp512"}
		if gen {
			r.Kind, r.Test = kindGeneration, "tg128"
		}
		if math.IsNaN(r.TokensPerS) || math.IsInf(r.TokensPerS, 0) {
			return // Parse refuses them
		}
		rf := resultRoofline(r, "", nil, References())
		if rf == nil {
			t.Fatal("no roofline for a pp or tg result")
		}
		for _, v := range []float64{rf.CeilingPerS, rf.Pct, rf.Weights.ReadBytes, rf.Weights.ActiveParams} {
			if math.IsNaN(v) || math.IsInf(v, 0) && v < 0 || v < 0 {
				t.Fatalf("%+v", rf)
			}
		}
		if rf.Available() && (rf.Weights.ReadBytes > rf.Weights.TotalBytes*1.0000001 || rf.Sentence() == "") {
			t.Fatalf("%+v", rf)
		}
		rep := Report{Comparisons: []Comparison{{Result: r, Roofline: rf}}}
		if _, err := json.Marshal(rep.ToJSON()); err != nil && !math.IsInf(rf.CeilingPerS, 0) && !math.IsInf(rf.Pct, 0) {
			t.Fatal(err)
		}
	})
}
