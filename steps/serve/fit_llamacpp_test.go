package serve

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	gp "github.com/gpustack/gguf-parser-go"
)

// shape is a model's shape as testdata/gguf_shapes.py writes it (python3-gguf,
// zero weights): a llama or qwen3moe architecture, every matrix of one type,
// norms F32, a byte-level vocabulary of n tokens.
type shape struct {
	arch                             string
	layers, embd, heads, kvHeads, hd uint64
	ff, vocab, ctx                   uint64
	typ                              gp.GGMLType
	experts, used, ffExp             uint64
}

// shapes are the models of testdata/buffers: the tiny model of
// scripts/llamacpp-distro/tiny_model.py, it with a mixture of experts,
// Llama-3.2-1B's shape, and Qwen3-30B-A3B's widths with 4 of its 48 layers.
var shapes = map[string]shape{
	"tiny":           {arch: "llama", layers: 2, embd: 128, heads: 4, kvHeads: 2, ff: 256, vocab: 270, ctx: 512, typ: gp.GGMLTypeF16},
	"tiny-moe":       {arch: "llama", layers: 2, embd: 128, heads: 4, kvHeads: 2, ff: 256, vocab: 270, ctx: 512, typ: gp.GGMLTypeF16, experts: 4, used: 2},
	"llama1b-q8":     {arch: "llama", layers: 16, embd: 2048, heads: 32, kvHeads: 8, ff: 8192, vocab: 128256, ctx: 131072, typ: gp.GGMLTypeQ8_0},
	"qwen3moe-4l-q8": {arch: "qwen3moe", layers: 4, embd: 2048, heads: 32, kvHeads: 4, hd: 128, ff: 6144, vocab: 151936, ctx: 262144, typ: gp.GGMLTypeQ8_0, experts: 128, used: 8, ffExp: 768},
}

// writer is the shape as a GGUF file, the same keys and tensors
// gguf_shapes.py writes.
func (s shape) writer() *ggufWriter {
	hd := s.hd
	if hd == 0 {
		hd = s.embd / s.heads
	}
	a := s.arch + "."
	w := &ggufWriter{order: binary.LittleEndian, version: 3}
	vocab := make([]string, s.vocab)
	for i := range vocab {
		vocab[i] = "t" + strconv.Itoa(i)
	}
	w.kvs = []kv{
		{"general.architecture", gString, s.arch},
		{a + "context_length", gUint32, uint32(s.ctx)}, {a + "embedding_length", gUint32, uint32(s.embd)},
		{a + "block_count", gUint32, uint32(s.layers)}, {a + "feed_forward_length", gUint32, uint32(s.ff)},
		{a + "attention.head_count", gUint32, uint32(s.heads)}, {a + "attention.head_count_kv", gUint32, uint32(s.kvHeads)},
		{a + "rope.dimension_count", gUint32, uint32(hd)}, {a + "attention.layer_norm_rms_epsilon", gFloat32, float32(1e-6)},
		{"tokenizer.ggml.model", gString, "llama"}, {"tokenizer.ggml.tokens", gArray, vocab},
		{"tokenizer.ggml.scores", gArray, make([]float32, s.vocab)}, {"tokenizer.ggml.token_type", gArray, make([]int32, s.vocab)},
	}
	if s.arch == "qwen3moe" {
		w.kvs = append(w.kvs, kv{a + "attention.key_length", gUint32, uint32(hd)}, kv{a + "attention.value_length", gUint32, uint32(hd)},
			kv{a + "expert_feed_forward_length", gUint32, uint32(s.ffExp)})
	}
	if s.experts > 0 {
		w.kvs = append(w.kvs, kv{a + "expert_count", gUint32, uint32(s.experts)}, kv{a + "expert_used_count", gUint32, uint32(s.used)})
	}
	m := func(name string, dims ...uint64) tinfo { return tinfo{name, s.typ, dims} }
	norm := func(name string, n uint64) tinfo { return tinfo{name, gp.GGMLTypeF32, []uint64{n}} }
	w.tensors = []tinfo{m("token_embd.weight", s.embd, s.vocab)}
	for i := range s.layers {
		p := fmt.Sprintf("blk.%d.", i)
		w.tensors = append(w.tensors, norm(p+"attn_norm.weight", s.embd), m(p+"attn_q.weight", s.embd, s.heads*hd),
			m(p+"attn_k.weight", s.embd, s.kvHeads*hd), m(p+"attn_v.weight", s.embd, s.kvHeads*hd),
			m(p+"attn_output.weight", s.heads*hd, s.embd), norm(p+"ffn_norm.weight", s.embd))
		if s.arch == "qwen3moe" {
			w.tensors = append(w.tensors, norm(p+"attn_q_norm.weight", hd), norm(p+"attn_k_norm.weight", hd))
		}
		if s.experts > 0 {
			ff := max(s.ffExp, 0)
			if ff == 0 {
				ff = s.ff
			}
			w.tensors = append(w.tensors, tinfo{p + "ffn_gate_inp.weight", gp.GGMLTypeF32, []uint64{s.embd, s.experts}},
				m(p+"ffn_gate_exps.weight", s.embd, ff, s.experts), m(p+"ffn_up_exps.weight", s.embd, ff, s.experts),
				m(p+"ffn_down_exps.weight", ff, s.embd, s.experts))
		} else {
			w.tensors = append(w.tensors, m(p+"ffn_gate.weight", s.embd, s.ff), m(p+"ffn_up.weight", s.embd, s.ff),
				m(p+"ffn_down.weight", s.ff, s.embd))
		}
	}
	w.tensors = append(w.tensors, norm("output_norm.weight", s.embd), m("output.weight", s.embd, s.vocab))
	return w
}

