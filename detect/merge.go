package detect

import (
	"fmt"
	"regexp"
	"strings"
)

// cand is a GPU being assembled from several sources. Fields are set by the
// first (highest-precedence) source that states them and never overwritten.
type cand struct {
	GPU
	devID   string // PCI device ID without vendor, lower-case hex
	hwGFX   string // gfx from an ID (PCI table, amd-smi, RADV) for the override check
	matched map[string]bool
}

// sourceGPU is one GPU as a single source describes it.
type sourceGPU struct {
	source     string
	slot       string
	vendor     string // amd, nvidia, intel
	vendorID   string
	devID      string
	gfx        string
	runtimeGFX bool // gfx comes from the HSA runtime (rocminfo): an override changes it
	name       string
	integrated *bool
	vram, gtt  *int64
	pool       *int64
	cus        *int
	render     *int
	cwsr       *bool
	legacy     bool // an AMD display device ROCm cannot drive (radeon driver)
}

// mergeGPUs builds r.GPUs in precedence order: KFD sysfs, rocminfo,
// amd-smi/rocm-smi, lspci, PCI sysfs, vulkaninfo, names. Lower sources only
// fill gaps.
func mergeGPUs(f *facts, r *Report) {
	var cands []*cand
	var others []*cand
	for _, src := range [][]sourceGPU{kfdGPUs(f), drmGPUs(f), rocminfoGPUs(f), smiGPUs(f.amdsmi, "amd-smi"), smiGPUs(f.rocmsmi, "rocm-smi"), lspciGPUs(f), pciSysGPUs(f), vulkanGPUs(f)} {
		for _, s := range src {
			if s.vendor != "" && s.vendor != "amd" || s.vendor == "amd" && (s.legacy || isPreGCN(s.name) && s.gfx == "") {
				others = addOther(others, s)
				continue
			}
			c := findCand(cands, s, len(src))
			if c == nil {
				c = &cand{matched: map[string]bool{}}
				c.Source = s.source
				c.Vendor = "amd"
				cands = append(cands, c)
			}
			c.matched[s.source] = true
			fill(c, s)
		}
	}
	cands = applyDmesg(f, cands)
	for _, c := range cands {
		finish(c, r)
		r.GPUs = append(r.GPUs, c.GPU)
	}
	for _, c := range others {
		r.OtherGPUs = append(r.OtherGPUs, c.GPU)
	}
}

// findCand matches a source's GPU to one already known: by PCI slot, then by
// device ID when unambiguous, then the single GPU when both sides list one.
func findCand(cands []*cand, s sourceGPU, srcCount int) *cand {
	var free []*cand
	for _, c := range cands {
		if !c.matched[s.source] {
			free = append(free, c)
		}
	}
	if s.slot != "" {
		// Only GPUs this source has not described yet: KFD lists one node per
		// partition, and partitions share a PCI slot.
		for _, c := range free {
			if c.PCISlot != nil && *c.PCISlot == s.slot {
				return c
			}
		}
	}
	if s.devID != "" {
		var same []*cand
		for _, c := range free {
			if c.devID == s.devID && (c.PCISlot == nil || s.slot == "") {
				same = append(same, c)
			}
		}
		if len(same) >= 1 {
			return same[0]
		}
	}
	if len(cands) == 1 && srcCount == 1 && len(free) == 1 {
		c := free[0]
		conflict := (s.devID != "" && c.devID != "" && s.devID != c.devID) ||
			(s.slot != "" && c.PCISlot != nil && *c.PCISlot != s.slot)
		if !conflict {
			return c
		}
	}
	if s.slot == "" && s.devID == "" && len(free) > 0 && len(free) == srcCount {
		return free[0] // same count, no IDs: sources list GPUs in the same order
	}
	return nil
}

func fill(c *cand, s sourceGPU) {
	if c.PCISlot == nil && s.slot != "" {
		c.PCISlot = ptr(s.slot)
	}
	if c.devID == "" && s.devID != "" {
		c.devID = s.devID
		c.PCIID = ptr("1002:" + s.devID)
	}
	if s.gfx != "" {
		switch {
		case s.runtimeGFX:
			if c.RuntimeGFX == nil {
				c.RuntimeGFX = ptr(s.gfx)
			}
		case c.hwGFX == "":
			c.hwGFX = s.gfx
		}
		if c.GFX == nil {
			c.GFX = ptr(s.gfx)
		}
	}
	if c.Name == nil && s.name != "" {
		c.Name = ptr(s.name)
	}
	setOnce(&c.Integrated, s.integrated)
	setOnce(&c.VRAMBytes, s.vram)
	setOnce(&c.GTTBytes, s.gtt)
	setOnce(&c.PoolBytes, s.pool)
	setOnce(&c.ComputeUnits, s.cus)
	setOnce(&c.RenderMinor, s.render)
	setOnce(&c.CWSR, s.cwsr)
}

func setOnce[T any](dst **T, v *T) {
	if *dst == nil && v != nil {
		*dst = v
	}
}

