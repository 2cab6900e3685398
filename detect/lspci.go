package detect

import (
	"regexp"
	"strings"
)

// PCIDevice is one device line of lspci (-nn, -nnk or plain).
type PCIDevice struct {
	Slot     string // "c5:00.0" (domain dropped)
	Class    string // "Display controller"
	ClassID  string // "0380", empty without -nn
	Vendor   string // "1002", empty without -nn
	Device   string // "1586"
	Name     string // the description after the class
	Driver   string // "Kernel driver in use" (-k)
	Revision string
}

var (
	lspciLineRe = regexp.MustCompile(`^(?:[0-9a-fA-F]{4}:)?([0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+([^:\[]+?)(?:\s*\[([0-9a-fA-F]{4})\])?:\s+(.*)$`)
	lspciIDRe   = regexp.MustCompile(`\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\]`)
	lspciRevRe  = regexp.MustCompile(`\s*\(rev ([0-9a-fA-F]+)\)\s*$`)
)

// ParseLspci reads lspci output; a `pcilib:` warning or a grep prefix is
// ignored. Without -nn the IDs stay empty and the vendor comes from the name.
func ParseLspci(s string) []PCIDevice {
	var out []PCIDevice
	for _, l := range parsePasted(s).lines {
		t := strings.TrimSpace(l)
		if len(out) > 0 && (strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "  ")) {
			if d, ok := strings.CutPrefix(t, "Kernel driver in use:"); ok {
				out[len(out)-1].Driver = strings.TrimSpace(d)
			}
			continue
		}
		m := lspciLineRe.FindStringSubmatch(t)
		if m == nil {
			continue
		}
		d := PCIDevice{Slot: strings.ToLower(m[1]), Class: strings.TrimSpace(m[2]), ClassID: strings.ToLower(m[3])}
		rest := m[4]
		if rm := lspciRevRe.FindStringSubmatch(rest); rm != nil {
			d.Revision = rm[1]
			rest = rest[:len(rest)-len(rm[0])]
		}
		if ids := lspciIDRe.FindAllStringSubmatchIndex(rest, -1); len(ids) > 0 {
			last := ids[len(ids)-1]
			d.Vendor = strings.ToLower(rest[last[2]:last[3]])
			d.Device = strings.ToLower(rest[last[4]:last[5]])
			rest = rest[:last[0]]
		}
		d.Name = strings.TrimSpace(rest)
		out = append(out, d)
	}
	return out
}

// IsDisplay is true for VGA, 3D and display controllers (class 03xx), the
// classes GPUs use; Strix Halo is 0380, not VGA.
func (d PCIDevice) IsDisplay() bool {
	if d.ClassID != "" {
		return strings.HasPrefix(d.ClassID, "03")
	}
	c := strings.ToLower(d.Class)
	return strings.Contains(c, "vga") || strings.Contains(c, "3d controller") || strings.Contains(c, "display controller")
}

// VendorName is amd, nvidia, intel or "" from the numeric ID or the name.
func (d PCIDevice) VendorName() string {
	switch d.Vendor {
	case "1002":
		return "amd"
	case "10de":
		return "nvidia"
	case "8086":
		return "intel"
	}
	return vendorFromName(d.Name)
}

func vendorFromName(n string) string {
	l := strings.ToLower(n)
	switch {
	case strings.Contains(l, "advanced micro devices") || strings.Contains(l, "amd/ati") || strings.Contains(l, "radeon"):
		return "amd"
	case strings.Contains(l, "nvidia"):
		return "nvidia"
	case strings.Contains(l, "intel"):
		return "intel"
	}
	return ""
}
