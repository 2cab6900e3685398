package bench

import (
	"fmt"
	"math"
)

// Bounds of a Roofline.
const (
	BoundMemory  = "memory"  // token generation: every token reads the active weights once
	BoundCompute = "compute" // prompt processing: 2 FLOPs per active parameter and token, a rough ceiling
)

// Roofline is a result put against the most its device could do with its
// model: token generation against the memory bandwidth (tokens/s can never
// pass the bandwidth divided by the bytes each token reads), prompt
// processing against the compute peak (a rough ceiling: attention and
// dequantisation are not counted).
type Roofline struct {
	Bound       string
	Device      Device
	Weights     Weights
	TokensPerS  float64 // the result
	CeilingPerS float64 // 0 when Missing says why there is none
	Pct         float64 // the result's share of the ceiling, in percent
	Depth       int     // tokens already in the context
	Backend     string  // Vulkan or ROCm, for the band of tuned runs
	Band        *Band   // what tuned Strix Halo runs of the same kind reach; nil when none applies
	Missing     string  // why there is no ceiling
}

// Band is the share of the memory-bandwidth roofline that published, tuned
// Strix Halo runs reach for one kind of model on one backend.
type Band struct {
	Low, High float64 // percent
	Runs      int
	MoE       bool
	Backend   string
}

// GenerationRoofline puts a token-generation speed on a device against its
// memory bandwidth: the one function bench's results and serve's measured
// speed both go through. backend picks the band of tuned runs ("" for
// none); refs are the published references the band comes from.
func GenerationRoofline(device string, w Weights, tokensPerS float64, depth int, backend string, refs []Reference) Roofline {
	rf := Roofline{Bound: BoundMemory, Weights: w, TokensPerS: tokensPerS, Depth: depth, Backend: backend}
	d, why := LookupDevice(device)
	if why != "" {
		rf.Missing = why
		return rf
	}
	rf.Device = d
	if w.ReadBytes <= 0 {
		rf.Missing = "the bytes a token reads are not known"
		return rf
	}
	rf.CeilingPerS = d.BandwidthGBs * 1e9 / w.ReadBytes
	rf.Pct = 100 * tokensPerS / rf.CeilingPerS
	if d.StrixHalo && backend != "" {
		if b, ok := TunedBand(refs, w.MoE, backend); ok {
			rf.Band = &b
		}
	}
	return rf
}

// PromptRoofline puts a prompt-processing speed against the device's FP16
// compute peak, at 2 FLOPs per active parameter and token: a rough ceiling.
func PromptRoofline(device string, w Weights, tokensPerS float64, depth int) Roofline {
	rf := Roofline{Bound: BoundCompute, Weights: w, TokensPerS: tokensPerS, Depth: depth}
	d, class := lookupDevice(device)
	switch {
	case class != deviceKnown:
		rf.Missing = missingFigure(device, class, "compute peak")
		return rf
	case d.FP16TFLOPS <= 0:
		rf.Device, rf.Missing = d, "no known compute peak for "+d.Name
		return rf
	case w.ActiveParams <= 0:
		rf.Device, rf.Missing = d, "the model's active parameters are not known"
		return rf
	}
	rf.Device = d
	rf.CeilingPerS = d.FP16TFLOPS * 1e12 / (2 * w.ActiveParams)
	rf.Pct = 100 * tokensPerS / rf.CeilingPerS
	return rf
}

// resultRoofline is the roofline of one benchmark result: generation against
// memory, prompt processing against compute; nil for other kinds (a mixed
// pp+tg test, a vLLM throughput). model, when not nil, is the model file's
// own header, used when it is this result's model.
func resultRoofline(r Result, hostDevice string, model *Weights, refs []Reference) *Roofline {
	if r.Kind != kindGeneration && r.Kind != kindPrompt {
		return nil
	}
	device := r.GPU
	if device == "" {
		device = hostDevice
	}
	var w Weights
	why := ""
	switch {
	case model != nil && (model.File == "" || sameModel(r.ModelFile, model.File)):
		w = *model
	default:
		w, why = WeightsFromResult(r)
		if model != nil && why != "" {
			why += fmt.Sprintf(" (the model file given, %s, is not this result's %s)", model.File, r.ModelFile)
		}
	}
	var rf Roofline
	if r.Kind == kindGeneration {
		rf = GenerationRoofline(device, w, r.TokensPerS, r.Depth, backendFamily(r.Backend), refs)
	} else {
		rf = PromptRoofline(device, w, r.TokensPerS, r.Depth)
	}
	// An unknown device is said first; then what is not known of the model.
	if _, class := lookupDevice(device); why != "" && class == deviceKnown {
		rf.CeilingPerS, rf.Pct, rf.Band, rf.Missing = 0, 0, nil, why
	}
	return &rf
}

