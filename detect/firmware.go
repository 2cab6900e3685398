package detect

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/haloforge/haloforge/internal/text"
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

// The linux-firmware releases doctor judges MES by, for the texts outside
// detect that name them (diagnose's fixes, checked by its tests).
const (
	// BadMESRelease is the linux-firmware release whose MES 0x83 hangs gfx1151.
	BadMESRelease = badMESRelease
	// FixedMESRelease is the first release after it, with the revert.
	FixedMESRelease = fixedMESRelease
)

// Known-bad linux-firmware releases (detect/hostfix/SOURCES.md).
const (
	// badMESRelease ships MES 0x83, which hangs gfx1151 (and gfx1150)
	// under compute (ROCm/legacy-rocm-build#5724; reverted to 0x80 upstream
	// on 2025-12-01).
	badMESRelease = "20251125"
	// fixedMESRelease is the first upstream release after it, with the
	// revert (openwrt/openwrt#21497 lists 20251125...20260110).
	fixedMESRelease = "20260110"
	// suspectRelease with a 7.2.x kernel: community reports, not AMD's
	// (noamsto/nix-amd-ai#105 on Strix Halo, ublue-os/bazzite#5576 on RDNA2);
	// 20260622 was good, with a 7.1 kernel: #105 says 20260622 does not work
	// with 7.2.x, so both go back together.
	suspectRelease        = "20260810"
	lastGoodBeforeSuspect = "20260622"
)

// mesCheckCmd reads the running MES firmware without root (kernel 6.6+).
const mesCheckCmd = "cat /sys/class/drm/card*/device/fw_version/mes_fw_version   (0x00000083 hangs; no other version is known to)"

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

// distroLabels name each package manager's distributions for people, and
// distroIDs for the plan.
var (
	distroLabels = map[string]string{"rpm": "Fedora", "dpkg": "Ubuntu/Debian", "pacman": "Arch", "suse": "openSUSE", "nix": "NixOS", "portage": "Gentoo"}
	distroIDs    = map[string][]string{"rpm": {DistroFedora}, "dpkg": {DistroUbuntu, DistroDebian}, "pacman": {DistroArch},
		"suse": {DistroSUSE}, "nix": {DistroNixOS}, "portage": {DistroGentoo}}
)

// initramfsRebuild rebuilds every installed kernel's initramfs, which keeps
// its own copy of the amdgpu firmware (it loads before the root filesystem):
// a firmware package changed without it can leave the old MES in use.
// NixOS and Fedora Atomic build theirs with the system.
var initramfsRebuild = map[string]string{
	"rpm":     "sudo dracut -f --regenerate-all",
	"suse":    "sudo dracut -f --regenerate-all",
	"dpkg":    "sudo update-initramfs -u -k all",
	"pacman":  "sudo mkinitcpio -P",
	"portage": "sudo dracut -f --regenerate-all",
}

// firmwareCommands are a firmware change's commands on one distribution
// (by its package manager), the initramfs rebuild included.
type firmwareCommands func(distro, name string, p *FirmwarePackage) []DistroCommand

// firmwareStep is a firmware change for this machine's package: its
// distribution's commands, or every distribution's when it is unknown.
func firmwareStep(r *Report, id, change string, for1 firmwareCommands) Step {
	p := r.Firmware.Package
	var cmds []DistroCommand
	if d := distroOf(p); d != "" {
		cmds = for1(d, pkgNameFor(p, d), p)
	}
	if len(cmds) == 0 {
		for _, d := range []string{"rpm", "dpkg", "pacman", "nix"} {
			cmds = append(cmds, for1(d, pkgNameFor(p, d), p)...)
		}
	}
	return Step{ID: id, Kind: StepFirmware, Change: change, Commands: cmds}
}

// upgradeCommands update the amdgpu firmware package.
func upgradeCommands(distro, name string, _ *FirmwarePackage) []DistroCommand {
	c := DistroCommand{Distros: distroIDs[distro], Label: distroLabels[distro]}
	switch distro {
	case "rpm":
		c.Command = "sudo dnf upgrade --refresh " + name + "\n" + initramfsRebuild[distro]
		c.Note = "or back to 20251111 (ROCm/legacy-rocm-build#5724): sudo dnf install fedora-repos-archive && sudo dnf --enablerepo=updates-archive downgrade " + name + "-20251111"
		return []DistroCommand{c, {Distros: []string{DistroFedoraAtomic}, Label: "Fedora Atomic (Silverblue, Bazzite)", Command: "rpm-ostree upgrade"}}
	case "dpkg", "pacman", "suse":
		c.Command = map[string]string{"dpkg": "sudo apt update && sudo apt install --only-upgrade " + name,
			"pacman": "sudo pacman -Syu " + name, "suse": "sudo zypper update " + name}[distro] + "\n" + initramfsRebuild[distro]
	case "nix":
		c.Note = "update nixpkgs to one with linux-firmware " + fixedMESRelease + " or newer, then sudo nixos-rebuild switch"
	case "portage":
		c.Command = "sudo emerge --ask --update sys-kernel/linux-firmware\n" + initramfsRebuild[distro]
	default:
		return nil
	}
	return []DistroCommand{c}
}

