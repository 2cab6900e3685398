package detect

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFirmwareRollbackIsAPair: the 7.2.x + 20260810 rollback goes back to a
// 7.1.x kernel together with 20260622 on every distribution (the report it
// follows, noamsto/nix-amd-ai#105, found 20260622 broken with 7.2.x), the
// NixOS overlay pins the kernel packages with the firmware, and every
// firmware change rebuilds the initramfs where the distribution keeps one.
func TestFirmwareRollbackIsAPair(t *testing.T) {
	for _, pkg := range []string{
		"$ rpm -q amd-gpu-firmware\namd-gpu-firmware-20260810-1.fc44.noarch\n",
		"$ pacman -Q linux-firmware-amdgpu\nlinux-firmware-amdgpu 20260810-1\n",
		"$ dpkg-query -W linux-firmware\nlinux-firmware\t20260810.git1-0ubuntu1\n",
		"$ readlink /nix/store/8d2d1bdpw2qkc1wh6d4wzy8mvmd39w9a-firmware/lib/firmware/amdgpu\n/nix/store/q0v3mxbzlqz8rk3d1cx8f9yjvn1y0dpa-linux-firmware-20260810-zstd/lib/firmware/amdgpu\n",
	} {
		r := analyseStrix(t, map[string]string{"firmware-package.txt": pkg, "uname.txt": "7.2.1-1.fc44.x86_64\n"})
		c := mustCheck(t, r, CheckFirmwarePair, StatusWarn)
		if !strings.Contains(c.Fix, "7.1.x kernel") || !strings.Contains(c.Remedy.Steps[0].Change, "7.1.x kernel with linux-firmware 20260622, both together") {
			t.Errorf("the rollback must be the pair:\n%s", c.Fix)
		}
		for _, dc := range c.Remedy.Steps[0].Commands {
			text := dc.Command + "\n" + dc.Note
			if !strings.Contains(text, "7.1") && !strings.Contains(text, "linuxPackages_latest") && !strings.Contains(text, "rpm-ostree rollback") {
				t.Errorf("%s: the kernel does not go back with the firmware: %q", dc.Label, text)
			}
		}
	}
	r := analyseStrix(t, map[string]string{"uname.txt": "7.2.3\n",
		"firmware-package.txt": "$ readlink x\n/nix/store/q0v3mxbzlqz8rk3d1cx8f9yjvn1y0dpa-linux-firmware-20260810-zstd/lib/firmware/amdgpu\n"})
	if c, _ := r.Check(CheckFirmwarePair); !strings.Contains(c.Fix, "linuxPackages_latest = inputs.nixpkgs-firmware") {
		t.Errorf("NixOS: the overlay of #105 pins the kernel too:\n%s", c.Fix)
	}
}

// TestFirmwareChangesRebuildTheInitramfs: amdgpu loads from the initramfs,
// so the old MES can survive a package change without a rebuild.
func TestFirmwareChangesRebuildTheInitramfs(t *testing.T) {
	for pkg, rebuild := range map[string]string{
		"$ rpm -q amd-gpu-firmware\namd-gpu-firmware-20251125-1.fc43.noarch\n":          "sudo dracut -f --regenerate-all",
		"$ pacman -Q linux-firmware-amdgpu\nlinux-firmware-amdgpu 20251125-2\n":         "sudo mkinitcpio -P",
		"$ dpkg-query -W firmware-amd-graphics\nfirmware-amd-graphics\t20251125-1\n":    "sudo update-initramfs -u -k all",
		"$ rpm -q kernel-firmware-amdgpu\nkernel-firmware-amdgpu-20251125-1.1.noarch\n": "sudo dracut -f --regenerate-all",
	} {
		r := analyseStrix(t, map[string]string{"firmware-package.txt": pkg})
		c := mustCheck(t, r, CheckFirmwarePair, StatusFail)
		cmd := c.Remedy.Steps[0].Commands[0].Command
		if !strings.HasSuffix(cmd, "\n"+rebuild) {
			t.Errorf("%s: the upgrade does not end with the initramfs rebuild:\n%s", c.Remedy.Steps[0].Commands[0].Label, cmd)
		}
	}
}

