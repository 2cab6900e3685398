package detect

import (
	"regexp"
	"strings"
)

// Rocminfo is what rocminfo printed: the kernel driver line, a /dev/kfd
// error if any, and the HSA agents.
type Rocminfo struct {
	ModuleLoaded  *bool   // "ROCk module is loaded" / "is NOT loaded"
	ModuleVersion string  // "ROCk module version 6.16.6 is loaded": amdgpu-dkms
	KFDError      string  // "Unable to open /dev/kfd read-write: <reason>"
	Agents        []Agent // in the order printed
}

// Agent is one HSA agent block of rocminfo.
type Agent struct {
	Name          string // gfx1151, or the CPU model, or aie2
	MarketingName string
	DeviceType    string // CPU, GPU, DSP
	ChipID        *int64
	BDFID         *int64 // bus<<8 | device<<3 | function
	ComputeUnits  *int
	APU           *bool // Memory Properties: APU (only set when the line is there)
	Node          *int
	PoolBytes     *int64 // size of the first GLOBAL pool
	ISAs          []string
}

var (
	rocmModuleRe = regexp.MustCompile(`ROCk module (?:version (\S+) )?is (NOT )?loaded`)
	kfdOpenRe    = regexp.MustCompile(`Unable to open /dev/kfd(?: read-write)?:?\s*(.*)`)
	agentRe      = regexp.MustCompile(`^\s*Agent\s+\d+\s*$`)
	gfxNameRe    = regexp.MustCompile(`^gfx[0-9a-f]{3,4}$`)
	isaGfxRe     = regexp.MustCompile(`amdgcn-amd-amdhsa--(gfx[0-9a-z-]+)`)
)

// ParseRocminfo reads rocminfo output, whole or grepped. Agents without a
// "Device Type" line (a grep) are kept when their name is a gfx target.
func ParseRocminfo(s string) Rocminfo {
	var r Rocminfo
	var cur *Agent
	inPool, sawPool := false, false
	flush := func() {
		if cur != nil && (cur.Name != "" || cur.DeviceType != "" || cur.ChipID != nil) {
			r.Agents = append(r.Agents, *cur)
		}
		cur = nil
	}
	headers := false
	for _, l := range parsePasted(s).lines {
		t := strings.TrimSpace(l)
		// Header and error lines are rare: test for them cheaply first.
		if strings.Contains(t, "ROCk module") || strings.Contains(t, "/dev/kfd") {
			parseRocminfoHeader(&r, t)
			continue
		}
		if strings.HasPrefix(t, "Agent") && agentRe.MatchString(t) {
			flush()
			headers = true
			cur = &Agent{}
			inPool, sawPool = false, false
			continue
		}
		key, val, ok := strings.Cut(t, ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		indent := len(l) - len(strings.TrimLeft(l, " \t"))
		if !headers && key == "Name" && indent <= 2 && cur != nil && cur.Name != "" && gfxNameRe.MatchString(val) {
			flush() // a grep for Name: lines, several GPUs
		}
		if cur == nil {
			// An excerpt without "Agent N" headers: its fields describe one agent.
			cur = &Agent{}
		}
		applyAgentField(cur, key, val, indent, &inPool, &sawPool)
	}
	flush()
	return r
}

// parseRocminfoHeader reads the driver line and the /dev/kfd error.
func parseRocminfoHeader(r *Rocminfo, t string) {
	if m := rocmModuleRe.FindStringSubmatch(t); m != nil {
		r.ModuleLoaded = ptr(m[2] == "")
		r.ModuleVersion = m[1]
	}
	if m := kfdOpenRe.FindStringSubmatch(t); m != nil {
		r.KFDError = strings.TrimSpace(m[1])
		if r.KFDError == "" {
			r.KFDError = "unknown reason"
		}
	}
}

func applyAgentField(a *Agent, key, val string, indent int, inPool, sawPool *bool) {
	switch {
	case key == "Name" && indent <= 2:
		a.Name = val
	case key == "Name":
		if m := isaGfxRe.FindStringSubmatch(val); m != nil {
			a.ISAs = append(a.ISAs, m[1])
		}
	case key == "Marketing Name":
		a.MarketingName = val
	case key == "Device Type":
		a.DeviceType = val
	case key == "Chip ID":
		if v, ok := leadingInt(val); ok {
			a.ChipID = &v
		}
	case key == "BDFID":
		if v, ok := leadingInt(val); ok {
			a.BDFID = &v
		}
	case key == "Compute Unit":
		if v, ok := leadingInt(val); ok {
			a.ComputeUnits = ptr(int(v))
		}
	case key == "Node":
		if v, ok := leadingInt(val); ok {
			a.Node = ptr(int(v))
		}
	case key == "Memory Properties":
		a.APU = ptr(strings.Contains(val, "APU"))
	case key == "Segment":
		*inPool = strings.HasPrefix(val, "GLOBAL") && !*sawPool
	case key == "Size" && *inPool:
		if v, ok := leadingInt(val); ok && strings.Contains(val, "KB") {
			a.PoolBytes = ptr(v * 1024)
			*sawPool = true
		}
		*inPool = false
	}
}

// GPUs returns the agents whose Device Type is GPU (the NPU is a DSP).
func (r Rocminfo) GPUs() []Agent {
	var out []Agent
	for _, a := range r.Agents {
		// An excerpt may lack the Device Type line: a gfx name or a chip ID says GPU.
		implied := a.DeviceType == "" && (gfxNameRe.MatchString(a.Name) || (a.ChipID != nil && *a.ChipID > 0))
		if a.DeviceType == "GPU" || implied {
			out = append(out, a)
		}
	}
	return out
}
