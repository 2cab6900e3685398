// These tests live in package detect_test so that detect's tests may import
// steps even if steps one day imports detect (DESIGN: detect -> steps).
package detect_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/steps"
)

func readBundle(t *testing.T, dir string) *detect.Bundle {
	t.Helper()
	b, err := detect.ReadBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBlockingChecksExist: the build command looks up each track's blocking
// checks by ID, so every one must be a check doctor produces.
func TestBlockingChecksExist(t *testing.T) {
	for _, tr := range steps.Catalogue() {
		for _, id := range tr.BlockingChecks {
			if !slices.Contains(detect.CheckIDs, id) {
				t.Errorf("track %s blocks on unknown check %q", tr.ID, id)
			}
		}
	}
}

// TestRecommendedTrackIsATrack checks what doctor recommends for the golden
// bundles (steps.RecommendFor on detect's report).
func TestRecommendedTrackIsATrack(t *testing.T) {
	want := map[string]string{
		"gfx1151-intree-npu": "therock-toolbox", "gfx1151-no-devkfd": "therock-toolbox", "gfx1100": "vllm-image",
		"gfx90a": "vllm-image", "gfx900-7gpus": "llamacpp-vulkan", "gfx803": "legacy-gfx803", "gfx1150": "ollama",
		"nvidia-only": "", "empty": "", "no-kfd": "",
	}
	for name, w := range want {
		r := detect.Analyse(readBundle(t, filepath.Join("testdata", "bundles", name)))
		if got := steps.RecommendFor(r); got != w {
			t.Errorf("%s: recommended %q, want %q", name, got, w)
		}
	}
	ids := steps.TrackIDs()
	dirs, _ := filepath.Glob("testdata/bundles/*")
	for _, d := range dirs {
		if got := steps.RecommendFor(detect.Analyse(readBundle(t, d))); got != "" && !slices.Contains(ids, got) {
			t.Errorf("%s: %q is not a track", d, got)
		}
	}
}
