// Package bench reads benchmark output (llama-bench JSON and JSONL, vLLM's
// `bench serve` and `bench throughput` JSON), puts each result next to the
// closest published reference measured on a Strix Halo, says plainly whether
// the speed is normal, and writes a shareable report. It runs nothing.
package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/haloforge/haloforge/internal/text"
)

// MaxInput bounds what Parse accepts: real outputs are kilobytes; a
// `--save-detailed` vLLM result with every generated text can reach a few MB.
const MaxInput = 64 << 20

// Formats Parse recognises.
const (
	FormatLlamaBench      = "llama-bench"
	FormatVLLMServe       = "vllm bench serve"
	FormatVLLMThroughput  = "vllm bench throughput"
	kindPrompt            = "prompt"
	kindGeneration        = "generation"
	kindPromptGeneration  = "prompt+generation"
	kindServeOutput       = "serve output"
	kindThroughput        = "throughput"
	maxResults            = 10000
	maxLineBytes          = 16 << 20
	maxField              = 256 // characters kept of a text field
	defaultServeTestLabel = "output"
)

// Result is one measured figure, with what is known of how it was measured.
type Result struct {
	Test       string  // "pp512", "tg128", "pp512 @ d4096", "pp512+tg128", "output c1"
	Kind       string  // prompt, generation, prompt+generation, serve output, throughput
	TokensPerS float64 // the figure compared with references
	StddevPerS float64
	Prompt     int // tokens of prompt processed (n_prompt)
	Gen        int // tokens generated (n_gen)
	Depth      int // tokens already in the context (n_depth)

	ModelFile   string // base name of the model file, or the model id (vLLM)
	ModelType   string // llama-bench's model_type, e.g. "qwen3moe 30B.A3B Q4_K - Medium"
	ModelSize   int64  // llama-bench's model_size: bytes of weights, 0 when unknown
	ModelParams int64  // llama-bench's model_n_params, 0 when unknown
	Backend     string // llama-bench's backends ("Vulkan", "ROCm", "Vulkan,RPC"), "vllm"
	Build       int    // llama.cpp build number, 0 when unknown
	BuildCommit string
	GPU         string // gpu_info
	CPU         string // cpu_info
	FlashAttn   string // "1", "0", "on", "off", "auto" as the tool printed it
	GPULayers   int
	Ubatch      int

	Concurrency int     // vLLM: --max-concurrency, 0 when unlimited or unknown
	TTFTms      float64 // vLLM: mean time to first token
	TPOTms      float64 // vLLM: mean time per output token
}

// Run is a parsed benchmark file.
type Run struct {
	Format  string
	Results []Result
	// Model is what the model file's own header says a token reads, when
	// the file is at hand (bench --model, bench --track): it is used for the
	// results of that model instead of llama-bench's fields.
	Model *Weights
}

// Parse reads llama-bench `-o json` or `-o jsonl`, or a vLLM bench JSON
// (one object, or several from --append-result, one per line). It fails with
// a clear error on anything else, and never on unknown extra fields.
func Parse(data []byte) (Run, error) {
	if len(data) > MaxInput {
		return Run{}, fmt.Errorf("input of %d bytes: more than the %d MiB a benchmark result can be", len(data), MaxInput>>20)
	}
	trim := bytes.TrimSpace(data)
	if len(trim) == 0 {
		return Run{}, errors.New("empty input: no benchmark results")
	}
	var objs []map[string]json.RawMessage
	switch trim[0] {
	case '[':
		if err := json.Unmarshal(trim, &objs); err != nil {
			return Run{}, fmt.Errorf("not a llama-bench JSON array: %v", shortErr(err))
		}
	case '{':
		sc := bufio.NewScanner(bytes.NewReader(trim))
		sc.Buffer(make([]byte, 64<<10), maxLineBytes)
		n := 0
		for sc.Scan() {
			n++
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			var o map[string]json.RawMessage
			if err := json.Unmarshal(line, &o); err != nil {
				if n == 1 { // one pretty-printed object over several lines
					if err2 := json.Unmarshal(trim, &o); err2 == nil {
						objs = []map[string]json.RawMessage{o}
						break
					}
				}
				return Run{}, fmt.Errorf("line %d: not a JSON object: %v", n, shortErr(err))
			}
			objs = append(objs, o)
		}
		if err := sc.Err(); err != nil {
			return Run{}, fmt.Errorf("reading lines: %v", err)
		}
	default:
		return Run{}, errors.New("not JSON: want llama-bench -o json or -o jsonl output, or a vLLM bench result (--save-result); the markdown table (-o md) is not read here")
	}
	if len(objs) == 0 {
		return Run{}, errors.New("no benchmark results in the input")
	}
	if len(objs) > maxResults {
		return Run{}, fmt.Errorf("%d results: more than %d", len(objs), maxResults)
	}
	var run Run
	for i, o := range objs {
		format, r, err := parseObject(o)
		if err != nil {
			return Run{}, fmt.Errorf("result %d: %w", i+1, err)
		}
		if run.Format != "" && run.Format != format {
			return Run{}, fmt.Errorf("result %d is %s output, result 1 was %s", i+1, format, run.Format)
		}
		run.Format = format
		run.Results = append(run.Results, r...)
	}
	return run, nil
}