// TestFirmwareReleaseThatExists: the fixed release is 20260110 (the first
// tag after 20251125); no linux-firmware 20260108 was released.
func TestFirmwareReleaseThatExists(t *testing.T) {
	r := analyseStrix(t, map[string]string{"sys/class/drm/card1/device/fw_version/mes_fw_version": "0x00000083\n"})
	for _, id := range []CheckID{CheckMESFirmware, CheckFirmwarePair} {
		c, _ := r.Check(id)
		if strings.Contains(c.Fix+c.Remedy.Steps[0].Change, "20260108") || !strings.Contains(c.Fix, "20260110") {
			t.Errorf("%s names a release that does not exist:\n%s", id, c.Fix)
		}
	}
	if strings.Contains(mesCheckCmd, "0x00000080 is good") {
		t.Errorf("0x80 is not the one good version (GC 11.5.1 firmware kept changing): %s", mesCheckCmd)
	}
}

// TestDKMSFirmwareIsJudgedByWhatLoaded: with amdgpu-dkms, amdgpu-dkms-firmware
// wins over linux-firmware (ROCm/legacy-rocm-build#5566), so the package's
// date is no evidence: the running MES version is.
func TestDKMSFirmwareIsJudgedByWhatLoaded(t *testing.T) {
	dkms := map[string]string{"sys/module/amdgpu/version": "6.16.6\n", "firmware-package.txt": "$ pacman -Q linux-firmware-amdgpu\nlinux-firmware-amdgpu 20251125-2\n"}
	c := mustCheck(t, analyseStrix(t, dkms), CheckFirmwarePair, StatusSkip)
	if !strings.Contains(c.Summary, "amdgpu-dkms loads its own firmware") {
		t.Errorf("summary %q", c.Summary)
	}
	dkms["sys/class/drm/card1/device/fw_version/mes_fw_version"] = "0x00000080\n"
	mustCheck(t, analyseStrix(t, dkms), CheckFirmwarePair, StatusOK)
	dkms["sys/class/drm/card1/device/fw_version/mes_fw_version"] = "0x00000083\n"
	mustCheck(t, analyseStrix(t, dkms), CheckFirmwarePair, StatusFail)
}

// TestFirmwareOverridesAreReported: a file in /lib/firmware/updates beats
// every later linux-firmware (ROCm/legacy-rocm-build#5616: "Do not forget to
// delete it"), so doctor lists it; names that could not be a firmware file
// never reach the command it prints.
func TestFirmwareOverridesAreReported(t *testing.T) {
	listing := "looked: /lib/firmware/updates/amdgpu /lib/firmware/updates/6.18.9-200.fc43.x86_64/amdgpu\n" +
		"updates/amdgpu/gc_11_5_1_mes_2.bin\n" +
		"updates/amdgpu/evil;rm -rf ~.bin\n" +
		"updates/amdgpu/\x1b[2Jx.bin\n" +
		"updates/../amdgpu/gc_11_5_1_mes_2.bin\n" + // the package's own file, never an override
		"updates/amdgpu/-rf\n"
	r := analyseStrix(t, map[string]string{"firmware-overrides.txt": listing, "uname.txt": "6.18.9-200.fc43.x86_64\n",
		"sys/class/drm/card1/device/fw_version/mes_fw_version": "0x00000080\n"})
	if !slices.Equal(r.Firmware.Overrides, []string{"updates/amdgpu/gc_11_5_1_mes_2.bin"}) {
		t.Fatalf("overrides %q", r.Firmware.Overrides)
	}
	c := mustCheck(t, r, CheckFirmwarePair, StatusWarn)
	if !strings.Contains(c.Summary, "gc_11_5_1_mes_2.bin") || !strings.Contains(c.Fix, "sudo rm -i /lib/firmware/updates/amdgpu/gc_11_5_1_mes_2.bin") {
		t.Errorf("summary %q\nfix:\n%s", c.Summary, c.Fix)
	}
	// Looked and found none: an answer, not a warning.
	r = analyseStrix(t, map[string]string{"firmware-overrides.txt": "looked: /lib/firmware/updates/amdgpu\n"})
	if r.Firmware.Overrides == nil || len(r.Firmware.Overrides) != 0 {
		t.Errorf("empty listing: %q", r.Firmware.Overrides)
	}
	// amdgpu-dkms puts its own firmware there: expected, not stale.
	r = analyseStrix(t, map[string]string{"firmware-overrides.txt": listing, "sys/module/amdgpu/version": "6.16.6\n",
		"sys/class/drm/card1/device/fw_version/mes_fw_version": "0x00000080\n"})
	mustCheck(t, r, CheckFirmwarePair, StatusOK)
}

