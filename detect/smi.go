package detect

import (
	"regexp"
	"strconv"
	"strings"
)

// SMIGPU is what amd-smi or rocm-smi says about one GPU.
type SMIGPU struct {
	Index     int
	BDF       string // c5:00.0
	Name      string
	DeviceID  string // 1586
	CUs       *int
	GFX       string
	VRAMBytes *int64
	GTTBytes  *int64
	NodeID    *int
}

// SMI is amd-smi or rocm-smi output.
type SMI struct {
	GPUs          []SMIGPU
	DriverVersion string // amdgpu version: X.Y.Z (amdgpu-dkms; in-tree prints the kernel)
}

var (
	smiGPUHeadRe = regexp.MustCompile(`^GPU:\s*(\d+)\s*$`)
	smiTableRe   = regexp.MustCompile(`^\|\s*(?:[0-9a-fA-F]{4}:)?([0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(.*?)\s*\|`)
	smiMemUseRe  = regexp.MustCompile(`(\d+)/(\d+) MB\s*\|\s*$`)
	smiDriverRe  = regexp.MustCompile(`amdgpu version:\s*(\d+\.\d+\.\d+)\b`)
	rsmiLineRe   = regexp.MustCompile(`^GPU\[(\d+)\]\s*:\s*([^:]+?)\s*:\s*(.*)$`)
	rsmiConcRe   = regexp.MustCompile(`^(\d+)\s+(\d+)\s+(0x[0-9a-fA-F]{4}),`)
	bdfRe        = regexp.MustCompile(`(?:[0-9a-fA-F]{4}:)?([0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])`)
)

// gpu returns the GPU with this index, adding it when it is new. The
// pointer is valid until the next call, which may grow the slice.
func (s *SMI) gpu(index int) *SMIGPU {
	for j := range s.GPUs {
		if s.GPUs[j].Index == index {
			return &s.GPUs[j]
		}
	}
	s.GPUs = append(s.GPUs, SMIGPU{Index: index})
	return &s.GPUs[len(s.GPUs)-1]
}

