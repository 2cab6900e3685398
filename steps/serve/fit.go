package serve

import (
	"fmt"
	"math"
	"strings"

	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps/bench"
)

// UnifiedUtilCap is the largest share of the GPU ceiling an engine may take on
// the unified-memory APU: above it the rest of the system swaps (docs/facts.md;
// kyuz0/amd-strix-halo-vllm-toolboxes#65 spilled 5 GB into swap at 0.95).
const UnifiedUtilCap = 0.90

// discreteUtil is the default share on a GPU with its own memory.
const discreteUtil = 0.95

// contextStep rounds suggested contexts down to a multiple of it.
const contextStep = 256

// ModelShape is what the fit estimate needs to know of a model.
type ModelShape struct {
	Name           string
	WeightsBytes   uint64
	Layers         uint64
	KVHeads        uint64
	KeyDim         uint64 // per KV head
	ValueDim       uint64 // per KV head (0 for MLA's joint latent, counted in KeyDim)
	TrainedContext uint64 // 0 when unknown
	// KVBytesPerElement is the KV cache's element size: 2 for f16/bf16.
	KVBytesPerElement float64
	// Weights is what one generated token reads of the model, for the
	// roofline of its speed; nil when the engine cannot say before it runs.
	Weights *bench.Weights
}

// ShapeFromGGUF takes a model's shape from its GGUF header.
func ShapeFromGGUF(g *GGUF) ModelShape {
	k, v := g.HeadDims()
	return ModelShape{
		Name: g.Name, WeightsBytes: g.WeightsBytes(), Layers: g.BlockCount, KVHeads: g.KVHeads(),
		KeyDim: k, ValueDim: v, TrainedContext: g.ContextLength, KVBytesPerElement: 2,
	}
}

// KVBytesPerToken is the KV cache one token of context takes over all layers.
func (m ModelShape) KVBytesPerToken() uint64 {
	b := m.KVBytesPerElement
	if b <= 0 {
		b = 2
	}
	return uint64(math.Ceil(float64(m.Layers*m.KVHeads*(m.KeyDim+m.ValueDim)) * b))
}

// FitRequest is one question: does this model at this context fit?
type FitRequest struct {
	Engine     string // the engine's name: its Overhead counts (1 GiB for an unknown one)
	Model      ModelShape
	Context    uint64  // 0: the trained context, else 4096
	Util       float64 // share of the ceiling the engine may use; 0: the default
	LimitBytes uint64  // the live GPU memory ceiling (GTT on the APU)
	Unified    bool    // unified memory (the APU): Util is capped at UnifiedUtilCap
}

// Fit is the answer, with the numbers behind it. The first four JSON fields
// are docs/json.md's `serve --dry-run --json` "fit" object.
type Fit struct {
	WeightsBytes  uint64  `json:"weights_bytes"`
	KVBytes       uint64  `json:"kv_bytes"`
	LimitBytes    uint64  `json:"limit_bytes"`
	Fits          bool    `json:"fits"`
	OverheadBytes uint64  `json:"overhead_bytes"`
	NeedBytes     uint64  `json:"need_bytes"`
	UsableBytes   uint64  `json:"usable_bytes"`
	Context       uint64  `json:"context"`
	Util          float64 `json:"util"`
	// MaxContext is the largest context (a multiple of 256, at most the trained
	// one) that fits at Util; 0 when not even the weights fit.
	MaxContext uint64 `json:"max_context"`
	// MinUtil is the utilisation at which Context would fit (may exceed the cap).
	MinUtil float64 `json:"min_util"`
	// Advice says what to change when it does not fit, and why; "" when it fits.
	Advice string `json:"advice,omitempty"`
	// Notes are remarks that do not block (a utilisation lowered to the cap).
	Notes []string `json:"notes,omitempty"`
}

