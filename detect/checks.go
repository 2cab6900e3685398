package detect

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/haloforge/haloforge/internal/text"
)

// The host checks' IDs, in doctor's order.
const (
	CheckGPU               CheckID = "gpu"
	CheckGFXSupport        CheckID = "gfx-support"
	CheckKernelVersion     CheckID = "kernel-version"
	CheckMESFirmware       CheckID = "mes-firmware"
	CheckCWSR              CheckID = "cwsr"
	CheckGTTSize           CheckID = "gtt-size"
	CheckGTTSizeDeprecated CheckID = "gttsize-deprecated"
	CheckTTMModule         CheckID = "ttm-module"
	CheckCarveout          CheckID = "carveout"
	CheckKFDAccess         CheckID = "kfd-access"
	CheckRenderGroups      CheckID = "render-groups"
	CheckHSAOverride       CheckID = "hsa-override"
	CheckIOMMU             CheckID = "iommu"
	CheckContainerEngine   CheckID = "container-engine"
	CheckDistrobox         CheckID = "distrobox"
	CheckDiskSpace         CheckID = "disk-space"
	CheckBuildMemory       CheckID = "build-memory"
	CheckFirmwarePair      CheckID = "firmware-kernel-pair"
	CheckLockupTimeout     CheckID = "lockup-timeout"
	CheckNPU               CheckID = "npu"
)

// checkFunc computes one check's verdict from the facts and the merged
// report; runChecks stamps the check's ID on it and renders its remedy.
type checkFunc func(f *facts, r *Report) Check

// Kinds of host change a remedy may ask for, as the plan's action kinds
// name them; steps add their own (StepPackage, StepFirmware).
const (
	changeKernelArg = "kernel-arg"
	changeGroup     = "group"
)

// fixes says what a check's remedies may change on the host: the kinds of
// change, or, for a check that never changes the host, why not (what the
// plan shows when the check warns).
type fixes struct {
	kinds []string
	none  string
}

func changes(kinds ...string) fixes { return fixes{kinds: kinds} }
func noChange(why string) fixes     { return fixes{none: why} }

// checkDef is one host check: its identity, its name for people, the
// function that judges it, the commands whose output it reads and what its
// remedies may change.
type checkDef struct {
	ID    CheckID   // the check ID (docs/ids.md), as doctor --json prints it
	Title string    // the check's name in doctor's text output
	Run   checkFunc // the verdict
	Doc   string    // one line: what the check looks at
	// Needs are the collector's commands (program names) the check reads: when
	// one timed out or failed and the check could not judge, doctor says so
	// instead of quietly skipping it.
	Needs []string
	Fixes fixes
}

var (
	kernelArgs = changes(changeKernelArg)
	packages   = changes(string(StepPackage))
	firmware   = changes(string(StepFirmware))
)

