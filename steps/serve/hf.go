package serve

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/haloforge/haloforge/internal/safefile"
)

// Bounds on the Hugging Face files read for vLLM's fit.
const (
	maxConfigBytes     = 4 << 20   // config.json, model.safetensors.index.json
	maxSafetensorsHead = 100 << 20 // the safetensors format's own header limit
	maxShards          = 4096
)

// hfConfig holds the config.json fields that size the KV cache. Multimodal
// models nest the language model's under text_config.
type hfConfig struct {
	ModelType         string    `json:"model_type"`
	NumHiddenLayers   uint64    `json:"num_hidden_layers"`
	NumAttentionHeads uint64    `json:"num_attention_heads"`
	NumKeyValueHeads  uint64    `json:"num_key_value_heads"`
	HiddenSize        uint64    `json:"hidden_size"`
	HeadDim           uint64    `json:"head_dim"`
	MaxPositions      uint64    `json:"max_position_embeddings"`
	TorchDtype        string    `json:"torch_dtype"`
	Dtype             string    `json:"dtype"`
	KVLoraRank        uint64    `json:"kv_lora_rank"`     // MLA (DeepSeek): latent KV
	QKRopeHeadDim     uint64    `json:"qk_rope_head_dim"` // MLA: rope part cached beside it
	TextConfig        *hfConfig `json:"text_config"`
}

// ShapeFromHF reads a Hugging Face model directory: config.json for the
// layers, heads and context, model.safetensors.index.json's total_size for the
// weights, or else the safetensors files' own headers.
func ShapeFromHF(dir string) (ModelShape, error) {
	var c hfConfig
	if err := readJSON(filepath.Join(dir, "config.json"), &c); err != nil {
		return ModelShape{}, err
	}
	dtype := c.TorchDtype
	if dtype == "" {
		dtype = c.Dtype
	}
	if c.TextConfig != nil && c.TextConfig.NumHiddenLayers > 0 {
		c = *c.TextConfig
		if c.TorchDtype == "" && c.Dtype == "" {
			c.TorchDtype = dtype
		}
	}
	if c.TorchDtype != "" {
		dtype = c.TorchDtype
	} else if c.Dtype != "" {
		dtype = c.Dtype
	}
	if c.NumHiddenLayers == 0 || c.NumAttentionHeads == 0 {
		return ModelShape{}, fmt.Errorf("%s: no num_hidden_layers or num_attention_heads (not a decoder model's config?)", filepath.Join(dir, "config.json"))
	}
	m := ModelShape{Name: filepath.Base(dir), Layers: c.NumHiddenLayers, KVHeads: c.NumKeyValueHeads,
		TrainedContext: c.MaxPositions, KVBytesPerElement: dtypeBytes(dtype)}
	if m.KVHeads == 0 {
		m.KVHeads = c.NumAttentionHeads
	}
	head := c.HeadDim
	if head == 0 {
		head = c.HiddenSize / c.NumAttentionHeads
	}
	m.KeyDim, m.ValueDim = head, head
	if c.KVLoraRank > 0 { // MLA caches one latent vector plus the rope part per token and layer
		m.KVHeads, m.KeyDim, m.ValueDim = 1, c.KVLoraRank+c.QKRopeHeadDim, 0
	}
	w, err := hfWeights(dir)
	if err != nil {
		return ModelShape{}, err
	}
	m.WeightsBytes = w
	return m, nil
}

// dtypeBytes is the element size of a config dtype (the KV cache follows it
// with vLLM's --kv-cache-dtype auto).
func dtypeBytes(d string) float64 {
	switch d {
	case "float32":
		return 4
	case "float8_e4m3fn", "float8_e5m2", "fp8":
		return 1
	}
	return 2
}

