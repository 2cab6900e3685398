package bench

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
)

// Reference is one published figure measured on a Strix Halo box.
type Reference struct {
	Label       string // short, e.g. "kyuz0 vulkan-radv"
	Source      string // URL of the file at a commit
	Date        string
	System      string
	GPU         string
	Kernel      string
	Host        string // host profile (power, IOMMU) as the source states it; "unknown"
	Backend     string // Vulkan or ROCm
	Build       int
	BuildCommit string
	ModelFile   string
	// What llama-bench printed of the model (model_type, model_size,
	// model_n_params): what the roofline needs; empty or 0 when the source
	// does not give it.
	ModelType   string
	ModelSize   int64
	ModelParams int64
	Test        string // pp512, pp2048, tg128
	Depth       int
	TokensPerS  float64
}

// Kind is "prompt" or "generation", from the test name.
func (r Reference) Kind() string {
	if strings.HasPrefix(r.Test, "tg") {
		return kindGeneration
	}
	return kindPrompt
}

// Size is the test's token count (512 of pp512).
func (r Reference) Size() int {
	n, _ := strconv.Atoi(strings.TrimLeft(r.Test, "ptg"))
	return n
}

//go:embed references.tsv
var referencesTSV string

// References returns the built-in reference table.
func References() []Reference {
	refs, err := ParseReferences(referencesTSV)
	if err != nil {
		panic("bench: the built-in references.tsv is broken: " + err.Error()) // a test guards it
	}
	return refs
}

// referenceColumns is the number of columns of the reference table.
const referenceColumns = 17

// ParseReferences reads the tab-separated reference table: comment lines
// (#), one header line, then one figure a line.
func ParseReferences(text string) ([]Reference, error) {
	var refs []Reference
	header := false
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if !header {
			if len(f) != referenceColumns || f[0] != "label" {
				return nil, fmt.Errorf("line %d: want the header line label, source, …, tokens_per_s", i+1)
			}
			header = true
			continue
		}
		if len(f) != referenceColumns {
			return nil, fmt.Errorf("line %d: %d fields, want %d", i+1, len(f), referenceColumns)
		}
		r := Reference{Label: f[0], Source: f[1], Date: f[2], System: f[3], GPU: f[4], Kernel: f[5], Host: f[6],
			Backend: f[7], BuildCommit: f[9], ModelFile: f[10], ModelType: f[11], Test: f[14]}
		var err error
		if r.Build, err = strconv.Atoi(f[8]); err != nil {
			return nil, fmt.Errorf("line %d: build %q", i+1, f[8])
		}
		for _, c := range []struct {
			dst  *int64
			text string
			name string
		}{{&r.ModelSize, f[12], "model_size"}, {&r.ModelParams, f[13], "model_n_params"}} {
			if c.text == "" {
				continue
			}
			if *c.dst, err = strconv.ParseInt(c.text, 10, 64); err != nil || *c.dst <= 0 {
				return nil, fmt.Errorf("line %d: %s %q", i+1, c.name, c.text)
			}
		}
		if r.Depth, err = strconv.Atoi(f[15]); err != nil {
			return nil, fmt.Errorf("line %d: depth %q", i+1, f[15])
		}
		if r.TokensPerS, err = strconv.ParseFloat(f[16], 64); err != nil || r.TokensPerS <= 0 {
			return nil, fmt.Errorf("line %d: tokens_per_s %q", i+1, f[16])
		}
		if !strings.HasPrefix(r.Source, "https://") || r.Size() == 0 || (r.Backend != "Vulkan" && r.Backend != "ROCm") {
			return nil, fmt.Errorf("line %d: want an https source, a test such as pp512 or tg128, backend Vulkan or ROCm", i+1)
		}
		refs = append(refs, r)
	}
	if !header {
		return nil, fmt.Errorf("no header line")
	}
	return refs, nil
}