// checks are every host check, in the order doctor prints them (goreleaser's
// pipeline as a slice). To add a check: its ID above, a row here and its
// function; CheckIDs, the order, the titles, doctor's fix and the plan follow.
var checks = []checkDef{
	{CheckGPU, "GPU", checkGPU, "an AMD GPU is there and listed by what was collected", []string{"lspci", "rocminfo"},
		noChange("no AMD GPU to configure")},
	{CheckGFXSupport, "GPU target", checkGFXSupport, "the GPU's LLVM target is one current ROCm builds for", nil,
		noChange("a GPU target question: pick the track doctor recommends")},
	{CheckKernelVersion, "Kernel", checkKernel, "the kernel has gfx1151's KFD/CWSR fixes (" + FixedKernelsText() + ")", nil, packages},
	{CheckMESFirmware, "MES firmware", checkMES, "the MES firmware is not the one that hangs gfx1151 (0x83)", nil, firmware},
	{CheckCWSR, "CWSR", checkCWSR, "the kernel has the gfx1151 CWSR fix, or CWSR is off as a stop-gap", nil, kernelArgs},
	{CheckGTTSize, "GTT size", checkGTT, "an integrated GPU may use most of RAM as GTT (ttm.pages_limit)", []string{"dmesg"}, kernelArgs},
	{CheckGTTSizeDeprecated, "amdgpu.gttsize", checkGTTSizeDeprecated, "no deprecated or misspelt amdgpu.gttsize fights the TTM limit", []string{"dmesg"}, kernelArgs},
	{CheckTTMModule, "TTM module", checkTTMModule, "GTT settings go on the TTM module in use (ttm or amdgpu-dkms's amdttm)", []string{"lsmod", "modinfo"}, kernelArgs},
	{CheckCarveout, "BIOS carve-out", checkCarveout, "the BIOS carve-out is small, so memory stays with the OS and GTT", nil, firmware},
	{CheckKFDAccess, "/dev/kfd", checkKFDAccess, "this user can open /dev/kfd", []string{"rocminfo"}, changes(changeGroup, changeKernelArg)},
	{CheckRenderGroups, "Groups", checkGroups, "the user is in the render and video groups", nil, changes(changeGroup)},
	{CheckHSAOverride, "HSA override", checkHSAOverride, "no HSA_OVERRIDE_GFX_VERSION spoofs a native GPU", nil,
		noChange("an environment variable, not a host setting: unset HSA_OVERRIDE_GFX_VERSION where it is set")},
	{CheckIOMMU, "IOMMU", checkIOMMU, "the IOMMU setting and its NPU/VFIO trade-off on Strix Halo", nil,
		noChange("amd_iommu=off is an opt-in trade-off (faster, but no NPU or VFIO): haloforge never sets it for you")},
	{CheckContainerEngine, "Container engine", checkContainerEngine, "podman or docker is installed", []string{"podman", "docker"}, packages},
	{CheckDistrobox, "distrobox", checkDistrobox, "distrobox is installed (therock-toolbox needs it)", []string{"distrobox"}, packages},
	{CheckDiskSpace, "Disk space", checkDisk, "the state dir's disk has room for a build (60 GB)", nil,
		noChange("free space or point --state-dir at a bigger disk")},
	{CheckBuildMemory, "Build memory", checkBuildMemory, "RAM is enough to compile vLLM and flash-attention", nil,
		noChange("pick a prebuilt track, or build with a lower MAX_JOBS")},
	{CheckFirmwarePair, "Firmware/kernel", checkFirmwarePair, "the kernel and linux-firmware are not a known-bad pair (20251125; 7.2.x with 20260810)", []string{"dpkg-query", "rpm", "pacman"}, firmware},
	{CheckLockupTimeout, "GPU watchdog", checkLockupTimeout, "long GPU jobs are not reset by amdgpu's watchdog (amdgpu.lockup_timeout)", []string{"dmesg"}, kernelArgs},
	{CheckNPU, "NPU", checkNPU, "the XDNA NPU, when present, is usable with this IOMMU setting", []string{"lspci", "lsmod"},
		noChange("information about the NPU: nothing to change")},
}

// hostGeneral are the checks that still matter on a machine with no AMD
// GPU (the demo, a CPU Vulkan device, a box for later; the NPU check only
// says whether there is one): every other check
// is about an AMD GPU's driver, firmware, memory or device nodes, and its
// verdict there would be advice that cannot help (load amdgpu for
// /dev/kfd) or a ✓ that means nothing.
var hostGeneral = []CheckID{CheckGPU, CheckContainerEngine, CheckDistrobox, CheckDiskSpace, CheckBuildMemory, CheckNPU}

// SkipNoAMD is the summary of a check skipped because the machine has no
// AMD GPU, which doctor counts apart from the checks that could not run.
const SkipNoAMD = "no AMD GPU here: this check is about one"

// SplitNoAMD separates the checks skipped because the machine has no AMD
// GPU (SkipNoAMD) from the rest, so that a list says them in one line
// rather than one identical line each.
func SplitNoAMD(cs []Check) (shown []Check, noAMD []CheckID) {
	for _, c := range cs {
		if c.Status == StatusSkip && c.Summary == SkipNoAMD {
			noAMD = append(noAMD, c.ID)
			continue
		}
		shown = append(shown, c)
	}
	return shown, noAMD
}

// noAMDGPU says whether the GPU check found no AMD GPU at all: it failed
// with the PCI bus read (lspci, or a walk of sysfs: a rocminfo alone cannot tell a
// machine without one from a driver that did not bind), none was listed
// and the amdgpu driver is not loaded.
func noAMDGPU(gpu Check, f *facts, r *Report) bool {
	return gpu.Status == StatusFail && (len(f.pci) > 0 || len(f.lspci) > 0 || pciWalked(f)) &&
		len(r.GPUs) == 0 && (r.Driver.Loaded == nil || !*r.Driver.Loaded)
}

func runChecks(f *facts, r *Report) []Check {
	out := make([]Check, 0, len(checks))
	noAMD := false
	for _, def := range checks {
		if noAMD && !slices.Contains(hostGeneral, def.ID) {
			out = append(out, Check{ID: def.ID, Status: StatusSkip, Summary: SkipNoAMD})
			continue
		}
		c := def.Run(f, r)
		if def.ID == CheckGPU {
			noAMD = noAMDGPU(c, f, r)
		}
		if p := f.commandProblem(def.Needs...); c.Status == StatusSkip && p != "" {
			c = unchecked(p, c.Summary)
		}
		c.ID = def.ID
		if def.Fixes.none != "" && (c.Remedy != nil || c.Status == StatusWarn || c.Status == StatusFail) {
			if c.Remedy == nil {
				c.Remedy = &Remedy{}
			}
			if c.Remedy.Manual == "" {
				c.Remedy.Manual = def.Fixes.none
			}
		}
		c.Fix = c.Remedy.Text(osID(r))
		out = append(out, c)
	}
	return out
}

