package detect

import (
	"slices"
	"strings"
)

// NPU is what was collected about an AMD XDNA NPU (Ryzen AI: Phoenix,
// Strix Point, Strix Halo, Gorgon Halo). Null fields were not shown by any source.
type NPU struct {
	// Present is true when a source shows the NPU, false when sources that
	// would show it (rocminfo, lspci, PCI sysfs) do not, null otherwise.
	Present *bool   `json:"present"`
	PCIID   *string `json:"pci_id"`   // 1022:17f0 (Strix/Krackan/Strix Halo), 1022:1502 (Phoenix)
	PCISlot *string `json:"pci_slot"` // c6:00.1
	Driver  *string `json:"driver"`   // the bound driver (amdxdna), from lspci -k or sysfs uevent
	// Accel is true when /dev/accel/accel* exists (the NPU's device node;
	// null when /dev was not looked at).
	Accel *bool `json:"accel_node"`
	// SVABindFailed: dmesg shows amdxdna could not bind shared virtual
	// memory, so no NPU job can run (it needs the IOMMU).
	SVABindFailed bool     `json:"sva_bind_failed"`
	Sources       []string `json:"sources"` // what showed it: rocminfo, lspci, pci-sysfs, lsmod, dmesg
	driverKnown   bool     // a source that shows bound drivers looked at it
}

// npuFacts gathers the NPU from every source that can show it.
func npuFacts(f *facts, r *Report) {
	n := NPU{}
	saw := func(src string) {
		if !slices.Contains(n.Sources, src) {
			n.Sources = append(n.Sources, src)
		}
	}
	driverKnown := false
	for _, a := range f.rocminfo.Agents {
		if a.Name == "aie2" || strings.EqualFold(a.DeviceType, "DSP") {
			// The HSA runtime reaches the NPU only through amdxdna's /dev/accel node.
			saw("rocminfo")
			setOnce(&n.Driver, ptr("amdxdna"))
			driverKnown = true
		}
	}
	lspciK := false
	for _, d := range f.lspci {
		lspciK = lspciK || d.Driver != ""
	}
	for _, d := range f.lspci {
		npu := d.Vendor == "1022" && strings.HasPrefix(d.ClassID, "1180") ||
			strings.Contains(d.Name, "Neural Processing Unit") || d.Driver == "amdxdna"
		if !npu {
			continue
		}
		saw("lspci")
		setOnce(&n.PCISlot, ptrIf(d.Slot))
		if d.Vendor != "" {
			setOnce(&n.PCIID, ptr(d.Vendor+":"+d.Device))
		}
		setOnce(&n.Driver, ptrIf(d.Driver))
		driverKnown = driverKnown || lspciK // lspci -k prints the driver of every bound device
	}
	for _, d := range f.pci {
		if !d.IsAMDNPU() {
			continue
		}
		saw("pci-sysfs")
		setOnce(&n.PCISlot, ptrIf(d.Slot))
		setOnce(&n.PCIID, ptr(d.Vendor+":"+d.Device))
		setOnce(&n.Driver, ptrIf(d.Driver))
		driverKnown = driverKnown || len(f.b.Glob("sys/bus/pci/devices/*"+d.Slot+"/uevent")) > 0
	}
	if f.lsmod["amdxdna"] {
		// amdxdna loads by PCI class (AMD signal-processing devices): loaded means an NPU.
		saw("lsmod")
		if n.Driver == nil && len(f.lspci) == 0 && len(f.pci) == 0 {
			n.Driver = ptr("amdxdna")
		}
		driverKnown = true
	}
	if f.dmesg.XDNASeen {
		saw("dmesg")
		n.SVABindFailed = f.dmesg.XDNASVAFailed
	}
	if s, ok := f.read("dev.txt"); ok {
		// The collector writes "/dev/accel/accelN present" or "/dev/accel absent";
		// a pasted `ls /dev/kfd` says nothing about it.
		switch {
		case strings.Contains(s, "/dev/accel/accel"):
			n.Accel = ptr(true)
		case strings.Contains(s, "/dev/accel absent"):
			n.Accel = ptr(false)
		}
	}
	switch {
	case len(n.Sources) > 0:
		n.Present = ptr(true)
	case f.b.Has("lspci.txt") && len(f.lspci) > 3 || pciWalked(f):
		// A whole lspci, or a live walk of PCI sysfs, without one. (rocminfo
		// lists the NPU only with a recent ROCm: its silence proves nothing.)
		n.Present = ptr(false)
	}
	n.driverKnown = driverKnown || n.Driver != nil
	r.NPU = n
}

