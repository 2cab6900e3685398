package detect

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// strixKFD is a gfx1151 KFD node (values of the fixtures' prose, see INDEX.md).
const strixKFD = "gfx_target_version 110501\nsimd_count 80\nsimd_per_cu 2\nvendor_id 4098\ndevice_id 5510\ndrm_render_minor 128\ncwsr_size 1\nctl_stack_size 1\n"

// checkCase is one row of a check's table test: the files, the status, a
// text the summary must hold and one the fix (or detail) must hold.
type checkCase struct {
	name   string
	files  map[string]string
	status Status
	want   string
	fix    string
}

// analyseStrix analyses a gfx1151 host (its KFD node) with these files added.
func analyseStrix(t *testing.T, files map[string]string) *Report {
	t.Helper()
	all := map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": strixKFD}
	for k, v := range files {
		all[k] = v
	}
	return Analyse(bundleOf(t, all))
}

// TestParseFirmwarePackages reads every way the firmware package reaches a
// bundle: the collector's transcript per package manager, and what users paste.
func TestParseFirmwarePackages(t *testing.T) {
	tests := []struct {
		name, in string
		want     []FirmwarePackage
	}{
		{"dpkg-query -W (collector)", "$ dpkg-query -W linux-firmware firmware-amd-graphics\nlinux-firmware\t20240318.git3b128b60-0ubuntu2.13\ndpkg-query: no packages found matching firmware-amd-graphics\n",
			[]FirmwarePackage{{"linux-firmware", "20240318.git3b128b60-0ubuntu2.13", "20240318", "dpkg"}}},
		{"rpm -q (collector, Fedora split)", fixture(t, "gfx1151-kernel72-fw20260810/firmware-package.txt"),
			[]FirmwarePackage{{"linux-firmware", "20260810-1.fc44", "20260810", "rpm"}, {"amd-gpu-firmware", "20260810-1.fc44", "20260810", "rpm"}}},
		{"pacman -Q (collector, Arch)", fixture(t, "gfx1151-fw20251125/firmware-package.txt"),
			[]FirmwarePackage{{"linux-firmware", "20251125-2", "20251125", "pacman"}, {"linux-firmware-amdgpu", "20251125-2", "20251125", "pacman"}}},
		{"pacman -Q pasted without the command (c0rb4c, ROCm issue)", "linux-firmware-amdgpu 20251125-2\n",
			[]FirmwarePackage{{"linux-firmware-amdgpu", "20251125-2", "20251125", ""}}},
		{"dnf list installed", "Installed Packages\namd-gpu-firmware.noarch              20251111-1.fc43            @updates\n",
			[]FirmwarePackage{{"amd-gpu-firmware", "20251111-1.fc43", "20251111", "rpm"}}},
		{"rpm -qa | grep firmware", "iwlwifi-mvm-firmware-20251111-1.fc43.noarch\namd-gpu-firmware-20251111-1.fc43.noarch\namd-ucode-firmware-20251111-1.fc43.noarch\n",
			[]FirmwarePackage{{"amd-gpu-firmware", "20251111-1.fc43", "20251111", "rpm"}}},
		{"dpkg -l (Debian, epoch)", "ii  firmware-amd-graphics 1:20230210-5 all Binary firmware for AMD/ATI graphics chips\n",
			[]FirmwarePackage{{"firmware-amd-graphics", "1:20230210-5", "20230210", "dpkg"}}},
		{"NixOS readlink (collector)", "$ readlink /nix/store/8d2d1bdpw2qkc1wh6d4wzy8mvmd39w9a-firmware/lib/firmware/amdgpu\n/nix/store/q0v3mxbzlqz8rk3d1cx8f9yjvn1y0dpa-linux-firmware-20260810-zstd/lib/firmware/amdgpu\n",
			[]FirmwarePackage{{"linux-firmware", "20260810-zstd", "20260810", "nix"}}},
		{"Gentoo qlist", "sys-kernel/linux-firmware-20251125\n", []FirmwarePackage{{"linux-firmware", "20251125", "20251125", "portage"}}},
		{"not installed anywhere", "$ rpm -q linux-firmware\npackage linux-firmware is not installed\nerror: package 'linux-firmware-amdgpu' was not found\n", nil},
		{"other packages only", "linux 6.18.1.arch1-2\nlinux-firmware-whence 20251125-2\namd-ucode 20251125-2\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, ParseFirmwarePackages(tc.in)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	// Pasted as people paste it: prompts, ANSI, CRLF, trailing spaces, quotes.
	// (A pasted prompt also names the manager; the rest must read the same.)
	assertTolerant(t, "pacman", "linux-firmware-amdgpu 20251125-2\n", "pacman -Q linux-firmware-amdgpu", func(s string) []FirmwarePackage {
		ps := ParseFirmwarePackages(s)
		for i := range ps {
			ps[i].Manager = ""
		}
		return ps
	})
	if p := amdgpuFirmwarePackage(ParseFirmwarePackages(fixture(t, "gfx1151-kernel72-fw20260810/firmware-package.txt"))); p == nil || p.Name != "amd-gpu-firmware" {
		t.Errorf("the AMD-only package must win over linux-firmware: %+v", p)
	}
	for v, want := range map[string]string{"20251125": "20251125", "20240318.git3b128b60-0ubuntu2.13": "20240318", "1:20230210-5": "20230210",
		"20251332-1": "", "2025112-1": "", "0.0.20251125": "", "202511250": ""} {
		if got := FirmwareRelease(v); got != want {
			t.Errorf("FirmwareRelease(%q) = %q, want %q", v, got, want)
		}
	}
}

// TestFirmwarePairCheck: 20251125 is flagged on gfx1151, kernel 7.2.x with
// 20260810 warns (never fails), and the running MES version overrules the
// package's date.
func TestFirmwarePairCheck(t *testing.T) {
	rpm := func(v string) string {
		return "$ rpm -q linux-firmware amd-gpu-firmware\namd-gpu-firmware-" + v + ".noarch\n"
	}
	tests := []checkCase{
		{"20251125 on gfx1151", map[string]string{"firmware-package.txt": rpm("20251125-1.fc43"), "uname.txt": "6.18.9-200.fc43.x86_64\n"},
			StatusFail, "amd-gpu-firmware 20251125-1.fc43 is linux-firmware 20251125", "sudo dnf upgrade --refresh amd-gpu-firmware"},
		{"20251125 but MES 0x80 running", map[string]string{"firmware-package.txt": rpm("20251125-2.fc43"), "sys/class/drm/card1/device/fw_version/mes_fw_version": "0x00000080\n"},
			StatusOK, "the running MES is 0x80", ""},
		{"MES 0x83 running, package unknown", map[string]string{"sys/class/drm/card1/device/fw_version/mes_fw_version": "0x00000083\n", "uname.txt": "6.18.9-200.fc43.x86_64\n"},
			StatusFail, "the running MES firmware is 0x83", "Update the firmware to 20260110 or newer"},
		{"kernel 7.2 with 20260810", map[string]string{"firmware-package.txt": rpm("20260810-1.fc44"), "uname.txt": "7.2.1-ogc4.1.fc44.x86_64\n"},
			StatusWarn, "kernel 7.2.1-ogc4.1.fc44.x86_64 with linux-firmware 20260810", "downgrade amd-gpu-firmware-20260622"},
		{"kernel 7.1 with 20260810", map[string]string{"firmware-package.txt": rpm("20260810-1.fc44"), "uname.txt": "7.1.5-ogc5.1.fc44.x86_64\n"},
			StatusOK, "not a known-bad pair", ""},
		{"kernel 7.2 with 20260622", map[string]string{"firmware-package.txt": rpm("20260622-1.fc44"), "uname.txt": "7.2.0-ogc4.1.fc44.x86_64\n"},
			StatusOK, "not a known-bad pair", ""},
		{"kernel 7.2, firmware unknown", map[string]string{"uname.txt": "7.2.0-ogc4.1.fc44.x86_64\n"},
			StatusSkip, "firmware version is unknown", "rpm -q linux-firmware amd-gpu-firmware"},
		{"unknown package, MES 0x80", map[string]string{"firmware.txt": fixture(t, "gfx1151-dkms-512m/firmware.txt"), "uname.txt": "6.18.9-200.fc43.x86_64\n"},
			StatusOK, "MES firmware 0x80: not a known-bad pair", ""},
		{"NixOS 7.2 + 20260810 (nix-amd-ai#105)", map[string]string{"uname.txt": "7.2.3\n",
			"firmware-package.txt": "$ readlink /nix/store/8d2d1bdpw2qkc1wh6d4wzy8mvmd39w9a-firmware/lib/firmware/amdgpu\n/nix/store/q0v3mxbzlqz8rk3d1cx8f9yjvn1y0dpa-linux-firmware-20260810-zstd/lib/firmware/amdgpu\n"},
			StatusWarn, "linux-firmware 20260810", "d7df67e2ba27de7e4ecd05bd15824b7c09d11831"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := analyseStrix(t, tc.files)
			c := mustCheck(t, r, "firmware-kernel-pair", tc.status)
			if !strings.Contains(c.Summary, tc.want) || !strings.Contains(c.Fix, tc.fix) {
				t.Errorf("summary %q\nfix:\n%s\nwant %q / %q", c.Summary, c.Fix, tc.want, tc.fix)
			}
			if tc.status == StatusWarn && r.ROCmBroken() {
				t.Error("a warning must not rule ROCm out")
			}
			if tc.status == StatusFail && !r.ROCmBroken() {
				t.Error("the firmware that hangs gfx1151 rules ROCm out of the recommendation")
			}
		})
	}
	// Not an AMD machine: nothing to say.
	mustCheck(t, Analyse(mustBundle(t, "nvidia-h100-sysfs")), "firmware-kernel-pair", StatusSkip)
	// gfx1150 with 20251125: its MES 0x83 hangs gfx1150 as well (ROCm/legacy-rocm-build#5724,
	// KL1RL; the gc_11_5_0 revert 3d5c8135 missed that release), so it fails as on gfx1151.
	r := Analyse(bundleOf(t, map[string]string{"rocminfo.txt": fixture(t, "gfx1150/rocminfo.txt"), "firmware-package.txt": "linux-firmware-amdgpu 20251125-2\n"}))
	mustCheck(t, r, "firmware-kernel-pair", StatusFail)
	// gfx1103 (a 780M, RDNA3) with 20251125: reported with MES failures, a warning.
	r = Analyse(bundleOf(t, map[string]string{"lspci.txt": "c4:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Phoenix1 [1002:15bf] (rev c4)\n", "firmware-package.txt": "linux-firmware-amdgpu 20251125-2\n"}))
	mustCheck(t, r, "firmware-kernel-pair", StatusWarn)
}

// TestDoneWhenKernel72 is issue 19's "Done when": doctor on a snapshot of a
// kernel 7.2 box with firmware 20260810 warns, and 20251125 is flagged.
func TestDoneWhenKernel72(t *testing.T) {
	r := Analyse(mustBundle(t, "gfx1151-kernel72-fw20260810"))
	c := mustCheck(t, r, "firmware-kernel-pair", StatusWarn)
	if p := r.Firmware.Package; p == nil || p.Name != "amd-gpu-firmware" || p.Release != "20260810" || p.Manager != "rpm" || *r.Kernel.Release != "7.2.0-ogc4.1.fc44.x86_64" {
		t.Errorf("facts a plan needs: %s %s", jsonOf(r.Firmware), jsonOf(r.Kernel.Release))
	}
	if len(r.Failed()) > 0 || r.ROCmBroken() {
		t.Errorf("the pair warns, never blocks: failed %v", r.Failed())
	}
	if !strings.Contains(c.Fix, "noamsto/nix-amd-ai#105") || !strings.Contains(c.Fix, "sudo rpm-ostree rollback") {
		t.Errorf("fix:\n%s", c.Fix)
	}
	old := Analyse(mustBundle(t, "gfx1151-fw20251125"))
	mustCheck(t, old, "firmware-kernel-pair", StatusFail)
	if !old.ROCmBroken() {
		t.Error("20251125 on gfx1151 must rule ROCm out")
	}
}

// TestLockupTimeoutCheck covers the GPU watchdog: the kernel's default is
// fine without evidence of resets; resets in dmesg, a disabled watchdog or a
// value the kernel rejects are not.
func TestLockupTimeoutCheck(t *testing.T) {
	mesHang := fixtureAt(t, "testdata/logs/f058-mes-hang-dmesg.txt")
	compRing := fixtureAt(t, "testdata/logs/comp-ring-timeout-dmesg.txt")
	slowJob := strings.Join(strings.Split(mesHang, "\n")[:5], "\n") + "\n" // the timeout, before any MES error
	tests := []struct {
		checkCase
		gfxMS int64 // the effective watchdog the facts must show (0: not asserted)
	}{
		{checkCase{"default on 7.0 (sysfs empty)", map[string]string{"uname.txt": "7.0.0-31-generic\n", "sys/module/amdgpu/parameters/lockup_timeout": "\n"},
			StatusOK, "amdgpu.lockup_timeout not set: the kernel's 2 s GPU watchdog; dmesg not read", ""}, 2000},
		{checkCase{"default on 6.18", map[string]string{"uname.txt": "6.18.9-200.fc43.x86_64\n", "cmdline.txt": "ro quiet\n", "dmesg.txt": "[    0.0] Linux version 6.18.9-200.fc43.x86_64\n"},
			StatusOK, "not on the kernel command line: the kernel's 10 s GPU watchdog; no GPU job timeouts in dmesg", "amdgpu.lockup_timeout=20000,20000"}, 10000},
		{checkCase{"nothing says how it is set", map[string]string{"uname.txt": "7.0.0-31-generic\n"},
			StatusSkip, "amdgpu.lockup_timeout unknown", "cat /sys/module/amdgpu/parameters/lockup_timeout"}, 0},
		{checkCase{"one value from 6.19: every queue", map[string]string{"uname.txt": "7.1.3-100.fc43.x86_64\n", "cmdline.txt": "ro amdgpu.lockup_timeout=20000\n"},
			StatusOK, "amdgpu.lockup_timeout=20000: GFX jobs may run 20 s and compute jobs 20 s", ""}, 20000},
		{checkCase{"one value before 6.19: not compute", map[string]string{"uname.txt": "6.18.9-200.fc43.x86_64\n", "cmdline.txt": "ro amdgpu.lockup_timeout=20000\n"},
			StatusWarn, "gives GFX jobs 20 s but compute jobs (llama.cpp's Vulkan, ROCm's kernel queues) only 10 s", "amdgpu.lockup_timeout=20000,20000"}, 20000},
		{checkCase{"GFX and compute named before 6.19", map[string]string{"uname.txt": "6.18.9-200.fc43.x86_64\n", "cmdline.txt": "ro amdgpu.lockup_timeout=20000,20000\n"},
			StatusOK, "GFX jobs may run 20 s and compute jobs 20 s", ""}, 20000},
		{checkCase{"per-queue list, kernel unknown", map[string]string{"sys/module/amdgpu/parameters/lockup_timeout": "30000,60000,10000,10000\n"},
			StatusOK, "a GFX job may run 30 s", ""}, 30000},
		{checkCase{"disabled (-1)", map[string]string{"cmdline.txt": "ro amdgpu.lockup_timeout=-1\n"},
			StatusWarn, "the GPU watchdog is off", `--remove-args="amdgpu.lockup_timeout"`}, -1},
		{checkCase{"not a number", map[string]string{"cmdline.txt": "ro amdgpu.lockup_timeout=20s\n"},
			StatusFail, "amdgpu refuses to start", "amdgpu.lockup_timeout=20000"}, 0},
		{checkCase{"a slow job reset the GPU", map[string]string{"uname.txt": "7.0.0-31-generic\n", "cmdline.txt": "ro quiet\n", "dmesg.txt": slowJob},
			StatusWarn, "1 GPU job timeout(s): a job ran longer than its watchdog and the GPU was reset (ring gfx_0.0.0: the GFX queue's 2 s watchdog", "amdgpu.lockup_timeout=20000"}, 2000},
		// A compute ring (llama.cpp's Vulkan queue) is judged by the compute queue's timeout: one value
		// (20000) does not reach it before Linux 6.19, so the job was still cut at 10 s.
		{checkCase{"compute ring with one value before 6.19", map[string]string{"uname.txt": "6.18.9-200.fc43.x86_64\n", "cmdline.txt": "ro amdgpu.lockup_timeout=20000\n", "dmesg.txt": compRing},
			StatusWarn, "ring comp_1.0.0: the compute queue's 10 s watchdog", "amdgpu.lockup_timeout=20000,20000"}, 20000},
		{checkCase{"compute ring with GFX and compute named", map[string]string{"uname.txt": "6.18.9-200.fc43.x86_64\n", "cmdline.txt": "ro amdgpu.lockup_timeout=20000,20000\n", "dmesg.txt": compRing},
			StatusWarn, "a job hangs rather than runs long", "dmesg | grep"}, 20000},
		{checkCase{"the MES hang is not a slow job", map[string]string{"uname.txt": "7.0.0-31-generic\n", "cmdline.txt": "ro quiet\n", "dmesg.txt": mesHang},
			StatusWarn, "1 GPU job timeout(s) with 1 MES error(s)", "firmware-kernel-pair"}, 2000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := analyseStrix(t, tc.files)
			c := mustCheck(t, r, "lockup-timeout", tc.status)
			if !strings.Contains(c.Summary, tc.want) || !strings.Contains(c.Fix+c.Detail, tc.fix) {
				t.Errorf("summary %q\nfix:\n%s\ndetail:\n%s\nwant %q / %q", c.Summary, c.Fix, c.Detail, tc.want, tc.fix)
			}
			if w := r.Kernel.Watchdog; tc.gfxMS != 0 && (w == nil || w.GFXTimeoutMS == nil || *w.GFXTimeoutMS != tc.gfxMS) {
				t.Errorf("watchdog facts %s, want gfx_timeout_ms %d", jsonOf(w), tc.gfxMS)
			}
		})
	}
	// Replacing a value: the old one is removed before the new one is added,
	// or the removal would take the new value with it.
	c := mustCheck(t, Analyse(bundleOf(t, map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": strixKFD, "cmdline.txt": "amdgpu.lockup_timeout=-1\n"})), "lockup-timeout", StatusWarn)
	rm, add := strings.Index(c.Fix, `--remove-args="amdgpu.lockup_timeout"`), strings.Index(c.Fix, `--args="amdgpu.lockup_timeout=20000,20000"`)
	sedRm, sedAdd := strings.Index(c.Fix, `amdgpu\.lockup_timeout=[^ "]*//g`), strings.Index(c.Fix, `&amdgpu.lockup_timeout=20000,20000 /`)
	modRm, modAdd := strings.Index(c.Fix, `s/[[:space:]]+lockup_timeout=[^[:space:]#]*//g`), strings.Index(c.Fix, `"options amdgpu lockup_timeout=20000,20000" | sudo tee -a /etc/modprobe.d/haloforge-amdgpu.conf`)
	if rm < 0 || add < rm || sedRm < 0 || sedAdd < sedRm || modRm < 0 || modAdd < modRm {
		t.Errorf("replacing the value must remove before adding (grubby, GRUB sed, modprobe.d):\n%s", c.Fix)
	}
	mustCheck(t, Analyse(mustBundle(t, "gfx1100")), "lockup-timeout", StatusSkip)
}

// TestParseLockupTimeout follows amdgpu_device_get_job_timeout_settings.
func TestParseLockupTimeout(t *testing.T) {
	for in, want := range map[string]struct {
		ms      int64
		set, ok bool
	}{
		"": {0, false, true}, "0": {0, false, true}, "20000": {20000, true, true}, "-1": {-1, true, true},
		"0x4e20": {20000, true, true}, "10000,60000,10000,10000": {10000, true, true}, "0,60000": {0, false, true},
		"abc": {0, false, false}, "20_000": {0, false, false}, "20000,x": {0, false, false},
	} {
		ms, set, ok := parseLockupTimeout(in)
		if ms != want.ms || set != want.set || ok != want.ok {
			t.Errorf("parseLockupTimeout(%q) = %d %v %v, want %+v", in, ms, set, ok, want)
		}
	}
}

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
