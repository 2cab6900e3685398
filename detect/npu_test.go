package detect

import (
	"strings"
	"testing"
)

// TestNPUCheck: the XDNA NPU and what amd_iommu=off costs it.
func TestNPUCheck(t *testing.T) {
	lspci := fixture(t, "gfx1151-no-devkfd/lspci.txt")
	tests := []checkCase{
		{"NPU and amd_iommu=off", map[string]string{"lspci.txt": lspci, "cmdline.txt": fixture(t, "gfx1151-kernel72-fw20260810/cmdline.txt") + " amd_iommu=off\n"},
			StatusWarn, "XDNA NPU 1022:17f0 at c6:00.1 present, but amd_iommu=off leaves it unusable", `--remove-args="amd_iommu"`},
		{"NPU and iommu=off", map[string]string{"lspci.txt": lspci, "cmdline.txt": "ro iommu=off\n"},
			StatusWarn, "iommu=off leaves it unusable", "kyuz0/amd-strix-halo-toolboxes#66"},
		{"NPU, IOMMU on", map[string]string{"lspci.txt": lspci, "cmdline.txt": "ro quiet\n"},
			StatusOK, "XDNA NPU 1022:17f0 at c6:00.1 (amdxdna bound); IOMMU on, so the NPU can run jobs", ""},
		{"rocminfo's aie2 agent", map[string]string{"rocminfo.txt": fixture(t, "gfx1151-intree-npu/rocminfo.txt")},
			StatusOK, "XDNA NPU (amdxdna bound); IOMMU setting unknown", ""},
		{"SVA bind failed", map[string]string{"lspci.txt": lspci, "cmdline.txt": "ro iommu=pt\n",
			"dmesg.txt": "[   12.1] amdxdna 0000:c6:00.1: [drm] *ERROR* amdxdna_drm_open: SVA bind device failed, ret -95\n"},
			StatusWarn, "SVA bind device failed", "Whether passthrough keeps amdxdna from binding memory is not verified"},
		// The IOMMU on and the bind failing all the same: kernel or driver regressions
		// (amd/xdna-driver#704, #1028), not a setting to hunt for.
		{"SVA bind failed, IOMMU on", map[string]string{"lspci.txt": lspci, "cmdline.txt": "ro quiet\n",
			"dmesg.txt": "[   12.1] amdxdna 0000:c6:00.1: [drm] *ERROR* amdxdna_drm_open: SVA bind device failed, ret -95\n"},
			StatusWarn, "SVA bind device failed", "most likely a kernel or amdxdna regression"},
		{"a whole lspci without an NPU", map[string]string{"lspci.txt": fixture(t, "gfx1100-cedar-lspci/lspci.txt") + fixture(t, "nvidia-only/lspci.txt") + fixture(t, "gfx1151-intree-npu/lspci.txt")},
			StatusSkip, "no XDNA NPU on this machine", ""},
		{"nothing that could show one", map[string]string{"uname.txt": "7.0.0-31-generic\n"}, StatusSkip, "NPU unknown", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCheck(t, Analyse(bundleOf(t, tc.files)), "npu", tc.status)
			if !strings.Contains(c.Summary, tc.want) || !strings.Contains(c.Fix, tc.fix) {
				t.Errorf("summary %q\nfix:\n%s\nwant %q / %q", c.Summary, c.Fix, tc.want, tc.fix)
			}
		})
	}
}
