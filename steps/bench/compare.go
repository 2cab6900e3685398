package bench

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
)

// Host is what is known of the machine that ran the benchmark: it explains a
// gap to the reference. Empty fields are unknown.
type Host struct {
	Device       string // e.g. "Radeon 8060S Graphics"
	BIOSUMA      string // the BIOS carve-out, e.g. "512 MiB"
	IOMMU        string // "off", "on", "pt", or ""
	PowerProfile string // e.g. "accelerator-performance", "balanced"
	Kernel       string
	Mesa         string
	ROCm         string
}

// Comparison is one result put next to its closest reference.
type Comparison struct {
	Result    Result
	Reference *Reference // nil: no comparable reference
	Match     string     // how close the reference is (or why there is none)
	Ratio     float64    // result / reference; 0 without a reference
	Verdict   string     // one plain sentence
	// Roofline puts the result against what its device could do with its
	// model: generation against the memory bandwidth, prompt processing
	// against the compute peak; nil for other kinds of result.
	Roofline *Roofline
}

// Report is a whole comparison: every result and the overall verdict.
type Report struct {
	Format      string
	Comparisons []Comparison
	Verdict     string
	Model       *Weights // the model file's header figures the run was judged with, if any
}

// withinBand is the share either side of the reference called normal.
const withinBand = 0.10

// reStrixHalo recognises a Strix Halo GPU in llama-bench's gpu_info: the
// marketing names (8060S, 8050S, the 8065S of the Max+ PRO 400 series) and
// RADV's device names.
var reStrixHalo = regexp.MustCompile(`(?i)8060S|8050S|8065S|STRIX[_ ]HALO|GFX1151`)

// Compare puts each result next to the closest reference of the same
// hardware, backend, model and test kind, and writes the verdicts.
func Compare(run Run, refs []Reference, host Host) Report {
	rep := Report{Format: run.Format, Model: run.Model}
	prepared := prepare(refs)
	for _, r := range run.Results {
		c := compareOne(r, prepared, host)
		c.Roofline = resultRoofline(r, host.Device, run.Model, refs)
		rep.Comparisons = append(rep.Comparisons, c)
	}
	rep.Verdict = overall(rep.Comparisons, refs)
	return rep
}

// preparedRef is a reference with its model key, quantisation and base name
// worked out once, not once per result.
type preparedRef struct {
	ref              *Reference
	key, quant, base string
}

func prepare(refs []Reference) []preparedRef {
	out := make([]preparedRef, len(refs))
	for i := range refs {
		k, q := ModelKey(refs[i].ModelFile), Quant(refs[i].ModelFile)
		out[i] = preparedRef{&refs[i], k, q, baseModel(k, q)}
	}
	return out
}

func compareOne(r Result, refs []preparedRef, host Host) Comparison {
	c := Comparison{Result: r}
	ref, match, why := closest(r, refs)
	if ref == nil {
		c.Match = why
		c.Verdict = why
		return c
	}
	c.Reference, c.Match = ref, match
	c.Ratio = r.TokensPerS / ref.TokensPerS
	pct := int(math.Round(c.Ratio * 100))
	switch {
	case math.Abs(c.Ratio-1) <= withinBand:
		c.Verdict = fmt.Sprintf("within 10 %% of %s (%.1f vs %.1f t/s)", ref.Label, r.TokensPerS, ref.TokensPerS)
	case c.Ratio > 1:
		c.Verdict = fmt.Sprintf("at %d %% of %s: faster than the reference (%.1f vs %.1f t/s)", pct, ref.Label, r.TokensPerS, ref.TokensPerS)
	default:
		c.Verdict = fmt.Sprintf("at %d %% of %s (%.1f vs %.1f t/s): likely causes: %s", pct, ref.Label, r.TokensPerS, ref.TokensPerS,
			strings.Join(Causes(r, *ref, host, c.Ratio), ", "))
	}
	return c
}

// closest finds the best reference for a result, with a sentence saying how
// it matches, or nil with the reason none does.
func closest(r Result, refs []preparedRef) (*Reference, string, string) {
	if !reStrixHalo.MatchString(r.GPU) {
		dev := r.GPU
		if dev == "" {
			dev = "an unnamed device"
		}
		return nil, "", fmt.Sprintf("no reference for this hardware: it ran on %s; the references are Radeon 8060S (Ryzen AI Max+ 395) runs", dev)
	}
	backend := backendFamily(r.Backend)
	if backend == "" {
		return nil, "", fmt.Sprintf("no reference for backend %q: the references are single-box Vulkan and ROCm runs", r.Backend)
	}
	if r.Kind != kindPrompt && r.Kind != kindGeneration {
		return nil, "", fmt.Sprintf("no reference for %s tests: the references are pp and tg", r.Test)
	}
	key, quant := ModelKey(r.ModelFile), Quant(r.ModelFile)
	base := baseModel(key, quant)
	type cand struct {
		ref   *Reference
		score float64
		same  bool // same model file, not only model and quant
	}
	var cands []cand
	models := map[string]bool{}
	for _, p := range refs {
		ref := p.ref
		models[p.base] = true
		if ref.Backend != backend || ref.Kind() != r.Kind {
			continue
		}
		same := p.key == key
		if !same && (base == "" || p.base != base || !strings.EqualFold(p.quant, quant)) {
			continue
		}
		size := r.Prompt
		if r.Kind == kindGeneration {
			size = r.Gen
		}
		score := 0.0
		if !same {
			score += 1
		}
		score += math.Abs(math.Log2(float64(max(size, 1)) / float64(max(ref.Size(), 1)))) // pp512 vs pp2048: 2
		score += math.Abs(float64(r.Depth-ref.Depth)) / 8192                              // a 32k depth gap: 4
		if r.Build > 0 && ref.Build > 0 {
			score += math.Abs(float64(r.Build-ref.Build)) / 2000
		}
		cands = append(cands, cand{ref, score, same})
	}
	if len(cands) == 0 {
		if !models[base] {
			return nil, "", fmt.Sprintf("no reference for this model (%s): references exist for %s", orUnnamed(r.ModelFile), strings.Join(sortedKeys(models), ", "))
		}
		return nil, "", fmt.Sprintf("no reference for %s on %s with this model and quantisation", r.Test, backend)
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].score < cands[j].score })
	best := cands[0]
	var parts []string
	if best.same {
		parts = append(parts, "same model file")
	} else {
		parts = append(parts, "same model and quantisation ("+best.ref.ModelFile+")")
	}
	parts = append(parts, "same backend ("+backend+")")
	refTest := best.ref.Test
	if best.ref.Depth > 0 {
		refTest += fmt.Sprintf(" @ d%d", best.ref.Depth)
	}
	if refTest == r.Test {
		parts = append(parts, "same test")
	} else {
		parts = append(parts, "closest test "+refTest)
	}
	if r.Build > 0 && best.ref.Build > 0 {
		parts = append(parts, fmt.Sprintf("build b%d vs b%d", r.Build, best.ref.Build))
	}
	return best.ref, strings.Join(parts, "; "), ""
}

