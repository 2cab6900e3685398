package serve

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"strconv"
	"strings"

	gp "github.com/gpustack/gguf-parser-go"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
)

// A GGUF header is read by github.com/gpustack/gguf-parser-go, which knows
// every architecture's metadata and llama.cpp's memory use; before it sees a
// file, checkHeader walks the header once within the bounds below, because the
// library sizes slices from the header's own counts (metadata entries, array
// lengths, a block count) bounded only by the file's size, which a sparse file
// makes as large as it likes. Real files stay far below: a 256k-token
// vocabulary with merges is a few MB of header, a large MoE model a few
// thousand tensors and under 200 layers.
const (
	maxHeaderBytes = 256 << 20 // bytes read before the tensor data
	maxTensors     = 1 << 16
	maxKVs         = 1 << 16
	maxLayers      = 4096     // a block count; gguf-parser-go's own bound on per-layer slices
	maxDims        = 4        // GGML_MAX_DIMS; gguf-parser-go refuses more too
	maxString      = 16 << 20 // one string value
	maxKey         = 1 << 16  // one key or tensor name
	maxArrayDepth  = 4        // arrays of arrays
	maxParts       = 1000     // files of a split model
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
	gTypes // the count of value types
)

// Tensor is one tensor's entry in the header.
type Tensor struct {
	Name   string
	Type   gp.GGMLType
	Dims   []uint64
	Offset uint64 // from the start of its file's data section
	Bytes  uint64
}

// GGUF is what haloforge reads from a GGUF model's header(s): enough to size
// the model, its KV cache and llama.cpp's buffers, never the weights. Its
// strings are the file's, made printable (text.Printable): a model's name may
// hold escapes or bidi overrides, and it is shown; tensor names are quoted
// wherever they are printed.
type GGUF struct {
	Version      uint32
	Architecture string
	Name         string
	DataOffset   uint64 // where tensor data starts in the (first) file
	FileSize     int64  // bytes on disk, over every part
	DataBytes    uint64 // the data sections' sizes, over every part
	Parts        int    // files: 1, or the parts of a split model

	ContextLength uint64 // the trained context
	BlockCount    uint64 // layers
	EmbeddingLen  uint64
	HeadCount     uint64
	HeadCountKV   uint64 // the largest over layers when given per layer
	KeyLength     uint64 // per head
	ValueLength   uint64 // per head
	SlidingWindow uint64 // the attention window of the sliding-window layers, 0 when none
	ExpertCount   uint64 // {arch}.expert_count: experts of a mixture-of-experts model, 0 when dense
	ExpertUsed    uint64 // {arch}.expert_used_count: experts each token runs through
	Parameters    uint64 // elements of every tensor

	Tensors []Tensor

	file *gp.GGUFFile
}