// unchecked is the verdict of a check whose command did not finish: a
// warning that says which command and why, never a silent skip.
func unchecked(problem, why string) Check {
	return Check{Status: StatusWarn,
		Summary: problem + ", so this was not checked",
		Remedy: &Remedy{Lead: "The machine may have been busy. Run the command yourself to see whether it hangs or fails,\nthen run haloforge doctor again.",
			Manual: "not checked (" + problem + "): run haloforge doctor again"},
		Detail: "Without it: " + why}
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
			Remedy:  advice("Run haloforge doctor on the host itself, not in a container or sandbox without /dev/kfd and /dev/dri;\nsee the kfd-access check.")}
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
			Remedy: advice("haloforge targets AMD GPUs (Strix Halo gfx1151 first).\n" +
				"To see what it does on a Strix Halo, run: haloforge demo\n" +
				"If this machine has one, check that " + bios)}
	}
	sum := "no AMD GPU found; this machine has " + strings.Join(seen, ", ")
	if len(foreign) == len(seen) {
		// Only other vendors' GPUs: say plainly what haloforge is for, not
		// BIOS advice that cannot help (an NVIDIA H100 machine got it).
		return Check{Status: StatusFail, Summary: sum,
			Remedy: advice("haloforge sets up AMD GPUs (Strix Halo, gfx1151, first); it cannot drive " + strings.Join(foreign, ", ") + ".\n" +
				"To see what it does on a Strix Halo, run: haloforge demo\n" +
				"If this machine also has an AMD GPU, check that " + bios)}
	}
	return Check{Status: StatusFail, Summary: sum,
		Remedy: advice("haloforge targets AMD GPUs that ROCm or Vulkan can drive (Strix Halo gfx1151 first). If this machine has one, check that " + bios)}
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
			Remedy: advice("haloforge build --track legacy-gfx803")}
	case gfx == "gfx900" || gfx == "gfx906":
		return Check{Status: StatusWarn, Summary: gfx + " (Vega) is deprecated in current ROCm: no new PyTorch wheels",
			Remedy: advice("Use Vulkan instead: haloforge build --track llamacpp-vulkan")}
	case slices.Contains(rocmGFX, gfx):
		return Check{Status: StatusOK, Summary: gfx + " is supported by ROCm (the gfx1151 tracks do not fit it; see the recommended track)"}
	}
	return Check{Status: StatusWarn, Summary: gfx + " is not an official ROCm target",
		Remedy: advice("Vulkan works on most AMD GPUs: haloforge build --track llamacpp-vulkan")}
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
	if r.Kernel.Release == nil && !strixHalo(r) {
		return skip("kernel release unknown (no uname, dmesg or /proc/cmdline)")
	}
	rel := strOr(r.Kernel.Release, "")
	if rel != "" {
		if _, ok := kernelVersion(rel); !ok {
			return skip("kernel release " + rel + " is not a version haloforge can read")
		}
	}
	if !strixHalo(r) {
		return Check{Status: StatusOK, Summary: "kernel " + rel}
	}
	what := "the kernel"
	if rel != "" {
		what = "kernel " + rel
	}
	fix := gfx1151Fixes(r)
	switch fix.state {
	case fixPresent:
		return Check{Status: StatusOK, Summary: what + " has the gfx1151 KFD fixes", Detail: "Evidence: " + fix.why + "."}
	case fixAbsent:
		return Check{Status: StatusWarn,
			Summary: what + " lacks the gfx1151 KFD fixes (" + fix.why + "): compute jobs can fail or hang",
			Remedy: &Remedy{Lead: "Install a kernel with the gfx1151 KFD fixes: upstream 6.18.4 or later (Fedora 43, Ubuntu 26.04 and Arch ship one),\n" +
				"the 6.12 LTS from 6.12.64, or on Ubuntu 24.04 AMD's OEM kernel (linux-oem-24.04d) or the HWE kernel from 6.17.0-19.\n" +
				"Until then see the cwsr check for the stop-gap.",
				Steps: []Step{kernelStep}}}
	}
	if r.Kernel.Release == nil {
		return skip("kernel release unknown (no uname, dmesg or /proc/cmdline)")
	}
	return Check{Status: StatusSkip, Summary: "cannot tell whether " + what + " has the gfx1151 KFD fixes: " + fix.why,
		Remedy: advice("The KFD topology says: " + cwsrGrep + "\n(a kernel with the fixes lists cwsr_size; haloforge doctor reads it when run on the machine)")}
}

