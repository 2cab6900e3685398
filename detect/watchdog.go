package detect

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/haloforge/haloforge/internal/text"
)

// Watchdog is amdgpu's GPU job timeout (amdgpu.lockup_timeout) and what the
// kernel log says it did: the facts behind the lockup-timeout check, for a
// plan that changes the parameter.
type Watchdog struct {
	// LockupTimeout is the parameter as set ("20000", "-1",
	// "20000,20000,10000,10000"); null when it is not set or not known.
	LockupTimeout *string `json:"lockup_timeout"`
	// Source is where it was read: "sysfs" (/sys/module/amdgpu/parameters,
	// the loaded value, from the command line or modprobe.d), "cmdline",
	// or "" when nothing said.
	Source string `json:"source"`
	// GFXTimeoutMS is how long a graphics job (Vulkan, OpenGL) may run before
	// amdgpu resets the GPU: the parameter's first value, else the kernel's
	// default (2000 from Linux 6.19, 10000 before); -1 when disabled; null
	// when neither the parameter nor the kernel release is known.
	GFXTimeoutMS *int64 `json:"gfx_timeout_ms"`
	// ComputeTimeoutMS is the same for compute jobs (ROCm's kernel queues,
	// Vulkan compute such as llama.cpp's): before Linux 6.19 one value does
	// not set it (amdgpu_drv.c: "With one value specified, the setting will
	// apply to all non-compute jobs"); from 6.19 it does.
	ComputeTimeoutMS *int64 `json:"compute_timeout_ms"`
	// RingTimeouts counts "ring … timeout" lines in dmesg: jobs the watchdog
	// killed. Null when no readable dmesg was collected.
	RingTimeouts *int `json:"ring_timeouts"`
	// MESErrors counts "MES failed to respond" lines: the scheduler firmware
	// hung, which no watchdog length fixes. Null without a readable dmesg.
	MESErrors *int `json:"mes_errors"`
}

// Watchdog lengths: the kernel's defaults and the value haloforge proposes.
const (
	// The default for every queue since "drm/amdgpu: reduce queue timeout to
	// 2 seconds v2" (1bea57ea7544, merged for Linux 6.19 in drm-next-2025-12-03).
	watchdogDefaultMS = 2000
	// The default for every queue before Linux 6.19 (compute too, since
	// "drm/amdgpu: change the default timeout for kernel compute queues", 5.14).
	watchdogOldDefaultMS = 10000
	// A common community value against spurious resets on long prompts; a
	// real hang still recovers after 20 s.
	watchdogProposedMS = 20000
)

// The queues of amdgpu.lockup_timeout's list, [GFX,Compute,SDMA,Video].
const (
	queueGFX = iota
	queueCompute
	queueSDMA
	queueVideo
)

var queueNames = [4]string{"GFX", "compute", "SDMA", "video"}

// ringQueue is the queue a ring of a "ring … timeout" line belongs to:
// gfx_0.0.0, comp_1.0.0, sdma0, vcn_dec_0, jpeg_dec_0; -1 for others.
func ringQueue(ring string) int {
	switch {
	case strings.HasPrefix(ring, "gfx"):
		return queueGFX
	case strings.HasPrefix(ring, "comp"):
		return queueCompute
	case strings.HasPrefix(ring, "sdma"):
		return queueSDMA
	case strings.HasPrefix(ring, "vcn") || strings.HasPrefix(ring, "jpeg") || strings.HasPrefix(ring, "uvd") || strings.HasPrefix(ring, "vce"):
		return queueVideo
	}
	return -1
}

