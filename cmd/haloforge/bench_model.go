package main

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps/bench"
	"github.com/haloforge/haloforge/steps/serve"
)

// modelWeights is what a GGUF model file's header says one generated token
// reads (the expert tensors, how many experts a token uses): the one place
// bench reads a model file, through steps/serve's GGUF reader, so another
// GGUF parser changes this function alone.
func modelWeights(path string) (*bench.Weights, error) {
	g, err := serve.ReadGGUFModel(path)
	if err != nil {
		return nil, err
	}
	ts := make([]bench.Tensor, len(g.Tensors))
	for i, t := range g.Tensors {
		n := 1.0
		for _, d := range t.Dims {
			n *= float64(d)
		}
		ts[i] = bench.Tensor{Name: t.Name, Elements: uint64(math.Min(n, math.MaxUint64/2)), Bytes: t.Bytes}
	}
	w, err := bench.WeightsFromTensors(text.Printable(filepath.Base(path), 256), ts, g.ExpertCount, g.ExpertUsed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &w, nil
}
