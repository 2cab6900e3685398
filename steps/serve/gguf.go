package serve

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/haloforge/haloforge/internal/safefile"
)

// Bounds on a GGUF header, so a hostile or broken file cannot make the reader
// allocate or loop without end. Real files stay far below: a 256k-token
// vocabulary with merges is a few MB of header, a large MoE model a few
// thousand tensors.
const (
	maxHeaderBytes = 256 << 20 // bytes read before the tensor data
	maxTensors     = 1 << 20
	maxKVs         = 1 << 16
	maxDims        = 8        // GGML_MAX_DIMS is 4; allow some room
	maxString      = 16 << 20 // one key or string value
	maxArrayDepth  = 4        // arrays of arrays
)

// GGUF magic "GGUF" as a little-endian uint32.
const ggufMagic = 0x46554747

// Value types of GGUF metadata (ggml docs/gguf.md, gguf-py GGUFValueType).
const (
	gUint8 = iota
	gInt8
	gUint16
	gInt16
	gUint32
	gInt32
	gFloat32
	gBool
	gString
	gArray
	gUint64
	gInt64
	gFloat64
)

// GGMLType is a tensor's storage type (ggml.h enum ggml_type).
type GGMLType uint32

// typeInfo is a type's name, elements per block and bytes per block.
type typeInfo struct {
	name        string
	block, size uint64
}

// ggmlTypes maps each storage type to its block size and bytes per block, as
// python3-gguf 0.7.0's GGML_QUANT_SIZES (Debian sid, 2026-11-24) lists them;
// the gaps (4, 5, 31-33, 36-38) are types ggml removed.
var ggmlTypes = map[GGMLType]typeInfo{
	0: {"F32", 1, 4}, 1: {"F16", 1, 2},
	2: {"Q4_0", 32, 18}, 3: {"Q4_1", 32, 20}, 6: {"Q5_0", 32, 22}, 7: {"Q5_1", 32, 24},
	8: {"Q8_0", 32, 34}, 9: {"Q8_1", 32, 36},
	10: {"Q2_K", 256, 84}, 11: {"Q3_K", 256, 110}, 12: {"Q4_K", 256, 144},
	13: {"Q5_K", 256, 176}, 14: {"Q6_K", 256, 210}, 15: {"Q8_K", 256, 292},
	16: {"IQ2_XXS", 256, 66}, 17: {"IQ2_XS", 256, 74}, 18: {"IQ3_XXS", 256, 98},
	19: {"IQ1_S", 256, 50}, 20: {"IQ4_NL", 32, 18}, 21: {"IQ3_S", 256, 110},
	22: {"IQ2_S", 256, 82}, 23: {"IQ4_XS", 256, 136},
	24: {"I8", 1, 1}, 25: {"I16", 1, 2}, 26: {"I32", 1, 4}, 27: {"I64", 1, 8}, 28: {"F64", 1, 8},
	29: {"IQ1_M", 256, 56}, 30: {"BF16", 1, 2}, 34: {"TQ1_0", 256, 54}, 35: {"TQ2_0", 256, 66},
	39: {"MXFP4", 32, 17}, 40: {"NVFP4", 64, 36}, 41: {"Q1_0", 128, 18}, 42: {"Q2_0", 64, 18},
}