// pciWalked is true when the collector walked PCI sysfs and saw devices.
func pciWalked(f *facts) bool {
	st := f.manifest["pci-sysfs"]
	return strings.HasPrefix(st, "ok, ") && !strings.HasPrefix(st, "ok, 0 devices")
}

// iommuOff says whether the command line turns the IOMMU off, and how.
func iommuOff(f *facts) (string, bool) {
	if v, ok := f.cmdlineGet("amd_iommu"); ok && v == "off" {
		return "amd_iommu=off", true
	}
	if v, ok := f.cmdlineGet("iommu"); ok && v == "off" {
		return "iommu=off", true
	}
	return "", false
}

// checkNPU: the XDNA NPU needs the IOMMU (amdxdna binds each process with
// shared virtual addressing, iommu_sva_bind_device), so amd_iommu=off,
// which kyuz0's toolboxes recommend for 5-12 % more GPU speed, leaves it
// unusable (antirez/ds4#871). Doctor says so only when there is an NPU.
func checkNPU(f *facts, r *Report) Check {
	n := r.NPU
	if n.Present == nil {
		return skip("NPU unknown (no rocminfo agents, lspci or PCI sysfs)")
	}
	if !*n.Present {
		return skip("no XDNA NPU on this machine")
	}
	what := "XDNA NPU"
	if n.PCIID != nil {
		what += " " + *n.PCIID
	}
	if n.PCISlot != nil {
		what += " at " + *n.PCISlot
	}
	tradeoff := "amd_iommu=off gave 5-12% more GPU inference speed (kyuz0/amd-strix-halo-toolboxes#66), and disables the NPU\n" +
		"and VFIO passthrough (antirez/ds4#871): amdxdna maps each process's memory through the IOMMU (SVA).\n" +
		"Keep it if you never use the NPU. To use the NPU (FastFlowLM through Lemonade, Ryzen AI), remove it:\n"
	if how, off := iommuOff(f); off {
		return Check{Status: StatusWarn,
			Summary: what + " present, but " + how + " leaves it unusable: NPU jobs need the IOMMU",
			Remedy: &Remedy{Lead: strings.TrimSuffix(tradeoff, "\n"),
				Args: []ArgChange{{KernelArg{OpRemove, strings.SplitN(how, "=", 2)[0], "off"}, "the NPU needs the IOMMU"}}}}
	}
	if n.SVABindFailed {
		why := "No parameter that turns the IOMMU off is on the command line, so this is most likely a kernel or amdxdna regression:\n" +
			"the same error came with the IOMMU on after kernel updates (amd/xdna-driver#704 on 6.16.1, #1028 on 6.18.5 and 6.18.7).\n" +
			"Try another kernel (the previous one, or a newer one), or the out-of-tree driver from github.com/amd/xdna-driver."
		for _, k := range []string{"iommu", "iommu.passthrough"} {
			if v, ok := f.cmdlineGet(k); ok && (v == "pt" || v == "1") {
				why = "The command line has " + k + "=" + v + " (passthrough). Whether passthrough keeps amdxdna from binding memory is not verified;\n" +
					"try without it if you want the NPU. Otherwise suspect a kernel or amdxdna regression (amd/xdna-driver#704, #1028)."
			}
		}
		if f.cmdline == nil {
			why = "The kernel command line was not collected: look for what turns the IOMMU off (amd_iommu=off, iommu=off):\n" +
				"  cat /proc/cmdline\n" +
				"If nothing does, suspect a kernel or amdxdna regression (amd/xdna-driver#704 on 6.16.1, #1028 on 6.18.5 and 6.18.7)."
		}
		return Check{Status: StatusWarn,
			Summary: what + " present, but dmesg shows amdxdna could not bind memory (\"SVA bind device failed\"): NPU jobs cannot run",
			Remedy:  advice(why + "\nMore: dmesg | grep -i -E 'amdxdna|AMD-Vi'")}
	}
	var parts []string
	switch {
	case n.Driver != nil:
		parts = append(parts, *n.Driver+" bound")
	case n.driverKnown:
		parts = append(parts, "no driver bound (amdxdna is in-tree from Linux 6.14)")
	default:
		parts = append(parts, "driver unknown")
	}
	if n.Accel != nil && *n.Accel {
		parts = append(parts, "/dev/accel present")
	}
	iommu := "IOMMU setting unknown"
	if f.cmdline != nil {
		iommu = "IOMMU on, so the NPU can run jobs"
	}
	return Check{Status: StatusOK, Summary: what + " (" + strings.Join(parts, ", ") + "); " + iommu,
		Detail: "Keep the IOMMU on while you use the NPU: amd_iommu=off gives 5-12% more GPU inference speed\n" +
			"(kyuz0/amd-strix-halo-toolboxes#66) but leaves the NPU unusable (antirez/ds4#871)."}
}
