package detect

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// checkFunc computes one check's verdict from the facts and the merged
// report; runChecks stamps the check's ID on it.
type checkFunc func(f *facts, r *Report) Check

// checkDef is one host check: its identity, its name for people, the
// function that judges it and the commands whose output it reads.
type checkDef struct {
	ID    string    // the check ID (docs/ids.md), as doctor --json prints it
	Title string    // the check's name in doctor's text output
	Run   checkFunc // the verdict
	Doc   string    // one line: what the check looks at
	// Needs are the collector's commands (program names) the check reads: when
	// one timed out or failed and the check could not judge, doctor says so
	// instead of quietly skipping it.
	Needs []string
}

// checks are every host check, in the order doctor prints them (goreleaser's
// pipeline as a slice). To add a check: add a row here and write its
// function; CheckIDs, the order and the titles follow from this table.
var checks = []checkDef{
	{"gpu", "GPU", checkGPU, "an AMD GPU is there and listed by what was collected", []string{"lspci", "rocminfo"}},
	{"gfx-support", "GPU target", checkGFXSupport, "the GPU's LLVM target is one current ROCm builds for", nil},
	{"kernel-version", "Kernel", checkKernel, "the kernel is new enough for gfx1151's KFD/CWSR fixes (6.18.4)", nil},
	{"mes-firmware", "MES firmware", checkMES, "the MES firmware is not the one that hangs gfx1151 (0x83)", nil},
	{"cwsr", "CWSR", checkCWSR, "the kernel has the gfx1151 CWSR fix, or CWSR is off as a stop-gap", nil},
	{"gtt-size", "GTT size", checkGTT, "an integrated GPU may use most of RAM as GTT (ttm.pages_limit)", []string{"dmesg"}},
	{"gttsize-deprecated", "amdgpu.gttsize", checkGTTSizeDeprecated, "no deprecated or misspelt amdgpu.gttsize fights the TTM limit", []string{"dmesg"}},
	{"ttm-module", "TTM module", checkTTMModule, "GTT settings go on the TTM module in use (ttm or amdgpu-dkms's amdttm)", []string{"lsmod", "modinfo"}},
	{"carveout", "BIOS carve-out", checkCarveout, "the BIOS carve-out is small, so memory stays with the OS and GTT", nil},
	{"kfd-access", "/dev/kfd", checkKFDAccess, "this user can open /dev/kfd", []string{"rocminfo"}},
	{"render-groups", "Groups", checkGroups, "the user is in the render and video groups", nil},
	{"hsa-override", "HSA override", checkHSAOverride, "no HSA_OVERRIDE_GFX_VERSION spoofs a native GPU", nil},
	{"iommu", "IOMMU", checkIOMMU, "the IOMMU setting and its NPU/VFIO trade-off on Strix Halo", nil},
	{"container-engine", "Container engine", checkContainerEngine, "podman or docker is installed", []string{"podman", "docker"}},
	{"distrobox", "distrobox", checkDistrobox, "distrobox is installed (therock-toolbox needs it)", []string{"distrobox"}},
	{"disk-space", "Disk space", checkDisk, "the state dir's disk has room for a build (60 GB)", nil},
	{"build-memory", "Build memory", checkBuildMemory, "RAM is enough to compile vLLM and flash-attention", nil},
	{"firmware-kernel-pair", "Firmware/kernel", checkFirmwarePair, "the kernel and linux-firmware are not a known-bad pair (20251125; 7.2.x with 20260810)", []string{"dpkg-query", "rpm", "pacman"}},
	{"lockup-timeout", "GPU watchdog", checkLockupTimeout, "long GPU jobs are not reset by amdgpu's watchdog (amdgpu.lockup_timeout)", []string{"dmesg"}},
	{"npu", "NPU", checkNPU, "the XDNA NPU, when present, is usable with this IOMMU setting", []string{"lspci", "lsmod"}},
}

// CheckIDs are the check IDs (docs/ids.md), in the order doctor prints them.
var CheckIDs = checkIDs()

func checkIDs() []string {
	ids := make([]string, len(checks))
	for i, c := range checks {
		ids[i] = c.ID
	}
	return ids
}

