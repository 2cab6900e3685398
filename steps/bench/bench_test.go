package bench

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The real llama-bench output of Debian sid's llama.cpp on lavapipe (the proof
// of the llamacpp-distro track), in both machine formats.
func TestParseLlamaBenchReal(t *testing.T) {
	for _, tc := range []struct {
		file  string
		tests []string
		ts    []float64
	}{
		{"llama-bench-lavapipe.json", []string{"pp64", "tg16", "pp64 @ d256", "tg16 @ d256"}, []float64{2756.572037, 407.841358, 2290.979868, 454.234235}},
		{"llama-bench-lavapipe.jsonl", []string{"pp64", "tg16"}, nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			run, err := Parse(readFile(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if run.Format != FormatLlamaBench || len(run.Results) != len(tc.tests) {
				t.Fatalf("%s, %d results", run.Format, len(run.Results))
			}
			for i, r := range run.Results {
				if r.Test != tc.tests[i] || r.Backend != "Vulkan" || r.Build != 11669 || r.BuildCommit != "Debian" ||
					r.ModelFile != "tiny.gguf" || !strings.HasPrefix(r.GPU, "llvmpipe") || r.FlashAttn != "1" || r.GPULayers != 99 {
					t.Errorf("result %d: %+v", i, r)
				}
				if tc.ts != nil && r.TokensPerS != tc.ts[i] {
					t.Errorf("%s: %v t/s, want %v", r.Test, r.TokensPerS, tc.ts[i])
				}
			}
		})
	}
}

// vLLM's `bench serve --save-result` keys (vllm/benchmarks/serve.py, result_json
// and benchmark()'s result), one object, pretty-printed or with --append-result.
const vllmServeJSON = `{"date": "20261124-101500", "endpoint_type": "openai", "backend": "openai", "label": null,
 "model_id": "Qwen/Qwen3-8B", "tokenizer_id": "Qwen/Qwen3-8B", "num_prompts": 32, "request_rate": "inf",
 "burstiness": 1.0, "max_concurrency": 4, "duration": 41.2, "completed": 32, "failed": 0,
 "total_input_tokens": 32768, "total_output_tokens": 4096, "request_throughput": 0.78, "request_goodput": null,
 "output_throughput": 99.4, "total_token_throughput": 894.7, "max_output_tokens_per_s": 120.0,
 "max_concurrent_requests": 4, "mean_ttft_ms": 812.5, "median_ttft_ms": 790.1, "std_ttft_ms": 40.2,
 "p99_ttft_ms": 901.0, "mean_tpot_ms": 34.2, "median_tpot_ms": 34.0, "std_tpot_ms": 1.1, "p99_tpot_ms": 37.9}`

func TestParseVLLM(t *testing.T) {
	pretty := vllmServeJSON
	var compact map[string]any
	if err := json.Unmarshal([]byte(vllmServeJSON), &compact); err != nil {
		t.Fatal(err)
	}
	line, _ := json.Marshal(compact)
	compact["max_concurrency"] = 1
	compact["output_throughput"] = 31.0
	line1, _ := json.Marshal(compact)
	tests := []struct {
		name  string
		in    string
		tests []string
		ts    []float64
	}{
		{"pretty-printed", pretty, []string{"output c4", "total c4"}, []float64{99.4, 894.7}},
		{"--append-result: one object a line", string(line) + "\n" + string(line1) + "\n", []string{"output c4", "total c4", "output c1", "total c1"}, []float64{99.4, 894.7, 31, 894.7}},
		{"bench throughput (kyuz0's run_vllm_bench.py reads tokens_per_second)", `{"elapsed_time": 120.5, "num_requests": 200, "total_num_tokens": 90000, "requests_per_second": 1.66, "tokens_per_second": 746.9}`,
			[]string{"throughput"}, []float64{746.9}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run, err := Parse([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(run.Results) != len(tc.tests) {
				t.Fatalf("%d results: %+v", len(run.Results), run.Results)
			}
			for i, r := range run.Results {
				if r.Test != tc.tests[i] || r.TokensPerS != tc.ts[i] || r.Backend != "vllm" {
					t.Errorf("result %d: %+v", i, r)
				}
			}
		})
	}
	run, _ := Parse([]byte(pretty))
	if r := run.Results[0]; r.TTFTms != 812.5 || r.TPOTms != 34.2 || r.Prompt != 1024 || r.Gen != 128 || r.ModelFile != "Qwen/Qwen3-8B" {
		t.Errorf("serve details: %+v", r)
	}
}

func TestParseErrors(t *testing.T) {
	row := string(readFile(t, "llama-bench-lavapipe.jsonl"))
	first := strings.SplitN(row, "\n", 2)[0]
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "  \n", "empty input"},
		{"the markdown table", "| model | size |\n| --- | --- |\n", "not JSON"},
		{"garbage", "\x00\x01binary", "not JSON"},
		{"broken array", "[{", "not a llama-bench JSON array"},
		{"broken line", first + "\n{oops\n", "line 2: not a JSON object"},
		{"unknown object", `{"hello": 1}`, "neither a llama-bench row"},
		{"empty array", `[]`, "no benchmark results"},
		{"no test", strings.Replace(strings.Replace(first, `"n_prompt": 64`, `"n_prompt": 0`, 1), `"n_gen": 0`, `"n_gen": 0`, 1), "make no test"},
		{"negative rate", strings.Replace(first, `"avg_ts": `, `"avg_ts": -`, 1), "is not a rate"},
		{"rate as text", strings.Replace(first, `"avg_ts": `, `"avg_ts": "fast", "was": `, 1), "not a number"},
		{"mixed formats", first + "\n" + `{"elapsed_time": 1, "tokens_per_second": 2}`, "result 2 is vllm bench throughput output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := Parse(make([]byte, MaxInput+1)); err == nil || !strings.Contains(err.Error(), "MiB") {
		t.Fatalf("oversized input: %v", err)
	}
}

// Hostile bytes in a field never reach the terminal or the report.
func TestParseSanitizes(t *testing.T) {
	in := strings.Replace(strings.SplitN(string(readFile(t, "llama-bench-lavapipe.jsonl")), "\n", 2)[0],
		`"gpu_info": "llvmpipe`, `"gpu_info": "\u001b]52;c;ZXZpbA==\u0007\u001b[2Jllvmpipe`, 1)
	run, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if g := run.Results[0].GPU; strings.ContainsAny(g, "\x1b\x07") || !strings.HasSuffix(g, "256 bits)") {
		t.Fatalf("gpu_info kept control bytes: %q", g)
	}
}

func TestQuantAndModelKey(t *testing.T) {
	for _, tc := range []struct{ file, quant, key string }{
		{"/models/Qwen3.6-35B-A3B-UD-Q4_K_XL.gguf", "UD-Q4_K_XL", "qwen3.6-35b-a3b-ud-q4_k_xl"},
		{"Qwen3-Coder-30B-A3B-Instruct-UD-Q4_K_XL.gguf", "UD-Q4_K_XL", "qwen3-coder-30b-a3b-instruct-ud-q4_k_xl"},
		{"gpt-oss-120b-mxfp4-00001-of-00003.gguf", "MXFP4", "gpt-oss-120b-mxfp4"},
		{"DeepSeek-V4-Flash-0731-UD-IQ2_XXS-00001-of-00003", "UD-IQ2_XXS", "deepseek-v4-flash-0731-ud-iq2_xxs"},
		{"Qwen3.6-35B-A3B-Q4_0.gguf", "Q4_0", "qwen3.6-35b-a3b-q4_0"},
		{"llama-2-7b.Q4_K_M.gguf", "Q4_K_M", "llama-2-7b.q4_k_m"},
		{"model-f16.gguf", "F16", "model-f16"},
		{"tiny.gguf", "", "tiny"},
	} {
		if q, k := Quant(tc.file), ModelKey(tc.file); q != tc.quant || k != tc.key {
			t.Errorf("%s: quant %q key %q, want %q %q", tc.file, q, k, tc.quant, tc.key)
		}
	}
}

func TestReferencesBuiltIn(t *testing.T) {
	refs := References()
	if len(refs) < 30 {
		t.Fatalf("%d references", len(refs))
	}
	for _, r := range refs {
		if !strings.Contains(r.Source, "/blob/") || !reStrixHalo.MatchString(r.GPU) || r.Date == "" || r.ModelFile == "" || Quant(r.ModelFile) == "" {
			t.Errorf("reference without a pinned source, a Strix Halo GPU, a date or a quantised model file: %+v", r)
		}
	}
	for _, bad := range []string{"", "label\tx", "label\ta\tb\tc\td\te\tf\tg\th\ti\tj\tk\tl\tm\nx\thttp://a\t\t\t\t\t\tVulkan\t1\t\tm.gguf\tpp512\t0\t1"} {
		if _, err := ParseReferences(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// row builds a llama-bench JSON row from the real lavapipe one, changed as a
// Strix Halo run would print it.
func row(t *testing.T, gpu, backend, model string, build, prompt, gen, depth int, ts float64, fa string, ngl int) string {
	t.Helper()
	var o map[string]any
	first := strings.SplitN(string(readFile(t, "llama-bench-lavapipe.jsonl")), "\n", 2)[0]
	if err := json.Unmarshal([]byte(first), &o); err != nil {
		t.Fatal(err)
	}
	o["gpu_info"], o["backends"], o["model_filename"], o["build_number"] = gpu, backend, "/home/u/models/"+model, build
	// The model's own fields as llama-bench printed them for that file,
	// where a reference row records them.
	for _, ref := range References() {
		if ModelKey(ref.ModelFile) == ModelKey(model) && ref.ModelSize > 0 {
			o["model_type"], o["model_size"], o["model_n_params"] = ref.ModelType, ref.ModelSize, ref.ModelParams
		}
	}
	o["n_prompt"], o["n_gen"], o["n_depth"], o["avg_ts"], o["flash_attn"], o["n_gpu_layers"] = prompt, gen, depth, ts, fa, ngl
	b, _ := json.Marshal(o)
	return string(b)
}

const radv = "AMD Radeon 8060S Graphics (RADV GFX1151)"

func TestCompare(t *testing.T) {
	refs := References()
	qwen := "Qwen3.6-35B-A3B-UD-Q4_K_XL.gguf"
	tests := []struct {
		name    string
		row     string
		host    Host
		label   string // reference label, "" for none
		match   string
		verdict string
	}{
		{"RADV tg128 at the reference's speed", row(t, radv, "Vulkan", qwen, 10300, 0, 128, 0, 62.0, "1", 999), Host{},
			"kyuz0 vulkan-radv", "same model file; same backend (Vulkan); same test; build b10300 vs b10269", "within 10 % of kyuz0 vulkan-radv (62.0 vs 62.8 t/s)"},
		{"RADV tg128 at half speed on an IOMMU-on, balanced, old box", row(t, radv, "Vulkan", qwen, 9000, 0, 128, 0, 32.0, "0", 999),
			Host{IOMMU: "on", PowerProfile: "balanced"}, "kyuz0 vulkan-radv", "same model file",
			"at 51 % of kyuz0 vulkan-radv (32.0 vs 62.8 t/s): likely causes: IOMMU on (the reference ran with amd_iommu=off, 5–12 % faster), power profile balanced (not performance), old build (b9000, the reference b10269), flash attention off (-fa 1)"},
		{"unknown host facts: the usual suspects", row(t, radv, "Vulkan", qwen, 10269, 0, 128, 0, 45.0, "1", 999), Host{},
			"kyuz0 vulkan-radv", "", "at 72 % of kyuz0 vulkan-radv (45.0 vs 62.8 t/s): likely causes: IOMMU on, power profile"},
		{"ROCm prefill at depth 32768", row(t, "AMD Radeon 8060S Graphics", "ROCm", qwen, 10246, 2048, 0, 32768, 760, "1", 999), Host{IOMMU: "off", PowerProfile: "accelerator-performance"},
			"kyuz0 rocm-7.14", "same test; build b10246 vs b10246", "within 10 % of kyuz0 rocm-7.14 (760.0 vs 752.6 t/s)"},
		{"pp512 takes the closest prefill size", row(t, "AMD Radeon 8060S Graphics", "ROCm", qwen, 10246, 512, 0, 0, 1500, "1", 999), Host{},
			"kyuz0 rocm-7.14", "closest test pp2048", ""},
		{"split model file of gpt-oss", row(t, "Radeon 8060S Graphics (RADV STRIX_HALO)", "Vulkan", "gpt-oss-120b-mxfp4-00001-of-00003.gguf", 9049, 0, 128, 0, 80, "1", 999), Host{},
			"hogeheer vulkan b9049", "same model file", "at 144 % of hogeheer vulkan b9049: faster than the reference (80.0 vs 55.6 t/s)"},
		{"the same model and quant under another file name", row(t, radv, "ROCm", "Qwen3-Coder-30B-A3B-Instruct-UD-Q4_K_XL-renamed.gguf", 0, 512, 0, 0, 1300, "1", 999), Host{},
			"hogeheer rocm b9049", "same model and quantisation (Qwen3-Coder-30B-A3B-Instruct-UD-Q4_K_XL.gguf)", "within 10 % of hogeheer rocm b9049"},
		{"a model no reference has", row(t, radv, "ROCm", "Mistral-Small-3.2-24B-Q4_K_M.gguf", 0, 512, 0, 0, 900, "1", 999), Host{},
			"", "", "no reference for this model (Mistral-Small-3.2-24B-Q4_K_M.gguf): references exist for deepseek-v4-flash-0731"},
		{"model known, but not on this backend with this quant", row(t, radv, "Vulkan", "Qwen3.6-35B-A3B-UD-Q4_K_M.gguf", 9049, 0, 128, 0, 50, "1", 999), Host{},
			"", "", "no reference for tg128 on Vulkan with this model and quantisation"},
		{"RPC: no single-box reference", row(t, radv, "Vulkan,RPC", qwen, 10269, 0, 128, 0, 40, "1", 999), Host{},
			"", "", `no reference for backend "Vulkan,RPC"`},
		{"lavapipe: no reference for this hardware", row(t, "llvmpipe (LLVM 22.1.8, 256 bits)", "Vulkan", qwen, 11669, 0, 128, 0, 400, "1", 99), Host{},
			"", "", "no reference for this hardware: it ran on llvmpipe (LLVM 22.1.8, 256 bits)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run, err := Parse([]byte(tc.row))
			if err != nil {
				t.Fatal(err)
			}
			c := Compare(run, refs, tc.host).Comparisons[0]
			label := ""
			if c.Reference != nil {
				label = c.Reference.Label
			}
			if label != tc.label || !strings.Contains(c.Match, tc.match) || !strings.HasPrefix(c.Verdict, tc.verdict) {
				t.Fatalf("reference %q\nmatch   %q\nverdict %q", label, c.Match, c.Verdict)
			}
		})
	}
}

func TestCompareOverallAndJSON(t *testing.T) {
	qwen := "Qwen3.6-35B-A3B-UD-Q4_K_XL.gguf"
	in := row(t, radv, "Vulkan", qwen, 10269, 0, 128, 0, 61, "1", 999) + "\n" +
		row(t, radv, "Vulkan", qwen, 10269, 2048, 0, 0, 1250, "1", 999) + "\n" +
		row(t, radv, "Vulkan", qwen, 10269, 0, 128, 32768, 26, "1", 999) + "\n" +
		row(t, radv, "Vulkan", "unknown-model-Q4_0.gguf", 10269, 0, 128, 0, 10, "1", 999)
	run, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	rep := Compare(run, References(), Host{})
	if !strings.HasPrefix(rep.Verdict, "tg128 @ d32768: at 51 % of kyuz0 vulkan-radv") || !strings.HasSuffix(rep.Verdict, "(1 of 4 results have no reference)") {
		t.Fatalf("verdict %q", rep.Verdict)
	}
	b, err := json.Marshal(rep.ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	// docs/json.md: {"results": [{"test","tokens_per_s","reference": {"source","tokens_per_s","match"} | null,"ratio",
	// "roofline_tokens_per_s","roofline_pct","roofline"}],"verdict"}
	var shape struct {
		Results []map[string]json.RawMessage `json:"results"`
		Verdict string                       `json:"verdict"`
	}
	if err := json.Unmarshal(b, &shape); err != nil || len(shape.Results) != 4 || shape.Verdict == "" {
		t.Fatalf("%s", b)
	}
	for i, r := range shape.Results {
		if len(r) != 7 || r["test"] == nil || r["tokens_per_s"] == nil || r["reference"] == nil || r["ratio"] == nil ||
			r["roofline_tokens_per_s"] == nil || r["roofline_pct"] == nil || r["roofline"] == nil {
			t.Fatalf("result %d keys: %s", i, b)
		}
		var ref map[string]json.RawMessage
		_ = json.Unmarshal(r["reference"], &ref)
		if i < 3 && (len(ref) != 3 || ref["source"] == nil || ref["match"] == nil || ref["tokens_per_s"] == nil) {
			t.Fatalf("reference %d: %s", i, r["reference"])
		}
		if i == 3 && (string(r["reference"]) != "null" || string(r["ratio"]) != "null") {
			t.Fatalf("no reference must be null: %s", b)
		}
	}
	// All normal: one sentence says so.
	run.Results = run.Results[:2]
	if v := Compare(run, References(), Host{}).Verdict; !strings.HasPrefix(v, "normal: every compared result is within 10 % of its reference") {
		t.Fatalf("verdict %q", v)
	}
}

func TestShareableReport(t *testing.T) {
	raw := readFile(t, "llama-bench-lavapipe.json")
	run, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	host := Host{Device: "llvmpipe", BIOSUMA: "512 MiB", IOMMU: "off", Kernel: "6.1.0-37-amd64", Mesa: "Mesa 26.2.6-1"}
	s := NewShareable(Compare(run, References(), host), host, "llama-bench -m tiny.gguf -o json -r 3 -fa 1 -lm none `x`", raw,
		time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC))
	md := s.Markdown()
	for _, want := range []string{"# Benchmark report (haloforge, 2026-11-24)", "**Verdict:** no reference for this hardware",
		"- **Device:** llvmpipe", "- **BIOS UMA setting:** 512 MiB", "- **IOMMU setting:** off", "- **Kernel:** 6.1.0-37-amd64",
		"- **Mesa:** Mesa 26.2.6-1", "- **ROCm:** unknown", "- **Backend:** Vulkan", "- **Build:** b11669 (Debian)",
		"- **Command used:** `llama-bench -m tiny.gguf -o json -r 3 -fa 1 -lm none 'x'`", "| pp64 | 2756.57 | none |  |  |",
		"## Raw output\n\n```\n[\n", `"backends": "Vulkan"`} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q\n%s", want, md)
		}
	}
	b, err := s.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Shareable
	if err := json.Unmarshal(b, &back); err != nil || back.Raw != string(raw) || back.Results.Verdict == "" || back.BIOSUMA != "512 MiB" {
		t.Fatalf("JSON report does not round-trip: %v", err)
	}
}

// FuzzParse: any input gives results or an error, never a panic; results are
// finite, non-negative and printable.
func FuzzParse(f *testing.F) {
	f.Add(readFile(f, "llama-bench-lavapipe.json"))
	f.Add(readFile(f, "llama-bench-lavapipe.jsonl"))
	f.Add([]byte(vllmServeJSON))
	f.Add([]byte(`{"elapsed_time": 1, "tokens_per_second": 2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		run, err := Parse(b)
		if err != nil {
			return
		}
		rep := Compare(run, References(), Host{})
		for _, c := range rep.Comparisons {
			if c.Result.TokensPerS < 0 || strings.ContainsAny(c.Result.GPU+c.Result.ModelFile+c.Result.Backend, "\x1b\x07\x00") {
				t.Fatalf("%+v", c.Result)
			}
		}
		if _, err := json.Marshal(rep.ToJSON()); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzParseReferences(f *testing.F) {
	f.Add(referencesTSV)
	f.Fuzz(func(t *testing.T, s string) { _, _ = ParseReferences(s) })
}
