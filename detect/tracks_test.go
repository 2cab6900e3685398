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

// TestRecommendedTrackIsATrack checks every golden bundle's recommendation.
func TestRecommendedTrackIsATrack(t *testing.T) {
	ids := steps.TrackIDs()
	want := map[string]string{
		"gfx1151-intree-npu": "therock-toolbox", "gfx1151-no-devkfd": "therock-toolbox", "gfx1100": "vllm-image",
		"gfx90a": "vllm-image", "gfx900-7gpus": "llamacpp-vulkan", "gfx803": "legacy-gfx803", "gfx1150": "ollama",
		"nvidia-only": "", "empty": "", "no-kfd": "",
	}
	dirs, _ := filepath.Glob("testdata/bundles/*")
	for _, d := range dirs {
		r := detect.Analyse(readBundle(t, d))
		if r.RecommendedTrack != "" && !slices.Contains(ids, r.RecommendedTrack) {
			t.Errorf("%s: %q is not a track", d, r.RecommendedTrack)
		}
		if w, ok := want[filepath.Base(d)]; ok && r.RecommendedTrack != w {
			t.Errorf("%s: recommended %q, want %q", d, r.RecommendedTrack, w)
		}
	}
}