// kernelStep is installing a kernel with the gfx1151 KFD fixes, the way each
// distribution does it: each installs a kernel the kernel-version check
// accepts (or, for an OEM kernel newer than AMD's list, cannot judge).
var kernelStep = Step{ID: "package:kernel", Kind: StepPackage,
	Change: "install a kernel with the gfx1151 KFD fixes (6.18.4+, 6.12.64+, Ubuntu 24.04 OEM or HWE), then reboot into it",
	Commands: []DistroCommand{
		{Distros: []string{DistroFedora}, Label: "Fedora", Command: "sudo dnf upgrade --refresh kernel"},
		{Distros: []string{DistroFedoraAtomic}, Label: "Fedora Atomic (Silverblue, Bazzite)", Command: "rpm-ostree upgrade"},
		{Distros: []string{DistroUbuntu}, Release: "24.04", Label: "Ubuntu 24.04 (AMD's OEM kernel)", Command: "sudo apt update && sudo apt install linux-oem-24.04d",
			Note: "or the HWE kernel: sudo apt install --install-recommends linux-generic-hwe-24.04"},
		{Distros: []string{DistroUbuntu, DistroDebian}, Label: "Ubuntu/Debian", Command: "sudo apt update && sudo apt full-upgrade"},
		{Distros: []string{DistroArch}, Label: "Arch", Command: "sudo pacman -Syu linux"},
	}}

// rdna35 are the RDNA3.5 APUs: Strix Point (gfx1150), Strix Halo (gfx1151),
// Krackan (gfx1152) and gfx1153. They share the GC 11.5 MES scheduler
// firmware family, and its hangs.
var rdna35 = []string{"gfx1150", "gfx1151", "gfx1152", "gfx1153"}

// mesHangReported are the chips on which MES 0x83 (linux-firmware 20251125)
// was reported to hang the GPU (ROCm/legacy-rocm-build#5724, #5616).
var mesHangReported = []string{"gfx1150", "gfx1151"}

func checkMES(_ *facts, r *Report) Check {
	gfx := r.PrimaryGFX()
	if !slices.Contains(rdna35, gfx) {
		return skip("MES firmware advice is for the RDNA3.5 APUs (" + strings.Join(rdna35, ", ") + ")")
	}
	errs := 0
	if w := r.Kernel.Watchdog; w != nil && w.MESErrors != nil {
		errs = *w.MESErrors
	}
	n := mesNumber(r)
	switch {
	case n == 0x83 && slices.Contains(mesHangReported, gfx):
		return Check{Status: StatusFail, Summary: "MES firmware " + *r.Firmware.MES + " is the broken one from linux-firmware 20251125 (GPU hangs, ROCm/legacy-rocm-build#5724)",
			Remedy: firmwareUpgrade(r, "firmware:mes")}
	case n == 0x83:
		return Check{Status: StatusWarn, Summary: "MES firmware " + *r.Firmware.MES + " is the one from linux-firmware 20251125 that hangs gfx1150 and gfx1151 (ROCm/legacy-rocm-build#5724); on " + gfx + " it is not verified",
			Remedy: firmwareUpgrade(r, "firmware:mes")}
	case errs > 0:
		mes := "MES version unknown"
		if n >= 0 {
			mes = "MES " + *r.Firmware.MES
		}
		return Check{Status: StatusWarn,
			Summary: fmt.Sprintf("dmesg: the GPU's MES scheduler stopped responding %s (%s): compute jobs hang", text.Plural(errs, "time"), mes),
			Remedy: &Remedy{Lead: "Update linux-firmware and the kernel: MES hangs on RDNA3.5 were fixed by both (gfx1152 on MES 0x82 is still open:\n" +
				"ROCm/legacy-rocm-build#5844). If it stays, report it with the dmesg lines (haloforge diagnose reads them).",
				Steps: []Step{firmwareStep(r, "firmware:mes", "update linux-firmware (the GPU's MES firmware stopped responding), then reboot", upgradeCommands)},
				After: "Then reboot and check: " + mesCheckCmd}}
	case n < 0:
		return Check{Status: StatusSkip, Summary: "MES firmware version unknown (not collected: sysfs fw_version/mes_fw_version, or debugfs as root)",
			Remedy: advice("Check it with: " + mesCheckCmd + "\n(kernel 6.6+; older: sudo grep MES /sys/kernel/debug/dri/*/amdgpu_firmware_info)")}
	}
	return Check{Status: StatusOK, Summary: "MES firmware " + *r.Firmware.MES + " (0x83 is the one that hangs)"}
}

