package hostfix

import (
	"cmp"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/internal/text"
)

// Verify item statuses.
const (
	VerifyOK      = "ok"
	VerifyFail    = "fail"
	VerifyUnknown = "unknown" // could not be read: not verified
)

// VerifyItem is one thing --verify compared.
type VerifyItem struct {
	What   string `json:"what"`
	Status string `json:"status"`
	Detail string `json:"detail"`
}

// VerifyReport is --verify's answer: OK only when every item is ok.
type VerifyReport struct {
	OK    bool         `json:"ok"`
	Items []VerifyItem `json:"items"`
	undo  string       // the rollback command the text names
}

func (v *VerifyReport) add(what, status, detail string) {
	// A detail quotes the kernel log and the machine's files: one line,
	// sanitised, for the text and the JSON alike.
	v.Items = append(v.Items, VerifyItem{What: what, Status: status, Detail: text.Printable(detail, 0)})
}

// dmesgFamilies are diagnose's rules for a kernel log that shows the GPU in
// trouble: MES and ring timeouts, page faults, and GTT settings the kernel
// complains about.
var dmesgFamilies = map[string]string{
	"amdgpu-mes-hang": "MES or ring timeout",
	"gpu-page-fault":  "GPU page fault",
	"ttm-gtt-config":  "GTT setting the kernel complains about",
}

// Lines no diagnose rule names, because a reset or a missing firmware file is
// not a build failure: amdgpu's reset messages (amdgpu_device.c,
// amdgpu_job.c) and the firmware loader's (drivers/base/firmware_loader).
var (
	resetRe    = regexp.MustCompile(`GPU reset begin!|GPU reset\(\d+\) (succeeded|failed)|GPU reset succeeded|[Rr]ing \S+ reset failed|Starting \S+ ring reset|device wedged|GPU recovery`)
	firmwareRe = regexp.MustCompile(`Direct firmware load for amdgpu/\S+ failed|amdgpu.*[Ff]ailed to load firmware|amdgpu.*failed to load ucode|Fatal error during GPU init`)
	// optionalFirmwareRe: the PSP's trusted-application blobs are optional
	// ("not a requirement for basic ROCm functionality", ROCm/ROCm#912).
	optionalFirmwareRe = regexp.MustCompile(`amdgpu/\S+_ta\.bin`)
	bootRe             = regexp.MustCompile(`Linux version \S+`)
)

// currentBoot keeps the lines of the last boot in a log that holds several
// (a saved journal): those after the last "Linux version" line.
func currentBoot(s string) string {
	locs := bootRe.FindAllStringIndex(s, -1)
	if len(locs) < 2 {
		return s
	}
	at := locs[len(locs)-1][0]
	if nl := strings.LastIndexByte(s[:at], '\n'); nl >= 0 {
		return s[nl+1:]
	}
	return s[at:]
}

// VerifyInput is what --verify reads: the analysed facts, the raw bundle
// (command line, dmesg) and, when there is one, the system's /etc/group.
type VerifyInput struct {
	Report *detect.Report
	Bundle *detect.Bundle
	Groups map[string][]string // /etc/group; nil when unknown
	// Undo is the rollback command to name when the machine does not
	// match, with the flags the user gave (--state-dir, where the backups
	// are); "" names the plain one.
	Undo string
	// Again is this verify as the user typed it (the plan, --root,
	// --state-dir), which the advice to save dmesg first repeats with
	// --dmesg; "" names the plain one.
	Again string
}

// Verify compares the live values with the plan's target and scans the
// current boot's kernel log.
func Verify(p *Plan, in VerifyInput) *VerifyReport {
	v := &VerifyReport{undo: cmp.Or(in.Undo, "haloforge doctor --rollback")}
	r, t := in.Report, p.Target
	verifyCmdline(v, t, in.Bundle)
	if t.PagesLimit > 0 {
		mod := t.TTMModule
		if mod == "" {
			mod = "ttm"
		}
		what := "/sys/module/" + mod + "/parameters/pages_limit"
		switch {
		case r.Kernel.TTMPagesLimit == nil:
			v.add(what, VerifyUnknown, "not readable here")
		case r.Kernel.TTMModule != nil && *r.Kernel.TTMModule != mod:
			v.add(what, VerifyFail, fmt.Sprintf("the loaded TTM module is %s, the plan set %s", *r.Kernel.TTMModule, mod))
		case *r.Kernel.TTMPagesLimit == t.PagesLimit:
			v.add(what, VerifyOK, fmt.Sprintf("%d (%s)", t.PagesLimit, text.Bytes(t.PagesLimit*4096)))
		default:
			v.add(what, VerifyFail, fmt.Sprintf("%d, the plan set %d", *r.Kernel.TTMPagesLimit, t.PagesLimit))
		}
	}
	if t.GTTBytes > 0 {
		g := r.Primary()
		switch {
		case g == nil || g.GTTBytes == nil:
			v.add("GTT size", VerifyUnknown, "neither sysfs mem_info_gtt_total nor dmesg says")
		case *g.GTTBytes == t.GTTBytes:
			v.add("GTT size", VerifyOK, text.Bytes(t.GTTBytes))
		case *g.GTTBytes > t.GTTBytes:
			v.add("GTT size", VerifyFail, fmt.Sprintf("%s, the plan set %s (is amdgpu.gttsize still set somewhere?)", text.Bytes(*g.GTTBytes), text.Bytes(t.GTTBytes)))
		default:
			v.add("GTT size", VerifyFail, fmt.Sprintf("%s, the plan set %s (rebooted since --apply?)", text.Bytes(*g.GTTBytes), text.Bytes(t.GTTBytes)))
		}
	}
	if t.User != "" {
		verifyGroups(v, t, r, in.Groups)
	}
	if r.Firmware.MES != nil {
		if c, ok := r.Check(detect.CheckMESFirmware); ok && c.Status == detect.StatusFail {
			v.add("MES firmware", VerifyFail, c.Summary)
		} else {
			v.add("MES firmware", VerifyOK, *r.Firmware.MES)
		}
	}
	verifyDmesg(v, in.Bundle, cmp.Or(in.Again, "haloforge doctor --verify"))
	v.OK = !slices.ContainsFunc(v.Items, func(i VerifyItem) bool { return i.Status != VerifyOK })
	return v
}