// TunedBand is the share of the memory-bandwidth roofline that the
// published references reach for token generation at depth 0 on a Strix
// Halo, for one kind of model (dense or mixture-of-experts) on one backend:
// the lowest and highest share among the references whose llama-bench
// fields say what a token reads (docs/facts.md says how it was derived).
func TunedBand(refs []Reference, moe bool, backend string) (Band, bool) {
	b := Band{Low: math.Inf(1), High: math.Inf(-1), MoE: moe, Backend: backend}
	for _, ref := range refs {
		if ref.Kind() != kindGeneration || ref.Depth != 0 || ref.Backend != backend {
			continue
		}
		w, why := WeightsFromResult(ref.asResult())
		if why != "" || w.MoE != moe {
			continue
		}
		d, why := LookupDevice(ref.GPU)
		if why != "" || !d.StrixHalo {
			continue
		}
		pct := 100 * ref.TokensPerS * w.ReadBytes / (d.BandwidthGBs * 1e9)
		b.Low, b.High = math.Min(b.Low, pct), math.Max(b.High, pct)
		b.Runs++
	}
	return b, b.Runs > 0
}

// Available says whether there is a ceiling to compare with.
func (rf Roofline) Available() bool { return rf.Missing == "" && rf.CeilingPerS > 0 }

// Sentence is the roofline in one plain sentence: "70.0 t/s is 55 % of the
// 128.0 t/s this model could reach at 256 GB/s; tuned Strix Halo runs of
// dense models on Vulkan reach about 90 % (2 published runs): below them."
func (rf Roofline) Sentence() string {
	if !rf.Available() {
		return rf.Missing
	}
	if rf.Bound == BoundCompute {
		return fmt.Sprintf("%.1f t/s is %.0f %% of a rough compute ceiling of %.0f t/s", rf.TokensPerS, rf.Pct, rf.CeilingPerS)
	}
	s := fmt.Sprintf("%.1f t/s is %.0f %% of the %.1f t/s this model could reach at %s GB/s", rf.TokensPerS, rf.Pct, rf.CeilingPerS, num(rf.Device.BandwidthGBs))
	if rf.Pct > 105 {
		// Faster than the memory can deliver what was counted: a token reads
		// less than that (a mixture-of-experts model counted as dense).
		return s + ": faster than the memory can deliver the bytes counted, so each token reads less than counted"
	}
	if b := rf.Band; b != nil {
		kind := "dense"
		if b.MoE {
			kind = "mixture-of-experts"
		}
		reach := fmt.Sprintf("%.0f–%.0f %%", b.Low, b.High)
		if b.High-b.Low < 5 {
			reach = fmt.Sprintf("about %.0f %%", (b.Low+b.High)/2)
		}
		runs := "published runs"
		if b.Runs == 1 {
			runs = "published run"
		}
		if rf.Depth > 0 {
			return s + fmt.Sprintf("; at depth 0 tuned Strix Halo runs of %s models on %s reach %s (%d %s), less as the context fills",
				kind, b.Backend, reach, b.Runs, runs)
		}
		s += fmt.Sprintf("; tuned Strix Halo runs of %s models on %s reach %s (%d %s)", kind, b.Backend, reach, b.Runs, runs)
		switch {
		case rf.Pct < b.Low-5:
			s += ": this run is below them"
		case rf.Pct > b.High+5:
			s += ": this run is above them"
		default:
			s += ": this run is in line with them"
		}
	}
	return s
}

// Working is the arithmetic behind Sentence, for a reader to redo by hand.
func (rf Roofline) Working() string {
	if !rf.Available() {
		return ""
	}
	d, w := rf.Device, rf.Weights
	if rf.Bound == BoundCompute {
		return fmt.Sprintf("%s TFLOPS FP16 ÷ (2 × %.2f B active parameters) = %.0f t/s (%s: %s); attention and dequantisation are not counted",
			num(d.FP16TFLOPS), w.ActiveParams/1e9, rf.CeilingPerS, d.Name, d.FP16Source)
	}
	s := fmt.Sprintf("%s GB/s ÷ %s read per token = %.1f t/s; %s read = %s; %s GB/s is the %s's %s",
		num(d.BandwidthGBs), gb(w.ReadBytes), rf.CeilingPerS, gb(w.ReadBytes), w.Method, num(d.BandwidthGBs), d.Name, d.Memory)
	if d.MeasuredGBs > 0 {
		s += fmt.Sprintf(" (a bandwidth test reaches about %s GB/s)", num(d.MeasuredGBs))
	}
	if rf.Depth > 0 {
		s += fmt.Sprintf("; at depth %d the KV cache is read too, which this ceiling leaves out", rf.Depth)
	}
	return s
}

// asResult is a reference as the result it records, with the model fields
// its row gives.
func (r Reference) asResult() Result {
	res := Result{Test: r.Test, ModelFile: r.ModelFile, ModelType: r.ModelType, ModelSize: r.ModelSize,
		ModelParams: r.ModelParams, Backend: r.Backend, GPU: r.GPU, Build: r.Build, Depth: r.Depth, TokensPerS: r.TokensPerS}
	if r.Kind() == kindGeneration {
		res.Kind, res.Gen = kindGeneration, r.Size()
	} else {
		res.Kind, res.Prompt = kindPrompt, r.Size()
	}
	return res
}