// firmwareUpgrade is the exact way off 20251125 for this machine's package.
func firmwareUpgrade(r *Report, id string) *Remedy {
	return &Remedy{Lead: "Update the firmware to " + fixedMESRelease + " or newer (and rebuild the initramfs, which carries its own copy):",
		Steps: []Step{firmwareStep(r, id, "replace linux-firmware "+badMESRelease+" (MES 0x83 hangs the GPU) with "+fixedMESRelease+" or newer, rebuild the initramfs, then reboot", upgradeCommands)},
		After: "Then reboot and check: " + mesCheckCmd}
}

// rollbackCommands go back to 20260622 together with a 7.1.x kernel and
// keep both: noamsto/nix-amd-ai#105 found 20260622 does not work with 7.2.x.
func rollbackCommands(distro, name string, p *FirmwarePackage) []DistroCommand {
	c := DistroCommand{Distros: distroIDs[distro], Label: distroLabels[distro]}
	v := ""
	if p != nil {
		v = p.Version
	}
	switch distro {
	case "rpm":
		c.Command = "sudo dnf install fedora-repos-archive\n" +
			"sudo dnf --enablerepo=updates-archive downgrade " + name + "-" + lastGoodBeforeSuspect + "\n" +
			"sudo dnf versionlock add " + name + "\n" + initramfsRebuild[distro]
		c.Note = "and boot a 7.1.x kernel with it: pick it in the boot menu (Fedora keeps the last three kernels), make it the default with\n" +
			"sudo grubby --set-default /boot/vmlinuz-<7.1.x version>, and hold it: sudo dnf versionlock add kernel\n" +
			"(undo later: sudo dnf versionlock delete " + name + " kernel)"
		return []DistroCommand{c, {Distros: []string{DistroFedoraAtomic}, Label: "Fedora Atomic (Silverblue, Bazzite)",
			Command: "sudo rpm-ostree rollback", Note: "(boots the previous image: its kernel and firmware go back together)"}}
	case "dpkg":
		c.Command = "apt list -a " + name
		c.Note = "pick the version before " + v + ", then: sudo apt install " + name + "=VERSION && sudo apt-mark hold " + name + " && " + initramfsRebuild[distro] + "\n" +
			"and boot a 7.1.x kernel with it (the boot menu's Advanced options)"
	case "pacman":
		c.Command = "sudo pacman -U /var/cache/pacman/pkg/" + name + "-" + lastGoodBeforeSuspect + "-*.pkg.tar.zst\n" + initramfsRebuild[distro]
		c.Note = "with the 7.1.x linux package from the same cache (one pacman -U for both), then add\n" +
			"IgnorePkg = " + name + " linux  to /etc/pacman.conf"
	case "suse":
		c.Command = "sudo zypper install --oldpackage " + name + "-" + lastGoodBeforeSuspect + " && sudo zypper addlock " + name + "\n" + initramfsRebuild[distro]
		c.Note = "and boot a 7.1.x kernel with it (the boot menu), then: sudo zypper addlock kernel-default"
	case "nix":
		// noamsto/nix-amd-ai#105: d7df67e2 is the last nixpkgs commit with 20260622;
		// its overlay pins the kernel packages with the firmware.
		c.Note = "(noamsto/nix-amd-ai#105) pin linux-firmware and the kernel to nixpkgs d7df67e2 (the last one with 20260622):\n" +
			"flake input:  nixpkgs-firmware.url = \"github:nixos/nixpkgs?rev=d7df67e2ba27de7e4ecd05bd15824b7c09d11831\";\n" +
			"overlay:      linux-firmware = inputs.nixpkgs-firmware.legacyPackages.${prev.stdenv.hostPlatform.system}.linux-firmware;\n" +
			"              linuxPackages_latest = inputs.nixpkgs-firmware.legacyPackages.${prev.stdenv.hostPlatform.system}.linuxPackages_latest;"
	default:
		return nil
	}
	return []DistroCommand{c}
}