// Estimate sizes weights + KV cache + overhead against the ceiling.
func Estimate(r FitRequest) Fit {
	f := Fit{WeightsBytes: r.Model.WeightsBytes, LimitBytes: r.LimitBytes}
	capUtil := discreteUtil
	if r.Unified {
		capUtil = UnifiedUtilCap
	}
	f.Util = r.Util
	switch {
	case f.Util <= 0:
		f.Util = capUtil
	case f.Util > capUtil && r.Unified:
		f.Notes = append(f.Notes, fmt.Sprintf("--util %.2f lowered to %.2f: on unified memory the rest goes to the system, and more swaps", r.Util, capUtil))
		f.Util = capUtil
	case f.Util > 1:
		f.Util = 1
	}
	f.Context = r.Context
	if f.Context == 0 {
		f.Context = r.Model.TrainedContext
	}
	if f.Context == 0 {
		f.Context = 4096
	}
	f.OverheadBytes = 1 << 30
	if e, ok := EngineNamed(r.Engine); ok {
		f.OverheadBytes = e.Overhead()
	}
	perToken := r.Model.KVBytesPerToken()
	f.KVBytes = sat(perToken, f.Context)
	f.NeedBytes = satAdd(satAdd(f.WeightsBytes, f.OverheadBytes), f.KVBytes)
	f.UsableBytes = uint64(float64(r.LimitBytes) * f.Util)
	f.Fits = r.LimitBytes > 0 && f.NeedBytes <= f.UsableBytes
	if r.LimitBytes > 0 {
		f.MinUtil = math.Ceil(float64(f.NeedBytes)/float64(r.LimitBytes)*100) / 100
	}
	fixed := f.WeightsBytes + f.OverheadBytes
	if f.UsableBytes > fixed && perToken > 0 {
		n := (f.UsableBytes - fixed) / perToken
		n -= n % contextStep
		if r.Model.TrainedContext > 0 && n > r.Model.TrainedContext {
			n = r.Model.TrainedContext
		}
		f.MaxContext = n
	}
	if !f.Fits {
		f.Advice = f.advice(r, capUtil)
	}
	return f
}

// advice is the "does not fit" sentence with computed alternatives.
func (f Fit) advice(r FitRequest, capUtil float64) string {
	if r.LimitBytes == 0 {
		return "does not fit: the GPU memory ceiling is unknown (run haloforge doctor; on the APU it is the GTT size)"
	}
	fixed := f.WeightsBytes + f.OverheadBytes
	capBytes := uint64(float64(r.LimitBytes) * capUtil)
	if fixed >= capBytes || f.maxContextAt(capBytes, r) < contextStep {
		what := "raise the GPU ceiling (on the APU: ttm.pages_limit, see haloforge doctor)"
		if !r.Unified {
			what = "use a GPU with more memory"
		}
		return fmt.Sprintf("does not fit: the weights need %s and the engine about %s more, beyond the %s it may use (%.2f × %s): use a smaller quantisation or %s",
			text.Bytes(int64(f.WeightsBytes)), text.Bytes(int64(f.OverheadBytes)), text.Bytes(int64(capBytes)), capUtil, text.Bytes(int64(r.LimitBytes)), what)
	}
	var tries []string
	if f.MaxContext >= contextStep {
		tries = append(tries, fmt.Sprintf("--ctx %d", f.MaxContext))
	}
	if f.MinUtil <= capUtil && f.MinUtil > f.Util {
		tries = append(tries, fmt.Sprintf("--util %.2f", f.MinUtil))
	} else if f.Util < capUtil {
		if n := f.maxContextAt(capBytes, r); n >= contextStep && n != f.MaxContext {
			tries = append(tries, fmt.Sprintf("--util %.2f --ctx %d", capUtil, n))
		}
	}
	return fmt.Sprintf("does not fit: %s needed, %s usable (%.2f × %s) at --ctx %d: try %s",
		text.Bytes(int64(f.NeedBytes)), text.Bytes(int64(f.UsableBytes)), f.Util, text.Bytes(int64(r.LimitBytes)), f.Context, strings.Join(tries, " or "))
}

// maxContextAt is the largest context that fits in usable bytes.
func (f Fit) maxContextAt(usable uint64, r FitRequest) uint64 {
	fixed := f.WeightsBytes + f.OverheadBytes
	per := r.Model.KVBytesPerToken()
	if usable <= fixed || per == 0 {
		return 0
	}
	n := (usable - fixed) / per
	n -= n % contextStep
	if r.Model.TrainedContext > 0 && n > r.Model.TrainedContext {
		n = r.Model.TrainedContext
	}
	return n
}

// Summary is one line for the screen.
func (f Fit) Summary() string {
	verdict := "fits"
	if !f.Fits {
		verdict = "does not fit"
	}
	return fmt.Sprintf("%s: weights %s + KV cache %s (ctx %d) + overhead %s = %s of %s usable (%.2f × %s)",
		verdict, text.Bytes(int64(f.WeightsBytes)), text.Bytes(int64(f.KVBytes)), f.Context, text.Bytes(int64(f.OverheadBytes)), text.Bytes(int64(f.NeedBytes)),
		text.Bytes(int64(f.UsableBytes)), f.Util, text.Bytes(int64(f.LimitBytes)))
}

// satAdd adds without overflowing.
func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// sat multiplies without overflowing (saturates at the largest uint64).
func sat(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}
