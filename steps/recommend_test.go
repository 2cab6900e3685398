package steps

import (
	"slices"
	"testing"
)

// TestRecommend covers each branch of the policy the catalogue declares.
func TestRecommend(t *testing.T) {
	broken, noBuild := []Obstacle{ROCmBroken}, []Obstacle{CannotBuild}
	tests := []struct {
		gfx  string
		obs  []Obstacle
		want string
	}{
		{"gfx1151", nil, "therock-toolbox"},
		{"gfx1151", noBuild, "vllm-image"},
		{"gfx1151", broken, "llamacpp-vulkan"},
		{"gfx1151", []Obstacle{CannotBuild, ROCmBroken}, "llamacpp-vulkan"},
		{"gfx803", nil, "legacy-gfx803"},
		{"gfx803", broken, "legacy-gfx803"}, // nothing else builds for Polaris
		{"gfx1100", nil, "vllm-image"},
		{"gfx1100", noBuild, "vllm-image"}, // prebuilt: compiling is not needed
		{"gfx942", broken, "llamacpp-vulkan"},
		{"gfx1150", nil, "ollama"},
		{"gfx1030", broken, "llamacpp-vulkan"},
		{"gfx900", nil, "llamacpp-vulkan"},
		{"gfx1200", nil, "llamacpp-vulkan"},
		{"", nil, ""}, // an unknown target gets no guess
	}
	for _, tc := range tests {
		if got := Recommend(Host{GFX: tc.gfx, Obstacles: tc.obs}); got != tc.want {
			t.Errorf("Recommend(%s, %v) = %q, want %q", tc.gfx, tc.obs, got, tc.want)
		}
	}
}

// TestRecommendationsAreConsistent: a track is recommended only for targets
// it supports, and two tracks never tie for the same target.
func TestRecommendationsAreConsistent(t *testing.T) {
	type slot struct {
		gfx  string
		rank int
	}
	taken := map[slot]string{}
	fallbacks := 0
	for _, tr := range Catalogue() {
		w := tr.RecommendWhen
		if w == nil {
			continue
		}
		if len(w.For) == 0 {
			fallbacks++
		}
		for _, g := range w.For {
			if !slices.Contains(tr.GFX, g) {
				t.Errorf("%s is recommended for %s, which is not in its GFX list", tr.ID, g)
			}
			if other, ok := taken[slot{g, w.Rank}]; ok {
				t.Errorf("%s and %s tie at rank %d for %s", other, tr.ID, w.Rank, g)
			}
			taken[slot{g, w.Rank}] = tr.ID
		}
		for _, o := range w.Unless {
			if o != ROCmBroken && o != CannotBuild {
				t.Errorf("%s: unknown obstacle %q", tr.ID, o)
			}
		}
	}
	if fallbacks != 1 {
		t.Errorf("%d fallback tracks (recommended for any target), want exactly one", fallbacks)
	}
}
