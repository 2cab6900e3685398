package serve

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	gp "github.com/gpustack/gguf-parser-go"
)

// python3-gguf is not a bookworm package, so the tests write GGUF files here,
// following the format (ggml docs/gguf.md): magic, version, tensor and
// metadata counts, typed key/values, tensor infos, padding to the alignment,
// then the tensor data, each tensor at an aligned offset.

type kv struct {
	key string
	typ uint32
	val any // uint32/uint64/int32/float32/string/bool, []string, []int32, []float32
}

type tinfo struct {
	name string
	typ  gp.GGMLType
	dims []uint64
}

type ggufWriter struct {
	order   binary.ByteOrder
	version uint32
	kvs     []kv
	tensors []tinfo
	align   uint64
}

// bytes is the whole file, the tensor data zeros.
func (w *ggufWriter) bytes(t testing.TB) []byte {
	t.Helper()
	head, data := w.encode(t)
	return append(head, make([]byte, data)...)
}

// write writes the file at path with its tensor data a hole (the file is
// truncated to its size), so a model of real size costs no disk.
func (w *ggufWriter) write(t testing.TB, path string) string {
	t.Helper()
	head, data := w.encode(t)
	if err := os.WriteFile(path, head, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(len(head))+int64(data)); err != nil {
		t.Fatal(err)
	}
	return path
}

// encode is the header, padded to the alignment, and the size of the tensor
// data that follows it.
func (w *ggufWriter) encode(t testing.TB) ([]byte, uint64) {
	t.Helper()
	var b bytes.Buffer
	put := func(v any) { _ = binary.Write(&b, w.order, v) }
	str := func(s string) { put(uint64(len(s))); b.WriteString(s) }
	b.WriteString("GGUF")
	put(w.version)
	put(uint64(len(w.tensors)))
	put(uint64(len(w.kvs)))
	var value func(typ uint32, v any)
	value = func(typ uint32, v any) {
		switch typ {
		case gString:
			str(v.(string))
		case gBool:
			if v.(bool) {
				b.WriteByte(1)
			} else {
				b.WriteByte(0)
			}
		case gArray:
			switch xs := v.(type) {
			case []string:
				put(uint32(gString))
				put(uint64(len(xs)))
				for _, s := range xs {
					str(s)
				}
			case []int32:
				put(uint32(gInt32))
				put(uint64(len(xs)))
				for _, x := range xs {
					put(x)
				}
			case []float32:
				put(uint32(gFloat32))
				put(uint64(len(xs)))
				for _, x := range xs {
					put(x)
				}
			default:
				t.Fatalf("array of %T", v)
			}
		default:
			put(v)
		}
	}
	for _, e := range w.kvs {
		str(e.key)
		put(e.typ)
		value(e.typ, e.val)
	}
	align := w.align
	if align == 0 {
		align = 32
	}
	var off uint64
	sizes := make([]uint64, len(w.tensors))
	for i, ti := range w.tensors {
		str(ti.name)
		put(uint32(len(ti.dims)))
		for _, d := range ti.dims {
			put(d)
		}
		put(uint32(ti.typ))
		put(off)
		size := uint64(64) // an unknown type gets 64 bytes of data
		if info, ok := ti.typ.Trait(); ok && info.BlockSize > 0 {
			n := uint64(1)
			for _, d := range ti.dims {
				n *= d
			}
			size = n / info.BlockSize * info.TypeSize
		}
		sizes[i] = size
		off = alignUp(off+size, align)
	}
	for uint64(b.Len())%align != 0 {
		b.WriteByte(0)
	}
	var data uint64
	for _, n := range sizes {
		data = alignUp(data+n, align)
	}
	return b.Bytes(), data
}

func alignUp(n, a uint64) uint64 { return (n + a - 1) / a * a }