// firmwareRollback goes back to the last good pair: a 7.1.x kernel with
// linux-firmware 20260622.
func firmwareRollback(r *Report, lead string) *Remedy {
	return &Remedy{Lead: lead + "If you see this, go back to the last good pair, both together: a 7.1.x kernel with linux-firmware " + lastGoodBeforeSuspect + "\n" +
		"(#105: " + lastGoodBeforeSuspect + " does not work with 7.2.x; 7.1.5 with " + lastGoodBeforeSuspect + " worked in bazzite#5576):",
		Steps: []Step{firmwareStep(r, "firmware:kernel-pair",
			"go back to a 7.1.x kernel with linux-firmware "+lastGoodBeforeSuspect+", both together (users report bad model behaviour with 7.2.x and "+suspectRelease+"), then reboot",
			rollbackCommands)},
		After: "Then reboot."}
}

// overlayFiles are the amdgpu firmware files in the kernel's override
// directories (/lib/firmware/updates/…): the loader reads them before
// /lib/firmware, so a file dropped there by hand beats every later
// linux-firmware update.
func overlayFiles(r *Report) []string { return r.Firmware.Overrides }

// overlayStep removes hand-placed overrides and rebuilds the initramfs.
func overlayStep(r *Report) Step {
	rm := "sudo rm -i"
	for _, f := range overlayFiles(r) {
		rm += " /lib/firmware/" + f
	}
	var cmds []DistroCommand
	for _, d := range []string{"rpm", "dpkg", "pacman"} {
		cmds = append(cmds, DistroCommand{Distros: distroIDs[d], Label: distroLabels[d], Command: rm + "\n" + initramfsRebuild[d]})
	}
	return Step{ID: "firmware:overrides", Kind: StepFirmware, Commands: cmds,
		Change: "remove the amdgpu firmware overrides in /lib/firmware/updates (placed by hand, they beat every linux-firmware update), rebuild the initramfs, then reboot"}
}

// checkFirmwarePair flags the kernel/firmware combinations known to break
// AMD GPUs: linux-firmware 20251125 (MES 0x83) on the RDNA3.5 APUs, kernel
// 7.2.x with linux-firmware 20260810 (users' reports: a warning, never a
// block), and firmware overrides that shadow the package. With amdgpu-dkms,
// its own firmware package wins over linux-firmware: only the running MES
// version tells what loaded.
func checkFirmwarePair(_ *facts, r *Report) Check {
	c := firmwarePair(r)
	if files := overlayFiles(r); len(files) > 0 && !dkmsInUse(r) && (c.Status == StatusOK || c.Status == StatusSkip) {
		return Check{Status: StatusWarn,
			Summary: fmt.Sprintf("%s in /lib/firmware/updates override the firmware package (%s): an override left from a workaround beats every linux-firmware update",
				text.Plural(len(files), "amdgpu firmware file"), strings.Join(files, ", ")),
			Remedy: &Remedy{Lead: "If you placed them by hand (AMD's workaround for MES 0x83 was one such file), remove them now that the package has the fix;\n" +
				"keep them only if a package you installed owns them (dpkg -S / rpm -qf on the file says).",
				Steps: []Step{overlayStep(r)}, After: "Then reboot and check: " + mesCheckCmd}}
	}
	return c
}

// dkmsInUse is true when amdgpu comes from amdgpu-dkms.
func dkmsInUse(r *Report) bool { return r.Kernel.AMDGPUDKMS != nil && *r.Kernel.AMDGPUDKMS }

