package detect

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// FirmwarePackage is the installed package that carries the amdgpu
// firmware, as the package manager names it. A plan can use it to pin or
// roll back exactly this package.
type FirmwarePackage struct {
	Name    string `json:"name"`    // linux-firmware, amd-gpu-firmware, firmware-amd-graphics, linux-firmware-amdgpu, …
	Version string `json:"version"` // as the package manager prints it: 20251111-1.fc43, 20240318.git3b128b60-0ubuntu2.13
	// Release is the upstream linux-firmware release the package is built
	// from (YYYYMMDD, the tag's name); "" when the version does not say.
	Release string `json:"release"`
	// Manager is who reported it: dpkg, rpm, pacman, nix, portage; "" when
	// the text does not say.
	Manager string `json:"manager"`
}

// amdFirmwarePackages carry only the AMD GPU firmware where a distribution
// splits linux-firmware: they win over the umbrella package, since the fix
// for MES 0x83 was to downgrade exactly this one (ROCm/legacy-rocm-build#5724:
// amd-gpu-firmware-20251111-1.fc43).
var amdFirmwarePackages = []string{
	"amd-gpu-firmware",       // Fedora
	"linux-firmware-amdgpu",  // Arch
	"firmware-amd-graphics",  // Debian (firmware-nonfree)
	"kernel-firmware-amdgpu", // openSUSE
}

// umbrellaFirmwarePackages carry all of linux-firmware.
var umbrellaFirmwarePackages = []string{"linux-firmware", "kernel-firmware-all", "linux-firmware-git"}

func firmwarePackageName(n string) bool {
	return slices.Contains(amdFirmwarePackages, n) || slices.Contains(umbrellaFirmwarePackages, n)
}

var (
	// rpm -q: name-version-release.arch; the name may hold dashes, version and release not.
	rpmNEVRARe = regexp.MustCompile(`^([A-Za-z0-9._+-]+?)-([^-\s]+)-([^-\s]+)\.(noarch|x86_64|aarch64|any)$`)
	// dnf list installed: name.arch  version-release  repo
	dnfListRe = regexp.MustCompile(`^([A-Za-z0-9._+-]+)\.(?:noarch|x86_64|aarch64)\s+(\S+)`)
	// dpkg -l: "ii  name  version  arch  description"
	dpkgListRe = regexp.MustCompile(`^[a-zA-Z][a-zA-Z]\s+([A-Za-z0-9.+-]+)(?::\w+)?\s+(\S+)`)
	// dpkg-query -W (name<TAB>version) and pacman -Q (name version).
	nameVersionRe = regexp.MustCompile(`^([A-Za-z0-9.+-]+)(?::\w+)?[\t ]+(\S+)$`)
	// a NixOS store path: /nix/store/<hash>-linux-firmware-20260810-zstd/…
	nixStoreRe = regexp.MustCompile(`/nix/store/[0-9a-z]{32}-(linux-firmware)-(\d{8}[^/\s]*)`)
	// Gentoo: qlist -IRv / equery list: sys-kernel/linux-firmware-20251125
	portageRe = regexp.MustCompile(`sys-kernel/(linux-firmware)-(\d{8}\S*)`)
	// The upstream release at the start of a version, after an epoch:
	// 20251125, 20240318.git3b128b60-0ubuntu2.13, 1:20230210-5.
	releaseDateRe = regexp.MustCompile(`^(?:\d+:)?(20\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01]))(?:$|[^0-9])`)
)

// FirmwareRelease is the upstream linux-firmware release (YYYYMMDD) a
// package version is built from, "" when the version does not start with one.
func FirmwareRelease(version string) string {
	if m := releaseDateRe.FindStringSubmatch(version); m != nil {
		return m[1]
	}
	return ""
}