// tinyLlama has the shape of scripts/llamacpp-distro/tiny_model.py's model:
// 2 layers, n_embd 128, 4 heads, 2 KV heads, n_ff 256, vocab 270, context 512.
func tinyLlama(order binary.ByteOrder) *ggufWriter {
	w := &ggufWriter{order: order, version: 3}
	vocab := make([]string, 270)
	for i := range vocab {
		vocab[i] = "t" + strings.Repeat("x", i%7)
	}
	w.kvs = []kv{
		{"general.architecture", gString, "llama"},
		{"general.name", gString, "haloforge tiny random llama"},
		{"llama.context_length", gUint32, uint32(512)},
		{"llama.embedding_length", gUint32, uint32(128)},
		{"llama.block_count", gUint32, uint32(2)},
		{"llama.feed_forward_length", gUint32, uint32(256)},
		{"llama.attention.head_count", gUint32, uint32(4)},
		{"llama.attention.head_count_kv", gUint32, uint32(2)},
		{"llama.attention.layer_norm_rms_epsilon", gFloat32, float32(1e-5)},
		{"general.file_type", gUint32, uint32(1)},
		{"tokenizer.ggml.model", gString, "llama"},
		{"tokenizer.ggml.tokens", gArray, vocab},
		{"tokenizer.ggml.scores", gArray, make([]float32, 270)},
		{"tokenizer.ggml.token_type", gArray, make([]int32, 270)},
		{"tokenizer.chat_template", gString, strings.Repeat("{{ x }}", 1000)}, // > 4 KiB: skipped
		{"general.use_thing", gBool, true},
	}
	mat := func(name string, rows, cols uint64) tinfo { return tinfo{name, 1, []uint64{cols, rows}} }
	norm := func(name string) tinfo { return tinfo{name, 0, []uint64{128}} }
	w.tensors = append(w.tensors, mat("token_embd.weight", 270, 128))
	for i := range 2 {
		p := "blk." + string(rune('0'+i)) + "."
		w.tensors = append(w.tensors, norm(p+"attn_norm.weight"), mat(p+"attn_q.weight", 128, 128),
			mat(p+"attn_k.weight", 64, 128), mat(p+"attn_v.weight", 64, 128), mat(p+"attn_output.weight", 128, 128),
			norm(p+"ffn_norm.weight"), mat(p+"ffn_gate.weight", 256, 128), mat(p+"ffn_up.weight", 256, 128),
			mat(p+"ffn_down.weight", 128, 256))
	}
	w.tensors = append(w.tensors, norm("output_norm.weight"), mat("output.weight", 270, 128))
	return w
}