// checkTitle is the check's name for people; the ID when it has none.
func checkTitle(id string) string {
	for _, c := range checks {
		if c.ID == id {
			return c.Title
		}
	}
	return id
}

func runChecks(f *facts, r *Report) []Check {
	out := make([]Check, 0, len(checks))
	for _, def := range checks {
		c := def.Run(f, r)
		if p := f.commandProblem(def.Needs...); c.Status == StatusSkip && p != "" {
			c = unchecked(p, c.Summary)
		}
		c.ID = def.ID
		out = append(out, c)
	}
	return out
}

// unchecked is the verdict of a check whose command did not finish: a
// warning that says which command and why, never a silent skip.
func unchecked(problem, why string) Check {
	return Check{Status: StatusWarn,
		Summary: problem + ", so this was not checked",
		Fix:     "The machine may have been busy. Run the command yourself to see whether it hangs or fails,\nthen run haloforge doctor again.",
		Detail:  "Without it: " + why}
}

func skip(summary string) Check { return Check{Status: StatusSkip, Summary: summary} }

// strixHalo is true when the primary GPU is gfx1151: most host advice is for it.
func strixHalo(r *Report) bool {
	g := r.Primary()
	return g != nil && g.GFX != nil && *g.GFX == "gfx1151"
}

// integrated is true when the primary GPU is known to share system RAM.
func integrated(r *Report) bool {
	g := r.Primary()
	return g != nil && g.Integrated != nil && *g.Integrated
}

func describeGPU(g *GPU) string {
	var parts []string
	if g.GFX != nil {
		parts = append(parts, *g.GFX)
	}
	if g.PCIID != nil {
		parts = append(parts, *g.PCIID)
	}
	if g.Integrated != nil {
		parts = append(parts, map[bool]string{true: "integrated", false: "discrete"}[*g.Integrated])
	}
	if g.ComputeUnits != nil {
		parts = append(parts, fmt.Sprintf("%d CUs", *g.ComputeUnits))
	}
	name := "AMD GPU"
	if g.Name != nil {
		name = *g.Name
	}
	if len(parts) == 0 {
		return name
	}
	return name + " (" + strings.Join(parts, ", ") + ")"
}

func checkGPU(f *facts, r *Report) Check {
	if g := r.Primary(); g != nil {
		s := describeGPU(g)
		if len(r.GPUs) > 1 {
			s = fmt.Sprintf("%d AMD GPUs; first: %s", len(r.GPUs), s)
		}
		return Check{Status: StatusOK, Summary: s}
	}
	// Only a source that lists GPUs can tell that there is none; a live
	// collection looked at sysfs and PCI, so finding nothing is an answer.
	listing := len(f.kfd) > 0 || len(f.pci) > 0 || f.manifest != nil
	for _, name := range []string{"rocminfo.txt", "lspci.txt", "amd-smi.txt", "rocm-smi.txt", "vulkaninfo.txt"} {
		listing = listing || f.b.Has(name)
	}
	loaded := r.Driver.Loaded != nil && *r.Driver.Loaded
	switch {
	case !listing && loaded:
		return skip("amdgpu is loaded, but nothing collected lists the GPUs (no rocminfo, lspci or sysfs)")
	case !listing:
		return skip("nothing collected about GPUs (no lspci, rocminfo, sysfs or vulkaninfo)")
	case loaded:
		return Check{Status: StatusWarn,
			Summary: "amdgpu driver is loaded but no GPU could be listed (device nodes not reachable?)",
			Fix:     "Run haloforge doctor on the host itself, not in a container or sandbox without /dev/kfd and /dev/dri;\nsee the kfd-access check."}
	case len(r.OtherGPUs) == 0 && len(f.pci) == 0 && f.commandProblem("lspci", "rocminfo") != "":
		// Nothing listed the GPUs: that says nothing about whether there are any.
		return unchecked(f.commandProblem("lspci", "rocminfo"), "no GPU was listed")
	}
	bios := "it is enabled in the BIOS and that the amdgpu driver binds to it:\n" +
		"  lspci -nnk | grep -A3 -E 'VGA|Display|3D'   (or: grep -H . /sys/bus/pci/devices/*/class)"
	var seen, foreign []string
	for _, o := range r.OtherGPUs {
		name := strOr(o.Name, "display controller")
		if v := vendorTitle(o.Vendor); v != "" && !strings.Contains(strings.ToLower(name), strings.ToLower(v)) {
			name = v + " " + name
		}
		if o.PCIID != nil && !strings.Contains(name, *o.PCIID) {
			name += " (" + *o.PCIID + ")"
		}
		seen = append(seen, name)
		if o.Vendor != "amd" {
			foreign = append(foreign, name)
		}
	}
	if len(seen) == 0 {
		return Check{Status: StatusFail, Summary: "no AMD GPU found",
			Fix: "haloforge targets AMD GPUs (Strix Halo gfx1151 first). If this machine has one, check that " + bios}
	}
	sum := "no AMD GPU found; this machine has " + strings.Join(seen, ", ")
	if len(foreign) == len(seen) {
		// Only other vendors' GPUs: say plainly what haloforge is for, not
		// BIOS advice that cannot help (issue 14: the NVIDIA H100 machine).
		return Check{Status: StatusFail, Summary: sum,
			Fix: "haloforge sets up AMD GPUs (Strix Halo, gfx1151, first); it cannot drive " + strings.Join(foreign, ", ") + ".\n" +
				"To see what it does on a Strix Halo, run: haloforge demo\n" +
				"If this machine also has an AMD GPU, check that " + bios}
	}
	return Check{Status: StatusFail, Summary: sum,
		Fix: "haloforge targets AMD GPUs that ROCm or Vulkan can drive (Strix Halo gfx1151 first). If this machine has one, check that " + bios}
}