// ParseAMDSMI reads `amd-smi static|list|metric|version` and the default table.
func ParseAMDSMI(s string) SMI {
	var out SMI
	var cur *SMIGPU
	section := ""
	tableRow := -1
	for _, l := range parsePasted(s).lines {
		t := strings.TrimSpace(l)
		if m := smiDriverRe.FindStringSubmatch(t); m != nil {
			out.DriverVersion = m[1]
		}
		if m := smiGPUHeadRe.FindStringSubmatch(t); m != nil {
			i, _ := strconv.Atoi(m[1])
			cur, section = out.gpu(i), ""
			continue
		}
		if m := smiTableRe.FindStringSubmatch(t); m != nil {
			tableRow++
			g := out.gpu(tableRow)
			g.BDF, g.Name = strings.ToLower(m[1]), m[2]
			cur = nil
			continue
		}
		if m := smiMemUseRe.FindStringSubmatch(t); m != nil && tableRow >= 0 {
			mb, _ := strconv.ParseInt(m[2], 10, 64)
			out.GPUs[tableRow].VRAMBytes = ptr(mb << 20)
			continue
		}
		if cur == nil {
			continue
		}
		k, v, ok := strings.Cut(t, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if v == "" {
			section = k
			continue
		}
		applySMIField(cur, section, k, v)
	}
	return out
}

func applySMIField(g *SMIGPU, section, k, v string) {
	switch {
	case k == "BDF":
		if m := bdfRe.FindStringSubmatch(v); m != nil {
			g.BDF = strings.ToLower(m[1])
		}
	case k == "MARKET_NAME":
		g.Name = v
	case k == "DEVICE_ID":
		g.DeviceID = strings.TrimPrefix(strings.ToLower(v), "0x")
	case k == "NUM_COMPUTE_UNITS":
		if n, ok := leadingInt(v); ok {
			g.CUs = ptr(int(n))
		}
	case k == "TARGET_GRAPHICS_VERSION" && gfxNameRe.MatchString(v):
		g.GFX = v
	case k == "NODE_ID":
		if n, ok := leadingInt(v); ok {
			g.NodeID = ptr(int(n))
		}
	case k == "TOTAL_VRAM" || (section == "VRAM" && k == "SIZE"):
		if n, ok := parseSize(v, 1<<20); ok {
			g.VRAMBytes = &n
		}
	case k == "TOTAL_GTT":
		if n, ok := parseSize(v, 1<<20); ok {
			g.GTTBytes = &n
		}
	}
}

// ParseROCmSMI reads rocm-smi output: "GPU[0] : key: value" lines and the
// concise table's device IDs.
func ParseROCmSMI(s string) SMI {
	var out SMI
	for _, l := range parsePasted(s).lines {
		t := strings.TrimSpace(stripArrowNote(l))
		if m := rsmiConcRe.FindStringSubmatch(t); m != nil {
			i, _ := strconv.Atoi(m[1])
			out.gpu(i).DeviceID = strings.TrimPrefix(strings.ToLower(m[3]), "0x")
			continue
		}
		m := rsmiLineRe.FindStringSubmatch(t)
		if m == nil {
			continue
		}
		i, _ := strconv.Atoi(m[1])
		g, k, v := out.gpu(i), m[2], strings.TrimSpace(m[3])
		switch k {
		case "VRAM Total Memory (B)":
			if n, ok := leadingInt(v); ok {
				g.VRAMBytes = &n
			}
		case "GTT Total Memory (B)":
			if n, ok := leadingInt(v); ok {
				g.GTTBytes = &n
			}
		case "Card Series", "Card series":
			g.Name = v
		case "GFX Version":
			if gfxNameRe.MatchString(v) {
				g.GFX = v
			}
		case "Device ID", "Card Model", "Card model":
			if strings.HasPrefix(v, "0x") {
				g.DeviceID = strings.TrimPrefix(strings.ToLower(v), "0x")
			}
		case "PCI Bus":
			if b := bdfRe.FindStringSubmatch(v); b != nil {
				g.BDF = strings.ToLower(b[1])
			}
		}
	}
	return out
}

// stripArrowNote drops an author's "<- note" after a pasted value.
func stripArrowNote(l string) string {
	if i := strings.Index(l, "<-"); i >= 0 {
		return l[:i]
	}
	return l
}

// VulkanDevice is one physical device vulkaninfo (or ggml, or
// MESA_VK_DEVICE_SELECT=list) listed.
type VulkanDevice struct {
	Name       string
	VendorID   string
	DeviceID   string
	Integrated *bool
	GFX        string // from the RADV name: "RADV GFX1151", "RADV STRIX_HALO"
	CPU        bool   // llvmpipe and other software renderers
}

var (
	vkGPUIDRe  = regexp.MustCompile(`GPU id\s*=\s*\d+\s*\((.*)\)\s*$`)
	vkHeadRe   = regexp.MustCompile(`^GPU(\d+):$`)
	vkSelectRe = regexp.MustCompile(`^GPU \d+: ([0-9a-f]+):([0-9a-f]+) "([^"]+)" (\w+)`)
	vkGgmlRe   = regexp.MustCompile(`ggml_vulkan: \d+ = (.+?) \(\w+\) \|.*uma: (\d)`)
	radvRe     = regexp.MustCompile(`RADV ([A-Z0-9_]+)`)
)

// radvCodenames maps Mesa's RADV chip names to LLVM targets.
var radvCodenames = map[string]string{
	"STRIX_HALO": "gfx1151", "STRIX1": "gfx1150", "STRIX": "gfx1150", "KRACKAN1": "gfx1152",
	"NAVI31": "gfx1100", "NAVI32": "gfx1101", "NAVI33": "gfx1102", "PHOENIX": "gfx1103",
	"NAVI21": "gfx1030", "NAVI22": "gfx1031", "NAVI23": "gfx1032", "NAVI24": "gfx1034",
	"REMBRANDT": "gfx1035", "RAPHAEL_MENDOCINO": "gfx1036", "VANGOGH": "gfx1033",
	"NAVI10": "gfx1010", "NAVI14": "gfx1012", "VEGA10": "gfx900", "VEGA20": "gfx906",
	"POLARIS10": "gfx803", "POLARIS11": "gfx803", "POLARIS12": "gfx803", "RENOIR": "gfx90c",
	"GFX1200": "gfx1200", "GFX1201": "gfx1201", "NAVI48": "gfx1201", "NAVI44": "gfx1200",
}

// ParseVulkaninfo reads vulkaninfo (full or --summary), ggml_vulkan lines and
// the MESA_VK_DEVICE_SELECT list; software renderers are marked CPU.
func ParseVulkaninfo(s string) []VulkanDevice {
	var out []VulkanDevice
	idx := map[string]int{}
	var cur *VulkanDevice
	add := func(d VulkanDevice) *VulkanDevice {
		d.GFX = radvGFX(d.Name)
		d.CPU = d.CPU || strings.Contains(strings.ToLower(d.Name), "llvmpipe")
		if i, ok := idx[d.Name]; ok && d.Name != "" {
			return &out[i]
		}
		out = append(out, d)
		if d.Name != "" {
			idx[d.Name] = len(out) - 1
		}
		return &out[len(out)-1]
	}
	for _, l := range parsePasted(s).lines {
		t := strings.TrimSpace(l)
		switch m := vkMatch(t); {
		case m.kind == "gpuid":
			cur = add(VulkanDevice{Name: m.a})
		case m.kind == "head":
			cur = nil
		case m.kind == "select":
			d := VulkanDevice{Name: m.c, VendorID: m.a, DeviceID: m.b, CPU: m.d == "CPU"}
			if m.d == "integrated" || m.d == "discrete" {
				d.Integrated = ptr(m.d == "integrated")
			}
			add(d)
			cur = nil
		case m.kind == "ggml":
			add(VulkanDevice{Name: m.a, Integrated: ptr(m.b == "1")})
			cur = nil
		default:
			cur = vkField(t, cur, add)
		}
	}
	return out
}

type vkLine struct{ kind, a, b, c, d string }

func vkMatch(t string) vkLine {
	if m := vkGPUIDRe.FindStringSubmatch(t); m != nil {
		return vkLine{kind: "gpuid", a: m[1]}
	}
	if vkHeadRe.MatchString(t) {
		return vkLine{kind: "head"}
	}
	if m := vkSelectRe.FindStringSubmatch(t); m != nil {
		return vkLine{kind: "select", a: m[1], b: m[2], c: m[3], d: m[4]}
	}
	if m := vkGgmlRe.FindStringSubmatch(t); m != nil {
		return vkLine{kind: "ggml", a: m[1], b: m[2]}
	}
	return vkLine{}
}

// vkField applies a "key = value" line of --summary to the current device.
func vkField(t string, cur *VulkanDevice, add func(VulkanDevice) *VulkanDevice) *VulkanDevice {
	k, v, ok := strings.Cut(t, "=")
	if !ok {
		return cur
	}
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	if k == "deviceName" {
		return add(VulkanDevice{Name: v})
	}
	if cur == nil {
		return cur
	}
	switch k {
	case "vendorID":
		cur.VendorID = strings.TrimPrefix(strings.ToLower(v), "0x")
	case "deviceID":
		cur.DeviceID = strings.TrimPrefix(strings.ToLower(v), "0x")
	case "deviceType":
		switch {
		case strings.Contains(v, "INTEGRATED"):
			cur.Integrated = ptr(true)
		case strings.Contains(v, "DISCRETE"):
			cur.Integrated = ptr(false)
		case strings.Contains(v, "CPU"):
			cur.CPU = true
		}
	}
	return cur
}

func radvGFX(name string) string {
	m := radvRe.FindStringSubmatch(name)
	if m == nil {
		return ""
	}
	if g, ok := radvCodenames[m[1]]; ok {
		return g
	}
	if l := strings.ToLower(m[1]); gfxNameRe.MatchString(l) {
		return l
	}
	return ""
}
