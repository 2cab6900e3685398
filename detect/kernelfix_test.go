package detect

import (
	"strconv"
	"strings"
	"testing"
)

// TestKernelFixByRelease reads a kernel's release the way AMD's RDNA3.5 page
// and the stable trees date the gfx1151 KFD fixes: upstream 6.18.4, the
// 6.12 LTS from 6.12.64, Ubuntu 24.04's HWE kernel from 6.17.0-19 and OEM
// kernel from 6.14.0-1018; a vendor kernel below 6.18.4 cannot be judged by
// its number.
func TestKernelFixByRelease(t *testing.T) {
	tests := []struct {
		rel  string
		want fixState
	}{
		{"6.17.0-19-generic", fixPresent},          // Ubuntu 24.04 HWE, AMD's minimum
		{"6.17.0-35-generic", fixPresent},          // Linux Mint 22.3's HWE kernel (the no-devkfd probe)
		{"6.17.0-18-generic", fixAbsent},           // HWE before the fix: AMD calls it unsupported
		{"6.14.0-1018-oem", fixPresent},            // Ubuntu 24.04 OEM, AMD's minimum
		{"6.14.0-1014-oem", fixAbsent},             // ROCm/legacy-rocm-build#5595's OEM kernel
		{"6.17.0-1032-oem", fixUnknown},            // what linux-oem-24.04d installs in late 2026: not in AMD's list
		{"6.8.0-90-generic", fixAbsent},            // Ubuntu 24.04's GA kernel
		{"6.18.0-8-generic", fixUnknown},           // an Ubuntu 6.18 base with backports: not in AMD's list
		{"7.0.0-31-generic", fixPresent},           // Ubuntu 26.04
		{"6.12.64", fixPresent},                    // the LTS release that took the fixes
		{"6.12.74+deb13+1-amd64", fixPresent},      // Debian 13 (ROCm/ROCm#6143)
		{"6.12.57+deb13-amd64", fixAbsent},         // Debian 13 before 6.12.64 (ROCm/ROCm#5671)
		{"6.18.3-200.fc43.x86_64", fixAbsent},      // one before upstream's
		{"6.18.4-200.fc43.x86_64", fixPresent},     // upstream's
		{"6.16.0-1-mainline", fixAbsent},           // CachyOS (lhl/strix-halo-testing)
		{"6.19.2-arch1-1", fixPresent},             // 6.19 has them from its merge window
		{"6.12.0-55.el10.x86_64", fixUnknown},      // RHEL 10 backports into a 6.12 base
		{"6.4.0-150600.23.42-default", fixUnknown}, // SUSE
		{"6.17.2-1-pve", fixUnknown},               // Proxmox, built from Ubuntu's kernel
		{"7.2.0-ogc4.1.fc44.x86_64", fixPresent},
		{"not-a-version", fixUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.rel, func(t *testing.T) {
			if got := kernelFixByRelease(tc.rel); got.state != tc.want || got.why == "" {
				t.Errorf("%s: %+v, want state %d", tc.rel, got, tc.want)
			}
		})
	}
}

// strixLspci is a gfx1151 as lspci shows it (fixture gfx1151-lspci-1): the
// GPU is known, the KFD topology is not.
const strixLspci = "c5:00.0 Display controller [0380]: Advanced Micro Devices, Inc. [AMD/ATI] Strix Halo [Radeon Graphics / Radeon 8050S Graphics / Radeon 8060S Graphics] [1002:1586] (rev c1)\n"

