package detect

import (
	"regexp"
	"strings"
)

// Cmdline is a kernel command line split into parameters, in order.
// Flags without a value map to "".
type Cmdline struct {
	Params []Param
}

// Param is one kernel parameter.
type Param struct{ Key, Value string }

// shellExpansionRe matches ${GRUB_CMDLINE_LINUX:+…} and similar in GRUB files.
var shellExpansionRe = regexp.MustCompile(`\$\{[^}]*\}`)

var grubVarRe = regexp.MustCompile(`^GRUB_CMDLINE_LINUX(?:_DEFAULT)?="(.*)"\s*$`)

// ParseCmdline reads /proc/cmdline, a dmesg "Command line:" value, or a
// GRUB_CMDLINE_LINUX[_DEFAULT]="…" line. Lines a terminal wrapped are joined
// with a space; quotes around values are removed.
func ParseCmdline(s string) Cmdline {
	var parts []string
	for _, l := range parsePasted(s).lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if m := grubVarRe.FindStringSubmatch(t); m != nil {
			t = m[1]
		}
		if _, v, ok := strings.Cut(t, "ommand line: "); ok { // "Command line:", "Kernel command line:"
			t = v
		}
		parts = append(parts, t)
	}
	var c Cmdline
	joined := shellExpansionRe.ReplaceAllString(strings.Join(parts, " "), " ")
	for _, f := range splitCmdline(joined) {
		if strings.HasPrefix(f, "${") || f == "…" || f == "..." {
			continue // shell expansions and elisions from a pasted GRUB file
		}
		k, v, _ := strings.Cut(f, "=")
		if k == "" {
			continue // "=value" is no parameter
		}
		c.Params = append(c.Params, Param{Key: k, Value: strings.Trim(v, `"`)})
	}
	return c
}

// splitCmdline splits on spaces outside double quotes, as the kernel does.
func splitCmdline(s string) []string {
	var out []string
	var b strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
			b.WriteRune(r)
		case (r == ' ' || r == '\t') && !quoted:
			if b.Len() > 0 {
				out = append(out, b.String())
				b.Reset()
			}
		default:
			b.WriteRune(r)
		}
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// Get returns the last value of a parameter: the kernel lets later ones win.
func (c Cmdline) Get(key string) (string, bool) {
	for i := len(c.Params) - 1; i >= 0; i-- {
		if c.Params[i].Key == key {
			return c.Params[i].Value, true
		}
	}
	return "", false
}

// Relevant returns the GPU-relevant parameters as a map (for the report).
func (c Cmdline) Relevant() map[string]string {
	out := map[string]string{}
	for _, p := range c.Params {
		if relevantParam(p.Key) {
			out[p.Key] = p.Value
		}
	}
	return out
}

// BootKernel is the release in BOOT_IMAGE=/boot/vmlinuz-<release>.
func (c Cmdline) BootKernel() string {
	v, ok := c.Get("BOOT_IMAGE")
	if !ok {
		return ""
	}
	if i := strings.LastIndex(v, "vmlinuz-"); i >= 0 {
		return v[i+len("vmlinuz-"):]
	}
	return ""
}

func relevantParam(k string) bool {
	for _, p := range []string{"amdgpu.", "amdttm.", "ttm.", "iommu.", "amdxdna.", "amd_iommu", "iommu", "intel_iommu", "nomodeset", "radeon.", "pci=", "amd_pstate"} {
		if k == strings.TrimSuffix(p, ".") || (strings.HasSuffix(p, ".") && strings.HasPrefix(k, p)) {
			return true
		}
	}
	return false
}