func parseObject(o map[string]json.RawMessage) (string, []Result, error) {
	switch {
	case has(o, "avg_ts") && (has(o, "n_prompt") || has(o, "n_gen")):
		r, err := llamaBenchRow(o)
		return FormatLlamaBench, []Result{r}, err
	case has(o, "output_throughput") && has(o, "completed"):
		r, err := vllmServe(o)
		return FormatVLLMServe, r, err
	case has(o, "tokens_per_second") && has(o, "elapsed_time"):
		r, err := vllmThroughput(o)
		return FormatVLLMThroughput, []Result{r}, err
	}
	return "", nil, errors.New("neither a llama-bench row (avg_ts, n_prompt, n_gen) nor a vLLM bench result (output_throughput or tokens_per_second)")
}

func has(o map[string]json.RawMessage, k string) bool { _, ok := o[k]; return ok }

// llamaBenchRow reads one row of llama-bench's JSON (the same fields in -o json
// and -o jsonl): test sizes, the mean rate, and how the run was set up.
func llamaBenchRow(o map[string]json.RawMessage) (Result, error) {
	r := Result{
		ModelFile: path.Base(str(o, "model_filename")), ModelType: str(o, "model_type"),
		Backend: str(o, "backends"), BuildCommit: str(o, "build_commit"), GPU: str(o, "gpu_info"),
		CPU: str(o, "cpu_info"), FlashAttn: str(o, "flash_attn"),
	}
	if r.ModelFile == "." || r.ModelFile == "/" {
		r.ModelFile = ""
	}
	var err error
	if r.Prompt, err = intField(o, "n_prompt"); err != nil {
		return r, err
	}
	if r.Gen, err = intField(o, "n_gen"); err != nil {
		return r, err
	}
	r.Depth, _ = intField(o, "n_depth")
	if n, err := intField(o, "model_size"); err == nil {
		r.ModelSize = int64(n)
	}
	if n, err := intField(o, "model_n_params"); err == nil {
		r.ModelParams = int64(n)
	}
	r.Build, _ = intField(o, "build_number")
	r.GPULayers, _ = intField(o, "n_gpu_layers")
	r.Ubatch, _ = intField(o, "n_ubatch")
	if r.TokensPerS, err = floatField(o, "avg_ts"); err != nil {
		return r, err
	}
	r.StddevPerS, _ = floatField(o, "stddev_ts")
	if r.Prompt < 0 || r.Gen < 0 || r.Depth < 0 || (r.Prompt == 0 && r.Gen == 0) {
		return r, fmt.Errorf("test sizes n_prompt=%d n_gen=%d n_depth=%d make no test", r.Prompt, r.Gen, r.Depth)
	}
	switch {
	case r.Prompt > 0 && r.Gen > 0:
		r.Kind, r.Test = kindPromptGeneration, fmt.Sprintf("pp%d+tg%d", r.Prompt, r.Gen)
	case r.Prompt > 0:
		r.Kind, r.Test = kindPrompt, fmt.Sprintf("pp%d", r.Prompt)
	default:
		r.Kind, r.Test = kindGeneration, fmt.Sprintf("tg%d", r.Gen)
	}
	if r.Depth > 0 {
		r.Test += fmt.Sprintf(" @ d%d", r.Depth)
	}
	return r, nil
}