// Causes lists the likely reasons a result is below its reference, the ones
// the facts point at first, then the usual suspects.
func Causes(r Result, ref Reference, host Host, ratio float64) []string {
	var c []string
	refIOMMUOff := strings.Contains(ref.Host, "amd_iommu=off")
	switch {
	case host.IOMMU != "" && host.IOMMU != "off" && refIOMMUOff:
		c = append(c, "IOMMU on (the reference ran with amd_iommu=off, 5–12 % faster)")
	case host.IOMMU == "":
		c = append(c, "IOMMU on")
	}
	switch {
	case host.PowerProfile != "" && !strings.Contains(host.PowerProfile, "performance"):
		c = append(c, "power profile "+host.PowerProfile+" (not performance)")
	case host.PowerProfile == "":
		c = append(c, "power profile")
	}
	if r.Build > 0 && ref.Build > 0 && ref.Build-r.Build > 300 {
		c = append(c, fmt.Sprintf("old build (b%d, the reference b%d)", r.Build, ref.Build))
	} else if r.Build == 0 {
		c = append(c, "old build")
	}
	switch strings.ToLower(r.FlashAttn) {
	case "0", "off", "false":
		c = append(c, "flash attention off (-fa 1)")
	}
	if r.GPULayers > 0 && r.GPULayers < 99 {
		c = append(c, fmt.Sprintf("only %d layers on the GPU (-ngl 999)", r.GPULayers))
	}
	if ratio < 0.5 {
		c = append(c, "another process on the GPU or memory in swap")
	}
	return c
}

// overall is the one-line verdict of a run.
func overall(cs []Comparison, refs []Reference) string {
	if len(cs) == 0 {
		return "no results"
	}
	var matched []Comparison
	for _, c := range cs {
		if c.Reference != nil {
			matched = append(matched, c)
		}
	}
	if len(matched) == 0 {
		// No published figure for this model: the roofline still says
		// whether the speed is normal for it.
		for _, c := range cs {
			if rf := c.Roofline; rf != nil && rf.Bound == BoundMemory && rf.Available() {
				return fmt.Sprintf("%s: no published figure for this model, but by the memory-bandwidth roofline %s", c.Result.Test, rf.Sentence())
			}
		}
		return cs[0].Verdict
	}
	worst := matched[0]
	for _, c := range matched[1:] {
		if c.Ratio < worst.Ratio {
			worst = c
		}
	}
	extra := ""
	if n := len(cs) - len(matched); n > 0 {
		extra = fmt.Sprintf(" (%d of %d results have no reference)", n, len(cs))
	}
	if worst.Ratio >= 1-withinBand {
		best := matched[0]
		for _, c := range matched[1:] {
			if math.Abs(c.Ratio-1) < math.Abs(best.Ratio-1) {
				best = c
			}
		}
		if len(matched) == 1 {
			return worst.Result.Test + ": " + worst.Verdict + extra
		}
		return fmt.Sprintf("normal: every compared result is within 10 %% of its reference or faster (closest: %s, %s)%s",
			best.Result.Test, best.Reference.Label, extra)
	}
	return worst.Result.Test + ": " + worst.Verdict + extra
}

func backendFamily(b string) string {
	parts := strings.Split(b, ",")
	if len(parts) != 1 {
		return ""
	}
	switch strings.TrimSpace(strings.ToLower(parts[0])) {
	case "vulkan":
		return "Vulkan"
	case "rocm", "hip":
		return "ROCm"
	}
	return ""
}

// baseModel is a model key without its quantisation ("qwen3.6-35b-a3b").
func baseModel(key, quant string) string {
	if quant == "" {
		return key
	}
	i := strings.LastIndex(key, strings.ToLower(quant))
	if i <= 0 {
		return key
	}
	return strings.TrimRight(key[:i], "-_.")
}

func orUnnamed(s string) string {
	if s == "" {
		return "unnamed"
	}
	return s
}

func sortedKeys(m map[string]bool) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
