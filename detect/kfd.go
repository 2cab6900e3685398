package detect

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// KFDNode is one /sys/class/kfd/kfd/topology/nodes/N/properties file.
type KFDNode struct {
	ID    int              // N, or the block's position when pasted without paths
	Props map[string]int64 // key -> value; keys absent from the text are absent here
}

var kfdNodePathRe = regexp.MustCompile(`nodes/(\d+)/properties`)

// ParseKFDProperties reads one properties file ("key value" lines). Pasted
// `# notes` after a value and indentation are ignored.
func ParseKFDProperties(s string) map[string]int64 {
	props := map[string]int64{}
	for _, l := range parsePasted(s).lines {
		f := strings.Fields(stripComment(strings.TrimSpace(l)))
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			if u, uerr := strconv.ParseUint(f[1], 10, 64); uerr == nil {
				v = int64(u >> 1) // hive_id and similar 64-bit IDs: only non-zero matters
			} else {
				continue
			}
		}
		props[f[0]] = v
	}
	return props
}

// ParseKFDNodes splits a paste of several properties files (separated by
// dashed lines or "…/nodes/N/properties:" headers) into nodes.
func ParseKFDNodes(s string) []KFDNode {
	var nodes []KFDNode
	var block []string
	id := -1
	flush := func() {
		if len(block) == 0 {
			return
		}
		props := ParseKFDProperties(strings.Join(block, "\n"))
		if len(props) > 0 {
			n := id
			if n < 0 {
				n = len(nodes)
			}
			nodes = append(nodes, KFDNode{ID: n, Props: props})
		}
		block, id = nil, -1
	}
	for _, l := range strings.Split(s, "\n") {
		t := strings.TrimSpace(cleanLine(l))
		if m := kfdNodePathRe.FindStringSubmatch(t); m != nil {
			flush()
			id, _ = strconv.Atoi(m[1])
			continue
		}
		if strings.Trim(t, "-=") == "" && len(t) >= 3 {
			flush()
			continue
		}
		block = append(block, l)
	}
	flush()
	return nodes
}

// IsGPU follows ollama's rule: non-zero vendor_id and device_id (and
// drm_render_minor when listed); a node with simd_count 0 is a CPU.
func (n KFDNode) IsGPU() bool {
	if v, ok := n.Props["simd_count"]; ok && v == 0 {
		return false
	}
	if v, ok := n.Props["gfx_target_version"]; ok && v == 0 {
		return false
	}
	if n.Props["vendor_id"] == 0 || n.Props["device_id"] == 0 {
		_, hasGFX := n.Props["gfx_target_version"]
		return hasGFX
	}
	if v, ok := n.Props["drm_render_minor"]; ok && v == 0 {
		return false
	}
	return true
}

// GFXFromTarget decodes gfx_target_version: decimal major, hex minor and
// stepping (110501 -> gfx1151, 90010 -> gfx90a). ok is false for values a
// real kernel never writes (minor or stepping above 0xf).
func GFXFromTarget(v int64) (string, bool) {
	if v <= 0 {
		return "", false
	}
	major, minor, step := v/10000, (v/100)%100, v%100
	if minor > 0xf || step > 0xf || major == 0 {
		return "", false
	}
	return fmt.Sprintf("gfx%d%x%x", major, minor, step), true
}

// GFXFromOverride turns an HSA_OVERRIDE_GFX_VERSION such as 11.5.1 into gfx1151.
func GFXFromOverride(s string) (string, bool) {
	p := strings.Split(strings.TrimSpace(s), ".")
	if len(p) != 3 {
		return "", false
	}
	var n [3]int64
	for i, x := range p {
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil || v < 0 || v > 99 {
			return "", false
		}
		n[i] = v
	}
	return GFXFromTarget(n[0]*10000 + n[1]*100 + n[2])
}