// vllmServe reads `vllm bench serve --save-result` (vllm/benchmarks/serve.py):
// output_throughput (generated tokens/s over all requests) is the figure;
// TTFT and TPOT ride along.
func vllmServe(o map[string]json.RawMessage) ([]Result, error) {
	out, err := floatField(o, "output_throughput")
	if err != nil {
		return nil, err
	}
	r := Result{Kind: kindServeOutput, TokensPerS: out, Backend: "vllm", ModelFile: str(o, "model_id")}
	r.Concurrency, _ = intField(o, "max_concurrency")
	r.TTFTms, _ = floatField(o, "mean_ttft_ms")
	r.TPOTms, _ = floatField(o, "mean_tpot_ms")
	in, _ := intField(o, "total_input_tokens")
	gen, _ := intField(o, "total_output_tokens")
	n, _ := intField(o, "completed")
	if n > 0 {
		r.Prompt, r.Gen = in/n, gen/n
	}
	r.Test = defaultServeTestLabel
	if r.Concurrency > 0 {
		r.Test += fmt.Sprintf(" c%d", r.Concurrency)
	}
	res := []Result{r}
	if total, err := floatField(o, "total_token_throughput"); err == nil && total > 0 {
		t := r
		t.Kind, t.Test, t.TokensPerS = kindThroughput, strings.Replace(r.Test, defaultServeTestLabel, "total", 1), total
		res = append(res, t)
	}
	return res, nil
}

// vllmThroughput reads `vllm bench throughput --output-json`.
func vllmThroughput(o map[string]json.RawMessage) (Result, error) {
	tps, err := floatField(o, "tokens_per_second")
	if err != nil {
		return Result{}, err
	}
	return Result{Test: "throughput", Kind: kindThroughput, TokensPerS: tps, Backend: "vllm"}, nil
}

// str reads a string field; numbers and booleans are given as their text (llama-bench
// printed flash_attn as a bool, then an int, then "on"/"off").
func str(o map[string]json.RawMessage, k string) string {
	raw, ok := o[k]
	if !ok {
		return ""
	}
	// What the tool printed reaches a terminal and a report: one line,
	// sanitised, bounded.
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return text.Printable(s, maxField)
	}
	t := strings.TrimSpace(string(raw))
	if t == "null" || len(t) > 64 {
		return ""
	}
	return text.Printable(t, maxField)
}

func floatField(o map[string]json.RawMessage, k string) (float64, error) {
	raw, ok := o[k]
	if !ok {
		return 0, fmt.Errorf("no %s", k)
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, fmt.Errorf("%s is not a number", k)
		}
		if f, err = strconv.ParseFloat(s, 64); err != nil {
			return 0, fmt.Errorf("%s is not a number", k)
		}
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, fmt.Errorf("%s = %v is not a rate", k, f)
	}
	return f, nil
}

func intField(o map[string]json.RawMessage, k string) (int, error) {
	f, err := floatField(o, k)
	if err != nil {
		return 0, err
	}
	if f > 1<<40 || f != math.Trunc(f) {
		return 0, fmt.Errorf("%s = %v is not a count", k, f)
	}
	return int(f), nil
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// reQuant finds the quantisation in a GGUF file name: UD-Q4_K_XL, Q4_K_M,
// IQ2_XXS, Q8_0, MXFP4, F16, BF16.
var reQuant = regexp.MustCompile(`(?i)(?:^|[-_.])((?:UD-)?(?:I?Q[1-8](?:_[A-Z0-9]+)*|MXFP4|BF16|F16|F32))(?:[-_.]|$)`)

// Quant is the quantisation named in a model file name ("" when none).
func Quant(file string) string {
	name := strings.TrimSuffix(splitSuffix.ReplaceAllString(file, ""), ".gguf")
	ms := reQuant.FindAllStringSubmatch(name, -1)
	if len(ms) == 0 {
		return ""
	}
	return strings.ToUpper(ms[len(ms)-1][1])
}

// splitSuffix is gguf-split's part suffix.
var splitSuffix = regexp.MustCompile(`(?i)-\d{5}-of-\d{5}(\.gguf)?$`)

// ModelKey normalises a model file name for matching: lower case, no
// directory, no ".gguf", no split-part suffix.
func ModelKey(file string) string {
	f := strings.ToLower(path.Base(file))
	f = splitSuffix.ReplaceAllString(f, "")
	return strings.TrimSuffix(f, ".gguf")
}

// Measures says whether the run has results of the model file named (or
// of an unnamed model).
func (r Run) Measures(file string) bool {
	for _, res := range r.Results {
		if sameModel(res.ModelFile, file) {
			return true
		}
	}
	return false
}

// sameModel says whether a result's model file (empty when unnamed) is the
// file named.
func sameModel(resultFile, file string) bool {
	return resultFile == "" || ModelKey(resultFile) == ModelKey(file)
}

// Device is the device the run names (llama-bench's gpu_info), "" when
// none does.
func (r Run) Device() string {
	for _, res := range r.Results {
		if res.GPU != "" {
			return res.GPU
		}
	}
	return ""
}
