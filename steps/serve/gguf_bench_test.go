package serve

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	gp "github.com/gpustack/gguf-parser-go"
)

// benchModels are the GGUF files BenchmarkServeDryRunFit sizes: the tiny
// model, and a large real-ish header: Qwen3-30B-A3B's shape (48 layers, 128
// experts, a 151936-token vocabulary and 151387 merges, Q8_0; its data a
// hole).
func benchModels(b *testing.B) map[string]string {
	b.Helper()
	dir := b.TempDir()
	qwen := shapes["qwen3moe-4l-q8"]
	qwen.layers = 48
	full := qwen.writer()
	merges := make([]string, 151387)
	for i := range merges {
		merges[i] = "t" + strings.Repeat("x", i%9) + " y"
	}
	full.kvs = append(full.kvs, kv{"tokenizer.ggml.merges", gArray, merges})
	out := map[string]string{}
	for name, w := range map[string]*ggufWriter{"tiny": shapes["tiny"].writer(), "qwen3moe-30b-a3b-q8": full} {
		p := filepath.Join(dir, name+".gguf")
		w.write(b, p)
		out[name] = p
	}
	return out
}

// BenchmarkServeDryRunFit: what serve --dry-run spends on a model file: the
// launch's plan, the GGUF header read and the fit against the ceiling; its
// baseline in the same run is one bounded walk of the same header
// (checkHeader, reading every byte of it once): x-header-walk is the ratio.
func BenchmarkServeDryRunFit(b *testing.B) {
	for name, model := range benchModels(b) {
		b.Run(name, func(b *testing.B) {
			req := Request{Track: "llamacpp-distro", Model: model, Pins: pinsOf, Home: filepath.Dir(model)}
			walk := time.Now()
			for range b.N {
				f, _, err := openChecked(model)
				if err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
			base := time.Since(walk)
			b.ResetTimer()
			for range b.N {
				l, err := Plan(req)
				if err != nil {
					b.Fatal(err)
				}
				l.Estimate(req, Ceiling{Bytes: 120 << 30, Unified: true, Source: "GTT"})
				if l.Fit == nil {
					b.Fatalf("no fit: %s", l.FitNote)
				}
			}
			b.ReportMetric(float64(b.Elapsed())/float64(base), "x-header-walk")
		})
	}
}

// BenchmarkReadGGUF: what the bounded walk before the library costs: haloforge's
// reading of a model (checkHeader, then gguf-parser-go on the checked file,
// then its fields) against the library's own parse of the same file with the
// same options, timed in the same run: x-library-parse is the ratio.
func BenchmarkReadGGUF(b *testing.B) {
	for name, model := range benchModels(b) {
		b.Run(name, func(b *testing.B) {
			lib := time.Now()
			for range b.N {
				if _, err := gp.ParseGGUFFile(model, gp.SkipLargeMetadata(), gp.UseMMap()); err != nil {
					b.Fatal(err)
				}
			}
			base := time.Since(lib)
			b.ResetTimer()
			for range b.N {
				if _, err := ReadGGUFModel(model); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed())/float64(base), "x-library-parse")
		})
	}
}