// cmdlineOf is the running kernel's command line from a bundle: cmdline.txt,
// else dmesg's "Command line:".
func cmdlineOf(b *detect.Bundle) (detect.Cmdline, bool) {
	if s, ok := b.Get("cmdline.txt"); ok {
		return detect.ParseCmdline(s), true
	}
	if s, ok := b.Get("dmesg.txt"); ok {
		if d := detect.ParseDmesg(s); d.Cmdline != "" {
			return detect.ParseCmdline(d.Cmdline), true
		}
	}
	return detect.Cmdline{}, false
}

func verifyCmdline(v *VerifyReport, t Target, b *detect.Bundle) {
	if len(t.Args) == 0 {
		return
	}
	c, ok := cmdlineOf(b)
	if !ok {
		v.add("kernel command line", VerifyUnknown, "no /proc/cmdline or dmesg to read it from")
		return
	}
	var ps []token
	for _, p := range c.Params {
		ps = append(ps, token{key: p.Key, value: p.Value, hasValue: p.Value != ""})
	}
	for _, a := range t.Args {
		what := "cmdline: " + a.String()
		if a.Op == OpRemove {
			what = "cmdline: no " + a.Key
		}
		if satisfied(ps, a) {
			v.add(what, VerifyOK, "")
			continue
		}
		var have []string
		for _, p := range ps {
			if p.key == a.Key {
				have = append(have, p.String())
			}
		}
		detail := "missing"
		if len(have) > 0 {
			detail = "found " + strings.Join(have, " ")
		}
		v.add(what, VerifyFail, detail+" (rebooted yet? is the bootloader the one the plan was for?)")
	}
}

func verifyGroups(v *VerifyReport, t Target, r *detect.Report, groups map[string][]string) {
	for _, g := range t.Groups {
		what := t.User + " in " + g
		switch {
		case r.Host.User != nil && *r.Host.User == t.User && slices.Contains(r.Host.Groups, g):
			v.add(what, VerifyOK, "in effect for this login")
		case groups != nil && slices.Contains(groups[g], t.User):
			if r.Host.User != nil && *r.Host.User == t.User {
				v.add(what, VerifyFail, "in /etc/group, but not in effect yet: log out and back in")
			} else {
				v.add(what, VerifyOK, "in /etc/group")
			}
		case groups != nil:
			v.add(what, VerifyFail, "not a member")
		default:
			v.add(what, VerifyUnknown, "/etc/group not readable here")
		}
	}
}

func verifyDmesg(v *VerifyReport, b *detect.Bundle, again string) {
	s, ok := b.Get("dmesg.txt")
	if !ok || strings.TrimSpace(s) == "" {
		v.add("kernel log (dmesg)", VerifyUnknown, "not readable: dmesg needs root here (kernel.dmesg_restrict); run sudo dmesg > dmesg.txt and "+again+" --dmesg dmesg.txt")
		return
	}
	if detect.ParseDmesg(s).Restricted {
		v.add("kernel log (dmesg)", VerifyUnknown, "dmesg said: read kernel buffer failed (needs root); run sudo dmesg > dmesg.txt and "+again+" --dmesg dmesg.txt")
		return
	}
	s = currentBoot(s)
	found := 0
	findings, _ := diagnose.Scan(strings.NewReader(s), diagnose.MatcherOptions{File: "dmesg"})
	for _, f := range findings {
		if what, ok := dmesgFamilies[f.Family]; ok {
			v.add("dmesg: "+what, VerifyFail, fmt.Sprintf("line %d: %s", f.Line, strings.TrimSpace(f.Text)))
			found++
		}
	}
	for i, l := range strings.Split(s, "\n") {
		switch {
		case resetRe.MatchString(l) && strings.Contains(l, "amdgpu"):
			v.add("dmesg: GPU reset", VerifyFail, fmt.Sprintf("line %d: %s", i+1, strings.TrimSpace(l)))
			found++
		case firmwareRe.MatchString(l) && !optionalFirmwareRe.MatchString(l):
			v.add("dmesg: firmware load failure", VerifyFail, fmt.Sprintf("line %d: %s", i+1, strings.TrimSpace(l)))
			found++
		}
		if found > 20 {
			break
		}
	}
	if found == 0 {
		v.add("kernel log (dmesg)", VerifyOK, "no MES or ring timeout, GPU reset, page fault or firmware load failure in this boot")
	}
}

// WriteText prints the verification as a list.
func (v *VerifyReport) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, it := range v.Items {
		mark := map[string]string{VerifyOK: "[✓]", VerifyFail: "[✗]", VerifyUnknown: "[?]"}[it.Status]
		line := mark + " " + it.What
		if it.Detail != "" {
			line += ": " + it.Detail
		}
		b.WriteString(line + "\n")
	}
	if v.OK {
		b.WriteString("\nVerified: the machine matches the plan and this boot's kernel log is clean.\n")
	} else {
		b.WriteString("\nNot verified: see the [✗] and [?] lines above. To undo the changes: " + v.undo + "\n")
	}
	_, err := io.WriteString(w, text.Sanitize(b.String()))
	return err
}