func firmwarePair(r *Report) Check {
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
	hangs := slices.Contains(mesHangReported, gfx)
	mes := mesNumber(r)
	patched := ""
	if p != nil && strings.Contains(p.Version, "ubuntu") {
		patched = " (a distribution's build of it may carry the revert: the running MES version is the proof)"
	}
	switch {
	case mes == 0x83 && hangs:
		return Check{Status: StatusFail,
			Summary: "the running MES firmware is 0x83, from linux-firmware " + badMESRelease + ": it hangs the GPU under compute (ROCm/legacy-rocm-build#5724)",
			Remedy:  firmwareUpgrade(r, "firmware:kernel-pair")}
	case dkmsInUse(r) && mes >= 0:
		return Check{Status: StatusOK,
			Summary: fmt.Sprintf("amdgpu-dkms loads its own firmware (amdgpu-dkms-firmware wins over linux-firmware); the running MES is 0x%x, not 0x83", mes)}
	case dkmsInUse(r):
		return Check{Status: StatusSkip,
			Summary: "amdgpu-dkms loads its own firmware (amdgpu-dkms-firmware wins over linux-firmware), so the linux-firmware version says nothing; the running MES version is unknown",
			Remedy:  advice("Read the firmware that loaded: " + mesCheckCmd)}
	case release == badMESRelease && slices.Contains(rdna35, gfx) && mes >= 0:
		return Check{Status: StatusOK,
			Summary: fmt.Sprintf("%s is the %s release, but the running MES is 0x%x, not 0x83: this build carries the fix", pkgLabel(p), badMESRelease, mes)}
	case release == badMESRelease && hangs:
		return Check{Status: StatusFail,
			Summary: pkgLabel(p) + " is linux-firmware " + badMESRelease + ", whose MES 0x83 hangs " + gfx + " (ROCm/legacy-rocm-build#5724)" + patched,
			Remedy:  firmwareUpgrade(r, "firmware:kernel-pair")}
	case release == badMESRelease:
		// Reported beyond gfx1151: gfx1150 (ROCm/legacy-rocm-build#5724, KL1RL) and
		// a 780M, gfx1103 (ROCm/ROCm#5180, zw963, with MES failures in dmesg).
		seen := ""
		if mesErrorsSeen(r) {
			seen = "; dmesg shows MES failures"
		}
		return Check{Status: StatusWarn,
			Summary: pkgLabel(p) + " is linux-firmware " + badMESRelease + ", reported to hang the MES of other RDNA 3/3.5 GPUs too (gfx1150, gfx1103)" + seen + patched,
			Remedy:  firmwareUpgrade(r, "firmware:kernel-pair")}
	case k72 && release == suspectRelease:
		return Check{Status: StatusWarn,
			Summary: "kernel " + kernel + " with linux-firmware " + suspectRelease + " (" + pkgLabel(p) + "): users report models looping and stopping mid-task with this pair",
			Remedy: firmwareRollback(r, "A community report, not AMD's: Qwen tool-calling loops and agents stopping mid-task on Strix Halo\n"+
				"(noamsto/nix-amd-ai#105), and a 4x slower RDNA2 GPU (ublue-os/bazzite#5576).\n")}
	case release == "" && k72:
		return Check{Status: StatusSkip,
			Summary: "kernel " + kernel + ": with linux-firmware " + suspectRelease + " users report bad model behaviour, and the firmware version is unknown",
			Remedy:  advice("Check the installed firmware package:\n" + firmwareQueryCmds)}
	case release == "" && mes >= 0 && kok:
		return Check{Status: StatusOK,
			Summary: fmt.Sprintf("kernel %s with MES firmware 0x%x: not a known-bad pair", kernel, mes)}
	case release == "":
		return Check{Status: StatusSkip, Summary: "linux-firmware version unknown (no package manager answered)",
			Remedy: advice("Check the installed firmware package:\n" + firmwareQueryCmds)}
	case !kok && release == suspectRelease:
		return Check{Status: StatusSkip,
			Summary: pkgLabel(p) + " is linux-firmware " + suspectRelease + ", reported bad with kernel 7.2.x; the kernel release is unknown",
			Remedy:  advice("Check the kernel: uname -r")}
	case !kok:
		return Check{Status: StatusOK, Summary: pkgLabel(p) + ": not a known-bad firmware release (kernel unknown)"}
	}
	return Check{Status: StatusOK, Summary: "kernel " + kernel + " with " + pkgLabel(p) + ": not a known-bad pair"}
}

// Firmware overrides: names as the collector lists them.
var (
	// A name starts with a letter or digit: never "." or "..", never an option.
	overrideNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$`)
	overridePathRe = regexp.MustCompile(`^updates/(?:[A-Za-z0-9][A-Za-z0-9._+-]{0,127}/)?amdgpu/[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$`)
)

// maxOverrides bounds the listing: more would be a broken directory, not overrides.
const maxOverrides = 256

// ParseFirmwareOverrides reads firmware-overrides.txt: the files under
// /lib/firmware that override the package ("updates/amdgpu/…"), and
// whether the listing was made at all (its "looked:" line). A line that is
// not such a path is dropped: the names go into commands doctor prints.
func ParseFirmwareOverrides(s string) (files []string, looked bool) {
	files = []string{}
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "/lib/firmware/"))
		switch {
		case strings.HasPrefix(l, "looked:"):
			looked = true
		case overridePathRe.MatchString(l) && len(files) < maxOverrides && !slices.Contains(files, l):
			files = append(files, l)
		}
	}
	return files, looked || len(files) > 0
}
