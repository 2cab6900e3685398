package serve

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	typ  GGMLType
	dims []uint64
}

type ggufWriter struct {
	order   binary.ByteOrder
	version uint32
	kvs     []kv
	tensors []tinfo
	align   uint64
}

func (w *ggufWriter) bytes(t testing.TB) []byte {
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
		if info, ok := ggmlTypes[ti.typ]; ok {
			n := uint64(1)
			for _, d := range ti.dims {
				n *= d
			}
			size = n / info.block * info.size
		}
		sizes[i] = size
		off = alignUp(off+size, align)
	}
	for uint64(b.Len())%align != 0 {
		b.WriteByte(0)
	}
	for i := range w.tensors {
		start := b.Len()
		b.Write(make([]byte, sizes[i]))
		for uint64(b.Len()-start)%align != 0 {
			b.WriteByte(0)
		}
	}
	return b.Bytes()
}

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
	}, tensors: []tinfo{
		{"a", 12, []uint64{4096, 32}}, // Q4_K: 131072 elements / 256 × 144 = 73728
		{"b", 14, []uint64{256, 10}},  // Q6_K: 2560 / 256 × 210 = 2100
		{"c", 8, []uint64{64, 3}},     // Q8_0: 192 / 32 × 34 = 204
		{"d", 23, []uint64{512, 2}},   // IQ4_XS: 1024 / 256 × 136 = 544
		{"e", 39, []uint64{64, 2}},    // MXFP4: 128 / 32 × 17 = 68
		{"f", 30, []uint64{7}},        // BF16: 7 × 2 = 14
	}}
	unknown := &ggufWriter{order: binary.LittleEndian, version: 3, kvs: []kv{{"general.architecture", gString, "llama"}},
		tensors: []tinfo{{"x", 0, []uint64{8}}, {"y", 99, []uint64{32}}}}
	tests := []struct {
		name       string
		w          *ggufWriter
		weights    uint64
		byType     map[string]uint64
		layers     uint64
		kvHeads    uint64
		headK      uint64
		ctx        uint64
		version    uint32
		unknownCnt int
	}{
		// 2 × 270 × 128 × 2 (embd, output) + 2 layers × 294912 (F16 matrices) = 728064 F16;
		// 128 × 4 × 5 norms = 2560 F32; 730624 in all, the model_size llama-bench printed
		// for the same shape written by python3-gguf (testdata/llama-bench-lavapipe.json).
		{name: "tiny llama, little-endian", w: tinyLlama(binary.LittleEndian), weights: 730624,
			byType: map[string]uint64{"F16": 728064, "F32": 2560}, layers: 2, kvHeads: 2, headK: 32, ctx: 512, version: 3},
		{name: "tiny llama, big-endian", w: func() *ggufWriter { w := tinyLlama(binary.BigEndian); return w }(), weights: 730624,
			byType: map[string]uint64{"F16": 728064, "F32": 2560}, layers: 2, kvHeads: 2, headK: 32, ctx: 512, version: 3},
		// 73728 + 2100 + 204 + 544 + 68 + 14 = 76658
		{name: "quantised types, v2, alignment 64", w: quant, weights: 76658,
			byType: map[string]uint64{"Q4_K": 73728, "Q6_K": 2100, "Q8_0": 204, "IQ4_XS": 544, "MXFP4": 68, "BF16": 14},
			layers: 48, kvHeads: 4, headK: 128, ctx: 262144, version: 2},
		// a type the table lacks: the data section's size (32 bytes F32 padded to 32, + 64) counts
		{name: "unknown type falls back to the data section", w: unknown, weights: 96,
			byType: map[string]uint64{"F32": 32}, version: 3, unknownCnt: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "_")+".gguf", tc.w.bytes(t))
			g, err := ReadGGUFFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if g.Version != tc.version || g.WeightsBytes() != tc.weights || g.BlockCount != tc.layers ||
				g.KVHeads() != tc.kvHeads || g.ContextLength != tc.ctx || g.Unknown != tc.unknownCnt {
				t.Errorf("got version %d weights %d layers %d kv heads %d ctx %d unknown %d", g.Version, g.WeightsBytes(),
					g.BlockCount, g.KVHeads(), g.ContextLength, g.Unknown)
			}
			if k, _ := g.HeadDims(); k != tc.headK {
				t.Errorf("head dim %d, want %d", k, tc.headK)
			}
			for ty, n := range tc.byType {
				if g.TensorBytes[ty] != n {
					t.Errorf("%s bytes %d, want %d", ty, g.TensorBytes[ty], n)
				}
			}
			if g.DataOffset%g.Alignment != 0 || g.DataOffset >= uint64(g.FileSize) {
				t.Errorf("data offset %d (alignment %d, size %d)", g.DataOffset, g.Alignment, g.FileSize)
			}
		})
	}
}