// finish resolves the gfx when the runtime disagrees with the hardware IDs
// (an HSA_OVERRIDE_GFX_VERSION), and fills gaps from the PCI ID table.
func finish(c *cand, r *Report) {
	if k, ok := amdDevices[c.devID]; ok {
		if c.hwGFX == "" {
			c.hwGFX = k.gfx
		}
		if c.GFX == nil {
			c.GFX = ptr(k.gfx)
		}
		if c.Integrated == nil {
			c.Integrated = ptr(k.integrated)
		}
		if c.Name == nil {
			c.Name = ptr(k.name)
		}
	}
	if c.Integrated == nil && c.VRAMBytes != nil && c.GTTBytes != nil {
		v, g := *c.VRAMBytes, *c.GTTBytes
		// ollama's rule, plus: no ROCm-era discrete card has 1 GiB of VRAM or less,
		// so a small carve-out with a 4x larger GTT is an APU even below 8 GiB GTT.
		c.Integrated = ptr(v > 0 && v <= 4<<30 && g >= 4*v && (g >= 8<<30 || v <= 1<<30))
	}
	if c.GFX == nil && c.Name != nil {
		if g := gfxFromName(*c.Name); g != "" {
			c.GFX = ptr(g)
		}
	}
	if c.Integrated == nil && c.GFX != nil && apuOnlyGFX[*c.GFX] {
		c.Integrated = ptr(true)
	}
	if c.Integrated != nil && !*c.Integrated && c.VRAMBytes == nil && c.PoolBytes != nil && c.Source == "rocminfo" {
		c.VRAMBytes = c.PoolBytes // a discrete GPU's global pool is its VRAM
	}
	if c.RuntimeGFX != nil && c.hwGFX != "" && *c.RuntimeGFX != c.hwGFX && c.Source != "kfd" {
		r.note("rocminfo reports %s but the hardware is %s: the runtime is overridden (HSA_OVERRIDE_GFX_VERSION)", *c.RuntimeGFX, c.hwGFX)
		c.GFX = ptr(c.hwGFX)
	}
	if c.RuntimeGFX != nil && c.GFX != nil && *c.RuntimeGFX == *c.GFX {
		c.RuntimeGFX = nil
	}
	if c.Name != nil {
		c.Name = ptr(strings.TrimSpace(radvSuffixRe.ReplaceAllString(*c.Name, "")))
	}
}

var radvSuffixRe = regexp.MustCompile(`\s*\(RADV [^)]*\)`)

func addOther(others []*cand, s sourceGPU) []*cand {
	for _, o := range others {
		if (s.slot != "" && o.PCISlot != nil && *o.PCISlot == s.slot) || (o.Name != nil && *o.Name == s.name) ||
			(s.devID != "" && o.PCIID != nil && *o.PCIID == s.vendorID+":"+s.devID) {
			return others
		}
	}
	c := &cand{}
	c.Vendor, c.Source = s.vendor, s.source
	if s.vendor == "" {
		c.Vendor = "other"
	}
	if s.name != "" {
		c.Name = ptr(s.name)
	}
	if s.slot != "" {
		c.PCISlot = ptr(s.slot)
	}
	if s.devID != "" && s.vendorID != "" {
		c.PCIID = ptr(s.vendorID + ":" + s.devID)
	}
	c.Integrated = s.integrated
	return append(others, c)
}

func kfdGPUs(f *facts) []sourceGPU {
	var out []sourceGPU
	for _, n := range f.kfd {
		if !n.IsGPU() {
			continue
		}
		p := n.Props
		s := sourceGPU{source: "kfd", vendor: "amd"}
		if v, ok := p["vendor_id"]; ok && v != 0 && v != 0x1002 {
			s.vendor = ""
		}
		if v := p["device_id"]; v != 0 {
			s.devID = fmt.Sprintf("%04x", v)
		}
		if loc, ok := p["location_id"]; ok && loc != 0 {
			s.slot = fmt.Sprintf("%02x:%02x.%x", loc>>8, (loc>>3)&0x1f, loc&7)
		}
		if g, ok := GFXFromTarget(p["gfx_target_version"]); ok {
			s.gfx = g
		}
		if simd, per := p["simd_count"], p["simd_per_cu"]; simd > 0 && per > 0 {
			s.cus = ptr(int(simd / per))
		}
		if v, ok := p["drm_render_minor"]; ok && v > 0 {
			s.render = ptr(int(v))
		}
		// Only a whole properties file can prove the fix absent: a grep of a few
		// keys says nothing. max_engine_clk_ccompute is printed near the end of every dump.
		_, a := p["cwsr_size"]
		_, b := p["ctl_stack_size"]
		if _, whole := p["max_engine_clk_ccompute"]; whole || (a && b) {
			s.cwsr = ptr(a && b)
		}
		out = append(out, s)
	}
	return out
}

