package hostfix

import (
	"testing"

	"github.com/haloforge/haloforge/detect"
)

// TestBundleKeepsTheBootEvidence: a bundle keeps only the files its reader
// knows, so every file `doctor --collect` adds for a plan must be one of
// them, or `doctor --plan --bundle` elsewhere would not see how this
// machine boots.
func TestBundleKeepsTheBootEvidence(t *testing.T) {
	names := []string{bootEvidenceFile}
	for _, g := range bundleGlobs {
		names = append(names, g)
	}
	for _, n := range names {
		if !detect.IsBundleFile(n) {
			t.Errorf("%s is added to bundles but the bundle reader drops it (detect/bundleread.go bundleFiles)", n)
		}
	}
}