func TestReadGGUFErrors(t *testing.T) {
	good := tinyLlama(binary.LittleEndian).bytes(t)
	head, err := ReadGGUF(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	hugeTensors := append([]byte("GGUF\x03\x00\x00\x00"), le64(1<<40)...)
	hugeTensors = append(hugeTensors, le64(0)...)
	hugeString := append([]byte("GGUF\x03\x00\x00\x00"), le64(0)...)
	hugeString = append(hugeString, le64(1)...)
	hugeString = append(hugeString, le64(1<<50)...)
	badDims := (&ggufWriter{order: binary.LittleEndian, version: 3, tensors: []tinfo{{"q", 8, []uint64{33}}}}).bytes(t)
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "not a GGUF file"},
		{"other magic", []byte("GGML\x03\x00\x00\x00"), "not a GGUF file"},
		{"version 1", []byte("GGUF\x01\x00\x00\x00"), "version 1"},
		{"version 9", []byte("GGUF\x09\x00\x00\x00"), "unknown GGUF version 9"},
		{"truncated counts", []byte("GGUF\x03\x00\x00\x00\x01"), "tensor count: truncated"},
		{"truncated in the metadata", good[:200], "truncated at byte"},
		{"truncated in the tensor infos", good[:head.DataOffset-40], "truncated"},
		{"a trillion tensors", hugeTensors, "more than the 1048576"},
		{"a petabyte string", hugeString, "more than 16 MiB"},
		{"block size does not divide", badDims, "not a multiple of Q8_0's block of 32"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadGGUF(bytes.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := ReadGGUF(bytes.NewReader(nil)); !errors.Is(err, ErrNotGGUF) {
		t.Errorf("empty input: %v, want ErrNotGGUF", err)
	}
}

func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func TestReadGGUFFileTruncatedData(t *testing.T) {
	b := tinyLlama(binary.LittleEndian).bytes(t)
	g, err := ReadGGUF(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	p := writeFile(t, t.TempDir(), "cut.gguf", b[:g.DataOffset-1])
	if _, err := ReadGGUFFile(p); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("a file cut before its data: %v", err)
	}
}

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
	g, err := ReadGGUFModel(filepath.Join(dir, "big-00001-of-00003.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if g.WeightsBytes() != 73728+147456+40 || len(g.Tensors) != 3 || g.BlockCount != 80 {
		t.Fatalf("split model: weights %d, %d tensors, %d layers", g.WeightsBytes(), len(g.Tensors), g.BlockCount)
	}
	if err := os.Remove(filepath.Join(dir, "big-00003-of-00003.gguf")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadGGUFModel(filepath.Join(dir, "big-00001-of-00003.gguf")); err == nil || !strings.Contains(err.Error(), "part 3 of 3") {
		t.Fatalf("a missing part: %v", err)
	}
}

func TestTensorBytesOverflow(t *testing.T) {
	if _, err := tensorBytes([]uint64{math.MaxUint64, 2}, ggmlTypes[0]); err == nil {
		t.Fatal("overflowing element count accepted")
	}
}

// FuzzReadGGUF: any input gives a header or an error, never a panic, and a
// header's sizes add up.
func FuzzReadGGUF(f *testing.F) {
	f.Add(tinyLlama(binary.LittleEndian).bytes(f))
	f.Add(tinyLlama(binary.BigEndian).bytes(f))
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := ReadGGUF(bytes.NewReader(b))
		if err != nil {
			return
		}
		var sum uint64
		for _, tn := range g.Tensors {
			sum += tn.Bytes
		}
		if g.Unknown == 0 && sum != g.WeightsBytes() {
			t.Fatalf("tensor bytes %d != weights %d", sum, g.WeightsBytes())
		}
	})
}