// String is the type's ggml name, or "type(N)" for one this table lacks.
func (t GGMLType) String() string {
	if ti, ok := ggmlTypes[t]; ok {
		return ti.name
	}
	return "type(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// Tensor is one tensor's entry in the header.
type Tensor struct {
	Name   string
	Type   GGMLType
	Dims   []uint64
	Offset uint64 // from the start of the data section
	Bytes  uint64 // 0 when the type is unknown
}

// GGUF is what haloforge reads from a GGUF header: enough to size the model
// and its KV cache, never the weights themselves.
type GGUF struct {
	Version      uint32
	Architecture string
	Name         string
	FileType     int // general.file_type (LlamaFileType), -1 when absent
	Alignment    uint64
	DataOffset   uint64 // where tensor data starts in the file
	FileSize     int64  // 0 when unknown (a stream)
	// DataBytes is the size of the tensor data section(s) on disk: the file size
	// less the header, summed over the parts of a split model; 0 for a stream.
	DataBytes uint64

	ContextLength uint64 // {arch}.context_length: the trained context
	BlockCount    uint64 // {arch}.block_count: layers
	EmbeddingLen  uint64 // {arch}.embedding_length
	HeadCount     uint64 // {arch}.attention.head_count
	HeadCountKV   uint64 // {arch}.attention.head_count_kv (max over layers when per layer); 0: = HeadCount
	KeyLength     uint64 // {arch}.attention.key_length; 0: EmbeddingLen/HeadCount
	ValueLength   uint64 // {arch}.attention.value_length; 0: EmbeddingLen/HeadCount
	SlidingWindow uint64 // {arch}.attention.sliding_window, when set
	SplitCount    uint64 // split.count of a multi-file model, 0 or 1 when single
	ExpertCount   uint64 // {arch}.expert_count: experts of a mixture-of-experts model, 0 when dense
	ExpertUsed    uint64 // {arch}.expert_used_count: experts each token runs through

	Tensors []Tensor
	// TensorBytes is the sum of every tensor's size, by type name.
	TensorBytes map[string]uint64
	// Unknown counts tensors of types this table lacks (their bytes are not in TensorBytes).
	Unknown int
}

// WeightsBytes is the tensor data this file holds: the sum of its tensors, or
// the data section's size when some tensor's type is unknown.
func (g *GGUF) WeightsBytes() uint64 {
	if g.Unknown > 0 && g.DataBytes > 0 {
		return g.DataBytes
	}
	var sum uint64
	for _, b := range g.TensorBytes {
		sum += b
	}
	return sum
}

// KVHeads is the number of KV heads (grouped-query attention), HeadCount when unset.
func (g *GGUF) KVHeads() uint64 {
	if g.HeadCountKV > 0 {
		return g.HeadCountKV
	}
	return g.HeadCount
}

// HeadDims returns the per-head key and value sizes.
func (g *GGUF) HeadDims() (k, v uint64) {
	var d uint64
	if g.HeadCount > 0 {
		d = g.EmbeddingLen / g.HeadCount
	}
	k, v = g.KeyLength, g.ValueLength
	if k == 0 {
		k = d
	}
	if v == 0 {
		v = d
	}
	return k, v
}

// ReadGGUFFile reads the header of a GGUF file.
func ReadGGUFFile(path string) (*GGUF, error) {
	f, st, err := safefile.OpenRegular(path, safefile.Follow) // a FIFO named as the model is refused, not waited on
	if err != nil {
		return nil, err
	}
	defer f.Close()
	g, err := ReadGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	g.FileSize = st.Size()
	if g.DataOffset > uint64(st.Size()) {
		return nil, fmt.Errorf("%s: truncated: the header ends at byte %d of a %d-byte file", path, g.DataOffset, st.Size())
	}
	g.DataBytes = uint64(st.Size()) - g.DataOffset
	return g, nil
}

// splitName matches the names llama.cpp's gguf-split gives the parts of a model.
var splitName = regexp.MustCompile(`^(.*)-(\d{5})-of-(\d{5})\.gguf$`)

// ReadGGUFModel reads a model that may be split over several files
// (name-00001-of-00003.gguf): the first part's header, with the tensors and
// sizes of every part added up.
func ReadGGUFModel(path string) (*GGUF, error) {
	g, err := ReadGGUFFile(path)
	if err != nil {
		return nil, err
	}
	m := splitName.FindStringSubmatch(filepath.Base(path))
	if m == nil || g.SplitCount <= 1 {
		return g, nil
	}
	n, _ := strconv.Atoi(m[3])
	if n <= 1 || n > 1000 {
		return g, nil
	}
	for i := 1; i <= n; i++ {
		part := filepath.Join(filepath.Dir(path), fmt.Sprintf("%s-%05d-of-%05d.gguf", m[1], i, n))
		if part == path {
			continue
		}
		p, err := ReadGGUFFile(part)
		if err != nil {
			return nil, fmt.Errorf("part %d of %d: %w", i, n, err)
		}
		g.Tensors = append(g.Tensors, p.Tensors...)
		for k, b := range p.TensorBytes {
			g.TensorBytes[k] += b
		}
		g.Unknown += p.Unknown
		g.DataBytes += p.DataBytes
	}
	return g, nil
}

// ErrNotGGUF says the input does not start with the GGUF magic.
var ErrNotGGUF = errors.New("not a GGUF file (no GGUF magic)")

// ReadGGUF reads a GGUF v2 or v3 header (both byte orders) from r, at most
// maxHeaderBytes of it, and stops before the tensor data.
func ReadGGUF(r io.Reader) (*GGUF, error) {
	d := &decoder{r: bufio.NewReaderSize(io.LimitReader(r, maxHeaderBytes), 64<<10), order: binary.LittleEndian}
	var magic [4]byte
	if err := d.full(magic[:]); err != nil {
		return nil, ErrNotGGUF
	}
	if binary.LittleEndian.Uint32(magic[:]) != ggufMagic {
		return nil, ErrNotGGUF
	}
	var vb [4]byte
	if err := d.full(vb[:]); err != nil {
		return nil, d.wrap(err, "version")
	}
	version := binary.LittleEndian.Uint32(vb[:])
	if version > 0xffff { // a big-endian file: its version reads byte-swapped
		d.order = binary.BigEndian
		version = binary.BigEndian.Uint32(vb[:])
	}
	switch version {
	case 2, 3:
	case 1:
		return nil, errors.New("GGUF version 1 (32-bit counts) is not supported: convert the model again with a current llama.cpp")
	default:
		return nil, fmt.Errorf("unknown GGUF version %d", version)
	}
	g := &GGUF{Version: version, FileType: -1, Alignment: 32, TensorBytes: map[string]uint64{}}
	nTensors, err := d.u64()
	if err != nil {
		return nil, d.wrap(err, "tensor count")
	}
	nKV, err := d.u64()
	if err != nil {
		return nil, d.wrap(err, "metadata count")
	}
	if nTensors > maxTensors {
		return nil, fmt.Errorf("%d tensors: more than the %d a header may hold here", nTensors, maxTensors)
	}
	if nKV > maxKVs {
		return nil, fmt.Errorf("%d metadata entries: more than the %d a header may hold here", nKV, maxKVs)
	}
	meta := metadata{}
	for i := uint64(0); i < nKV; i++ {
		key, err := d.str()
		if err != nil {
			return nil, d.wrap(err, fmt.Sprintf("metadata key %d", i))
		}
		typ, err := d.u32()
		if err != nil {
			return nil, d.wrap(err, "type of "+key)
		}
		v, err := d.value(typ, 0)
		if err != nil {
			return nil, d.wrap(err, "value of "+key)
		}
		meta[key] = v
	}
	g.apply(meta)
	g.Tensors = make([]Tensor, 0, min(nTensors, 4096))
	for i := uint64(0); i < nTensors; i++ {
		t, err := d.tensor()
		if err != nil {
			return nil, d.wrap(err, fmt.Sprintf("tensor %d", i))
		}
		if ti, ok := ggmlTypes[t.Type]; ok {
			t.Bytes, err = tensorBytes(t.Dims, ti)
			if err != nil {
				return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
			}
			g.TensorBytes[ti.name] += t.Bytes
		} else {
			g.Unknown++
		}
		g.Tensors = append(g.Tensors, t)
	}
	g.DataOffset = alignUp(d.n, g.Alignment)
	return g, nil
}

// tensorBytes is the storage size of a tensor: elements / block × bytes per block.
func tensorBytes(dims []uint64, ti typeInfo) (uint64, error) {
	n := uint64(1)
	for _, d := range dims {
		hi, lo := bits.Mul64(n, d)
		if hi != 0 {
			return 0, errors.New("element count overflows")
		}
		n = lo
	}
	if len(dims) > 0 && dims[0]%ti.block != 0 {
		return 0, fmt.Errorf("first dimension %d is not a multiple of %s's block of %d", dims[0], ti.name, ti.block)
	}
	hi, lo := bits.Mul64(n/ti.block, ti.size)
	if hi != 0 {
		return 0, errors.New("byte size overflows")
	}
	return lo, nil
}

func alignUp(n, a uint64) uint64 {
	if a == 0 {
		return n
	}
	return (n + a - 1) / a * a
}

// metadata keeps the values haloforge reads; arrays are kept as their
// integer elements only when short (per-layer head counts), else as a length.
type metadata map[string]any

type arrayLen uint64

// apply takes the fields the fit estimate needs from the metadata.
func (g *GGUF) apply(m metadata) {
	g.Architecture, _ = m["general.architecture"].(string)
	g.Name, _ = m["general.name"].(string)
	if v, ok := asUint(m["general.file_type"]); ok && v < 1<<16 {
		g.FileType = int(v)
	}
	if v, ok := asUint(m["general.alignment"]); ok && v > 0 && v <= 1<<20 && v&(v-1) == 0 {
		g.Alignment = v
	}
	a := g.Architecture + "."
	g.ContextLength, _ = asUint(m[a+"context_length"])
	g.BlockCount, _ = asUint(m[a+"block_count"])
	g.EmbeddingLen, _ = asUint(m[a+"embedding_length"])
	g.HeadCount = maxUint(m[a+"attention.head_count"])
	g.HeadCountKV = maxUint(m[a+"attention.head_count_kv"])
	g.KeyLength, _ = asUint(m[a+"attention.key_length"])
	g.ValueLength, _ = asUint(m[a+"attention.value_length"])
	g.SlidingWindow, _ = asUint(m[a+"attention.sliding_window"])
	g.SplitCount, _ = asUint(m["split.count"])
	g.ExpertCount, _ = asUint(m[a+"expert_count"])
	g.ExpertUsed, _ = asUint(m[a+"expert_used_count"])
}

func asUint(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint64:
		return x, true
	case int64:
		if x >= 0 {
			return uint64(x), true
		}
	}
	return 0, false
}