// tinyMoE is tinyLlama with a mixture of 4 experts, 2 used per token, in
// place of each layer's feed-forward matrices (llama.cpp's llama
// architecture loads it: ffn_gate_inp and the 3-D ffn_*_exps).
func tinyMoE() *ggufWriter {
	w := tinyLlama(binary.LittleEndian)
	w.kvs = append(w.kvs, kv{"llama.expert_count", gUint32, uint32(4)}, kv{"llama.expert_used_count", gUint32, uint32(2)})
	var ts []tinfo
	for _, ti := range w.tensors {
		switch {
		case strings.HasSuffix(ti.name, "ffn_gate.weight"):
			p := strings.TrimSuffix(ti.name, "ffn_gate.weight")
			ts = append(ts, tinfo{p + "ffn_gate_inp.weight", 0, []uint64{128, 4}},
				tinfo{p + "ffn_gate_exps.weight", 1, []uint64{128, 256, 4}}, tinfo{p + "ffn_up_exps.weight", 1, []uint64{128, 256, 4}},
				tinfo{p + "ffn_down_exps.weight", 1, []uint64{256, 128, 4}})
		case strings.HasSuffix(ti.name, "ffn_up.weight"), strings.HasSuffix(ti.name, "ffn_down.weight"):
		default:
			ts = append(ts, ti)
		}
	}
	w.tensors = ts
	return w
}

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadGGUF(t *testing.T) {
	dir := t.TempDir()
	quant := &ggufWriter{order: binary.LittleEndian, version: 2, align: 64, kvs: []kv{
		{"general.architecture", gString, "qwen3moe"},
		{"general.alignment", gUint32, uint32(64)},
		{"qwen3moe.context_length", gUint64, uint64(262144)},
		{"qwen3moe.block_count", gUint32, uint32(48)},
		{"qwen3moe.embedding_length", gUint32, uint32(2048)},
		{"qwen3moe.attention.head_count", gUint32, uint32(32)},
		{"qwen3moe.attention.head_count_kv", gArray, []int32{4, 4, 2, 4}}, // per layer: the largest counts
		{"qwen3moe.attention.key_length", gUint32, uint32(128)},
		{"qwen3moe.attention.value_length", gUint32, uint32(128)},
		{"qwen3moe.expert_count", gUint32, uint32(128)},
		{"qwen3moe.expert_used_count", gUint32, uint32(8)},
	}, tensors: []tinfo{
		{"a", 12, []uint64{4096, 32}}, // Q4_K: 131072 elements / 256 × 144 = 73728
		{"b", 14, []uint64{256, 10}},  // Q6_K: 2560 / 256 × 210 = 2100
		{"c", 8, []uint64{64, 3}},     // Q8_0: 192 / 32 × 34 = 204
		{"d", 23, []uint64{512, 2}},   // IQ4_XS: 1024 / 256 × 136 = 544
		{"e", 39, []uint64{64, 2}},    // MXFP4: 128 / 32 × 17 = 68
		{"f", 30, []uint64{7}},        // BF16: 7 × 2 = 14
	}}
	tests := []struct {
		name          string
		w             *ggufWriter
		weights       uint64
		bytes         map[string]uint64 // by tensor name
		layers        uint64
		kvHeads       uint64
		headK         uint64
		ctx           uint64
		version       uint32
		experts, used uint64
		params        uint64
	}{
		// 2 × 270 × 128 × 2 (embd, output) + 2 layers × 294912 (F16 matrices) = 728064 F16;
		// 128 × 4 × 5 norms = 2560 F32; 730624 in all, the model_size llama-bench printed
		// for the same shape written by python3-gguf (testdata/llama-bench-lavapipe.json).
		{name: "tiny llama", w: tinyLlama(binary.LittleEndian), weights: 730624,
			bytes:  map[string]uint64{"token_embd.weight": 69120, "blk.0.attn_k.weight": 16384, "output_norm.weight": 512},
			layers: 2, kvHeads: 2, headK: 32, ctx: 512, version: 3, params: 364032 + 640},
		// 73728 + 2100 + 204 + 544 + 68 + 14 = 76658
		{name: "quantised types, v2, alignment 64, MoE", w: quant, weights: 76658,
			bytes:  map[string]uint64{"a": 73728, "b": 2100, "c": 204, "d": 544, "e": 68, "f": 14},
			layers: 48, kvHeads: 4, headK: 128, ctx: 262144, version: 2, experts: 128, used: 8,
			params: 131072 + 2560 + 192 + 1024 + 128 + 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "_")+".gguf", tc.w.bytes(t))
			g, err := ReadGGUFFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if g.Version != tc.version || g.WeightsBytes() != tc.weights || g.BlockCount != tc.layers ||
				g.KVHeads() != tc.kvHeads || g.ContextLength != tc.ctx || g.ExpertCount != tc.experts || g.ExpertUsed != tc.used ||
				g.Parameters != tc.params || g.Parts != 1 {
				t.Errorf("got version %d weights %d layers %d kv heads %d ctx %d experts %d/%d params %d parts %d", g.Version, g.WeightsBytes(),
					g.BlockCount, g.KVHeads(), g.ContextLength, g.ExpertUsed, g.ExpertCount, g.Parameters, g.Parts)
			}
			if k := ShapeFromGGUF(g).KeyDim; k != tc.headK {
				t.Errorf("head dim %d, want %d", k, tc.headK)
			}
			for _, tn := range g.Tensors {
				if want, ok := tc.bytes[tn.Name]; ok && tn.Bytes != want {
					t.Errorf("%s: %d bytes, want %d", tn.Name, tn.Bytes, want)
				}
			}
			if g.DataOffset%64 != 0 && g.DataOffset%32 != 0 || g.DataOffset >= uint64(g.FileSize) ||
				g.DataBytes != uint64(g.FileSize)-g.DataOffset {
				t.Errorf("data offset %d, data %d, size %d", g.DataOffset, g.DataBytes, g.FileSize)
			}
		})
	}
}