// queueTimeouts are each queue's timeout in ms (-1: none) for the parameter
// on a kernel before Linux 6.19 (old) or from it, as
// amdgpu_device_get_job_timeout_settings sets them: the defaults, then the
// values in order (0 keeps a default, a negative one disables); one value
// alone covers GFX, SDMA and video before 6.19 and every queue from 6.19.
func queueTimeouts(v string, old bool) ([4]int64, bool) {
	def := int64(watchdogDefaultMS)
	if old {
		def = watchdogOldDefaultMS
	}
	out := [4]int64{def, def, def, def}
	if _, _, ok := parseLockupTimeout(v); !ok {
		return out, false
	}
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(v), ",") {
		if part == "" {
			break
		}
		ms, _ := strconv.ParseInt(part, 0, 64)
		switch {
		case ms < 0:
			ms = -1
		case ms == 0:
			ms = out[min(n, 3)]
		}
		if n < 4 {
			out[n] = ms
		}
		n++
	}
	if n == 1 {
		out[queueSDMA], out[queueVideo] = out[queueGFX], out[queueGFX]
		if !old {
			out[queueCompute] = out[queueGFX]
		}
	}
	return out, true
}

// beforeWatchdog619 is true when the kernel is older than 6.19 (or unknown:
// the proposal for older kernels works on both).
func beforeWatchdog619(r *Report) bool {
	if r.Kernel.Release != nil {
		if v, ok := kernelVersion(*r.Kernel.Release); ok {
			return versionLess(v, [3]int{6, 19, 0})
		}
	}
	return true
}

// proposedLockup is the value that gives GFX and compute jobs 20 s on this
// kernel: from 6.19 one value sets every queue; before, one value leaves
// compute at its default, so GFX and compute are both named.
func proposedLockup(r *Report) string {
	if beforeWatchdog619(r) {
		return fmt.Sprintf("%d,%d", watchdogProposedMS, watchdogProposedMS)
	}
	return fmt.Sprint(watchdogProposedMS)
}

// ProposedLockupTimeout is the amdgpu.lockup_timeout doctor proposes on a
// kernel release: "20000,20000" before Linux 6.19 (one value would leave
// compute at its default), "20000" from 6.19; an unknown release gets the
// form for older kernels, which works on both.
func ProposedLockupTimeout(release string) string {
	r := &Report{}
	if release != "" {
		r.Kernel.Release = &release
	}
	return proposedLockup(r)
}

// DefaultLockupTimeoutMS is the kernel's own watchdog for every queue on a
// release (10000 before Linux 6.19, 2000 from it); false when the release
// is not a version.
func DefaultLockupTimeoutMS(release string) (int64, bool) { return defaultWatchdogMS(release) }

// parseLockupTimeout reads amdgpu.lockup_timeout as the kernel does
// (amdgpu_device_get_job_timeout_settings: comma-separated kstrtol values,
// base prefixes allowed, the first for GFX; 0 keeps the default, a negative
// value disables it). ok is false when the kernel would reject the text,
// which stops amdgpu ("invalid lockup_timeout parameter syntax").
func parseLockupTimeout(v string) (gfxMS int64, set bool, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false, true
	}
	if len(v) > 256 { // AMDGPU_MAX_TIMEOUT_PARAM_LENGTH
		return 0, false, false
	}
	first := ""
	for i, part := range strings.Split(v, ",") {
		if part == "" {
			break // the kernel stops at an empty field
		}
		if strings.Contains(part, "_") {
			return 0, false, false // kstrtol has no digit separators
		}
		n, err := strconv.ParseInt(part, 0, 64)
		if err != nil {
			return 0, false, false
		}
		if i == 0 {
			first = part
			if n < 0 {
				gfxMS = -1
			} else {
				gfxMS = n
			}
		}
	}
	if first == "" || gfxMS == 0 {
		return 0, false, true // 0: keep the default
	}
	return gfxMS, true, true
}

// defaultWatchdogMS is the kernel's own graphics job timeout for a release.
func defaultWatchdogMS(release string) (int64, bool) {
	v, ok := kernelVersion(release)
	if !ok {
		return 0, false
	}
	if versionLess(v, [3]int{6, 19, 0}) {
		return watchdogOldDefaultMS, true
	}
	return watchdogDefaultMS, true
}