// managerOf names the package manager of a pasted command line.
func managerOf(cmd string) string {
	f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(cmd), "sudo "))
	if len(f) == 0 {
		return ""
	}
	switch f[0] {
	case "dpkg-query", "dpkg", "apt", "apt-cache":
		return "dpkg"
	case "rpm", "dnf", "yum", "zypper", "rpm-ostree":
		return "rpm"
	case "pacman":
		return "pacman"
	case "readlink", "ls", "realpath", "nix-store":
		return "nix"
	case "qlist", "equery", "emerge":
		return "portage"
	}
	return ""
}

// ParseFirmwarePackages reads firmware-package.txt: the transcript the
// collector writes ("$ dpkg-query -W …", "$ rpm -q …", "$ pacman -Q …",
// "$ readlink …" on NixOS), or the same as a user pastes it (dpkg -l, dnf
// list installed, rpm -qa | grep firmware). It returns the firmware
// packages found, in order; "not installed" lines are no package.
func ParseFirmwarePackages(s string) []FirmwarePackage {
	var out []FirmwarePackage
	manager := ""
	add := func(p FirmwarePackage) {
		if !firmwarePackageName(p.Name) {
			return
		}
		p.Release = FirmwareRelease(p.Version)
		for _, q := range out {
			if q.Name == p.Name && q.Version == p.Version {
				return
			}
		}
		out = append(out, p)
	}
	for _, raw := range strings.Split(s, "\n") {
		t := strings.TrimSpace(cleanLine(raw))
		if t == "" {
			continue
		}
		if mayBePrompt(t) {
			if m := promptRe.FindStringSubmatch(t); m != nil && looksLikeCommand(m[1]) {
				manager = managerOf(m[1])
				continue
			}
		}
		if m := nixStoreRe.FindStringSubmatch(t); m != nil {
			add(FirmwarePackage{Name: m[1], Version: m[2], Manager: "nix"})
			continue
		}
		if m := portageRe.FindStringSubmatch(t); m != nil {
			add(FirmwarePackage{Name: m[1], Version: m[2], Manager: "portage"})
			continue
		}
		if strings.Contains(t, "not installed") || strings.Contains(t, "not found") || strings.Contains(t, "no packages found") {
			continue
		}
		if m := rpmNEVRARe.FindStringSubmatch(t); m != nil && firmwarePackageName(m[1]) {
			add(FirmwarePackage{Name: m[1], Version: m[2] + "-" + m[3], Manager: "rpm"})
			continue
		}
		if m := dnfListRe.FindStringSubmatch(t); m != nil && firmwarePackageName(m[1]) {
			add(FirmwarePackage{Name: m[1], Version: m[2], Manager: "rpm"})
			continue
		}
		if m := dpkgListRe.FindStringSubmatch(t); m != nil && strings.HasPrefix(t, "ii") && firmwarePackageName(m[1]) {
			add(FirmwarePackage{Name: m[1], Version: m[2], Manager: "dpkg"})
			continue
		}
		if m := nameVersionRe.FindStringSubmatch(t); m != nil && firmwarePackageName(m[1]) {
			mgr := manager
			if mgr == "" && strings.Contains(t, "\t") {
				mgr = "dpkg" // dpkg-query's default format is name<TAB>version
			}
			add(FirmwarePackage{Name: m[1], Version: m[2], Manager: mgr})
		}
	}
	return out
}

// amdgpuFirmwarePackage picks the package that carries the amdgpu
// firmware: a distribution's AMD-only package, else the umbrella one.
func amdgpuFirmwarePackage(pkgs []FirmwarePackage) *FirmwarePackage {
	for _, want := range [][]string{amdFirmwarePackages, umbrellaFirmwarePackages} {
		for _, p := range pkgs {
			if slices.Contains(want, p.Name) {
				return &p
			}
		}
	}
	return nil
}