// hostile builds headers that claim what a file cannot hold or llama.cpp
// refuses, for the error and bounds tests.
func hostile(t testing.TB) map[string]struct {
	in   []byte
	want string
} {
	good := tinyLlama(binary.LittleEndian).bytes(t)
	header, _ := tinyLlama(binary.LittleEndian).encode(t)
	head := func(nTensors, nKV uint64, rest ...[]byte) []byte {
		b := append([]byte("GGUF\x03\x00\x00\x00"), le64(nTensors)...)
		b = append(b, le64(nKV)...)
		for _, r := range rest {
			b = append(b, r...)
		}
		return b
	}
	str := func(s string) []byte { return append(le64(uint64(len(s))), s...) }
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	kvU32 := func(key string, v uint32) []byte { return append(append(str(key), u32(gUint32)...), u32(v)...) }
	one := func(tensors []tinfo, kvs ...kv) []byte {
		return (&ggufWriter{order: binary.LittleEndian, version: 3, kvs: kvs, tensors: tensors}).bytes(t)
	}
	big := binary.BigEndian
	return map[string]struct {
		in   []byte
		want string
	}{
		"empty":                         {nil, "not a GGUF file"},
		"other magic":                   {[]byte("GGML\x03\x00\x00\x00"), "not a GGUF file"},
		"version 1":                     {[]byte("GGUF\x01\x00\x00\x00"), "version 1"},
		"version 9":                     {[]byte("GGUF\x09\x00\x00\x00"), "unknown GGUF version 9"},
		"big-endian":                    {tinyLlama(big).bytes(t), "big-endian GGUF file"},
		"truncated counts":              {[]byte("GGUF\x03\x00\x00\x00\x01"), "tensor count: truncated"},
		"truncated in the metadata":     {good[:200], "truncated at byte"},
		"truncated in the tensor infos": {good[:len(header)-40], "truncated at byte"},
		"truncated before its data":     {good[:len(header)-1], "the header ends at byte"},
		"truncated in the tensor data":  {good[:len(good)-100], "the tensors need"},
		"a trillion tensors":            {head(1<<40, 0), "more than the 65536"},
		"a million metadata entries":    {head(0, 1<<20), "more than the 65536 a header"},
		"a petabyte string":             {head(0, 1, str("k"), u32(gString), le64(1<<50)), "more than 16 MiB"},
		"a petabyte key":                {head(0, 1, le64(1<<50)), "a name of 1125899906842624 bytes"},
		"an array of 2^60":              {head(0, 1, str("k"), u32(gArray), u32(gUint64), le64(1<<60)), "larger than the header may be"},
		"nested too deep": {head(0, 1, str("k"), u32(gArray), u32(gArray), le64(1), u32(gArray), le64(1), u32(gArray), le64(1),
			u32(gArray), le64(1), u32(gUint8), le64(0)), "nested too deep"},
		"unknown value type":         {head(0, 1, str("k"), u32(13)), "unknown value type 13"},
		"a trillion layers":          {head(0, 1, kvU32("llama.block_count", 1<<31)), "more than the 4096 layers"},
		"a per-layer array too long": {head(0, 1, str("llama.attention.head_count_kv"), u32(gArray), u32(gUint32), le64(1<<20)), "per-layer array"},
		"per-layer strings":          {head(0, 1, str("llama.feed_forward_length"), u32(gArray), u32(gString), le64(1)), "per-layer array"},
		"alignment 0":                {head(0, 1, kvU32("general.alignment", 0)), "general.alignment must be"},
		"alignment 48":               {head(0, 1, kvU32("general.alignment", 48)), "general.alignment must be"},
		"alignment as a string":      {one(nil, kv{"general.alignment", gString, "32"}), "general.alignment must be"},
		"a huge split tensor count":  {one(nil, kv{"split.tensors.count", gUint64, uint64(1) << 62}), "split.tensors.count"},
		"block size does not divide": {one([]tinfo{{"q", 8, []uint64{33}}}), "not a multiple of Q8_0's block of 32"},
		"five dimensions":            {one([]tinfo{{"q", 0, []uint64{1, 1, 1, 1, 1}}}), "has 5 dimensions"},
		"an unknown type":            {one([]tinfo{{"y", 99, []uint64{32}}}), "ggml type 99, which llama.cpp does not load"},
		"a removed type":             {one([]tinfo{{"y", 31, []uint64{32}}}), "ggml type 31"},
		"elements overflow":          {one([]tinfo{{"y", 0, []uint64{1 << 32, 1 << 32, 2}}}), "element count overflows"},
		"bytes overflow":             {one([]tinfo{{"y", 0, []uint64{1 << 32, 1 << 31}}}), "byte size overflows"},
		"a NUL in a name":            {one([]tinfo{{"a\x00b", 0, []uint64{1}}}), "NUL byte"},
	}
}

