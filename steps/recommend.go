package steps

import (
	"slices"

	"github.com/haloforge/haloforge/detect"
)

// Obstacle is a host problem that rules a track out of the recommendation.
type Obstacle string

// The obstacles doctor's facts can show.
const (
	// ROCmBroken: ROCm cannot work on the host (no amdgpu driver, or the
	// MES firmware that hangs gfx1151).
	ROCmBroken Obstacle = "rocm-broken"
	// CannotBuild: too little disk or RAM to compile for hours.
	CannotBuild Obstacle = "cannot-build"
)

// Recommendation says when doctor recommends a track: for which GPU
// targets, unless which host problems, and before which other tracks.
type Recommendation struct {
	For    []string   // GPU targets; empty means any target (the fallback)
	Rank   int        // among the tracks that fit a host, the lowest rank is recommended
	Unless []Obstacle // host problems that rule the track out
}

// fits reports whether the recommendation applies to a host.
func (w *Recommendation) fits(h Host) bool {
	if len(w.For) > 0 && !slices.Contains(w.For, h.GFX) {
		return false
	}
	for _, o := range h.Obstacles {
		if slices.Contains(w.Unless, o) {
			return false
		}
	}
	return true
}

// Host is what the recommendation reads about a machine.
type Host struct {
	GFX       string // the primary GPU's LLVM target; "" when unknown
	Obstacles []Obstacle
}

// Recommend returns the ID of the track doctor recommends for a host: of
// the tracks whose RecommendWhen fits it, the one with the lowest rank
// (the first in catalogue order on a tie). It is "" when the GPU target is
// unknown: recommending blind would be a guess.
func Recommend(h Host) string {
	if h.GFX == "" {
		return ""
	}
	best, bestRank := "", 0
	for _, t := range catalogue {
		w := t.RecommendWhen
		if w != nil && w.fits(h) && (best == "" || w.Rank < bestRank) {
			best, bestRank = t.ID, w.Rank
		}
	}
	return best
}

// RecommendFor reads the host from a doctor report and recommends a track
// for it; `doctor` prints it as recommended_track, the wizard preselects it.
func RecommendFor(r *detect.Report) string {
	h := Host{GFX: r.PrimaryGFX()}
	if r.ROCmBroken() {
		h.Obstacles = append(h.Obstacles, ROCmBroken)
	}
	if r.CannotBuild() {
		h.Obstacles = append(h.Obstacles, CannotBuild)
	}
	return Recommend(h)
}
