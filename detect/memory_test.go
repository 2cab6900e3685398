package detect

import (
	"strings"
	"testing"
)

// TestCarveoutReasonIsCurrent: since "drm/amdkfd: use GTT for VRAM on APUs
// only if GTT is larger" ROCm uses a carve-out larger than GTT, as the
// held 96 GB bundle's own rocm-smi shows (96 GiB on kernel 7.0); the advice
// (a small carve-out, a large GTT) stays AMD's, the reason no longer claims
// ROCm ignores it.
func TestCarveoutReasonIsCurrent(t *testing.T) {
	r := Analyse(mustBundle(t, "gfx1151-carveout-96g"))
	c := mustCheck(t, r, CheckCarveout, StatusWarn)
	if strings.Contains(c.Summary, "does not count") || !strings.Contains(c.Summary, "gone from Linux") || !strings.Contains(c.Fix, "AMD recommends") {
		t.Errorf("summary %q\nfix:\n%s", c.Summary, c.Fix)
	}
}

// TestGTTAgainstTTMLimit: sysfs GTT and the TTM limit that disagree are a
// finding (the held transcript: GTT 115 GiB, pages_limit 100 GiB), never
// "No issues found"; and the GPU's usable GTT is the smaller of the two.
func TestGTTAgainstTTMLimit(t *testing.T) {
	r := Analyse(mustBundle(t, "gfx1151-sysfs-transcript"))
	c := mustCheck(t, r, CheckGTTSizeDeprecated, StatusWarn)
	if !strings.Contains(c.Summary, "GTT is 115 GiB but the TTM limit (pages_limit) is 100 GiB") {
		t.Errorf("summary %q", c.Summary)
	}
	var b strings.Builder
	if err := r.WriteText(&b, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "No issues found") {
		t.Errorf("doctor says no issues:\n%s", b.String())
	}
	if gtt, what := gttCeiling(r); gtt != 26214400*4096 || what != "TTM pages_limit" {
		t.Errorf("usable GTT %d (%s), want the TTM limit", gtt, what)
	}
	// Agreeing values (in-tree amdgpu sizes GTT from the TTM limit): no finding.
	r = Analyse(bundleOf(t, map[string]string{"sys/class/drm/card0/device/mem_info_gtt_total": "107374182400\n", "sys/module/ttm/parameters/pages_limit": "26214400\n"}))
	mustCheck(t, r, CheckGTTSizeDeprecated, StatusSkip)
}

// TestGTTFixNamesTheTTMModuleInUse: with amdgpu-dkms (its amdttm module),
// the gttsize fix does not send the user to ttm.pages_limit alone (the held
// 6.14 OEM + amdgpu-dkms 6.14.14 machine of ROCm/legacy-rocm-build#5595).
func TestGTTFixNamesTheTTMModuleInUse(t *testing.T) {
	c := mustCheck(t, Analyse(mustBundle(t, "gfx1151-gttsize-deprecated")), CheckGTTSizeDeprecated, StatusWarn)
	if !strings.Contains(c.Fix, "amdttm.pages_limit") {
		t.Errorf("amdgpu-dkms is in use; the fix names ttm only:\n%s", c.Fix)
	}
}
