package detect

import (
	"regexp"
	"strconv"
	"strings"
)

// fixState says whether the running amdgpu driver has gfx1151's KFD fixes:
// "drm/amdkfd: bump minimum vgpr size for gfx1151" and "drm/amdkfd: Export
// the cwsr_size and ctl_stack_size to userspace" (the two commits AMD's
// RDNA3.5 page requires; see detect/hostfix/SOURCES.md).
type fixState int

const (
	fixUnknown fixState = iota // cannot tell from what was collected
	fixPresent
	fixAbsent
)

// kfdFix is the verdict and the evidence behind it, as one clause.
type kfdFix struct {
	state fixState
	why   string
}

// cwsrGrep is how anyone reads the evidence itself.
const cwsrGrep = "grep -l cwsr_size /sys/class/kfd/kfd/topology/nodes/*/properties"

// gfx1151Fixes judges the KFD fixes by the best evidence collected: the KFD
// topology itself (a fixed kernel lists cwsr_size and ctl_stack_size), else
// the driver's version: amdgpu-dkms's is not the kernel's, and a vendor
// kernel's number says nothing about its backports unless the vendor says.
func gfx1151Fixes(r *Report) kfdFix {
	if g := r.Primary(); g != nil && g.CWSR != nil {
		if *g.CWSR {
			return kfdFix{fixPresent, "KFD lists cwsr_size and ctl_stack_size"}
		}
		return kfdFix{fixAbsent, "KFD does not list cwsr_size and ctl_stack_size"}
	}
	if r.Kernel.AMDGPUDKMS != nil && *r.Kernel.AMDGPUDKMS {
		v := "amdgpu-dkms"
		if r.Driver.Version != nil {
			v += " " + *r.Driver.Version
		}
		return kfdFix{fixUnknown, "amdgpu comes from " + v + ", not from the kernel, and which amdgpu-dkms releases carry the fixes is not known"}
	}
	if r.Kernel.Release == nil {
		return kfdFix{fixUnknown, "the kernel release is unknown"}
	}
	return kernelFixByRelease(*r.Kernel.Release)
}

// Kernel releases that say whose kernel they are.
var (
	// Ubuntu: 6.17.0-19-generic, 6.14.0-1018-oem (the upstream base is always X.Y.0).
	ubuntuKernelRe = regexp.MustCompile(`^(\d+)\.(\d+)\.0-(\d+)-(generic|generic-64k|lowlatency|lowlatency-64k|oem|nvidia|nvidia-64k)$`)
	// Kernels whose vendor backports drivers into an older base: RHEL and
	// its rebuilds (.el9, .el10), SUSE (-default), Proxmox (-pve).
	vendorKernelRe = regexp.MustCompile(`\.el\d+|-default$|-pve$`)
)

// Releases that carry the fixes (detect/hostfix/SOURCES.md): upstream 6.18.4
// and 6.19, the 6.12 LTS from 6.12.64; Ubuntu 24.04's HWE kernel from
// 6.17.0-19 and its OEM kernel from 6.14.0-1018 (ABI numbers).
var (
	upstreamFixed = [3]int{6, 18, 4}
	ltsFixed      = [3]int{6, 12, 64}
	mainlineFixed = [3]int{6, 19, 0}
)

// FixedKernel is one line of kernels that carries gfx1151's KFD fixes, from
// the release named on: the kernels doctor's kernel-version check accepts by
// their number (TestFixedKernelsAreTheCheck holds the two together).
type FixedKernel struct {
	Line  string // whose kernels: "upstream", "6.12 LTS", "Ubuntu 24.04 HWE", "Ubuntu 24.04 OEM"
	Since string // the first release with the fixes, as uname -r starts ("6.17.0-19" for 6.17.0-19-generic)
}