// Known-bad linux-firmware releases (docs/facts.md: mes-firmware, firmware-kernel-pair).
const (
	// badMESRelease ships MES 0x83, which hangs gfx1151 (and gfx1150)
	// under compute (ROCm/legacy-rocm-build#5724; reverted to 0x80 upstream
	// on 2025-12-01).
	badMESRelease = "20251125"
	// suspectRelease with a 7.2.x kernel: community reports, not AMD's
	// (noamsto/nix-amd-ai#105 on Strix Halo, ublue-os/bazzite#5576 on RDNA2);
	// 20260622 was good.
	suspectRelease        = "20260810"
	lastGoodBeforeSuspect = "20260622"
)

// mesCheckCmd reads the running MES firmware without root (kernel 6.6+).
const mesCheckCmd = "cat /sys/class/drm/card*/device/fw_version/mes_fw_version   (0x00000080 is good, 0x00000083 hangs)"

// firmwareQueryCmds ask every package manager for the firmware package.
const firmwareQueryCmds = "  Fedora/openSUSE: rpm -q linux-firmware amd-gpu-firmware kernel-firmware-amdgpu\n" +
	"  Ubuntu/Debian: dpkg-query -W linux-firmware firmware-amd-graphics\n" +
	"  Arch: pacman -Q linux-firmware linux-firmware-amdgpu\n" +
	"  NixOS: readlink -f \"$(cat /sys/module/firmware_class/parameters/path)/amdgpu/gc_11_5_1_mes_2.bin.zst\""

// mesNumber is the running MES version as a number, -1 when unknown.
func mesNumber(r *Report) int64 {
	if r.Firmware.MES == nil {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(*r.Firmware.MES, "0x"), 16, 64)
	if err != nil {
		return -1
	}
	return n
}

// mesErrorsSeen is true when dmesg shows the MES scheduler failing.
func mesErrorsSeen(r *Report) bool {
	w := r.Kernel.Watchdog
	return w != nil && w.MESErrors != nil && *w.MESErrors > 0
}

// pkgLabel is "amd-gpu-firmware 20251125-1.fc43".
func pkgLabel(p *FirmwarePackage) string { return p.Name + " " + p.Version }

// distroOf says whose package this is, to print that distribution's
// commands: from the package manager that reported it, else from the name
// only one distribution uses.
func distroOf(p *FirmwarePackage) string {
	if p == nil {
		return ""
	}
	switch {
	case p.Name == "kernel-firmware-amdgpu" || p.Name == "kernel-firmware-all":
		return "suse"
	case p.Manager != "":
		return p.Manager
	}
	return map[string]string{"amd-gpu-firmware": "rpm", "linux-firmware-amdgpu": "pacman", "firmware-amd-graphics": "dpkg"}[p.Name]
}

// pkgNameFor is the package to name in a distribution's commands: this one
// when it is that distribution's, else the one that distribution uses.
func pkgNameFor(p *FirmwarePackage, distro string) string {
	if p != nil && distroOf(p) == distro {
		return p.Name
	}
	return map[string]string{"rpm": "amd-gpu-firmware", "dpkg": "linux-firmware", "pacman": "linux-firmware-amdgpu",
		"suse": "kernel-firmware-amdgpu", "nix": "linux-firmware", "portage": "linux-firmware"}[distro]
}

// fixBlocks prints the block for this package's distribution, or every
// distribution's when it is unknown.
func fixBlocks(p *FirmwarePackage, block func(distro, name string) string) string {
	if d := distroOf(p); d != "" {
		if b := block(d, pkgNameFor(p, d)); b != "" {
			return "  " + strings.ReplaceAll(b, "\n", "\n  ")
		}
	}
	var out []string
	for _, d := range []string{"rpm", "dpkg", "pacman", "nix"} {
		out = append(out, "  "+strings.ReplaceAll(block(d, pkgNameFor(p, d)), "\n", "\n  "))
	}
	return strings.Join(out, "\n")
}

