package serve

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestReadGGUFFromPythonGGUF cross-checks the reader against a file written by
// python3-gguf's own GGUFWriter (scripts/llamacpp-distro/tiny_model.py), where
// python3-gguf is installed (Debian sid, Ubuntu 26.04; not bookworm, where the
// Go-written files above stand in). HALOFORGE_TINY_GGUF names such a file made
// elsewhere (the sid box of the distro proof).
func TestReadGGUFFromPythonGGUF(t *testing.T) {
	p := os.Getenv("HALOFORGE_TINY_GGUF")
	if p == "" {
		if exec.Command("python3", "-c", "import gguf, numpy").Run() != nil {
			t.Skip("python3-gguf is not installed here (not a bookworm package); the Go-written GGUF tests cover the format")
		}
		_, file, _, _ := runtime.Caller(0)
		script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "llamacpp-distro", "tiny_model.py")
		p = filepath.Join(t.TempDir(), "tiny.gguf")
		if out, err := exec.Command("python3", script, p).CombinedOutput(); err != nil {
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