func checkCWSR(f *facts, r *Report) Check {
	if !strixHalo(r) {
		return skip("the CWSR fix matters for gfx1151")
	}
	// The loaded value wins: it is what the driver runs with, set on the
	// command line or in /etc/modprobe.d alike.
	off, where := false, ""
	if s, ok := f.read("sys/module/amdgpu/parameters/cwsr_enable"); ok {
		v := strings.TrimSpace(lastLine(s))
		off, where = v == "0", "loaded amdgpu: cwsr_enable="+v
	} else if v, ok := f.cmdlineGet("amdgpu.cwsr_enable"); ok {
		off, where = v == "0", "amdgpu.cwsr_enable="+v+" on the command line"
	}
	fix := gfx1151Fixes(r)
	stopGap := &Remedy{Lead: "Stop-gap until the kernel has the fix: turn CWSR off (costs some preemption; drop it once the kernel has the fix:\n" + cwsrGrep + " then lists the GPU's node).",
		Args: []ArgChange{{KernelArg{OpSet, "amdgpu.cwsr_enable", "0"}, "stop-gap until the kernel has the gfx1151 CWSR fix, which KFD then shows as cwsr_size; drop it then"}}}
	switch {
	case fix.state == fixPresent && off:
		return Check{Status: StatusOK, Summary: "the kernel has the gfx1151 CWSR fix (" + fix.why + "); CWSR is still off (" + where + "), which only costs preemption now"}
	case fix.state == fixPresent:
		return Check{Status: StatusOK, Summary: "the kernel has the gfx1151 CWSR fix", Detail: "Evidence: " + fix.why + "."}
	case off:
		return Check{Status: StatusOK, Summary: "CWSR is off (" + where + "), the stop-gap for kernels without the gfx1151 fix"}
	case fix.state == fixAbsent:
		return Check{Status: StatusWarn, Summary: "the kernel lacks the gfx1151 CWSR fix (" + fix.why + ") and CWSR is on: compute jobs can hang", Remedy: stopGap}
	}
	return Check{Status: StatusSkip, Summary: "cannot tell whether the kernel has the gfx1151 CWSR fix: " + fix.why,
		Remedy: advice("The KFD topology says: " + cwsrGrep)}
}

func osID(r *Report) string {
	if r.Host.OSID == nil {
		return ""
	}
	return *r.Host.OSID
}

// gttAndTTM are the GTT amdgpu set up and the TTM limit, when both are known.
func gttAndTTM(r *Report) (gtt, limit int64, ok bool) {
	g := r.Primary()
	if g == nil || g.GTTBytes == nil || r.Kernel.TTMPagesLimit == nil {
		return 0, 0, false
	}
	return *g.GTTBytes, *r.Kernel.TTMPagesLimit * 4096, true
}

// gttCeiling is the GTT the GPU can use: the driver's figure capped by the
// TTM limit (allocations stop at the smaller), else either alone.
func gttCeiling(r *Report) (int64, string) {
	if gtt, limit, ok := gttAndTTM(r); ok && limit < gtt {
		return limit, "TTM pages_limit"
	}
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
		return Check{Status: StatusSkip, Summary: what + " " + text.Bytes(gtt) + "; RAM unknown, so no target to compare with"}
	}
	ram := *r.Memory.TotalBytes
	p := planGTT(ram)
	sum := fmt.Sprintf("%s %s of %s RAM", what, text.Bytes(gtt), text.Bytes(ram))
	if float64(gtt) >= 0.7*float64(ram) {
		return Check{Status: StatusOK, Summary: sum}
	}
	lead := fmt.Sprintf("Let the GPU use %d GiB (RAM %s minus %d GiB kept for the OS): ttm.pages_limit=%d (= %d GiB x 262144 pages of 4 KiB).",
		p.GiB, text.Bytes(ram), p.ReserveGiB, p.Pages, p.GiB)
	if usesAMDTTM(r) {
		lead += "\namdgpu-dkms is loaded, so set the same on amdttm."
	}
	why := fmt.Sprintf("GTT %d GiB = RAM %.1f GiB - %d GiB kept for the OS; %d x 262144 pages of 4 KiB", p.GiB, float64(ram)/float64(gib), p.ReserveGiB, p.GiB)
	return Check{Status: StatusWarn, Summary: sum + ": the GPU can use only about half of the memory",
		Remedy: &Remedy{Lead: lead, Args: GTTArgs(r, p.Pages, why), GTTBytes: p.Pages * 4096,
			After: "Check after the reboot: cat /sys/module/" + ttmName(r) + "/parameters/pages_limit"}}
}

func ttmName(r *Report) string {
	if r.Kernel.TTMModule != nil {
		return *r.Kernel.TTMModule
	}
	return "ttm"
}