// firmwareUpgradeFix is the exact way off 20251125 for this package.
func firmwareUpgradeFix(p *FirmwarePackage) string {
	block := func(distro, name string) string {
		switch distro {
		case "rpm":
			return "Fedora: sudo dnf upgrade --refresh " + name + "\n" +
				"  or back to 20251111 (ROCm/legacy-rocm-build#5724): sudo dnf install fedora-repos-archive && sudo dnf --enablerepo=updates-archive downgrade " + name + "-20251111\n" +
				"Fedora Atomic (Silverblue, Bazzite): rpm-ostree upgrade"
		case "dpkg":
			return "Ubuntu/Debian: sudo apt update && sudo apt install --only-upgrade " + name
		case "pacman":
			return "Arch: sudo pacman -Syu " + name
		case "suse":
			return "openSUSE: sudo zypper update " + name
		case "nix":
			return "NixOS: update nixpkgs to one with linux-firmware 20260108 or newer, then sudo nixos-rebuild switch"
		case "portage":
			return "Gentoo: sudo emerge --ask --update sys-kernel/linux-firmware"
		}
		return ""
	}
	return "Update the firmware to 20260108 or newer:\n" + fixBlocks(p, block) + "\nThen reboot and check: " + mesCheckCmd
}

// firmwareRollbackFix is the exact way back to 20260622 (and to keep it).
func firmwareRollbackFix(p *FirmwarePackage) string {
	block := func(distro, name string) string {
		switch distro {
		case "rpm":
			return "Fedora: sudo dnf install fedora-repos-archive\n" +
				"  sudo dnf --enablerepo=updates-archive downgrade " + name + "-" + lastGoodBeforeSuspect + "\n" +
				"  sudo dnf versionlock add " + name + "   (undo later: sudo dnf versionlock delete " + name + ")\n" +
				"Fedora Atomic (Silverblue, Bazzite): sudo rpm-ostree rollback   (boots the previous image)"
		case "dpkg":
			return "Ubuntu/Debian: apt list -a " + name + "   (pick the version before " + p.Version + ")\n" +
				"  sudo apt install " + name + "=VERSION && sudo apt-mark hold " + name
		case "pacman":
			return "Arch: sudo pacman -U /var/cache/pacman/pkg/" + name + "-" + lastGoodBeforeSuspect + "-*.pkg.tar.zst\n" +
				"  then add  IgnorePkg = " + name + "  to /etc/pacman.conf"
		case "suse":
			return "openSUSE: sudo zypper install --oldpackage " + name + "-" + lastGoodBeforeSuspect + " && sudo zypper addlock " + name
		case "nix":
			// noamsto/nix-amd-ai#105: d7df67e2 is the last nixpkgs commit with 20260622.
			return "NixOS (noamsto/nix-amd-ai#105): pin linux-firmware to nixpkgs d7df67e2 (the last one with 20260622):\n" +
				"  flake input:  nixpkgs-firmware.url = \"github:nixos/nixpkgs?rev=d7df67e2ba27de7e4ecd05bd15824b7c09d11831\";\n" +
				"  overlay:      linux-firmware = inputs.nixpkgs-firmware.legacyPackages.${prev.stdenv.hostPlatform.system}.linux-firmware;"
		}
		return ""
	}
	return "If you see this, go back to linux-firmware " + lastGoodBeforeSuspect + " (or boot a 7.1 kernel: 7.1.5 with 20260622 worked in bazzite#5576):\n" +
		fixBlocks(p, block) + "\nThen reboot."
}

