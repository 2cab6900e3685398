package detect

import (
	"regexp"
	"strconv"
	"strings"
)

// Dmesg holds what the kernel log says about the GPU driver.
type Dmesg struct {
	KernelRelease     string   // "Linux version <release> (…"
	Cmdline           string   // "Command line: …"
	VRAMBytes         *int64   // "512M of VRAM memory ready"
	GTTBytes          *int64   // "128000M of GTT memory ready."
	DriverVersion     string   // "[drm] amdgpu version: 6.14.14" (amdgpu-dkms)
	GTTSizeDeprecated bool     // "Configuring gttsize via module parameter is deprecated"
	UnknownParams     []string // "amdgpu: unknown parameter 'gtt_size' ignored"
	GTTMismatch       bool     // "GTT size has been set as … but TTM size …"
	GTTAsked, TTMSize *int64   // the two sizes of that line, in bytes
	Restricted        bool     // "dmesg: read kernel buffer failed: Operation not permitted"
	PCISlot           string   // first "amdgpu 0000:c5:00.0:" prefix
	DeviceID          string   // "initializing kernel modesetting (VEGA10 0x1002:0x6863 …)"
	ComputeUnits      *int     // "SE 2, SH per SE 2, CU per SH 10, active_cu_number 40"
	RingTimeouts      []string // rings of "ring gfx_0.0.0 timeout" lines: a GPU job outlived the watchdog
	MESErrors         int      // "MES failed to respond" / "MES might be in unrecoverable state"
	LockupDisabled    bool     // "lockup timeout disabled": amdgpu.lockup_timeout is negative
	LockupInvalid     bool     // "invalid lockup_timeout parameter syntax": amdgpu did not start
	XDNASeen          bool     // a line of the amdxdna NPU driver
	XDNASVAFailed     bool     // "SVA bind device failed": the NPU cannot map memory (needs the IOMMU)
}

var (
	dmesgTSRe      = regexp.MustCompile(`^\s*\[\s*\d+\.\d+\]\s?`)
	dmesgMemRe     = regexp.MustCompile(`(\d+)M of (VRAM|GTT) memory ready`)
	dmesgLinuxRe   = regexp.MustCompile(`Linux version (\S+)`)
	dmesgDrvRe     = regexp.MustCompile(`amdgpu version: (\d+\.\d+\.\d+)`)
	dmesgUnknownRe = regexp.MustCompile(`amdgpu: unknown parameter '([^']+)' ignored`)
	dmesgSlotRe    = regexp.MustCompile(`(?:amdgpu|Initialized amdgpu \S+ \d+ for) (?:[0-9a-f]{4}:)?([0-9a-f]{2}:[0-9a-f]{2}\.[0-7])`)
	dmesgMismatch  = regexp.MustCompile(`GTT size has been set as (\d+) but TTM size has been set as (\d+)`)
	dmesgCURe      = regexp.MustCompile(`active_cu_number (\d+)`)
	dmesgModeRe    = regexp.MustCompile(`initializing kernel modesetting \((.+?) 0x1002:0x([0-9A-Fa-f]{4})`)
	// "amdgpu: ring gfx_0.0.0 timeout, signaled seq=…" (6.x) and
	// "*ERROR* ring gfx timeout, signaled seq=…" (older kernels).
	dmesgRingTimeoutRe = regexp.MustCompile(`\bring (\S+) timeout\b`)
)

// ParseDmesg reads dmesg output. Lines a terminal wrapped (no timestamp while
// the others have one) are joined back without a space, as the wrap cut a word.
func ParseDmesg(s string) Dmesg {
	var d Dmesg
	for _, l := range joinWrapped(parsePasted(s).lines) {
		l = dmesgTSRe.ReplaceAllString(l, "")
		parseDmesgLine(&d, l)
	}
	return d
}

