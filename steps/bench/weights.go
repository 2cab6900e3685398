package bench

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Weights is what one generated token reads of a model's weights, and how
// that follows from what is known of the model, in words a reader can redo.
type Weights struct {
	File         string  `json:"file"`          // the model file the figures are of ("" when unnamed)
	TotalBytes   float64 `json:"weights_bytes"` // every weight tensor
	ReadBytes    float64 `json:"read_bytes"`    // what one generated token reads
	ActiveParams float64 `json:"active_params"` // parameters one token multiplies, 0 when unknown
	MoE          bool    `json:"moe"`           // a mixture-of-experts model
	Method       string  `json:"method"`        // how ReadBytes follows from TotalBytes
	FromGGUF     bool    `json:"from_gguf"`     // from the model file's header, not llama-bench's fields
}

// llama.cpp's model type names the total and active parameters of most
// mixture-of-experts models ("qwen3moe 30B.A3B Q4_K - Medium", llm_type_name
// in src/llama-model.cpp); a few name only the active ("A13B", "A2.7B") or
// the active per expert count ("17Bx16E (Scout)").
var (
	reTypeTotalActive = regexp.MustCompile(`(?:^|\s)(\d+(?:\.\d+)?)B\.A(\d+(?:\.\d+)?)B(?:\s|$)`)
	reTypeActiveOnly  = regexp.MustCompile(`(?:^|\s)A(\d+(?:\.\d+)?)B(?:\s|$)`)
	reTypeActiveX     = regexp.MustCompile(`(?:^|\s)(\d+(?:\.\d+)?)Bx\d+E(?:\s|$)`)
	reTypeExperts     = regexp.MustCompile(`\d+x\d+(?:\.\d+)?B`) // "8x7B", "10B+128x3.66B": active unknown
	// A file name such as Qwen3-Coder-30B-A3B-Instruct-Q4_K_M.gguf.
	reFileTotalActive = regexp.MustCompile(`(?i)(?:^|[-_.])(\d+(?:\.\d+)?)B-A(\d+(?:\.\d+)?)B(?:[-_.]|$)`)
)

// moeArch says whether llama.cpp's architecture name (model_type's first
// word) is a mixture-of-experts one whose type name may not say how much is
// active ("gpt-oss 120B MXFP4 MoE", "deepseek4 ?B …", "qwen3moe ?B F16").
func moeArch(arch string) bool {
	a := strings.ToLower(arch)
	if strings.Contains(a, "moe") || strings.HasPrefix(a, "deepseek") {
		return true
	}
	switch a {
	case "gpt-oss", "dbrx", "arctic", "jamba", "dots1", "qwen3next", "llama4", "minimax-m2", "grok", "smallthinker", "mixtral":
		return true
	}
	return false
}

// WeightsFromResult works out the bytes a generated token reads from
// llama-bench's own fields: model_size, model_n_params and model_type (or,
// failing that, a total-active pair in the file name). A dense model reads
// all its weights; a mixture-of-experts model about its active share of
// them. It returns why not when the fields do not say.
func WeightsFromResult(r Result) (Weights, string) {
	if r.ModelSize <= 0 {
		return Weights{}, "the output does not give the model's size (llama-bench's model_size)"
	}
	params := float64(max(r.ModelParams, 0))
	w := Weights{File: r.ModelFile, TotalBytes: float64(r.ModelSize)}
	size := gb(w.TotalBytes)
	share := func(active, total float64, from string) (Weights, string) {
		w.MoE = true
		w.ReadBytes = w.TotalBytes * active / total
		w.ActiveParams = active * 1e9
		w.Method = fmt.Sprintf("%s of weights × %s/%s active (%s)", size, num(active), num(total), from)
		return w, ""
	}
	if m := reTypeTotalActive.FindStringSubmatch(r.ModelType); m != nil {
		total, active := atof(m[1]), atof(m[2])
		if active > 0 && active < total {
			return share(active, total, "llama-bench's model_type "+m[1]+"B.A"+m[2]+"B")
		}
	}
	active := 0.0
	if m := reTypeActiveOnly.FindStringSubmatch(r.ModelType); m != nil {
		active = atof(m[1])
	} else if m := reTypeActiveX.FindStringSubmatch(r.ModelType); m != nil {
		active = atof(m[1])
	}
	if active > 0 && params > 0 {
		total := math.Round(params/1e7) / 100 // as printed: 30.53
		if active < total {
			return share(active, total, fmt.Sprintf("%s B active of llama-bench's %s B parameters", num(active), num(total)))
		}
	}
	if m := reFileTotalActive.FindStringSubmatch(r.ModelFile); m != nil {
		total, active := atof(m[1]), atof(m[2])
		if active > 0 && active < total {
			return share(active, total, "the file name's "+m[1]+"B-A"+m[2]+"B")
		}
	}
	arch, _, _ := strings.Cut(strings.TrimSpace(r.ModelType), " ")
	if moeArch(arch) || reTypeExperts.MatchString(r.ModelType) || active > 0 {
		return Weights{}, fmt.Sprintf("%q is a mixture-of-experts model and llama-bench's output does not say how much of it each token reads: give the model file (--model FILE.gguf) for the share from its header", r.ModelType)
	}
	w.ReadBytes = w.TotalBytes
	w.ActiveParams = params
	w.Method = fmt.Sprintf("all %s of weights (a dense model)", size)
	return w, ""
}