// gttsizeWhy is why the plan removes each spelling of amdgpu.gttsize.
var gttsizeWhy = map[string]string{
	"amdgpu.gttsize":  "deprecated: GTT follows ttm.pages_limit",
	"amdgpu.gtt_size": "not a parameter: the kernel ignores it (\"unknown parameter 'gtt_size' ignored\")",
}

func checkGTTSizeDeprecated(f *facts, r *Report) Check {
	var bad []string
	var removals []ArgChange
	if f.cmdline != nil {
		for _, k := range []string{"amdgpu.gttsize", "amdgpu.gtt_size"} {
			if v, ok := f.cmdline.Get(k); ok {
				bad = append(bad, k)
				removals = append(removals, ArgChange{KernelArg{OpRemove, k, v}, gttsizeWhy[k]})
			}
		}
	}
	switch {
	case f.dmesg.GTTMismatch && len(bad) == 0:
		return Check{Status: StatusWarn, Summary: "dmesg: the GTT size set by amdgpu disagrees with the TTM limit (\"this is unusual\")",
			Remedy: &Remedy{Lead: "Set GTT in one place only: remove amdgpu.gttsize (kernel command line and /etc/modprobe.d) and keep ttm.pages_limit:",
				Args: []ArgChange{{KernelArg{Op: OpRemove, Key: "amdgpu.gttsize"}, gttsizeWhy["amdgpu.gttsize"]}}}}
	case len(bad) > 0 || f.dmesg.GTTSizeDeprecated:
		if len(bad) == 0 {
			bad = []string{"amdgpu.gttsize"}
			removals = []ArgChange{{KernelArg{Op: OpRemove, Key: "amdgpu.gttsize"}, gttsizeWhy["amdgpu.gttsize"]}}
		}
		sum := strings.Join(bad, " and ") + " on the command line: deprecated, use ttm.pages_limit"
		if slices.Contains(bad, "amdgpu.gtt_size") {
			sum = "amdgpu.gtt_size is not a parameter (the kernel ignores it) and amdgpu.gttsize is deprecated: use ttm.pages_limit"
		}
		if d := f.dmesg; d.GTTAsked != nil {
			sum = fmt.Sprintf("amdgpu.gttsize asks %s but TTM allows only %s (dmesg: \"this is unusual\"): use ttm.pages_limit",
				text.Bytes(*d.GTTAsked), text.Bytes(*d.TTMSize))
		}
		fix := &Remedy{Lead: "Remove it and size GTT with ttm.pages_limit (see gtt-size):"}
		if usesAMDTTM(r) {
			fix.Lead = "Remove it and size GTT with ttm.pages_limit and, as amdgpu-dkms is in use, amdttm.pages_limit (see gtt-size):"
		}
		_, hasTTM := f.cmdlineGet("ttm.pages_limit")
		switch {
		case r.Memory.TotalBytes != nil:
			ram := *r.Memory.TotalBytes
			p := planGTT(ram)
			fix.Lead = fmt.Sprintf("Replace it with ttm.pages_limit=%d (%d GiB):", p.Pages, p.GiB)
			fix.Args = GTTArgs(r, p.Pages, fmt.Sprintf("replaces amdgpu.gttsize: GTT %d GiB = RAM %.1f GiB - %d GiB kept for the OS", p.GiB, float64(ram)/float64(gib), p.ReserveGiB))
			fix.GTTBytes = p.Pages * 4096
		case !hasTTM:
			v, _ := f.cmdlineGet("amdgpu.gttsize")
			if mib, err := strconv.ParseInt(v, 10, 64); err == nil && mib > 0 && mib*256 <= maxTTMPages {
				fix.Lead = fmt.Sprintf("Replace it with ttm.pages_limit=%d (the %d MiB it asked for):", mib*256, mib)
				fix.Args = GTTArgs(r, mib*256, fmt.Sprintf("keeps the %d MiB that amdgpu.gttsize asked for, the supported way (RAM unknown)", mib))
				fix.GTTBytes = mib << 20
			}
		}
		fix.Args = append(fix.Args, removals...)
		return Check{Status: StatusWarn, Summary: sum, Remedy: fix}
	}
	if gtt, limit, ok := gttAndTTM(r); ok && (gtt-limit >= gib || limit-gtt >= gib) {
		return Check{Status: StatusWarn,
			Summary: fmt.Sprintf("GTT is %s but the TTM limit (pages_limit) is %s: the GPU can allocate only %s; something sets GTT apart from ttm.pages_limit",
				text.Bytes(gtt), text.Bytes(limit), text.Bytes(min(gtt, limit))),
			Remedy: &Remedy{Lead: "Set GTT in one place only: remove amdgpu.gttsize (kernel command line and /etc/modprobe.d) and size GTT with ttm.pages_limit (see gtt-size):",
				Args: []ArgChange{{KernelArg{Op: OpRemove, Key: "amdgpu.gttsize"}, gttsizeWhy["amdgpu.gttsize"]}}}}
	}
	if f.cmdline == nil && !f.b.Has("dmesg.txt") {
		return skip("kernel command line unknown")
	}
	return Check{Status: StatusOK, Summary: "no amdgpu.gttsize on the command line"}
}