// rocmGFX are the targets current ROCm builds for (and that tracks use).
var rocmGFX = []string{"gfx1151", "gfx1150", "gfx1152", "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1030", "gfx1200", "gfx1201", "gfx90a", "gfx942", "gfx950", "gfx908"}

func checkGFXSupport(_ *facts, r *Report) Check {
	g := r.Primary()
	if g == nil || g.GFX == nil {
		return skip("GPU target unknown")
	}
	gfx := *g.GFX
	switch {
	case gfx == "gfx1151":
		return Check{Status: StatusOK, Summary: "gfx1151 (Strix Halo) is a native target of TheRock ROCm and PyTorch wheels"}
	case gfx == "gfx803":
		return Check{Status: StatusWarn, Summary: "gfx803 (Polaris) was dropped by ROCm; only the legacy-gfx803 source build works",
			Fix: "haloforge build --track legacy-gfx803"}
	case gfx == "gfx900" || gfx == "gfx906":
		return Check{Status: StatusWarn, Summary: gfx + " (Vega) is deprecated in current ROCm: no new PyTorch wheels",
			Fix: "Use Vulkan instead: haloforge build --track llamacpp-vulkan"}
	case slices.Contains(rocmGFX, gfx):
		return Check{Status: StatusOK, Summary: gfx + " is supported by ROCm (the gfx1151 tracks do not fit it; see the recommended track)"}
	}
	return Check{Status: StatusWarn, Summary: gfx + " is not an official ROCm target",
		Fix: "Vulkan works on most AMD GPUs: haloforge build --track llamacpp-vulkan"}
}

var kernelVerRe = regexp.MustCompile(`^(\d+)\.(\d+)(?:\.(\d+))?`)