// FixedKernels are the kernels with gfx1151's KFD fixes, in the order
// people are told them; detect/hostfix/SOURCES.md has the sources.
var FixedKernels = []FixedKernel{
	{"upstream", "6.18.4"},
	{"6.12 LTS", "6.12.64"},
	{"Ubuntu 24.04 HWE", "6.17.0-19"},
	{"Ubuntu 24.04 OEM", "6.14.0-1018"},
}

// FixedKernelsText says FixedKernels in one line, as doctor, diagnose,
// tracks and the docs print it: "6.18.4+, 6.12.64+, Ubuntu 24.04 HWE
// 6.17.0-19+ or OEM 6.14.0-1018+".
func FixedKernelsText() string {
	var b strings.Builder
	for i, k := range FixedKernels {
		switch {
		case i == len(FixedKernels)-1:
			b.WriteString(" or ")
		case i > 0:
			b.WriteString(", ")
		}
		since := k.Since + "+"
		if ubuntu, ok := strings.CutPrefix(k.Line, "Ubuntu 24.04 "); ok {
			if i == 0 || !strings.HasPrefix(FixedKernels[i-1].Line, "Ubuntu 24.04 ") {
				since = "Ubuntu 24.04 " + ubuntu + " " + since
			} else {
				since = ubuntu + " " + since
			}
		}
		b.WriteString(since)
	}
	return b.String()
}

// kernelFixByRelease judges the fixes by the kernel's release alone.
func kernelFixByRelease(rel string) kfdFix {
	v, ok := kernelVersion(rel)
	if !ok {
		return kfdFix{fixUnknown, "kernel release " + rel + " is not a version haloforge can read"}
	}
	if m := ubuntuKernelRe.FindStringSubmatch(rel); m != nil {
		abi, _ := strconv.Atoi(m[3])
		oem := m[4] == "oem"
		switch {
		case !versionLess(v, mainlineFixed):
			return kfdFix{fixPresent, "upstream has them from 6.18.4, and this Ubuntu kernel is based on " + m[1] + "." + m[2]}
		case v == [3]int{6, 17, 0} && !oem && abi >= 19:
			return kfdFix{fixPresent, "Ubuntu's HWE kernel carries them from 6.17.0-19"}
		case v == [3]int{6, 17, 0} && !oem:
			return kfdFix{fixAbsent, "Ubuntu's HWE kernel carries them only from 6.17.0-19"}
		case v == [3]int{6, 14, 0} && oem && abi >= 1018:
			return kfdFix{fixPresent, "Ubuntu's OEM kernel carries them from 6.14.0-1018"}
		case v == [3]int{6, 14, 0} && oem:
			return kfdFix{fixAbsent, "Ubuntu's OEM kernel carries them only from 6.14.0-1018"}
		case oem || !versionLess(v, [3]int{6, 18, 0}):
			return kfdFix{fixUnknown, "AMD names Ubuntu's HWE kernel from 6.17.0-19 and OEM kernel from 6.14.0-1018; whether this Ubuntu kernel has them is not known"}
		}
		return kfdFix{fixAbsent, "AMD names only Ubuntu's HWE kernel from 6.17.0-19 and OEM kernel from 6.14.0-1018 as carrying them"}
	}
	switch {
	case !versionLess(v, upstreamFixed):
		return kfdFix{fixPresent, "upstream has them from 6.18.4"}
	case vendorKernelRe.MatchString(rel):
		return kfdFix{fixUnknown, "a vendor kernel backports drivers, so its number does not say whether it has them"}
	case v[0] == 6 && v[1] == 12 && !versionLess(v, ltsFixed):
		return kfdFix{fixPresent, "the 6.12 LTS carries them from 6.12.64"}
	case v[0] == 6 && v[1] == 12:
		return kfdFix{fixAbsent, "the 6.12 LTS carries them only from 6.12.64"}
	}
	return kfdFix{fixAbsent, "upstream has them from 6.18.4, the 6.12 LTS from 6.12.64"}
}