// maxUint is a scalar's value, or the largest element of a per-layer array.
func maxUint(v any) uint64 {
	if u, ok := asUint(v); ok {
		return u
	}
	if xs, ok := v.([]int64); ok {
		var m uint64
		for _, x := range xs {
			if x > 0 && uint64(x) > m {
				m = uint64(x)
			}
		}
		return m
	}
	return 0
}

// decoder reads GGUF primitives, counting bytes.
type decoder struct {
	r     *bufio.Reader
	order binary.ByteOrder
	n     uint64
	buf   [8]byte
}

func (d *decoder) wrap(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if d.n >= maxHeaderBytes {
			return fmt.Errorf("%s: the header is larger than %d MiB", what, maxHeaderBytes>>20)
		}
		return fmt.Errorf("%s: truncated at byte %d", what, d.n)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (d *decoder) full(p []byte) error {
	n, err := io.ReadFull(d.r, p)
	d.n += uint64(n)
	return err
}

func (d *decoder) skip(n uint64) error {
	for n > 0 {
		step := min(n, 1<<20)
		m, err := d.r.Discard(int(step))
		d.n += uint64(m)
		if err != nil {
			return err
		}
		n -= step
	}
	return nil
}

func (d *decoder) u32() (uint32, error) {
	if err := d.full(d.buf[:4]); err != nil {
		return 0, err
	}
	return d.order.Uint32(d.buf[:4]), nil
}

func (d *decoder) u64() (uint64, error) {
	if err := d.full(d.buf[:8]); err != nil {
		return 0, err
	}
	return d.order.Uint64(d.buf[:8]), nil
}

func (d *decoder) str() (string, error) {
	n, err := d.u64()
	if err != nil {
		return "", err
	}
	if n > maxString {
		return "", fmt.Errorf("a string of %d bytes: more than %d MiB", n, maxString>>20)
	}
	b := make([]byte, n)
	if err := d.full(b); err != nil {
		return "", err
	}
	return string(b), nil
}

// scalarSize is the byte size of a fixed-size value type, 0 for strings and arrays.
func scalarSize(t uint32) uint64 {
	switch t {
	case gUint8, gInt8, gBool:
		return 1
	case gUint16, gInt16:
		return 2
	case gUint32, gInt32, gFloat32:
		return 4
	case gUint64, gInt64, gFloat64:
		return 8
	}
	return 0
}

// value reads one metadata value: integers as uint64 (unsigned) or int64
// (signed), floats as float64, strings, and arrays as []int64 when they hold
// at most 1024 integers (per-layer values), else only their length.
func (d *decoder) value(t uint32, depth int) (any, error) {
	switch t {
	case gString:
		n, err := d.u64()
		if err != nil {
			return nil, err
		}
		if n > maxString {
			return nil, fmt.Errorf("a string of %d bytes: more than %d MiB", n, maxString>>20)
		}
		if n > 4096 { // long strings (chat templates) are not needed: skip them
			return arrayLen(n), d.skip(n)
		}
		b := make([]byte, n)
		if err := d.full(b); err != nil {
			return nil, err
		}
		return string(b), nil
	case gArray:
		if depth >= maxArrayDepth {
			return nil, errors.New("arrays nested too deep")
		}
		et, err := d.u32()
		if err != nil {
			return nil, err
		}
		n, err := d.u64()
		if err != nil {
			return nil, err
		}
		if sz := scalarSize(et); sz > 0 {
			if n > maxHeaderBytes/sz {
				return nil, fmt.Errorf("an array of %d elements: larger than the header may be", n)
			}
			if n <= 1024 && et != gFloat32 && et != gFloat64 && et != gBool {
				xs := make([]int64, n)
				for i := range xs {
					v, err := d.value(et, depth+1)
					if err != nil {
						return nil, err
					}
					switch x := v.(type) {
					case uint64:
						xs[i] = int64(min(x, math.MaxInt64))
					case int64:
						xs[i] = x
					}
				}
				return xs, nil
			}
			return arrayLen(n), d.skip(n * sz)
		}
		if et != gString && et != gArray {
			return nil, fmt.Errorf("array of unknown value type %d", et)
		}
		for i := uint64(0); i < n; i++ {
			if et == gString {
				l, err := d.u64()
				if err != nil {
					return nil, err
				}
				if l > maxString {
					return nil, fmt.Errorf("a string of %d bytes: more than %d MiB", l, maxString>>20)
				}
				if err := d.skip(l); err != nil {
					return nil, err
				}
				continue
			}
			if _, err := d.value(et, depth+1); err != nil {
				return nil, err
			}
		}
		return arrayLen(n), nil
	}
	sz := scalarSize(t)
	if sz == 0 {
		return nil, fmt.Errorf("unknown value type %d", t)
	}
	if err := d.full(d.buf[:sz]); err != nil {
		return nil, err
	}
	b := d.buf[:sz]
	switch t {
	case gUint8, gBool:
		return uint64(b[0]), nil
	case gInt8:
		return int64(int8(b[0])), nil
	case gUint16:
		return uint64(d.order.Uint16(b)), nil
	case gInt16:
		return int64(int16(d.order.Uint16(b))), nil
	case gUint32:
		return uint64(d.order.Uint32(b)), nil
	case gInt32:
		return int64(int32(d.order.Uint32(b))), nil
	case gFloat32:
		return float64(math.Float32frombits(d.order.Uint32(b))), nil
	case gUint64:
		return d.order.Uint64(b), nil
	case gInt64:
		return int64(d.order.Uint64(b)), nil
	default: // gFloat64
		return math.Float64frombits(d.order.Uint64(b)), nil
	}
}

func (d *decoder) tensor() (Tensor, error) {
	name, err := d.str()
	if err != nil {
		return Tensor{}, err
	}
	nd, err := d.u32()
	if err != nil {
		return Tensor{}, err
	}
	if nd == 0 || nd > maxDims {
		return Tensor{}, fmt.Errorf("tensor %q has %d dimensions", name, nd)
	}
	t := Tensor{Name: name, Dims: make([]uint64, nd)}
	for i := range t.Dims {
		if t.Dims[i], err = d.u64(); err != nil {
			return Tensor{}, err
		}
	}
	typ, err := d.u32()
	if err != nil {
		return Tensor{}, err
	}
	t.Type = GGMLType(typ)
	if t.Offset, err = d.u64(); err != nil {
		return Tensor{}, err
	}
	if strings.ContainsAny(name, "\x00") {
		return Tensor{}, fmt.Errorf("tensor name with a NUL byte")
	}
	return t, nil
}