// TestKernelAndCWSREvidence: kernel-version and cwsr judge the same
// evidence and agree: the KFD topology when collected, else the release
// (vendor backports counted), and amdgpu-dkms is judged by neither. A
// kernel that cannot be judged is "cannot tell", never a warning, so the
// plan sets no stop-gap; the loaded cwsr_enable (modprobe.d or command
// line) counts, so the stop-gap's own alternative clears the warning.
func TestKernelAndCWSREvidence(t *testing.T) {
	// A whole properties dump ends with max_engine_clk_ccompute; only a whole one proves absence.
	noFix := strings.ReplaceAll(strixKFD, "cwsr_size 1\nctl_stack_size 1\n", "") + "max_engine_clk_ccompute 2900\n"
	tests := []struct {
		name         string
		files        map[string]string
		kernel, cwsr Status
		want         string // in the cwsr summary
	}{
		{"KFD lists cwsr_size, the number is old", map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": strixKFD, "uname.txt": "6.14.0-1014-oem\n"},
			StatusOK, StatusOK, "KFD lists cwsr_size"},
		{"KFD lacks cwsr_size, the number is new", map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": noFix, "uname.txt": "7.0.0-31-generic\n"},
			StatusWarn, StatusWarn, "KFD does not list"},
		{"Ubuntu HWE 6.17.0-19", map[string]string{"lspci.txt": strixLspci, "uname.txt": "6.17.0-19-generic\n"},
			StatusOK, StatusOK, "HWE kernel carries them"},
		{"Ubuntu OEM 6.14.0-1018", map[string]string{"lspci.txt": strixLspci, "uname.txt": "6.14.0-1018-oem\n"},
			StatusOK, StatusOK, "OEM kernel carries them"},
		{"Ubuntu OEM 6.17 (linux-oem-24.04d late 2026)", map[string]string{"lspci.txt": strixLspci, "uname.txt": "6.17.0-1032-oem\n"},
			StatusSkip, StatusSkip, "cannot tell"},
		{"6.12 LTS from 6.12.64", map[string]string{"lspci.txt": strixLspci, "uname.txt": "6.12.74+deb13+1-amd64\n"},
			StatusOK, StatusOK, "6.12 LTS carries them"},
		{"6.12 LTS before 6.12.64", map[string]string{"lspci.txt": strixLspci, "uname.txt": "6.12.57+deb13-amd64\n"},
			StatusWarn, StatusWarn, "CWSR is on"},
		{"amdgpu-dkms: the kernel's number is not the driver's", map[string]string{"lspci.txt": strixLspci, "uname.txt": "6.12.57+deb13-amd64\n",
			"sys/module/amdgpu/version": "6.16.6\n"},
			StatusSkip, StatusSkip, "amdgpu comes from amdgpu-dkms 6.16.6"},
		{"RHEL backports", map[string]string{"lspci.txt": strixLspci, "uname.txt": "6.12.0-55.el10.x86_64\n"},
			StatusSkip, StatusSkip, "vendor kernel"},
		{"cwsr_enable=0 in modprobe.d (the loaded value)", map[string]string{"lspci.txt": strixLspci, "uname.txt": "6.16.0-1-mainline\n",
			"sys/module/amdgpu/parameters/cwsr_enable": "0\n"},
			StatusWarn, StatusOK, "loaded amdgpu: cwsr_enable=0"},
		{"the loaded value wins over the command line", map[string]string{"lspci.txt": strixLspci, "uname.txt": "6.16.0-1-mainline\n",
			"sys/module/amdgpu/parameters/cwsr_enable": "1\n", "cmdline.txt": "ro amdgpu.cwsr_enable=0\n"},
			StatusWarn, StatusWarn, "CWSR is on"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Analyse(bundleOf(t, tc.files))
			mustCheck(t, r, CheckKernelVersion, tc.kernel)
			c := mustCheck(t, r, CheckCWSR, tc.cwsr)
			if !strings.Contains(c.Summary+c.Detail, tc.want) {
				t.Errorf("cwsr summary %q lacks %q", c.Summary, tc.want)
			}
			planned := c.Remedy != nil && len(c.Remedy.Args) > 0
			if planned != (tc.cwsr == StatusWarn) {
				t.Errorf("the stop-gap is asked for (%v) exactly when the kernel is known to lack the fix and CWSR is on", planned)
			}
		})
	}
}

// TestKernelAdviceEndsTheLoop: on Ubuntu 24.04 the advice names the package
// AMD names (linux-oem-24.04d), and whatever kernel it installs is accepted
// or cannot be judged, never warned about again.
func TestKernelAdviceEndsTheLoop(t *testing.T) {
	c, ok := kernelStep.For(DistroUbuntu, "24.04")
	if !ok || c.Command != "sudo apt update && sudo apt install linux-oem-24.04d" {
		t.Fatalf("Ubuntu 24.04: %+v", c)
	}
	for _, installed := range []string{"6.14.0-1018-oem", "6.14.0-1025-oem", "6.17.0-1032-oem", "6.17.0-19-generic", "7.0.0-14-generic"} {
		r := Analyse(bundleOf(t, map[string]string{"lspci.txt": strixLspci, "uname.txt": installed + "\n"}))
		if k, _ := r.Check(CheckKernelVersion); k.Flagged() {
			t.Errorf("after the advice (%s) the kernel check warns again: %s", installed, k.Summary)
		}
	}
	for _, d := range []string{DistroFedora, DistroFedoraAtomic, DistroArch, DistroDebian} {
		if _, ok := kernelStep.For(d, ""); !ok {
			t.Errorf("no kernel command for %s", d)
		}
	}
}

// TestFixedKernelsAreTheCheck holds the kernels haloforge names everywhere
// (FixedKernelsText, printed by tracks, diagnose and the docs) to what the
// kernel-version check judges: each line's first release has the fixes and
// the one before it lacks them.
func TestFixedKernelsAreTheCheck(t *testing.T) {
	suffix := map[string]string{"Ubuntu 24.04 HWE": "-generic", "Ubuntu 24.04 OEM": "-oem"}
	for _, k := range FixedKernels {
		t.Run(k.Line, func(t *testing.T) {
			i := strings.LastIndexAny(k.Since, ".-")
			n, err := strconv.Atoi(k.Since[i+1:])
			if err != nil || n == 0 {
				t.Fatalf("%s: %q does not end in a number to step back from", k.Line, k.Since)
			}
			first, before := k.Since+suffix[k.Line], k.Since[:i+1]+strconv.Itoa(n-1)+suffix[k.Line]
			if got := kernelFixByRelease(first); got.state != fixPresent {
				t.Errorf("%s: the check says %+v for %s, the first release named", k.Line, got, first)
			}
			if got := kernelFixByRelease(before); got.state != fixAbsent {
				t.Errorf("%s: the check says %+v for %s, the release before the one named", k.Line, got, before)
			}
		})
	}
	if got, want := FixedKernelsText(), "6.18.4+, 6.12.64+, Ubuntu 24.04 HWE 6.17.0-19+ or OEM 6.14.0-1018+"; got != want {
		t.Errorf("FixedKernelsText() = %q, want %q", got, want)
	}
}