func TestReadGGUFErrors(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range hostile(t) {
		t.Run(name, func(t *testing.T) {
			_, err := ReadGGUFFile(writeFile(t, dir, strings.ReplaceAll(name, " ", "_")+".gguf", tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := ReadGGUFFile(writeFile(t, dir, "empty.gguf", nil)); !errors.Is(err, ErrNotGGUF) {
		t.Errorf("empty input: %v, want ErrNotGGUF", err)
	}
}

// TestReadGGUFBounds: a hostile header in a file made huge by a hole (what
// the library would size its slices from) is refused in bounded memory and
// time, and a FIFO named as the model is refused, not waited on.
func TestReadGGUFBounds(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range hostile(t) {
		t.Run(name, func(t *testing.T) {
			p := writeFile(t, dir, strings.ReplaceAll(name, " ", "_")+".gguf", tc.in)
			if err := os.Truncate(p, 1<<40); err != nil { // a terabyte, all of it a hole
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := ReadGGUFFile(p)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if err == nil && !strings.HasPrefix(name, "truncated") {
				t.Fatalf("accepted")
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("allocated %d MiB", alloc>>20)
			}
			if took > 10*time.Second {
				t.Errorf("took %s", took)
			}
		})
	}
	t.Run("FIFO", func(t *testing.T) {
		p := filepath.Join(dir, "fifo.gguf")
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := ReadGGUFModel(p); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "FIFO") {
				t.Fatalf("err %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("waited on the FIFO")
		}
	})
}

// terminalUnsafe reports what a terminal would act on or reorder by: C0
// and C1 controls (a raw 0x9b byte among them), DEL, and the bidi marks,
// embeddings, overrides and isolates.
func terminalUnsafe(s string) bool {
	return !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool {
		return r < 0x20 || (r >= 0x7f && r < 0xa0) || r == 0x061c || r == 0x200e || r == 0x200f ||
			(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
	}) >= 0
}

// TestReadGGUFHostileStrings: a model's name, its architecture, a key or a
// tensor name holding escapes, C1 controls or bidi overrides reaches neither
// what serve shows of the model nor an error.
func TestReadGGUFHostileStrings(t *testing.T) {
	const evil = "\u202eevil\x1b]0;title\x07\x1b[31m\u0085\u2066x\x9b2J\r\n"
	dir := t.TempDir()
	named := tinyLlama(binary.LittleEndian)
	for i := range named.kvs {
		if named.kvs[i].key == "general.name" {
			named.kvs[i].val = "tiny " + evil
		}
	}
	g, err := ReadGGUFFile(writeFile(t, dir, "named.gguf", named.bytes(t)))
	if err != nil {
		t.Fatal(err)
	}
	if terminalUnsafe(g.Name) || !strings.Contains(g.Name, "tiny") || !strings.Contains(g.Name, "evil") {
		t.Errorf("name %q", g.Name)
	}
	if n := ShapeFromGGUF(g).Name; n != g.Name {
		t.Errorf("the fit's name %q", n)
	}
	arch := tinyLlama(binary.LittleEndian)
	arch.kvs[0].val = "llama" + evil
	if g, err := ReadGGUFFile(writeFile(t, dir, "arch.gguf", arch.bytes(t))); err == nil && terminalUnsafe(g.Architecture) {
		t.Errorf("architecture %q", g.Architecture)
	} else if err != nil && terminalUnsafe(err.Error()) {
		t.Errorf("architecture: error %q", err)
	}
	str := func(s string) []byte { return append(le64(uint64(len(s))), s...) }
	head := append([]byte("GGUF\x03\x00\x00\x00"), le64(0)...)
	head = append(head, le64(1)...)
	for name, in := range map[string][]byte{
		"a key's layers": append(append(append(head, str(evil+".block_count")...), binary.LittleEndian.AppendUint32(nil, gUint32)...),
			binary.LittleEndian.AppendUint32(nil, 1<<31)...),
		"a key's value truncated": append(append(head, str(evil)...), binary.LittleEndian.AppendUint32(nil, gUint64)...),
		"a key's type truncated":  append(head, str(evil)...),
		"a tensor's type": (&ggufWriter{order: binary.LittleEndian, version: 3,
			tensors: []tinfo{{evil, 99, []uint64{32}}}}).bytes(t),
		"a tensor's dimensions": (&ggufWriter{order: binary.LittleEndian, version: 3,
			tensors: []tinfo{{evil, 0, []uint64{1, 1, 1, 1, 1}}}}).bytes(t),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ReadGGUFFile(writeFile(t, dir, strings.ReplaceAll(name, " ", "_")+".gguf", in))
			if err == nil {
				t.Fatal("accepted")
			}
			if terminalUnsafe(err.Error()) || !strings.Contains(err.Error(), "evil") {
				t.Fatalf("error %q", err)
			}
		})
	}
}

func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func TestReadGGUFModelSplit(t *testing.T) {
	dir := t.TempDir()
	part := func(i int, tensors []tinfo) {
		w := &ggufWriter{order: binary.LittleEndian, version: 3, kvs: []kv{
			{"general.architecture", gString, "llama"}, {"llama.block_count", gUint32, uint32(80)},
			{"split.count", gUint16, uint16(3)}, {"split.no", gUint16, uint16(i - 1)},
		}, tensors: tensors}
		writeFile(t, dir, "big-0000"+string(rune('0'+i))+"-of-00003.gguf", w.bytes(t))
	}
	part(1, []tinfo{{"a", 12, []uint64{4096, 32}}}) // 73728
	part(2, []tinfo{{"b", 12, []uint64{4096, 64}}}) // 147456
	part(3, []tinfo{{"c", 0, []uint64{10}}})        // 40
	first := filepath.Join(dir, "big-00001-of-00003.gguf")
	g, err := ReadGGUFModel(first)
	if err != nil {
		t.Fatal(err)
	}
	if g.WeightsBytes() != 73728+147456+40 || len(g.Tensors) != 3 || g.BlockCount != 80 || g.Parts != 3 {
		t.Fatalf("split model: weights %d, %d tensors, %d layers, %d parts", g.WeightsBytes(), len(g.Tensors), g.BlockCount, g.Parts)
	}
	if g, err := ReadGGUFFile(first); err != nil || len(g.Tensors) != 1 || g.Parts != 1 {
		t.Fatalf("one part alone: %v, %+v", err, g)
	}
	// a hostile second part is checked before the library reads it
	writeFile(t, dir, "big-00002-of-00003.gguf", append([]byte("GGUF\x03\x00\x00\x00"), le64(1<<40)...))
	if _, err := ReadGGUFModel(first); err == nil || !strings.Contains(err.Error(), "part 2 of 3") {
		t.Fatalf("a hostile part: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "big-00002-of-00003.gguf")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadGGUFModel(first); err == nil || !strings.Contains(err.Error(), "part 2 of 3") {
		t.Fatalf("a missing part: %v", err)
	}
}

func TestTensorBytesOverflow(t *testing.T) {
	tt, _ := gp.GGMLTypeF32.Trait()
	if _, err := tensorBytes([]uint64{math.MaxUint64, 2}, tt, gp.GGMLTypeF32); err == nil {
		t.Fatal("overflowing element count accepted")
	}
}

// FuzzReadGGUF: any file gives a header or an error, never a panic, within
// bounds; a header's sizes add up, and the fit estimate runs on it.
func FuzzReadGGUF(f *testing.F) {
	f.Add(tinyLlama(binary.LittleEndian).bytes(f))
	f.Add(tinyLlama(binary.BigEndian).bytes(f))
	f.Add(tinyMoE().bytes(f))
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "f.gguf")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		defer func() {
			if took := time.Since(start); took > 10*time.Second {
				t.Fatalf("took %s", took)
			}
		}()
		g, err := ReadGGUFFile(p)
		if err != nil {
			if terminalUnsafe(err.Error()) {
				t.Fatalf("error %q", err)
			}
			return
		}
		if terminalUnsafe(g.Name) || terminalUnsafe(g.Architecture) {
			t.Fatalf("name %q, architecture %q", g.Name, g.Architecture)
		}
		var sum uint64
		for _, tn := range g.Tensors {
			sum += tn.Bytes
		}
		if sum != g.WeightsBytes() || sum > g.DataBytes {
			t.Fatalf("tensor bytes %d, weights %d, data %d", sum, g.WeightsBytes(), g.DataBytes)
		}
		_ = Estimate(FitRequest{Engine: EngineLlamaCpp, Model: ShapeFromGGUF(g), LimitBytes: 64 * gib, Unified: true})
	})
}