// hfWeights sums the weights of a safetensors model.
func hfWeights(dir string) (uint64, error) {
	var idx struct {
		Metadata struct {
			TotalSize uint64 `json:"total_size"`
		} `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}
	indexPath := filepath.Join(dir, "model.safetensors.index.json")
	if err := readJSON(indexPath, &idx); err == nil {
		if idx.Metadata.TotalSize > 0 {
			return idx.Metadata.TotalSize, nil
		}
		shards := map[string]bool{}
		for _, f := range idx.WeightMap {
			shards[f] = true
		}
		files := make([]string, 0, len(shards))
		for f := range shards {
			if filepath.Base(f) != f {
				return 0, fmt.Errorf("%s: shard %q is not a plain file name", indexPath, f)
			}
			files = append(files, filepath.Join(dir, f))
		}
		sort.Strings(files)
		return sumSafetensors(files)
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if len(files) == 0 {
		return 0, fmt.Errorf("%s: no model.safetensors.index.json and no *.safetensors file", dir)
	}
	return sumSafetensors(files)
}

func sumSafetensors(files []string) (uint64, error) {
	if len(files) > maxShards {
		return 0, fmt.Errorf("%d safetensors shards: more than %d", len(files), maxShards)
	}
	var sum uint64
	for _, f := range files {
		n, err := SafetensorsBytes(f)
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// SafetensorsBytes reads one safetensors file's header and returns the bytes
// of its tensors (the sum of their data_offsets ranges).
func SafetensorsBytes(path string) (uint64, error) {
	f, _, err := safefile.OpenRegular(path, safefile.Follow)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := ParseSafetensorsHeader(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// ParseSafetensorsHeader reads the 8-byte length and the JSON header from r and
// returns the tensor bytes it describes.
func ParseSafetensorsHeader(r io.Reader) (uint64, error) {
	var lb [8]byte
	if _, err := io.ReadFull(r, lb[:]); err != nil {
		return 0, errors.New("not a safetensors file (shorter than its 8-byte header length)")
	}
	n := binary.LittleEndian.Uint64(lb[:])
	if n < 2 || n > maxSafetensorsHead {
		return 0, fmt.Errorf("safetensors header of %d bytes (want 2 to %d)", n, uint64(maxSafetensorsHead))
	}
	head := make([]byte, n)
	if _, err := io.ReadFull(r, head); err != nil {
		return 0, errors.New("safetensors header truncated")
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(head, &entries); err != nil {
		return 0, fmt.Errorf("safetensors header: %w", err)
	}
	var sum uint64
	for name, raw := range entries {
		if name == "__metadata__" {
			continue
		}
		var t struct {
			DataOffsets []uint64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return 0, fmt.Errorf("safetensors tensor %q: %w", name, err)
		}
		if len(t.DataOffsets) != 2 || t.DataOffsets[1] < t.DataOffsets[0] {
			return 0, fmt.Errorf("safetensors tensor %q: bad data_offsets", name)
		}
		sum = satAdd(sum, t.DataOffsets[1]-t.DataOffsets[0])
	}
	return sum, nil
}

// readJSON decodes a small JSON file, refusing one larger than maxConfigBytes.
func readJSON(path string, v any) error {
	// Never waits on a FIFO; links are followed, as the Hugging Face cache
	// keeps its files as links into blobs/.
	b, err := safefile.ReadRegular(path, maxConfigBytes, safefile.Follow)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// hubSnapshot finds a downloaded Hugging Face model ID in the local cache
// ($HF_HOME/hub or ~/.cache/huggingface/hub), "" when it is not there.
func hubSnapshot(id string) string {
	if !strings.Contains(id, "/") || strings.Contains(id, "..") {
		return ""
	}
	cache := os.Getenv("HF_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		cache = filepath.Join(home, ".cache", "huggingface")
	}
	base := filepath.Join(cache, "hub", "models--"+strings.ReplaceAll(id, "/", "--"))
	if ref, err := os.ReadFile(filepath.Join(base, "refs", "main")); err == nil {
		dir := filepath.Join(base, "snapshots", strings.TrimSpace(string(ref)))
		if dirExists(dir) {
			return dir
		}
	}
	snaps, _ := filepath.Glob(filepath.Join(base, "snapshots", "*", "config.json"))
	if len(snaps) == 0 {
		return ""
	}
	return filepath.Dir(snaps[0])
}