// maxTTMPages is 1 TiB of 4 KiB pages: more than any Strix or Gorgon Halo box.
const maxTTMPages = 1 << 28

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
			Remedy: &Remedy{Lead: "Set the same value on amdttm:", Args: []ArgChange{
				{KernelArg{OpSet, "amdttm.pages_limit", v}, "amdgpu-dkms reads amdttm, which ignores ttm.pages_limit"},
				{KernelArg{OpSet, "amdttm.page_pool_size", v}, "amdgpu-dkms reads amdttm, which ignores ttm.pages_limit"}}}}
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
		return Check{Status: StatusOK, Summary: "BIOS carve-out " + text.Bytes(v) + ": memory stays with the OS and GTT"}
	}
	pool := ""
	if g.PoolBytes != nil && *g.PoolBytes >= v/2 {
		pool = " (ROCm uses it: its pool is " + text.Bytes(*g.PoolBytes) + ")"
	}
	return Check{Status: StatusWarn,
		Summary: "BIOS carve-out " + text.Bytes(v) + pool + ": RAM reserved for the GPU is gone from Linux for good, while GTT is shared as needed",
		Remedy: &Remedy{Lead: "AMD recommends a small carve-out and a large TTM/GTT limit instead. In the BIOS/UEFI set the UMA frame buffer\n" +
			"(\"iGPU memory\", \"UMA size\") to its minimum, 512 MB, then grow GTT with ttm.pages_limit (see gtt-size).\n" +
			"(Kernels before \"drm/amdkfd: use GTT for VRAM on APUs only if GTT is larger\" gave ROCm only a 15 GiB pool of a 96 GB carve-out.)",
			Steps: []Step{carveoutStep}}}
}

// carveoutStep is the BIOS setting: no command sets it.
var carveoutStep = Step{ID: "firmware:bios-carveout", Kind: StepFirmware,
	Change: "in the BIOS/UEFI setup, set the UMA frame buffer (\"iGPU memory\", \"UMA size\") to its minimum: 512 MB on most boards " +
		"(GMKtec EVO-X2 BIOS 1.12: 2 GB, under UMA_SPECIFIED, shown with Alt+F5); memory for the GPU then comes from GTT"}

// renderGroups open /dev/kfd and /dev/dri/renderD*.
var renderGroups = []string{"render", "video"}

func checkKFDAccess(f *facts, r *Report) Check {
	kfdErr := f.rocminfo.KFDError
	state := ""
	if r.Host.KFD != nil {
		state = *r.Host.KFD
	}
	c := kfdVerdict(state, kfdErr, f, r)
	if _, ok := f.cmdlineGet("nomodeset"); ok && len(r.GPUs) > 0 {
		// nomodeset keeps amdgpu from starting: whatever else is wrong, it goes.
		if c.Remedy == nil {
			c.Remedy = &Remedy{}
		}
		c.Remedy.Manual = ""
		c.Remedy.Args = append(c.Remedy.Args, ArgChange{KernelArg{Op: OpRemove, Key: "nomodeset"}, "nomodeset keeps amdgpu from starting, so ROCm has no GPU"})
		if c.Status == StatusOK || c.Status == StatusSkip {
			c.Status = StatusWarn
			c.Summary = "nomodeset is on the kernel command line: amdgpu does not start, so ROCm has no GPU"
		}
	}
	return c
}