// kernelVersion parses "6.18.9-200.fc43.x86_64" into comparable parts.
func kernelVersion(rel string) ([3]int, bool) {
	m := kernelVerRe.FindStringSubmatch(rel)
	if m == nil {
		return [3]int{}, false
	}
	var v [3]int
	for i := 0; i < 3; i++ {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v, true
}

func versionLess(a, b [3]int) bool { return slices.Compare(a[:], b[:]) < 0 }

func checkKernel(_ *facts, r *Report) Check {
	if r.Kernel.Release == nil {
		return skip("kernel release unknown (no uname, dmesg or /proc/cmdline)")
	}
	rel := *r.Kernel.Release
	v, ok := kernelVersion(rel)
	if !ok {
		return skip("kernel release " + rel + " is not a version haloforge can read")
	}
	if !strixHalo(r) {
		return Check{Status: StatusOK, Summary: "kernel " + rel}
	}
	if versionLess(v, [3]int{6, 18, 4}) {
		return Check{Status: StatusWarn,
			Summary: "kernel " + rel + " is older than 6.18.4, which has the gfx1151 KFD/CWSR fixes",
			Fix: "Install a kernel >= 6.18.4: Fedora 43, Ubuntu 26.04 and Arch ship one; on Ubuntu 24.04 use linux-oem-24.04\n" +
				"(sudo apt install linux-oem-24.04) or a mainline kernel. Until then see the cwsr check for the stop-gap."}
	}
	return Check{Status: StatusOK, Summary: "kernel " + rel + " (>= 6.18.4 has the gfx1151 KFD fixes)"}
}

func checkMES(_ *facts, r *Report) Check {
	if !strixHalo(r) {
		return skip("MES firmware advice is for gfx1151")
	}
	const how = "cat /sys/class/drm/card*/device/fw_version/mes_fw_version   (kernel 6.6+; older: sudo grep MES /sys/kernel/debug/dri/*/amdgpu_firmware_info)"
	if r.Firmware.MES == nil {
		return Check{Status: StatusSkip, Summary: "MES firmware version unknown (not collected: sysfs fw_version/mes_fw_version, or debugfs as root)",
			Fix: "Check it with: " + how + "\n0x00000080 is good; 0x00000083 (linux-firmware 20251125) hangs the GPU."}
	}
	mes := *r.Firmware.MES
	n, _ := strconv.ParseInt(strings.TrimPrefix(mes, "0x"), 16, 64)
	if n == 0x83 {
		return Check{Status: StatusFail, Summary: "MES firmware " + mes + " is the broken one from linux-firmware 20251125 (GPU hangs, ROCm#5724)",
			Fix: "Update linux-firmware to 20260108 or newer (or go back to 20251111):\n" +
				"  Fedora: sudo dnf upgrade --refresh linux-firmware\n  Ubuntu/Debian: sudo apt update && sudo apt install --only-upgrade linux-firmware\nThen reboot and re-check: " + how}
	}
	return Check{Status: StatusOK, Summary: "MES firmware " + mes}
}

func checkCWSR(f *facts, r *Report) Check {
	if !strixHalo(r) {
		return skip("the CWSR fix matters for gfx1151")
	}
	disabled := false
	if f.cmdline != nil {
		v, ok := f.cmdline.Get("amdgpu.cwsr_enable")
		disabled = ok && v == "0"
	}
	g := r.Primary()
	fix := "Stop-gap until the kernel has the fix: add amdgpu.cwsr_enable=0 (costs some preemption; drop it on kernel >= 7.0 with ROCm >= 7.2.1).\n" +
		kernelArgsFix([]string{"amdgpu.cwsr_enable=0"}, nil, osID(r))
	switch {
	case g.CWSR != nil && *g.CWSR:
		return Check{Status: StatusOK, Summary: "the kernel has the gfx1151 CWSR fix (KFD lists cwsr_size and ctl_stack_size)"}
	case disabled:
		return Check{Status: StatusOK, Summary: "CWSR is disabled (amdgpu.cwsr_enable=0), the stop-gap for older kernels"}
	case g.CWSR != nil:
		return Check{Status: StatusWarn, Summary: "the kernel lacks the gfx1151 CWSR fix: compute jobs can hang", Fix: fix}
	}
	if r.Kernel.Release != nil {
		if v, ok := kernelVersion(*r.Kernel.Release); ok {
			if !versionLess(v, [3]int{7, 0, 0}) {
				return Check{Status: StatusOK, Summary: "kernel " + *r.Kernel.Release + " has the CWSR save-area fix (7.0+)"}
			}
			if versionLess(v, [3]int{6, 18, 4}) {
				return Check{Status: StatusWarn, Summary: "kernel " + *r.Kernel.Release + " predates the gfx1151 CWSR fixes and CWSR is on", Fix: fix}
			}
		}
	}
	return skip("cannot tell whether the CWSR fix is there (no KFD topology)")
}

func osID(r *Report) string {
	if r.Host.OSID == nil {
		return ""
	}
	return *r.Host.OSID
}

// gttCeiling is the GTT the GPU can use: the driver's figure, else the TTM limit.
func gttCeiling(r *Report) (int64, string) {
	if g := r.Primary(); g != nil && g.GTTBytes != nil {
		return *g.GTTBytes, "GTT"
	}
	if r.Kernel.TTMPagesLimit != nil {
		return *r.Kernel.TTMPagesLimit * 4096, "TTM pages_limit"
	}
	return 0, ""
}

func checkGTT(_ *facts, r *Report) Check {
	if !integrated(r) {
		return skip("GTT sizing matters for integrated GPUs (unified memory)")
	}
	gtt, what := gttCeiling(r)
	if gtt == 0 {
		return skip("GTT size unknown (no sysfs mem_info_gtt_total, dmesg or TTM limit)")
	}
	if r.Memory.TotalBytes == nil {
		return Check{Status: StatusSkip, Summary: what + " " + fmtGiB(gtt) + "; RAM unknown, so no target to compare with"}
	}
	ram := *r.Memory.TotalBytes
	p := planGTT(ram)
	sum := fmt.Sprintf("%s %s of %s RAM", what, fmtGiB(gtt), fmtGiB(ram))
	if float64(gtt) >= 0.7*float64(ram) {
		return Check{Status: StatusOK, Summary: sum}
	}
	dkms := usesAMDTTM(r)
	fix := fmt.Sprintf("Let the GPU use %d GiB (RAM %s minus %d GiB kept for the OS): ttm.pages_limit=%d (= %d GiB x 262144 pages of 4 KiB).\n",
		p.GiB, fmtGiB(ram), p.ReserveGiB, p.Pages, p.GiB)
	if dkms {
		fix += "amdgpu-dkms is loaded, so set the same on amdttm.\n"
	}
	fix += kernelArgsFix(gttArgs(p, dkms), nil, osID(r)) + "\nCheck after the reboot: cat /sys/module/" + ttmName(r) + "/parameters/pages_limit"
	return Check{Status: StatusWarn, Summary: sum + ": the GPU can use only about half of the memory", Fix: fix}
}

func ttmName(r *Report) string {
	if r.Kernel.TTMModule != nil {
		return *r.Kernel.TTMModule
	}
	return "ttm"
}

func checkGTTSizeDeprecated(f *facts, r *Report) Check {
	var bad []string
	if f.cmdline != nil {
		for _, k := range []string{"amdgpu.gttsize", "amdgpu.gtt_size"} {
			if _, ok := f.cmdline.Get(k); ok {
				bad = append(bad, k)
			}
		}
	}
	switch {
	case f.dmesg.GTTMismatch && len(bad) == 0:
		return Check{Status: StatusWarn, Summary: "dmesg: the GTT size set by amdgpu disagrees with the TTM limit (\"this is unusual\")",
			Fix: "Set GTT in one place only: remove amdgpu.gttsize (kernel command line and /etc/modprobe.d) and keep ttm.pages_limit:\n" +
				kernelArgsFix(nil, []string{"amdgpu.gttsize"}, osID(r))}
	case len(bad) > 0 || f.dmesg.GTTSizeDeprecated:
		if len(bad) == 0 {
			bad = []string{"amdgpu.gttsize"}
		}
		sum := strings.Join(bad, " and ") + " on the command line: deprecated, use ttm.pages_limit"
		if slices.Contains(bad, "amdgpu.gtt_size") {
			sum = "amdgpu.gtt_size is not a parameter (the kernel ignores it) and amdgpu.gttsize is deprecated: use ttm.pages_limit"
		}
		if d := f.dmesg; d.GTTAsked != nil {
			sum = fmt.Sprintf("amdgpu.gttsize asks %s but TTM allows only %s (dmesg: \"this is unusual\"): use ttm.pages_limit",
				fmtGiB(*d.GTTAsked), fmtGiB(*d.TTMSize))
		}
		fix := "Remove it and size GTT with ttm.pages_limit (see gtt-size):\n" + kernelArgsFix(nil, bad, osID(r))
		if r.Memory.TotalBytes != nil {
			p := planGTT(*r.Memory.TotalBytes)
			dkms := usesAMDTTM(r)
			fix = fmt.Sprintf("Replace it with ttm.pages_limit=%d (%d GiB):\n", p.Pages, p.GiB) + kernelArgsFix(gttArgs(p, dkms), bad, osID(r))
		}
		return Check{Status: StatusWarn, Summary: sum, Fix: fix}
	case f.cmdline == nil && !f.b.Has("dmesg.txt"):
		return skip("kernel command line unknown")
	}
	return Check{Status: StatusOK, Summary: "no amdgpu.gttsize on the command line"}
}

// usesAMDTTM is true when amdgpu-dkms brings its own TTM module (amdttm).
func usesAMDTTM(r *Report) bool {
	if r.Kernel.TTMModule != nil {
		return *r.Kernel.TTMModule == "amdttm"
	}
	return r.Kernel.AMDGPUDKMS != nil && *r.Kernel.AMDGPUDKMS
}

func checkTTMModule(f *facts, r *Report) Check {
	if r.Kernel.TTMModule == nil && r.Kernel.AMDGPUDKMS == nil {
		return skip("TTM module unknown (no lsmod, modinfo or /sys/module)")
	}
	if !usesAMDTTM(r) {
		return Check{Status: StatusOK, Summary: "in-tree amdgpu and ttm: GTT is set with ttm.pages_limit"}
	}
	amd, hasAMD := f.cmdlineGet("amdttm.pages_limit")
	v, hasTTM := f.cmdlineGet("ttm.pages_limit")
	switch {
	case hasTTM && !hasAMD && integrated(r):
		return Check{Status: StatusWarn, Summary: "amdgpu-dkms uses amdttm, which ignores ttm.pages_limit=" + v,
			Fix: "Set the same value on amdttm:\n" + kernelArgsFix([]string{"amdttm.pages_limit=" + v, "amdttm.page_pool_size=" + v}, nil, osID(r))}
	case hasAMD:
		return Check{Status: StatusOK, Summary: "amdgpu-dkms with amdttm.pages_limit=" + amd}
	}
	return Check{Status: StatusOK, Summary: "amdgpu-dkms: its TTM module is amdttm, so GTT settings go on amdttm. as well as ttm."}
}

func (f *facts) cmdlineGet(k string) (string, bool) {
	if f.cmdline == nil {
		return "", false
	}
	return f.cmdline.Get(k)
}

func checkCarveout(_ *facts, r *Report) Check {
	if !integrated(r) {
		return skip("the BIOS carve-out matters for integrated GPUs")
	}
	g := r.Primary()
	if g.VRAMBytes == nil {
		return skip("VRAM carve-out size unknown")
	}
	v := *g.VRAMBytes
	if v <= 2*gib {
		return Check{Status: StatusOK, Summary: "BIOS carve-out " + fmtMiB(v) + ": memory stays with the OS and GTT"}
	}
	return Check{Status: StatusWarn,
		Summary: "BIOS carve-out " + fmtGiB(v) + ": RAM taken from the OS shrinks GTT, and ROCm does not count the carve-out",
		Fix: "In the BIOS/UEFI set the UMA frame buffer (\"iGPU memory\", \"UMA size\") to its minimum, 512 MB,\n" +
			"then grow GTT with ttm.pages_limit instead (see gtt-size). A 96 GB carve-out left ROCm a 15 GiB pool."}
}

func fmtMiB(b int64) string {
	if b >= gib {
		return fmtGiB(b)
	}
	return fmt.Sprintf("%d MiB", b>>20)
}

func checkKFDAccess(f *facts, r *Report) Check {
	fixGroups := "sudo usermod -aG render,video $USER\nthen log out and back in (or reboot) so the new groups apply."
	kfdErr := f.rocminfo.KFDError
	state := ""
	if r.Host.KFD != nil {
		state = *r.Host.KFD
	}
	switch {
	case state == "denied" || strings.Contains(kfdErr, "Permission denied"):
		return Check{Status: StatusFail, Summary: "/dev/kfd exists but this user cannot open it", Fix: fixGroups}
	case state == "missing" || kfdErr != "":
		loaded := r.Driver.Loaded != nil && *r.Driver.Loaded
		if loaded || len(r.GPUs) > 0 {
			return Check{Status: StatusFail, Summary: "amdgpu is loaded but /dev/kfd is not reachable here: device nodes not mapped (container or sandbox?)",
				Fix: "Run on the host, or pass the devices to the container:\n  podman run --device /dev/kfd --device /dev/dri --group-add keep-groups --security-opt seccomp=unconfined …\n" +
					"If this is the host: ls -l /dev/kfd; nomodeset on the kernel command line also stops amdgpu compute."}
		}
		return Check{Status: StatusFail, Summary: "/dev/kfd does not exist: the amdgpu kernel driver is not loaded",
			Fix: "Load the driver: sudo modprobe amdgpu; check dmesg | grep -i amdgpu for why it did not bind."}
	case state == "ok" || state == "present" || len(f.rocminfo.GPUs()) > 0:
		return Check{Status: StatusOK, Summary: "/dev/kfd is reachable"}
	}
	return skip("/dev/kfd access unknown")
}

func checkGroups(_ *facts, r *Report) Check {
	if r.Host.Groups == nil {
		return skip("user groups unknown")
	}
	if r.Host.User != nil && *r.Host.User == "root" {
		return skip("collected as root: run haloforge doctor as the user who will build to check their groups")
	}
	var missing []string
	for _, g := range []string{"render", "video"} {
		if !slices.Contains(r.Host.Groups, g) {
			missing = append(missing, g)
		}
	}
	if len(missing) == 0 {
		return Check{Status: StatusOK, Summary: "user is in render and video"}
	}
	return Check{Status: StatusWarn, Summary: "user is not in " + strings.Join(missing, " and ") + ": /dev/kfd and /dev/dri/renderD* need them",
		Fix: "sudo usermod -aG render,video $USER\nthen log out and back in (or reboot) so the new groups apply."}
}

func checkHSAOverride(f *facts, r *Report) Check {
	g := r.Primary()
	ov := r.Host.HSAOverride
	unset := "unset HSA_OVERRIDE_GFX_VERSION   # and remove it from ~/.bashrc, ~/.profile, /etc/environment and container env"
	if ov != nil {
		target, _ := GFXFromOverride(*ov)
		sum := "HSA_OVERRIDE_GFX_VERSION=" + *ov
		if target != "" {
			sum += " makes ROCm treat the GPU as " + target
		}
		if g != nil && g.GFX != nil && *g.GFX == "gfx1151" && target != "gfx1151" {
			return Check{Status: StatusWarn, Summary: sum + "; gfx1151 is native, the spoof only risks illegal-instruction crashes", Fix: unset}
		}
		return Check{Status: StatusOK, Summary: sum}
	}
	if g != nil && g.RuntimeGFX != nil {
		return Check{Status: StatusWarn,
			Summary: "rocminfo reports " + *g.RuntimeGFX + " on a " + strOr(g.GFX, "different") + " GPU: an HSA_OVERRIDE_GFX_VERSION is likely set",
			Fix:     "Find it: env | grep HSA_OVERRIDE; grep -r HSA_OVERRIDE ~/.bashrc ~/.profile /etc/environment\n" + unset}
	}
	if f.env != nil {
		return Check{Status: StatusOK, Summary: "no HSA_OVERRIDE_GFX_VERSION: ROCm sees the real GPU"}
	}
	return skip("environment not collected")
}

func strOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

func checkIOMMU(f *facts, r *Report) Check {
	if f.cmdline == nil {
		return skip("kernel command line unknown")
	}
	if !strixHalo(r) {
		return skip("the IOMMU trade-off is advice for Strix Halo")
	}
	if v, ok := f.cmdline.Get("amd_iommu"); ok && v == "off" {
		return Check{Status: StatusOK,
			Summary: "amd_iommu=off: about 5-12% faster GPU memory access, but the XDNA NPU and VFIO passthrough are disabled",
			Fix:     "If you need the NPU or VFIO, remove it:\n" + kernelArgsFix(nil, []string{"amd_iommu"}, osID(r))}
	}
	mode := "default"
	if v, ok := f.cmdline.Get("iommu"); ok {
		mode = "iommu=" + v
	}
	return Check{Status: StatusOK,
		Summary: "IOMMU on (" + mode + "): the NPU and VFIO work. amd_iommu=off is an optional trade-off, not needed",
		Detail: "Optional, only if you never use the NPU or VFIO: amd_iommu=off gave 5-12% in llama-bench (kyuz0/amd-strix-halo-toolboxes#66)\n" +
			"but disables the XDNA NPU and device passthrough (antirez/ds4#871).\n" + kernelArgsFix([]string{"amd_iommu=off"}, nil, osID(r))}
}

func checkContainerEngine(f *facts, r *Report) Check {
	h := r.Host
	switch {
	case h.Podman != nil:
		return Check{Status: StatusOK, Summary: "podman " + *h.Podman}
	case h.Docker != nil:
		return Check{Status: StatusOK, Summary: "docker " + *h.Docker + " (podman is preferred: rootless, keep-groups)"}
	case f.toolMissing("podman") && f.toolMissing("docker"):
		return Check{Status: StatusFail, Summary: "no container engine (podman or docker) found",
			Fix: "Fedora: sudo dnf install podman\nUbuntu/Debian: sudo apt install podman"}
	}
	return skip("container engine not collected")
}

func checkDistrobox(f *facts, r *Report) Check {
	switch {
	case r.Host.Distrobox != nil:
		return Check{Status: StatusOK, Summary: "distrobox " + *r.Host.Distrobox}
	case f.toolMissing("distrobox"):
		return Check{Status: StatusFail, Summary: "distrobox not found (the therock-toolbox track needs it)",
			Fix: "Fedora: sudo dnf install distrobox\nUbuntu/Debian: sudo apt install distrobox"}
	}
	return skip("distrobox not collected")
}

// Disk needs of the biggest track (therock-toolbox: toolbox, wheels, caches).
const (
	diskNeed = 60 * 1000 * 1000 * 1000
	diskWant = 100 * 1000 * 1000 * 1000
)

func checkDisk(_ *facts, r *Report) Check {
	if r.Host.DiskFree == nil {
		return skip("free disk space unknown")
	}
	free, where := *r.Host.DiskFree, strOr(r.Host.DiskPath, "?")
	sum := fmt.Sprintf("%.0f GB free on %s", float64(free)/1e9, where)
	switch {
	case free < diskNeed:
		return Check{Status: StatusFail, Summary: sum + "; a build needs about 60 GB",
			Fix: "Free space (podman system prune -a; ~/.cache/pip) or point the state dir at a bigger disk: --state-dir DIR"}
	case free < diskWant:
		return Check{Status: StatusWarn, Summary: sum + "; enough for one track, tight for two"}
	}
	return Check{Status: StatusOK, Summary: sum}
}

func checkBuildMemory(_ *facts, r *Report) Check {
	if r.Memory.TotalBytes == nil {
		return skip("RAM size unknown")
	}
	ram := *r.Memory.TotalBytes
	jobs := max(1, ram/(4*gib))
	switch {
	case ram < 16*gib:
		return Check{Status: StatusFail, Summary: fmtGiB(ram) + " RAM: too little to compile vLLM and flash-attention",
			Fix: "Use a prebuilt track (vllm-image, ollama, llamacpp-vulkan), or add swap and build with MAX_JOBS=2"}
	case ram < 32*gib:
		return Check{Status: StatusWarn, Summary: fmtGiB(ram) + " RAM: builds need MAX_JOBS limited", Fix: fmt.Sprintf("export MAX_JOBS=%d", jobs)}
	}
	return Check{Status: StatusOK, Summary: fmt.Sprintf("%s RAM (MAX_JOBS up to %d)", fmtGiB(ram), jobs)}
}

// CheckTitle is a check's name for people, as doctor prints it ("GTT size"
// for gtt-size), so that the wizard names checks the same way; the ID when
// the check has none.
func CheckTitle(id string) string { return checkTitle(id) }