// Tensor is one weight tensor as a GGUF header lists it.
type Tensor struct {
	Name     string
	Elements uint64
	Bytes    uint64 // 0 when its storage type is not known
}

// WeightsFromTensors works out the bytes a generated token reads from a
// GGUF header: every tensor except the expert tensors ("…_exps…") and the
// embedding tables that are looked up one row at a time, plus the expert
// tensors × experts used / experts. The token embedding counts in full when
// there is no separate output matrix: it is then the output matrix too.
func WeightsFromTensors(file string, tensors []Tensor, experts, used uint64) (Weights, error) {
	if len(tensors) == 0 {
		return Weights{}, errors.New("the header lists no tensors")
	}
	hasOutput := false
	for _, t := range tensors {
		if t.Name == "output.weight" {
			hasOutput = true
		}
	}
	var total, dense, expert, lookup float64
	var denseEl, expertEl float64
	for _, t := range tensors {
		if t.Bytes == 0 && t.Elements > 0 {
			return Weights{}, fmt.Errorf("tensor %q is of a type haloforge does not know the size of", t.Name)
		}
		b, e := float64(t.Bytes), float64(t.Elements)
		total += b
		switch {
		case strings.Contains(t.Name, "_exps"):
			expert += b
			expertEl += e
		case t.Name == "per_layer_token_embd.weight" || (t.Name == "token_embd.weight" && hasOutput):
			lookup += b
		default:
			dense += b
			denseEl += e
		}
	}
	w := Weights{File: file, TotalBytes: total, FromGGUF: true}
	skipped := ""
	if lookup > 0 {
		skipped = fmt.Sprintf(", less %s of embedding tables a token looks up one row of", gb(lookup))
	}
	switch {
	case expert == 0 && experts == 0:
		w.ReadBytes, w.ActiveParams = dense, denseEl
		w.Method = fmt.Sprintf("%s of weights in the model file's header%s (a dense model)", gb(total), skipped)
		return w, nil
	case expert == 0:
		return Weights{}, fmt.Errorf("the header says %d experts but lists no expert tensors", experts)
	case experts == 0 || used == 0 || used > experts:
		return Weights{}, fmt.Errorf("expert tensors, but %d of %d experts used (expert_used_count, expert_count)", used, experts)
	}
	frac := float64(used) / float64(experts)
	w.MoE = true
	w.ReadBytes = dense + expert*frac
	w.ActiveParams = denseEl + expertEl*frac
	w.Method = fmt.Sprintf("%s of shared weights + %s of expert weights × %d/%d experts used (the model file's header%s)",
		gb(dense), gb(expert), used, experts, skipped)
	return w, nil
}

// gb is a size in decimal gigabytes, the unit bandwidth is quoted in, so
// that a size divided by GB/s reads as the tokens/s it gives.
func gb(bytes float64) string {
	switch {
	case bytes >= 1e9:
		return fmt.Sprintf("%.2f GB", bytes/1e9)
	case bytes >= 1e6:
		return fmt.Sprintf("%.2f MB", bytes/1e6)
	}
	return fmt.Sprintf("%.0f bytes", bytes)
}

func atof(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0
	}
	return f
}

// num is a parameter count in billions as written in a model's name: 3,
// 2.7, 30.53.
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