// watchdogFacts fills r.Kernel.Watchdog from sysfs, the command line and dmesg.
func watchdogFacts(f *facts, r *Report) {
	w := &Watchdog{}
	if s, ok := f.read("sys/module/amdgpu/parameters/lockup_timeout"); ok {
		w.Source = "sysfs"
		if v := strings.TrimSpace(lastLine(s)); v != "" {
			w.LockupTimeout = &v
		}
	} else if v, ok := f.cmdlineGet("amdgpu.lockup_timeout"); ok {
		w.Source = "cmdline"
		w.LockupTimeout = &v
	}
	if f.b.Has("dmesg.txt") && !f.dmesg.Restricted {
		w.RingTimeouts = ptr(len(f.dmesg.RingTimeouts))
		w.MESErrors = ptr(f.dmesg.MESErrors)
	}
	if w.LockupTimeout != nil {
		if ms, set, ok := parseLockupTimeout(*w.LockupTimeout); ok && set {
			w.GFXTimeoutMS = ptr(ms)
		}
	}
	if r.Kernel.Release != nil && (w.LockupTimeout != nil || w.Source != "" || f.cmdline != nil) {
		if _, ok := kernelVersion(*r.Kernel.Release); ok {
			if q, ok := queueTimeouts(strOr(w.LockupTimeout, ""), beforeWatchdog619(r)); ok {
				w.ComputeTimeoutMS = ptr(q[queueCompute])
			}
		}
	}
	// The default applies when the parameter is known to be unset (sysfs, or
	// a command line without it) or set to 0.
	known := w.Source == "sysfs" || w.Source == "cmdline" || f.cmdline != nil
	if known && w.GFXTimeoutMS == nil && (w.LockupTimeout == nil || lockupValid(*w.LockupTimeout)) && r.Kernel.Release != nil {
		if ms, ok := defaultWatchdogMS(*r.Kernel.Release); ok {
			w.GFXTimeoutMS = ptr(ms)
		}
	}
	if f.dmesg.LockupDisabled && w.GFXTimeoutMS == nil {
		w.GFXTimeoutMS = ptr(int64(-1))
	}
	if w.Source == "" && w.GFXTimeoutMS == nil && w.RingTimeouts == nil {
		return
	}
	r.Kernel.Watchdog = w
}

func lockupValid(v string) bool { _, _, ok := parseLockupTimeout(v); return ok }

// setByUser is true when the value changes the GFX timeout (not "0", which keeps the default).
func setByUser(v string) bool { _, set, ok := parseLockupTimeout(v); return ok && set }

// fmtMS prints a watchdog length as people read it: "2 s", "20 s", "1.5 s".
func fmtMS(ms int64) string {
	if ms%1000 == 0 {
		return fmt.Sprintf("%d s", ms/1000)
	}
	return fmt.Sprintf("%.1f s", float64(ms)/1000)
}

// lockupFix is the exact change to the proposed watchdog, replacing a
// value already set.
func lockupFix(r *Report, lead string, replace bool) *Remedy {
	var args []ArgChange
	if replace {
		args = append(args, ArgChange{Arg: KernelArg{Op: OpRemove, Key: "amdgpu.lockup_timeout"}})
	}
	why := "long prompts can outlast the GPU watchdog, 2 s from Linux 6.19 and 10 s before: 20 s for GFX and compute jobs"
	if beforeWatchdog619(r) {
		why += "; before 6.19 one value leaves compute at 10 s"
	}
	args = append(args, ArgChange{KernelArg{OpSet, "amdgpu.lockup_timeout", proposedLockup(r)}, why})
	return &Remedy{Lead: lead, Args: args, After: "Check after the reboot: cat /sys/module/amdgpu/parameters/lockup_timeout"}
}

