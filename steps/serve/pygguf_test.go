package serve

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// pythonGGUF says whether python3-gguf is installed (Debian sid, Ubuntu 26.04;
// not bookworm, where the Go-written GGUF files stand in) and where this
// repository's scripts are.
func pythonGGUF(t *testing.T) string {
	t.Helper()
	if exec.Command("python3", "-c", "import gguf, numpy").Run() != nil {
		t.Skip("python3-gguf is not installed here (not a bookworm package); the Go-written GGUF tests cover the format")
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// TestReadGGUFFromPythonGGUF cross-checks the reader against a file written by
// python3-gguf's own GGUFWriter (scripts/llamacpp-distro/tiny_model.py), where
// python3-gguf is installed. HALOFORGE_TINY_GGUF names such a file made
// elsewhere (the sid box of the distro proof).
func TestReadGGUFFromPythonGGUF(t *testing.T) {
	p := os.Getenv("HALOFORGE_TINY_GGUF")
	if p == "" {
		repo := pythonGGUF(t)
		p = filepath.Join(t.TempDir(), "tiny.gguf")
		if out, err := exec.Command("python3", filepath.Join(repo, "scripts", "llamacpp-distro", "tiny_model.py"), p).CombinedOutput(); err != nil {
			t.Fatalf("tiny_model.py: %v\n%s", err, out)
		}
	}
	g, err := ReadGGUFFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// The same shape as tinyLlama: 730624 bytes of tensors (llama-bench's model_size).
	if g.WeightsBytes() != 730624 || g.BlockCount != 2 || g.KVHeads() != 2 || g.ContextLength != 512 ||
		g.Architecture != "llama" || len(g.Tensors) != 21 || g.Parameters != 364672 {
		t.Fatalf("%s: weights %d, layers %d, kv heads %d, ctx %d, arch %s, %d tensors, %d parameters", p, g.WeightsBytes(),
			g.BlockCount, g.KVHeads(), g.ContextLength, g.Architecture, len(g.Tensors), g.Parameters)
	}
}

// TestShapesFromPythonGGUF: the files testdata/gguf_shapes.py writes with
// python3-gguf (those llama-server sized in testdata/buffers) and the Go
// writer's shapes read the same and get the same fit, dense and MoE.
func TestShapesFromPythonGGUF(t *testing.T) {
	repo := pythonGGUF(t)
	dir := t.TempDir()
	if out, err := exec.Command("python3", filepath.Join(repo, "steps", "serve", "testdata", "gguf_shapes.py"), dir).CombinedOutput(); err != nil {
		t.Fatalf("gguf_shapes.py: %v\n%s", err, out)
	}
	for _, name := range []string{"tiny-moe", "llama1b-q8", "qwen3moe-4l-q8"} {
		t.Run(name, func(t *testing.T) {
			py, err := ReadGGUFFile(filepath.Join(dir, name+".gguf"))
			if err != nil {
				t.Fatal(err)
			}
			gw, err := ReadGGUFFile(shapes[name].writer().write(t, filepath.Join(dir, name+"-go.gguf")))
			if err != nil {
				t.Fatal(err)
			}
			fit := func(g *GGUF) Fit {
				return Estimate(FitRequest{Engine: EngineLlamaCpp, Model: ShapeFromGGUF(g), LimitBytes: 1 << 40, Unified: true})
			}
			if py.WeightsBytes() != gw.WeightsBytes() || len(py.Tensors) != len(gw.Tensors) || py.Parameters != gw.Parameters ||
				py.ExpertCount != gw.ExpertCount || py.ExpertUsed != gw.ExpertUsed || fit(py).NeedBytes != fit(gw).NeedBytes {
				t.Fatalf("python3-gguf %+v %+v\nGo %+v %+v", *py, fit(py), *gw, fit(gw))
			}
		})
	}
}