// drmGPUs gives sysfs memory figures; the integrated rule is ollama's.
func drmGPUs(f *facts) []sourceGPU {
	var out []sourceGPU
	for _, c := range f.drm {
		if c.vendor != "" && c.vendor != "1002" {
			continue
		}
		if c.vram == nil && c.gtt == nil {
			continue
		}
		s := sourceGPU{source: "drm", vendor: "amd", slot: c.slot, devID: c.device, vram: c.vram, gtt: c.gtt}
		if c.boardInfo {
			s.integrated = ptr(false)
		} else if c.vram != nil && c.gtt != nil {
			v, g := *c.vram, *c.gtt
			s.integrated = ptr(v > 0 && v <= 4<<30 && g >= 8<<30 && g >= 4*v)
		}
		out = append(out, s)
	}
	return out
}

func rocminfoGPUs(f *facts) []sourceGPU {
	var out []sourceGPU
	for _, a := range f.rocminfo.GPUs() {
		s := sourceGPU{source: "rocminfo", vendor: "amd", name: a.MarketingName, cus: a.ComputeUnits, integrated: a.APU}
		if gfxNameRe.MatchString(a.Name) {
			s.gfx, s.runtimeGFX = a.Name, true
		}
		if a.ChipID != nil && *a.ChipID > 0 {
			s.devID = fmt.Sprintf("%04x", *a.ChipID)
		}
		if a.BDFID != nil && *a.BDFID > 0 {
			v := *a.BDFID
			s.slot = fmt.Sprintf("%02x:%02x.%x", (v>>8)&0xff, (v>>3)&0x1f, v&7)
		}
		s.pool = a.PoolBytes
		if a.APU != nil && !*a.APU {
			s.vram = a.PoolBytes // a discrete GPU's global pool is its VRAM
		}
		out = append(out, s)
	}
	return out
}

func smiGPUs(smi SMI, source string) []sourceGPU {
	var out []sourceGPU
	for _, g := range smi.GPUs {
		out = append(out, sourceGPU{source: source, vendor: "amd", slot: g.BDF, devID: g.DeviceID, gfx: g.GFX,
			name: g.Name, cus: g.CUs, vram: g.VRAMBytes, gtt: g.GTTBytes})
	}
	return out
}

func lspciGPUs(f *facts) []sourceGPU {
	var out []sourceGPU
	for _, d := range f.lspci {
		if !d.IsDisplay() {
			continue
		}
		out = append(out, sourceGPU{source: "lspci", vendor: d.VendorName(), vendorID: d.Vendor, devID: d.Device, slot: d.Slot, name: lspciName(d.Name)})
	}
	return out
}

// lspciName keeps the product part: "… [AMD/ATI] Navi 31 [Radeon RX 7900 XT/7900 XTX]"
// -> "Navi 31 [Radeon RX 7900 XT/7900 XTX]".
func lspciName(n string) string {
	if _, rest, ok := strings.Cut(n, "[AMD/ATI] "); ok {
		return rest
	}
	if _, rest, ok := strings.Cut(n, "Corporation "); ok {
		return rest
	}
	return n
}

func vulkanGPUs(f *facts) []sourceGPU {
	var out []sourceGPU
	for _, d := range f.vulkan {
		if d.CPU {
			continue
		}
		vendor := map[string]string{"1002": "amd", "10de": "nvidia", "8086": "intel"}[d.VendorID]
		if vendor == "" {
			vendor = vendorFromName(d.Name)
		}
		if vendor == "" && d.GFX != "" {
			vendor = "amd"
		}
		out = append(out, sourceGPU{source: "vulkaninfo", vendor: vendor, vendorID: d.VendorID, devID: d.DeviceID, gfx: d.GFX, name: d.Name, integrated: d.Integrated})
	}
	return out
}

// applyDmesg adds the driver's boot figures to the GPU they belong to.
func applyDmesg(f *facts, cands []*cand) []*cand {
	d := f.dmesg
	if d.VRAMBytes == nil && d.GTTBytes == nil && d.PCISlot == "" && d.DeviceID == "" && d.ComputeUnits == nil {
		return cands
	}
	var target *cand
	for _, c := range cands {
		if d.PCISlot != "" && c.PCISlot != nil && *c.PCISlot == d.PCISlot {
			target = c
		}
	}
	if target == nil && len(cands) == 1 {
		target = cands[0]
	}
	if target == nil && len(cands) == 0 {
		// The driver's boot lines prove an AMD GPU even when nothing else was collected.
		c := &cand{matched: map[string]bool{}}
		c.Source, c.Vendor = "dmesg", "amd"
		if d.PCISlot != "" {
			c.PCISlot = ptr(d.PCISlot)
		}
		if d.DeviceID != "" {
			c.devID, c.PCIID = d.DeviceID, ptr("1002:"+d.DeviceID)
		}
		target = c
		cands = append(cands, c)
	}
	if target == nil {
		return cands
	}
	setOnce(&target.VRAMBytes, d.VRAMBytes)
	setOnce(&target.GTTBytes, d.GTTBytes)
	setOnce(&target.ComputeUnits, d.ComputeUnits)
	if target.devID == "" && d.DeviceID != "" {
		target.devID, target.PCIID = d.DeviceID, ptr("1002:"+d.DeviceID)
	}
	return cands
}