// checkLockupTimeout: long prompts on the iGPU can run one GPU job longer
// than amdgpu's watchdog, which then resets the GPU ("ring gfx timeout", or
// "ring comp_1.0.0 timeout" for llama.cpp's Vulkan compute queue; Linux 6.19
// cut the default to 2 s). Each timed-out ring is judged by its own queue's
// timeout. Without evidence of a reset the default is fine; the advice stays
// in the detail, because a longer watchdog also delays recovery from a real
// hang.
func checkLockupTimeout(f *facts, r *Report) Check {
	if !strixHalo(r) {
		return skip("the GPU watchdog advice is for gfx1151 (long prompts on the iGPU)")
	}
	w := r.Kernel.Watchdog
	if w == nil || (w.Source == "" && f.cmdline == nil && w.RingTimeouts == nil) || (w.Source == "" && w.GFXTimeoutMS == nil && w.RingTimeouts == nil) {
		return Check{Status: StatusSkip, Summary: "amdgpu.lockup_timeout unknown (neither /sys/module/amdgpu/parameters/lockup_timeout nor the kernel command line was collected)",
			Remedy: advice("Check it with: cat /sys/module/amdgpu/parameters/lockup_timeout   (empty: the kernel's default)")}
	}
	if w.LockupTimeout != nil && !lockupValid(*w.LockupTimeout) || f.dmesg.LockupInvalid {
		return Check{Status: StatusFail,
			Summary: "amdgpu.lockup_timeout=" + strOr(w.LockupTimeout, "?") + " is not a number list: amdgpu refuses to start (\"invalid lockup_timeout parameter syntax\")",
			Remedy:  lockupFix(r, "Replace it with a number of milliseconds per queue (GFX,compute):", true)}
	}
	setTo := "amdgpu.lockup_timeout not collected"
	switch {
	case w.LockupTimeout != nil:
		setTo = "amdgpu.lockup_timeout=" + *w.LockupTimeout
	case w.Source == "sysfs":
		setTo = "amdgpu.lockup_timeout not set"
	case f.cmdline != nil:
		setTo = "amdgpu.lockup_timeout not on the command line"
	}
	old := beforeWatchdog619(r)
	known := r.Kernel.Release != nil
	q, _ := queueTimeouts(strOr(w.LockupTimeout, ""), old)
	if w.GFXTimeoutMS != nil && (*w.GFXTimeoutMS < 0 || !known) {
		q[queueGFX] = *w.GFXTimeoutMS // dmesg said the watchdog is off, or the parameter says what an unknown kernel's default does not
	}
	timeouts, mes := 0, 0
	if w.RingTimeouts != nil {
		timeouts, mes = *w.RingTimeouts, *w.MESErrors
	}
	replace := w.LockupTimeout != nil
	detail := "Long prompts on the iGPU can run one GPU job past the watchdog, which then resets the GPU (\"ring gfx timeout\",\n" +
		"or \"ring comp_1.0.0 timeout\" for Vulkan compute such as llama.cpp's; Linux 6.19 made the default 2 s for every queue).\n" +
		"If that happens, give GFX and compute jobs 20 s (a real hang still recovers, 20 s later):\n" + lockupFix(r, "", replace).Text(osID(r))
	switch {
	case timeouts > 0 && mes > 0:
		return Check{Status: StatusWarn,
			Summary: fmt.Sprintf("dmesg: %s with %s: the GPU's scheduler firmware hung; a longer watchdog will not help", text.Plural(timeouts, "GPU job timeout"), text.Plural(mes, "MES error")),
			Remedy: &Remedy{Lead: "This is an MES hang (haloforge diagnose family amdgpu-mes-hang), not a slow job: see the mes-firmware and\n" +
				"firmware-kernel-pair checks (linux-firmware without MES 0x83, a kernel with the gfx1151 fixes), and keep the watchdog as it is.",
				Manual: "the GPU's scheduler firmware hung (MES errors in dmesg): a longer watchdog would not help"}}
	case timeouts > 0:
		var short []string
		for _, ring := range f.dmesg.RingTimeouts {
			i := ringQueue(ring)
			if i < 0 {
				i = queueGFX
			}
			if ms := q[i]; ms >= 0 && ms < watchdogProposedMS {
				length := fmtMS(ms)
				if !known && w.LockupTimeout == nil {
					length = "default (2 s or 10 s)"
				}
				s := fmt.Sprintf("ring %s: the %s queue's %s watchdog", ring, queueNames[i], length)
				if !slices.Contains(short, s) {
					short = append(short, s)
				}
			}
		}
		if len(short) > 0 {
			return Check{Status: StatusWarn,
				Summary: fmt.Sprintf("dmesg: %s: a job ran longer than its watchdog and the GPU was reset (%s; %s)", text.Plural(timeouts, "GPU job timeout"), strings.Join(short, ", "), setTo),
				Remedy:  lockupFix(r, "Long prompts can run one GPU job longer than the watchdog. Give GFX and compute jobs 20 s:", replace)}
		}
		return Check{Status: StatusWarn,
			Summary: fmt.Sprintf("dmesg: %d GPU job timeout(s) even with %s (ring %s): a job hangs rather than runs long", timeouts, setTo, strings.Join(f.dmesg.RingTimeouts[:min(len(f.dmesg.RingTimeouts), 3)], ", ")),
			Remedy: &Remedy{Lead: "Find the job that hangs: dmesg | grep -B2 -A8 'ring .* timeout' names the process; see haloforge diagnose.",
				Manual: "a GPU job hangs rather than runs long: a longer watchdog would not help"}}
	case q[queueGFX] < 0 || q[queueCompute] < 0:
		return Check{Status: StatusWarn,
			Summary: setTo + ": the GPU watchdog is off, so a real GPU hang freezes the machine until a reboot (and taints the kernel)",
			Remedy:  lockupFix(r, "Give long jobs 20 s instead; a hang then recovers after 20 s:", true),
			Detail:  "amdgpu: a negative lockup_timeout means MAX_SCHEDULE_TIMEOUT and add_taint(TAINT_SOFTLOCKUP) (amdgpu_device.c)."}
	case w.LockupTimeout != nil && setByUser(*w.LockupTimeout) && known && q[queueCompute] < q[queueGFX]:
		return Check{Status: StatusWarn,
			Summary: fmt.Sprintf("%s gives GFX jobs %s but compute jobs (llama.cpp's Vulkan, ROCm's kernel queues) only %s: before Linux 6.19 one value covers only non-compute queues",
				setTo, fmtMS(q[queueGFX]), fmtMS(q[queueCompute])),
			Remedy: lockupFix(r, "Name the compute queue's timeout too ([GFX,Compute]):", true)}
	case w.LockupTimeout != nil && setByUser(*w.LockupTimeout) && known:
		return Check{Status: StatusOK, Summary: fmt.Sprintf("%s: GFX jobs may run %s and compute jobs %s before amdgpu resets the GPU", setTo, fmtMS(q[queueGFX]), fmtMS(q[queueCompute]))}
	case w.LockupTimeout != nil && setByUser(*w.LockupTimeout):
		return Check{Status: StatusOK, Summary: fmt.Sprintf("%s: a GFX job may run %s before amdgpu resets the GPU (kernel unknown, so the compute queue's timeout is too)", setTo, fmtMS(q[queueGFX]))}
	}
	where := "amdgpu.lockup_timeout not set"
	switch {
	case w.LockupTimeout != nil:
		where = "amdgpu.lockup_timeout=" + *w.LockupTimeout // 0: the default
	case w.Source == "" && f.cmdline != nil:
		where = "amdgpu.lockup_timeout not on the kernel command line" // modprobe.d was not read
	case w.Source == "":
		where = "amdgpu.lockup_timeout not collected"
	}
	seen := "no GPU job timeouts in dmesg"
	if w.RingTimeouts == nil {
		seen = "dmesg not read"
	}
	if known {
		return Check{Status: StatusOK, Summary: fmt.Sprintf("%s: the kernel's %s GPU watchdog; %s", where, fmtMS(q[queueGFX]), seen), Detail: detail}
	}
	return Check{Status: StatusOK, Summary: where + ": the kernel's default GPU watchdog (2 s from Linux 6.19, 10 s before); " + seen, Detail: detail}
}