func kfdVerdict(state, kfdErr string, f *facts, r *Report) Check {
	switch {
	case state == "denied" || strings.Contains(kfdErr, "Permission denied"):
		return Check{Status: StatusFail, Summary: "/dev/kfd exists but this user cannot open it", Remedy: &Remedy{Groups: renderGroups}}
	case state == "missing" || kfdErr != "":
		loaded := r.Driver.Loaded != nil && *r.Driver.Loaded
		if loaded || len(r.GPUs) > 0 {
			return Check{Status: StatusFail, Summary: "amdgpu is loaded but /dev/kfd is not reachable here: device nodes not mapped (container or sandbox?)",
				Remedy: &Remedy{Lead: "Run on the host, or pass the devices to the container:\n  podman run --device /dev/kfd --device /dev/dri --group-add keep-groups --security-opt seccomp=unconfined …\n" +
					"If this is the host: ls -l /dev/kfd; nomodeset on the kernel command line also stops amdgpu compute.",
					Manual: "the device nodes are not mapped here (container or sandbox?): run on the host, or pass --device /dev/kfd --device /dev/dri"}}
		}
		return Check{Status: StatusFail, Summary: "/dev/kfd does not exist: the amdgpu kernel driver is not loaded",
			Remedy: &Remedy{Lead: "Load the driver: sudo modprobe amdgpu; check dmesg | grep -i amdgpu for why it did not bind.",
				Manual: "the amdgpu driver is not loaded: sudo modprobe amdgpu, and dmesg | grep -i amdgpu says why it did not bind"}}
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
		Remedy: &Remedy{Groups: renderGroups}}
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
			return Check{Status: StatusWarn, Summary: sum + "; gfx1151 is native, the spoof only risks illegal-instruction crashes", Remedy: advice(unset)}
		}
		return Check{Status: StatusOK, Summary: sum}
	}
	if g != nil && g.RuntimeGFX != nil {
		return Check{Status: StatusWarn,
			Summary: "rocminfo reports " + *g.RuntimeGFX + " on a " + strOr(g.GFX, "different") + " GPU: an HSA_OVERRIDE_GFX_VERSION is likely set",
			Remedy:  advice("Find it: env | grep HSA_OVERRIDE; grep -r HSA_OVERRIDE ~/.bashrc ~/.profile /etc/environment\n" + unset)}
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
			Remedy:  &Remedy{Lead: "If you need the NPU or VFIO, remove it:", Args: []ArgChange{{KernelArg{OpRemove, "amd_iommu", "off"}, "the NPU and VFIO need the IOMMU"}}}}
	}
	mode := "default"
	if v, ok := f.cmdline.Get("iommu"); ok {
		mode = "iommu=" + v
	}
	return Check{Status: StatusOK,
		Summary: "IOMMU on (" + mode + "): the NPU and VFIO work. amd_iommu=off is an optional trade-off, not needed",
		Detail: (&Remedy{Lead: "Optional, only if you never use the NPU or VFIO: amd_iommu=off gave 5-12% in llama-bench (kyuz0/amd-strix-halo-toolboxes#66)\n" +
			"but disables the XDNA NPU and device passthrough (antirez/ds4#871).", Args: []ArgChange{{Arg: KernelArg{OpSet, "amd_iommu", "off"}}}}).Text(osID(r))}
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
			Remedy: &Remedy{Steps: []Step{installStep("podman")}}}
	}
	return skip("container engine not collected")
}

func checkDistrobox(f *facts, r *Report) Check {
	switch {
	case r.Host.Distrobox != nil:
		return Check{Status: StatusOK, Summary: "distrobox " + *r.Host.Distrobox}
	case f.toolMissing("distrobox"):
		return Check{Status: StatusFail, Summary: "distrobox not found (the therock-toolbox track needs it)",
			Remedy: &Remedy{Steps: []Step{installStep("distrobox")}}}
	}
	return skip("distrobox not collected")
}

// installStep installs a tool with the distribution's package manager.
func installStep(pkg string) Step {
	return Step{ID: "package:" + pkg, Kind: StepPackage, Change: "install " + pkg, Commands: []DistroCommand{
		{Distros: []string{DistroFedora}, Label: "Fedora", Command: "sudo dnf install " + pkg},
		{Distros: []string{DistroUbuntu, DistroDebian}, Label: "Ubuntu/Debian", Command: "sudo apt install " + pkg},
		{Distros: []string{DistroArch}, Label: "Arch", Command: "sudo pacman -S " + pkg},
		{Distros: []string{DistroFedoraAtomic}, Label: "Fedora Atomic (Silverblue, Bazzite)", Command: "rpm-ostree install " + pkg},
	}}
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
			Remedy: advice("Free space (podman system prune -a; ~/.cache/pip) or point the state dir at a bigger disk: --state-dir DIR")}
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
		return Check{Status: StatusFail, Summary: text.Bytes(ram) + " RAM: too little to compile vLLM and flash-attention",
			Remedy: advice("Use a prebuilt track (vllm-image, ollama, llamacpp-vulkan), or add swap and build with MAX_JOBS=2")}
	case ram < 32*gib:
		return Check{Status: StatusWarn, Summary: text.Bytes(ram) + " RAM: builds need MAX_JOBS limited", Remedy: advice(fmt.Sprintf("export MAX_JOBS=%d", jobs))}
	}
	return Check{Status: StatusOK, Summary: fmt.Sprintf("%s RAM (MAX_JOBS up to %d)", text.Bytes(ram), jobs)}
}