func parseDmesgLine(d *Dmesg, l string) {
	switch {
	case strings.Contains(l, "read kernel buffer failed"):
		d.Restricted = true
	case d.KernelRelease == "" && dmesgLinuxRe.MatchString(l):
		d.KernelRelease = dmesgLinuxRe.FindStringSubmatch(l)[1]
	case strings.Contains(l, "ommand line: ") && d.Cmdline == "":
		_, d.Cmdline, _ = strings.Cut(l, "ommand line: ")
	case strings.Contains(l, "gttsize via module parameter is deprecated"):
		d.GTTSizeDeprecated = true
	case strings.Contains(l, "GTT size has been set as") && strings.Contains(l, "TTM size"):
		d.GTTMismatch = true
		if m := dmesgMismatch.FindStringSubmatch(l); m != nil {
			a, errA := strconv.ParseInt(m[1], 10, 64)
			t, errT := strconv.ParseInt(m[2], 10, 64)
			if errA == nil && errT == nil {
				d.GTTAsked, d.TTMSize = &a, &t
			}
		}
	}
	if m := dmesgMemRe.FindStringSubmatch(l); m != nil {
		mib, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || mib > 1<<30 { // beyond any machine: a corrupt line
			return
		}
		b := mib << 20
		if m[2] == "VRAM" {
			d.VRAMBytes = &b
		} else {
			d.GTTBytes = &b
		}
	}
	if m := dmesgDrvRe.FindStringSubmatch(l); m != nil && d.DriverVersion == "" {
		d.DriverVersion = m[1]
	}
	if m := dmesgUnknownRe.FindStringSubmatch(l); m != nil {
		d.UnknownParams = append(d.UnknownParams, m[1])
	}
	if m := dmesgCURe.FindStringSubmatch(l); m != nil && d.ComputeUnits == nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n < 1<<16 {
			d.ComputeUnits = &n
		}
	}
	if m := dmesgRingTimeoutRe.FindStringSubmatch(l); m != nil && len(d.RingTimeouts) < 1000 {
		d.RingTimeouts = append(d.RingTimeouts, strings.TrimSuffix(m[1], ","))
	}
	switch {
	case strings.Contains(l, "MES failed to respond") || strings.Contains(l, "MES might be in unrecoverable state"):
		d.MESErrors++
	case strings.Contains(l, "lockup timeout disabled"):
		d.LockupDisabled = true
	case strings.Contains(l, "invalid lockup_timeout parameter syntax"):
		d.LockupInvalid = true
	}
	if strings.Contains(l, "amdxdna") {
		d.XDNASeen = true
		d.XDNASVAFailed = d.XDNASVAFailed || strings.Contains(l, "SVA bind device failed")
	}
	if m := dmesgModeRe.FindStringSubmatch(l); m != nil && d.DeviceID == "" {
		d.DeviceID = strings.ToLower(m[2])
	}
	if m := dmesgSlotRe.FindStringSubmatch(l); m != nil && d.PCISlot == "" {
		d.PCISlot = m[1]
	}
}

// joinWrapped glues a line without a timestamp to the previous one when
// most lines carry timestamps (a terminal wrapped it while pasting).
func joinWrapped(lines []string) []string {
	stamped := 0
	for _, l := range lines {
		if dmesgTSRe.MatchString(l) {
			stamped++
		}
	}
	if stamped*2 < len(lines) {
		return lines
	}
	// Pieces are joined once per line: appending them one by one would copy
	// the growing line again for every piece, quadratic in a hostile log.
	out := make([]string, 0, len(lines))
	var parts []string // a line and the wrapped pieces after it
	flush := func() {
		switch len(parts) {
		case 0:
		case 1:
			out = append(out, parts[0])
		default:
			out = append(out, strings.Join(parts, ""))
		}
		parts = parts[:0]
	}
	for _, l := range lines {
		if l == "" {
			continue
		}
		if len(parts) > 0 && !dmesgTSRe.MatchString(l) {
			parts = append(parts, l)
			continue
		}
		flush()
		parts = append(parts, l)
	}
	flush()
	return out
}
