package serve

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps/bench"
)

// WeightsFromGGUF is what a GGUF header says one generated token reads (its
// tensors, the expert tensors among them, how many experts a token uses):
// the one place the roofline reads a model file, for bench --model, bench
// --track and serve alike, so another GGUF parser changes this function
// alone. file names the model in what is printed.
func WeightsFromGGUF(g *GGUF, file string) (*bench.Weights, error) {
	ts := make([]bench.Tensor, len(g.Tensors))
	for i, t := range g.Tensors {
		n := 1.0
		for _, d := range t.Dims {
			n *= float64(d)
		}
		ts[i] = bench.Tensor{Name: t.Name, Elements: uint64(math.Min(n, math.MaxUint64/2)), Bytes: t.Bytes}
	}
	w, err := bench.WeightsFromTensors(text.Printable(file, 256), ts, g.ExpertCount, g.ExpertUsed)
	if err != nil {
		return nil, err
	}
	return &w, nil
}

// ModelWeights reads a GGUF model (all its parts) and says what one
// generated token reads.
func ModelWeights(path string) (*bench.Weights, error) {
	g, err := ReadGGUFModel(path)
	if err != nil {
		return nil, err
	}
	w, err := WeightsFromGGUF(g, filepath.Base(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return w, nil
}

// llvmpipeDevice is the device a NoGPU launch runs on (Mesa's CPU Vulkan
// device): named so that the roofline says why it has no bandwidth.
const llvmpipeDevice = "llvmpipe (Mesa's CPU Vulkan device)"

// roofline is what a served model's generation speed is measured against:
// the device it runs on and what a token of the model reads.
type roofline struct {
	device  string
	weights *bench.Weights
}

// add puts the smoke request's decode speed (the engine's own
// figure when it gives one) against the memory-bandwidth roofline, through
// the same function bench's results go through.
func (r roofline) add(s *SmokeResult) {
	if s.Err != "" || r.weights == nil {
		return
	}
	tps := s.EngineTokensPerSecond
	if tps <= 0 {
		tps = s.TokensPerSecond
	}
	if tps <= 0 {
		return
	}
	rf := bench.GenerationRoofline(r.device, *r.weights, tps, 0, "", bench.References())
	s.Roofline = rf.Sentence()
	if rf.Available() {
		ceiling, pct := math.Round(rf.CeilingPerS*100)/100, math.Round(rf.Pct*10)/10
		s.RooflinePerS, s.RooflinePct = &ceiling, &pct
	}
}