// checkFirmwarePair flags the kernel/firmware combinations known to break
// AMD GPUs: linux-firmware 20251125 (MES 0x83) on gfx1151, and kernel 7.2.x
// with linux-firmware 20260810 (users' reports: a warning, never a block).
func checkFirmwarePair(_ *facts, r *Report) Check {
	loaded := r.Driver.Loaded != nil && *r.Driver.Loaded
	if len(r.GPUs) == 0 && !loaded {
		return skip("no AMD GPU: the known-bad kernel/firmware pairs are for amdgpu")
	}
	p := r.Firmware.Package
	release := ""
	if p != nil {
		release = p.Release
	}
	kernel := strOr(r.Kernel.Release, "")
	kv, kok := kernelVersion(kernel)
	k72 := kok && kv[0] == 7 && kv[1] == 2
	gfx := r.PrimaryGFX()
	mes := mesNumber(r)
	patched := ""
	if p != nil && strings.Contains(p.Version, "ubuntu") {
		patched = " (Ubuntu patches its snapshot: the running MES version is the proof)"
	}
	switch {
	case mes == 0x83 && (gfx == "gfx1151" || gfx == "gfx1150"):
		return Check{Status: StatusFail,
			Summary: "the running MES firmware is 0x83, from linux-firmware " + badMESRelease + ": it hangs the GPU under compute (ROCm/legacy-rocm-build#5724)",
			Fix:     firmwareUpgradeFix(p)}
	case release == badMESRelease && (gfx == "gfx1151" || gfx == "gfx1150") && mes >= 0:
		return Check{Status: StatusOK,
			Summary: fmt.Sprintf("%s is the %s release, but the running MES is 0x%x, not 0x83: this build carries the fix", pkgLabel(p), badMESRelease, mes)}
	case release == badMESRelease && gfx == "gfx1151":
		return Check{Status: StatusFail,
			Summary: pkgLabel(p) + " is linux-firmware " + badMESRelease + ", whose MES 0x83 hangs gfx1151 (ROCm/legacy-rocm-build#5724)" + patched,
			Fix:     firmwareUpgradeFix(p)}
	case release == badMESRelease:
		// Reported beyond gfx1151: gfx1150 (ROCm/legacy-rocm-build#5724, KL1RL) and
		// a 780M, gfx1103 (ROCm/ROCm#5180, zw963, with MES failures in dmesg).
		seen := ""
		if mesErrorsSeen(r) {
			seen = "; dmesg shows MES failures"
		}
		return Check{Status: StatusWarn,
			Summary: pkgLabel(p) + " is linux-firmware " + badMESRelease + ", reported to hang the MES of other RDNA 3/3.5 GPUs too (gfx1150, gfx1103)" + seen + patched,
			Fix:     firmwareUpgradeFix(p)}
	case k72 && release == suspectRelease:
		return Check{Status: StatusWarn,
			Summary: "kernel " + kernel + " with linux-firmware " + suspectRelease + " (" + pkgLabel(p) + "): users report models looping and stopping mid-task with this pair",
			Fix: "A community report, not AMD's: Qwen tool-calling loops and agents stopping mid-task on Strix Halo\n" +
				"(noamsto/nix-amd-ai#105), and a 4x slower RDNA2 GPU (ublue-os/bazzite#5576); " + lastGoodBeforeSuspect + " was good.\n" +
				firmwareRollbackFix(p)}
	case release == "" && k72:
		return Check{Status: StatusSkip,
			Summary: "kernel " + kernel + ": with linux-firmware " + suspectRelease + " users report bad model behaviour, and the firmware version is unknown",
			Fix:     "Check the installed firmware package:\n" + firmwareQueryCmds}
	case release == "" && mes >= 0 && kok:
		return Check{Status: StatusOK,
			Summary: fmt.Sprintf("kernel %s with MES firmware 0x%x: not a known-bad pair", kernel, mes)}
	case release == "":
		return Check{Status: StatusSkip, Summary: "linux-firmware version unknown (no package manager answered)",
			Fix: "Check the installed firmware package:\n" + firmwareQueryCmds}
	case !kok && release == suspectRelease:
		return Check{Status: StatusSkip,
			Summary: pkgLabel(p) + " is linux-firmware " + suspectRelease + ", reported bad with kernel 7.2.x; the kernel release is unknown",
			Fix:     "Check the kernel: uname -r"}
	case !kok:
		return Check{Status: StatusOK, Summary: pkgLabel(p) + ": not a known-bad firmware release (kernel unknown)"}
	}
	return Check{Status: StatusOK, Summary: "kernel " + kernel + " with " + pkgLabel(p) + ": not a known-bad pair"}
}