// TestMESRulesForEveryRDNA35APU: the MES checks run on gfx1150, gfx1151,
// gfx1152 and gfx1153 (one GC 11.5 MES family): 0x83 fails where the hang
// was reported (gfx1150, gfx1151), warns elsewhere, and MES failures in
// dmesg warn on any of them.
func TestMESRulesForEveryRDNA35APU(t *testing.T) {
	node := func(target string) string {
		return "gfx_target_version " + target + "\nsimd_count 32\nsimd_per_cu 2\nvendor_id 4098\n"
	}
	mesFail := "[ 100.1] amdgpu 0000:c4:00.0: amdgpu: MES failed to respond to msg=REMOVE_QUEUE\n"
	tests := []struct {
		name   string
		files  map[string]string
		status Status
		want   string
	}{
		{"gfx1150 on 0x83", map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": node("110500"), "sys/class/drm/card1/device/fw_version/mes_fw_version": "0x00000083\n"}, StatusFail, "broken one"},
		{"gfx1152 on 0x83", map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": node("110502"), "sys/class/drm/card1/device/fw_version/mes_fw_version": "0x00000083\n"}, StatusWarn, "on gfx1152 it is not verified"},
		{"gfx1152 MES failures on 0x82", map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": node("110502"), "sys/class/drm/card1/device/fw_version/mes_fw_version": "0x00000082\n", "dmesg.txt": mesFail}, StatusWarn, "stopped responding 1 time (MES 0x00000082)"},
		{"gfx1150 healthy", map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": node("110500"), "sys/class/drm/card1/device/fw_version/mes_fw_version": "0x00000080\n"}, StatusOK, "MES firmware 0x00000080"},
		{"gfx1100 is not RDNA3.5", map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": node("110000"), "sys/class/drm/card1/device/fw_version/mes_fw_version": "0x00000083\n"}, StatusSkip, "RDNA3.5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCheck(t, Analyse(bundleOf(t, tc.files)), CheckMESFirmware, tc.status)
			if !strings.Contains(c.Summary, tc.want) {
				t.Errorf("summary %q lacks %q", c.Summary, tc.want)
			}
		})
	}
	// The held gfx1150 bundle (a Radeon 890M) is judged now, not skipped as "for gfx1151".
	if c, _ := Analyse(mustBundle(t, "gfx1150")).Check(CheckMESFirmware); strings.Contains(c.Summary, "is for gfx1151") {
		t.Errorf("gfx1150: %s", c.Summary)
	}
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

// TestKernel72FirmwarePair: doctor on a snapshot of a kernel 7.2 box with
// firmware 20260810 warns, with the facts a plan needs and a rollback in
// its fix; a box with 20251125 is flagged and rules ROCm out.
func TestKernel72FirmwarePair(t *testing.T) {
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