// buffers is what llama-server printed of its buffers in one run (MiB).
type buffers struct {
	ctx                        uint64
	model, kv, compute, output float64
}

func (b buffers) total() float64 { return b.model + b.kv + b.compute + b.output }

var bufferLine = regexp.MustCompile(`(model|KV|compute|output) buffer size = +([0-9.]+) MiB|n_ctx += (\d+)`)

// readBuffers adds up a testdata/buffers log: every model, KV, compute and
// output buffer, on the GPU and the host.
func readBuffers(t *testing.T, path string) buffers {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b buffers
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := bufferLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if m[3] != "" {
			b.ctx, _ = strconv.ParseUint(m[3], 10, 64)
			continue
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		switch m[1] {
		case "model":
			b.model += v
		case "KV":
			b.kv += v
		case "compute":
			b.compute += v
		case "output":
			b.output += v
		}
	}
	if b.ctx == 0 || b.model == 0 {
		t.Fatalf("%s: no n_ctx or model buffer", path)
	}
	return b
}

// TestEstimateAgainstLlamaCpp: the fit of each shape is within 8% (and 2
// MiB) of the buffers Debian sid's llama-server (build 11669, Vulkan on
// lavapipe, -ngl 999 -fa on) printed for the same file at the same context,
// its weights and KV cache to the printed precision; no --ctx is the
// trained context, as llama-server's default is.
func TestEstimateAgainstLlamaCpp(t *testing.T) {
	logs, err := filepath.Glob("testdata/buffers/*.log")
	if err != nil || len(logs) < 7 {
		t.Fatalf("testdata/buffers: %v, %d logs", err, len(logs))
	}
	dir := t.TempDir()
	read := map[string]*GGUF{}
	for _, log := range logs {
		name := strings.TrimSuffix(filepath.Base(log), ".log")
		t.Run(name, func(t *testing.T) {
			i := strings.LastIndex(name, "-")
			model, run := name[:i], name[i+1:]
			s, ok := shapes[model]
			if !ok {
				t.Fatalf("no shape %s", model)
			}
			g := read[model]
			if g == nil {
				if g, err = ReadGGUFFile(s.writer().write(t, filepath.Join(dir, model+".gguf"))); err != nil {
					t.Fatal(err)
				}
				read[model] = g
			}
			want := readBuffers(t, log)
			var ctx uint64 // "default": no --ctx
			if run != "default" {
				ctx, _ = strconv.ParseUint(strings.TrimPrefix(run, "c"), 10, 64)
			}
			f := Estimate(FitRequest{Engine: EngineLlamaCpp, Model: ShapeFromGGUF(g), Context: ctx, LimitBytes: 1 << 40, Unified: true})
			const mib = 1 << 20
			got := float64(f.NeedBytes) / mib
			if f.Context != want.ctx || math.Abs(float64(f.WeightsBytes)/mib-want.model) > 0.02 || math.Abs(float64(f.KVBytes)/mib-want.kv) > 0.01 {
				t.Errorf("ctx %d weights %.2f KV %.2f MiB, llama.cpp ctx %d model %.2f KV %.2f", f.Context, float64(f.WeightsBytes)/mib,
					float64(f.KVBytes)/mib, want.ctx, want.model, want.kv)
			}
			if d := math.Abs(got - want.total()); d > 0.08*want.total()+2 {
				t.Errorf("need %.2f MiB, llama.cpp's buffers %.2f MiB (compute %.2f, output %.2f): %+.1f%%", got, want.total(),
					want.compute, want.output, 100*(got-want.total())/want.total())
			}
			t.Logf("%s: estimate %.2f MiB (rest %.2f), llama.cpp %.2f MiB (compute %.2f + output %.2f): %+.1f%%", name, got,
				float64(f.OverheadBytes)/mib, want.total(), want.compute, want.output, 100*(got-want.total())/want.total())
		})
	}
}