// WeightsBytes is the tensor data of the model: every tensor's size, summed.
func (g *GGUF) WeightsBytes() uint64 {
	var sum uint64
	for _, t := range g.Tensors {
		sum += t.Bytes
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

// ErrNotGGUF says the input does not start with the GGUF magic.
var ErrNotGGUF = errors.New("not a GGUF file (no GGUF magic)")

// ReadGGUFFile reads the header of one GGUF file (one part of a split model
// alone).
func ReadGGUFFile(path string) (*GGUF, error) {
	return readGGUF(path, false)
}

// ReadGGUFModel reads a model that may be split over several files
// (name-00001-of-00003.gguf, as llama.cpp's gguf-split names them): every
// part is checked, and the header counts every part's tensors.
func ReadGGUFModel(path string) (*GGUF, error) {
	return readGGUF(path, true)
}

func readGGUF(path string, parts bool) (*GGUF, error) {
	f, h, err := openChecked(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The library reads the file this descriptor holds, not the name again,
	// so what it reads is what was checked (a FIFO swapped in is not waited on).
	target := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	names := []string{path}
	if parts && h.splitCount > 1 {
		if names = gp.CompleteShardGGUFFilename(path); names == nil {
			return nil, fmt.Errorf("%s: split.count is %d, but the name is not gguf-split's NAME-00001-of-%05d.gguf", path, h.splitCount, h.splitCount)
		}
		if len(names) != int(h.splitCount) || len(names) > maxParts {
			return nil, fmt.Errorf("%s: the name says %d parts, split.count %d (at most %d)", path, len(names), h.splitCount, maxParts)
		}
		for i, name := range names {
			if name == path {
				continue
			}
			pf, _, err := openChecked(name)
			if err != nil {
				return nil, fmt.Errorf("part %d of %d: %w", i+1, len(names), err)
			}
			pf.Close()
		}
		target = path
	}
	gf, err := parseChecked(target)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	g, err := fromLibrary(gf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	g.Version, g.DataOffset, g.Parts = h.version, h.dataOffset, len(names)
	return g, nil
}

// openChecked opens a regular file (a FIFO or device is refused, not waited
// on) and checks its header against the bounds.
func openChecked(path string) (*os.File, header, error) {
	f, st, err := safefile.OpenRegular(path, safefile.Follow)
	if err != nil {
		return nil, header{}, err
	}
	h, err := checkHeader(f, st.Size())
	if err != nil {
		f.Close()
		return nil, header{}, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, header{}, err
	}
	return f, h, nil
}

// parseChecked runs the library on a checked file; a panic in it (it panics
// on some inputs rather than erring) is an error here.
func parseChecked(path string) (gf *gp.GGUFFile, err error) {
	defer func() {
		if r := recover(); r != nil {
			gf, err = nil, fmt.Errorf("the header cannot be read: %s", text.Printable(fmt.Sprint(r), 300))
		}
	}()
	gf, err = gp.ParseGGUFFile(path, gp.SkipLargeMetadata(), gp.UseMMap())
	if err != nil {
		// its words may quote the file's bytes
		return nil, errors.New(text.Printable(err.Error(), 300))
	}
	return gf, nil
}

// fromLibrary takes haloforge's fields from the library's reading.
func fromLibrary(gf *gp.GGUFFile) (g *GGUF, err error) {
	defer func() {
		if r := recover(); r != nil {
			g, err = nil, fmt.Errorf("the metadata cannot be read: %s", text.Printable(fmt.Sprint(r), 300))
		}
	}()
	a := gf.Architecture()
	g = &GGUF{
		Architecture: text.Printable(a.Architecture, 64), Name: text.Printable(gf.Metadata().Name, 256),
		FileSize: int64(gf.Size), DataBytes: uint64(gf.ModelSize), Parameters: uint64(gf.ModelParameters),
		ContextLength: a.MaximumContextLength, BlockCount: a.BlockCount, EmbeddingLen: a.EmbeddingLength,
		HeadCount: a.AttentionHeadCount, HeadCountKV: a.AttentionHeadCountKV,
		KeyLength: uint64(a.AttentionKeyLength), ValueLength: uint64(a.AttentionValueLength),
		SlidingWindow: a.AttentionSlidingWindow,
		ExpertCount:   uint64(a.ExpertCount), ExpertUsed: uint64(a.ExpertUsedCount),
		Tensors: make([]Tensor, len(gf.TensorInfos)),
		file:    gf,
	}
	for _, kv := range a.AttentionHeadCountKVs {
		g.HeadCountKV = max(g.HeadCountKV, kv)
	}
	for i, t := range gf.TensorInfos {
		g.Tensors[i] = Tensor{Name: t.Name, Type: t.Type, Dims: t.Dimensions, Offset: t.Offset, Bytes: t.Bytes()}
	}
	return g, nil
}

// header is what checkHeader learns on its walk.
type header struct {
	version    uint32
	dataOffset uint64 // the aligned end of the header
	dataNeeded uint64 // the end of the last tensor, from the data offset
	splitCount uint64
}

// checkHeader walks a GGUF v2/v3 header (at most maxHeaderBytes of it) and
// refuses what llama.cpp would refuse, what does not fit in a file of size
// bytes, and what would make the library allocate or loop beyond the bounds
// above. It keeps no values but the few it returns.
func checkHeader(r io.Reader, size int64) (header, error) {
	d := &walker{r: bufio.NewReaderSize(io.LimitReader(r, maxHeaderBytes), 64<<10)}
	var h header
	var magic, vb [4]byte
	if err := d.full(magic[:]); err != nil || binary.LittleEndian.Uint32(magic[:]) != ggufMagic {
		return h, ErrNotGGUF
	}
	if err := d.full(vb[:]); err != nil {
		return h, d.wrap(err, "version")
	}
	h.version = binary.LittleEndian.Uint32(vb[:])
	switch v := h.version; {
	case v == 2 || v == 3:
	case v == 1:
		return h, errors.New("GGUF version 1 (32-bit counts) is not supported: convert the model again with a current llama.cpp")
	case v&0xffff == 0 && v != 0 && binary.BigEndian.Uint32(vb[:]) <= 3:
		// llama.cpp refuses it the same way: its byte order is not this machine's.
		return h, errors.New("a big-endian GGUF file (written for s390x): llama.cpp on this machine cannot load it; use the little-endian file")
	default:
		return h, fmt.Errorf("unknown GGUF version %d", v)
	}
	nTensors, err := d.u64()
	if err != nil {
		return h, d.wrap(err, "tensor count")
	}
	nKV, err := d.u64()
	if err != nil {
		return h, d.wrap(err, "metadata count")
	}
	if nTensors > maxTensors {
		return h, fmt.Errorf("%d tensors: more than the %d a header may hold here", nTensors, maxTensors)
	}
	if nKV > maxKVs {
		return h, fmt.Errorf("%d metadata entries: more than the %d a header may hold here", nKV, maxKVs)
	}
	alignment := uint64(32)
	for i := uint64(0); i < nKV; i++ {
		key, err := d.key()
		if err != nil {
			return h, d.wrap(err, fmt.Sprintf("metadata key %d", i))
		}
		typ, err := d.u32()
		if err != nil {
			return h, d.wrap(err, fmt.Sprintf("type of %q", key))
		}
		n, err := d.value(key, typ, 0)
		if err != nil {
			return h, d.wrap(err, fmt.Sprintf("value of %q", key))
		}
		switch {
		case key == "general.alignment":
			// The library reads it as a uint32 and divides by it; llama.cpp
			// wants a power of two.
			if typ != gUint32 || n == 0 || n&(n-1) != 0 || n > 1<<20 {
				return h, fmt.Errorf("general.alignment must be a uint32 power of two, not %d (type %d)", n, typ)
			}
			alignment = n
		case key == "split.count":
			h.splitCount = n
		case strings.HasSuffix(key, "block_count") && n > maxLayers:
			return h, fmt.Errorf("%q is %d: more than the %d layers a model may have here", key, n, maxLayers)
		case key == "split.tensors.count" && n > maxTensors:
			return h, fmt.Errorf("split.tensors.count is %d: more than the %d tensors a model may have here", n, maxTensors)
		}
	}
	for i := uint64(0); i < nTensors; i++ {
		end, err := d.tensor()
		if err != nil {
			return h, d.wrap(err, fmt.Sprintf("tensor %d", i))
		}
		h.dataNeeded = max(h.dataNeeded, end)
	}
	h.dataOffset = (d.n + alignment - 1) / alignment * alignment
	if h.dataOffset > uint64(size) {
		return h, fmt.Errorf("truncated: the header ends at byte %d of a %d-byte file", h.dataOffset, size)
	}
	if held := uint64(size) - h.dataOffset; h.dataNeeded > held {
		return h, fmt.Errorf("truncated: the tensors need %d bytes of data, the file holds %d after its header (an incomplete download?)", h.dataNeeded, held)
	}
	return h, nil
}

// walker reads GGUF primitives, counting bytes.
type walker struct {
	r   *bufio.Reader
	n   uint64
	buf [8]byte
}

func (d *walker) wrap(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if d.n >= maxHeaderBytes {
			return fmt.Errorf("%s: the header is larger than %d MiB", what, maxHeaderBytes>>20)
		}
		return fmt.Errorf("%s: truncated at byte %d", what, d.n)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (d *walker) full(p []byte) error {
	n, err := io.ReadFull(d.r, p)
	d.n += uint64(n)
	return err
}

func (d *walker) skip(n uint64) error {
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

func (d *walker) u32() (uint32, error) {
	if err := d.full(d.buf[:4]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(d.buf[:4]), nil
}

func (d *walker) u64() (uint64, error) {
	if err := d.full(d.buf[:8]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(d.buf[:8]), nil
}

// key reads a key or tensor name.
func (d *walker) key() (string, error) {
	n, err := d.u64()
	if err != nil {
		return "", err
	}
	if n > maxKey {
		return "", fmt.Errorf("a name of %d bytes: more than %d KiB", n, maxKey>>10)
	}
	b := make([]byte, n)
	if err := d.full(b); err != nil {
		return "", err
	}
	if strings.ContainsRune(string(b), 0) {
		return "", errors.New("a name with a NUL byte")
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

// perLayerKeys end the keys whose arrays the library keeps element by
// element (one value a layer), so their length is bounded by maxLayers.
var perLayerKeys = []string{".feed_forward_length", ".attention.head_count", ".attention.head_count_kv", ".attention.sliding_window_pattern"}

// value walks one metadata value and returns it when it is a non-negative
// integer (0 otherwise).
func (d *walker) value(key string, t uint32, depth int) (uint64, error) {
	switch t {
	case gString:
		n, err := d.u64()
		if err != nil {
			return 0, err
		}
		if n > maxString {
			return 0, fmt.Errorf("a string of %d bytes: more than %d MiB", n, maxString>>20)
		}
		return 0, d.skip(n)
	case gArray:
		if depth >= maxArrayDepth {
			return 0, errors.New("arrays nested too deep")
		}
		et, err := d.u32()
		if err != nil {
			return 0, err
		}
		n, err := d.u64()
		if err != nil {
			return 0, err
		}
		if et >= gTypes {
			return 0, fmt.Errorf("array of unknown value type %d", et)
		}
		for _, s := range perLayerKeys {
			if strings.HasSuffix(key, s) && (n > maxLayers || scalarSize(et) == 0) {
				return 0, fmt.Errorf("a per-layer array of %d values of type %d: at most %d numbers", n, et, maxLayers)
			}
		}
		if sz := scalarSize(et); sz > 0 {
			if n > maxHeaderBytes/sz {
				return 0, fmt.Errorf("an array of %d elements: larger than the header may be", n)
			}
			return 0, d.skip(n * sz)
		}
		if n > maxHeaderBytes/8 {
			return 0, fmt.Errorf("an array of %d elements: larger than the header may be", n)
		}
		for i := uint64(0); i < n; i++ {
			if _, err := d.value(key, et, depth+1); err != nil {
				return 0, err
			}
		}
		return 0, nil
	}
	sz := scalarSize(t)
	if sz == 0 {
		return 0, fmt.Errorf("unknown value type %d", t)
	}
	if err := d.full(d.buf[:sz]); err != nil {
		return 0, err
	}
	b := d.buf[:sz]
	switch t {
	case gUint8, gBool:
		return uint64(b[0]), nil
	case gUint16:
		return uint64(binary.LittleEndian.Uint16(b)), nil
	case gUint32:
		return uint64(binary.LittleEndian.Uint32(b)), nil
	case gUint64:
		return binary.LittleEndian.Uint64(b), nil
	case gInt8:
		return uint64(max(int8(b[0]), 0)), nil
	case gInt16:
		return uint64(max(int16(binary.LittleEndian.Uint16(b)), 0)), nil
	case gInt32:
		return uint64(max(int32(binary.LittleEndian.Uint32(b)), 0)), nil
	case gInt64:
		return uint64(max(int64(binary.LittleEndian.Uint64(b)), 0)), nil
	}
	return 0, nil // floats are not counts
}

// removedTypes are the ggml types llama.cpp no longer loads (Q4_2, Q4_3 and
// the repacked Q4_0_4_4 … IQ4_NL_8_8), which the library still sizes.
var removedTypes = map[gp.GGMLType]bool{4: true, 5: true, 31: true, 32: true, 33: true, 36: true, 37: true, 38: true}

// tensor walks one tensor's entry and returns where its data ends.
func (d *walker) tensor() (uint64, error) {
	name, err := d.key()
	if err != nil {
		return 0, err
	}
	nd, err := d.u32()
	if err != nil {
		return 0, err
	}
	if nd == 0 || nd > maxDims {
		return 0, fmt.Errorf("tensor %q has %d dimensions (1 to %d)", name, nd, maxDims)
	}
	var dims [maxDims]uint64
	for i := range nd {
		if dims[i], err = d.u64(); err != nil {
			return 0, err
		}
	}
	typ, err := d.u32()
	if err != nil {
		return 0, err
	}
	off, err := d.u64()
	if err != nil {
		return 0, err
	}
	t := gp.GGMLType(typ)
	tt, ok := t.Trait()
	if !ok || tt.BlockSize == 0 || removedTypes[t] {
		return 0, fmt.Errorf("tensor %q has ggml type %d, which llama.cpp does not load", name, typ)
	}
	size, err := tensorBytes(dims[:nd], tt, t)
	if err != nil {
		return 0, fmt.Errorf("tensor %q: %w", name, err)
	}
	end, carry := bits.Add64(off, size, 0)
	if carry != 0 {
		return 0, fmt.Errorf("tensor %q: its offset %d overflows", name, off)
	}
	return end, nil
}

// tensorBytes is the storage size of a tensor: elements / block × bytes per
// block, refused when it overflows (the library would panic).
func tensorBytes(dims []uint64, tt gp.GGMLTypeTrait, t gp.GGMLType) (uint64, error) {
	n := uint64(1)
	for _, d := range dims {
		hi, lo := bits.Mul64(n, d)
		if hi != 0 {
			return 0, errors.New("element count overflows")
		}
		n = lo
	}
	if len(dims) > 0 && dims[0]%tt.BlockSize != 0 {
		return 0, fmt.Errorf("first dimension %d is not a multiple of %s's block of %d", dims[0], t, tt.BlockSize)
	}
	hi, lo := bits.Mul64(n/tt.BlockSize, tt.TypeSize)
	if hi != 0 {
		return 0, errors.New("byte size overflows")
	}
	return lo, nil
}

// llamaCppBuffers is llama.cpp's KV cache and its other buffers for the model
// at a context, as gguf-parser-go estimates them for the way haloforge runs
// llama-server: every layer on the GPU (-ngl 999), flash attention on (-fa
// on), the default batches (2048 logical, 512 physical), four slots sharing
// one cache. A panic in the estimate falls back to the KV cache of every
// layer at full width and the flat 1 GiB.
func (g *GGUF) llamaCppBuffers(context uint64) (kv, rest uint64) {
	defer func() {
		if recover() != nil {
			kv, rest = sat(ShapeFromGGUF(&GGUF{BlockCount: g.BlockCount, HeadCount: g.HeadCount, HeadCountKV: g.HeadCountKV,
				EmbeddingLen: g.EmbeddingLen, KeyLength: g.KeyLength, ValueLength: g.ValueLength}).KVBytesPerToken(), context), llamaOverhead
		}
	}()
	if context > math.MaxInt32 { // more than llama.cpp's -c takes: the largest it does, the KV cache grown in step
		kv, rest = g.llamaCppBuffers(math.MaxInt32)
		return sat(kv/math.MaxInt32+1, context), rest
	}
	e := g.file.EstimateLLaMACppRun(gp.WithLLaMACppContextSize(int32(context)),
		gp.WithFlashAttention(), gp.WithParallelSize(4))
	for _, d := range e.Devices {
		kv += uint64(d.KVCache.Sum())
	}
	// The GPU's compute buffer and the inputs the host stages for it (llama.cpp's
	// host compute buffer). Not the library's host footprint: it prices an
	// output buffer for a whole batch of logits, where llama-server reserves
	// one row a slot (a few MB).
	gpu, host := e.Devices[1], e.Devices[0]
	rest = uint64(gpu.Computation.Sum() + gpu.Footprint + host.Computation.Input)
	return kv, rest
}
