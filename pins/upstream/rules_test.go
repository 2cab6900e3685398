package upstream

import (
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/haloforge/haloforge/pins"
)

var update = flag.Bool("update", false, "rewrite the resolution table in README.md")

func shippedPins(t *testing.T) *pins.File {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "versions.env")
	f, err := pins.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestEveryShippedPinHasARule: each pin of versions.env is checked somewhere
// or says why not, and the pins the issue names are checked the right way.
func TestEveryShippedPinHasARule(t *testing.T) {
	f := shippedPins(t)
	plans := map[string]plan{}
	for _, p := range planAll(f) {
		plans[p.pin.Name] = p
		if p.method == "" || p.run == nil {
			t.Errorf("%s: no method", p.pin.Name)
		}
		if p.method == methodNone && p.why == "" {
			t.Errorf("%s: unchecked without a reason", p.pin.Name)
		}
		if p.method != methodNone && p.upstream == "" {
			t.Errorf("%s: checked, but against nothing", p.pin.Name)
		}
	}
	for _, s := range pins.Specs() {
		if _, ok := plans[s.Name]; !ok {
			t.Errorf("known name %s is not in versions.env or has no plan", s.Name)
		}
	}
	for name, method := range map[string]string{
		"ROCM_VERSION": methodIndex, "TORCH_VERSION": methodIndex, "TORCHVISION_VERSION": methodIndex,
		"TORCHAUDIO_VERSION": methodIndex, "SOURCE_TORCH_VERSION": methodIndex,
		"THEROCK_INDEX_URL": methodIndexRoot, "SOURCE_TORCH_INDEX_URL": methodIndexRoot,
		"VLLM_IMAGE": methodRegistry, "NIGHTLY_IMAGE": methodRegistry, "SPOOF_BASE_DIGEST": methodRegistry,
		"SPOOF_BASE_IMAGE": methodRegistry, "TOOLBOX_IMAGE": methodRegistry, "OLLAMA_IMAGE": methodRegistry,
		"VLLM_REF": methodGit, "AITER_REF": methodGit, "LLAMACPP_REF": methodGit, "GFX803_VISION_REF": methodGit,
		"VLLM_REPO": methodGit, "THEROCK_REPO": methodGit,
		"GPU_TARGET": methodNone, "PYTHON_VERSION": methodNone, "SPOOF_LOCKED_IMAGE": methodNone,
		"SOURCE_ROCM_VERSION": methodNone, "LLAMA_MODEL": methodNone,
	} {
		if got := plans[name].method; got != method {
			t.Errorf("%s is checked by %q, want %q", name, got, method)
		}
	}
	if got := plans["GFX803_VISION_REF"].upstream; got != "https://github.com/pytorch/vision.git" {
		t.Errorf("GFX803_VISION_REF upstream %q", got)
	}
	if got := plans["SOURCE_VLLM_REF"].upstream; got != f.Values()["VLLM_REPO"] {
		t.Errorf("SOURCE_VLLM_REF upstream %q", got)
	}
}

func TestWheelRulePackages(t *testing.T) {
	values := map[string]string{"GPU_TARGET": "gfx1151;gfx1100", "THEROCK_INDEX_URL": "https://a/", "TORCH_INDEX_URL": "https://b/"}
	w, _ := wheelRule("TORCH_VERSION")
	if url, pin := w.index(values); url != "https://b/" || pin != "TORCH_INDEX_URL" {
		t.Errorf("torch index = %s (%s); TORCH_INDEX_URL wins when set", url, pin)
	}
	delete(values, "TORCH_INDEX_URL")
	if url, _ := w.index(values); url != "https://a/" {
		t.Errorf("torch index = %s; THEROCK_INDEX_URL otherwise", url)
	}
	got := strings.Join(expandPackages(w.Packages, values["GPU_TARGET"]), " ")
	if got != "torch amd-torch-device-gfx1151 amd-torch-device-gfx1100" {
		t.Errorf("packages = %s", got)
	}
}

// TestREADMETable keeps README.md's resolution table what the code does.
// Regenerate with `go test ./pins/upstream -run TestREADMETable -update`.
func TestREADMETable(t *testing.T) {
	const begin, end = "<!-- BEGIN RESOLUTION TABLE (generated; do not edit) -->\n", "<!-- END RESOLUTION TABLE -->"
	doc, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the %q … %q markers", begin, end)
	}
	want := s[:i+len(begin)] + MarkdownTable(Table(shippedPins(t))) + s[j:]
	if want == s {
		return
	}
	if *update {
		if err := os.WriteFile("README.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Error("README.md's resolution table is stale: go test ./pins/upstream -run TestREADMETable -update")
}

func TestEmptyTorchIndexSaysWhere(t *testing.T) {
	f := &pins.File{Pins: []pins.Pin{{Name: "TORCH_INDEX_URL", Kind: pins.KindURL}, {Name: "THEROCK_INDEX_URL", Value: "https://a/", Kind: pins.KindURL}}}
	if why := planAll(f)[0].why; why != "empty: TORCH_VERSION, TORCHVISION_VERSION, TORCHAUDIO_VERSION are looked up on THEROCK_INDEX_URL" {
		t.Errorf("why = %q", why)
	}
}
