package detect

import (
	"fmt"
	"strconv"
	"strings"
)

// Watchdog is amdgpu's GPU job timeout (amdgpu.lockup_timeout) and what the
// kernel log says it did: the facts behind the lockup-timeout check, for a
// plan that changes the parameter.
type Watchdog struct {
	// LockupTimeout is the parameter as set ("20000", "-1",
	// "10000,60000,10000,10000"); null when it is not set or not known.
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
	// The default for graphics jobs before Linux 6.19.
	watchdogOldDefaultMS = 10000
	// LLMKube's value against spurious resets on long prompts
	// (docs/facts.md, lockup-timeout); a real hang still recovers after 20 s.
	watchdogProposedMS = 20000
)

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
func lockupFix(r *Report, replace bool) string {
	var remove []string
	if replace {
		remove = []string{"amdgpu.lockup_timeout"}
	}
	return kernelArgsFix([]string{fmt.Sprintf("amdgpu.lockup_timeout=%d", watchdogProposedMS)}, remove, osID(r)) +
		"\nCheck after the reboot: cat /sys/module/amdgpu/parameters/lockup_timeout"
}

// checkLockupTimeout: long prompts on the iGPU can run one GPU job longer
// than amdgpu's watchdog, which then resets the GPU ("ring gfx timeout";
// fak#11243 saw it beyond 136k tokens with the 10 s default, and Linux 6.19
// cut the default to 2 s). LLMKube sets amdgpu.lockup_timeout=20000.
// Without evidence of a reset the default is fine; the advice stays in the
// detail, because a longer watchdog also delays recovery from a real hang.
func checkLockupTimeout(f *facts, r *Report) Check {
	if !strixHalo(r) {
		return skip("the GPU watchdog advice is for gfx1151 (long prompts on the iGPU)")
	}
	w := r.Kernel.Watchdog
	if w == nil || (w.Source == "" && f.cmdline == nil && w.RingTimeouts == nil) || (w.Source == "" && w.GFXTimeoutMS == nil && w.RingTimeouts == nil) {
		return Check{Status: StatusSkip, Summary: "amdgpu.lockup_timeout unknown (neither /sys/module/amdgpu/parameters/lockup_timeout nor the kernel command line was collected)",
			Fix: "Check it with: cat /sys/module/amdgpu/parameters/lockup_timeout   (empty: the kernel's default)"}
	}
	if w.LockupTimeout != nil && !lockupValid(*w.LockupTimeout) || f.dmesg.LockupInvalid {
		return Check{Status: StatusFail,
			Summary: "amdgpu.lockup_timeout=" + strOr(w.LockupTimeout, "?") + " is not a number list: amdgpu refuses to start (\"invalid lockup_timeout parameter syntax\")",
			Fix:     "Replace it with a number of milliseconds:\n" + lockupFix(r, true)}
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
	timeouts, mes := 0, 0
	if w.RingTimeouts != nil {
		timeouts, mes = *w.RingTimeouts, *w.MESErrors
	}
	gfx := int64(0)
	if w.GFXTimeoutMS != nil {
		gfx = *w.GFXTimeoutMS
	}
	after := "the watchdog"
	if gfx > 0 {
		after = "the " + fmtMS(gfx) + " watchdog"
	}
	detail := "Long prompts on the iGPU can run one GPU job past the watchdog, which then resets the GPU (\"ring gfx timeout\";\n" +
		"fak#11243 saw it beyond 136k tokens with the old 10 s default; Linux 6.19 made the default 2 s).\n" +
		"If that happens, give jobs 20 s as LLMKube does (a real hang still recovers, 20 s later):\n" + lockupFix(r, w.LockupTimeout != nil)
	switch {
	case timeouts > 0 && mes > 0:
		return Check{Status: StatusWarn,
			Summary: fmt.Sprintf("dmesg: %d GPU job timeout(s) with %d MES error(s): the GPU's scheduler firmware hung; a longer watchdog will not help", timeouts, mes),
			Fix: "This is the MES hang of gfx1151 (the amdgpu-mes-hang failure), not a slow job: see the mes-firmware and\n" +
				"firmware-kernel-pair checks (linux-firmware without MES 0x83, kernel >= 6.18.4), and keep the watchdog as it is."}
	case timeouts > 0 && gfx >= 0 && gfx < watchdogProposedMS:
		return Check{Status: StatusWarn,
			Summary: fmt.Sprintf("dmesg: %d GPU job timeout(s) (\"ring %s timeout\"): a job ran longer than %s and the GPU was reset (%s)",
				timeouts, f.dmesg.RingTimeouts[0], after, setTo),
			Fix: "Long prompts can run one GPU job longer than the watchdog. Give jobs 20 s, as LLMKube does:\n" + lockupFix(r, w.LockupTimeout != nil)}
	case timeouts > 0:
		return Check{Status: StatusWarn,
			Summary: fmt.Sprintf("dmesg: %d GPU job timeout(s) even with %s (%s): a job hangs rather than runs long", timeouts, after, setTo),
			Fix:     "Find the job that hangs: dmesg | grep -B2 -A8 'ring .* timeout' names the process; see haloforge diagnose."}
	case gfx < 0:
		return Check{Status: StatusWarn,
			Summary: setTo + ": the GPU watchdog is off, so a real GPU hang freezes the machine until a reboot (and taints the kernel)",
			Fix:     "Give long jobs 20 s instead, as LLMKube does; a hang then recovers after 20 s:\n" + lockupFix(r, true),
			Detail:  "amdgpu: a negative lockup_timeout means MAX_SCHEDULE_TIMEOUT and add_taint(TAINT_SOFTLOCKUP) (amdgpu_device.c)."}
	case w.LockupTimeout != nil && gfx > 0 && setByUser(*w.LockupTimeout):
		return Check{Status: StatusOK, Summary: fmt.Sprintf("%s: a GPU job may run %s before amdgpu resets the GPU", setTo, fmtMS(gfx))}
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
	if gfx > 0 {
		return Check{Status: StatusOK, Summary: fmt.Sprintf("%s: the kernel's %s GPU watchdog; %s", where, fmtMS(gfx), seen), Detail: detail}
	}
	return Check{Status: StatusOK, Summary: where + ": the kernel's default GPU watchdog (2 s from Linux 6.19, 10 s before); " + seen, Detail: detail}
}
