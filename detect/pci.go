package detect

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// PCISysDevice is one PCI device as sysfs shows it under
// /sys/bus/pci/devices/<domain:bus:dev.fn>/: the facts lspci -nnk prints,
// for machines without lspci. IDs are lower-case hex without 0x.
type PCISysDevice struct {
	Slot      string // "1b:00.0" (domain dropped, as lspci prints it)
	Class     string // "030200": base class, subclass, programming interface
	Vendor    string // "10de"
	Device    string // "2330"
	SubVendor string
	SubDevice string
	Revision  string
	Driver    string // the bound driver (uevent DRIVER=), "" when none
}

var sysHexRe = regexp.MustCompile(`^(?:0[xX])?([0-9a-fA-F]{1,8})$`)

// sysHex reads a sysfs hex attribute ("0x10de\n") as lower-case hex padded
// to width; "" when the text is not one.
func sysHex(s string, width int) string {
	m := sysHexRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil || len(m[1]) > width {
		return ""
	}
	return strings.Repeat("0", width-len(m[1])) + strings.ToLower(m[1])
}

// ParsePCISysDevice reads one device's sysfs attributes, by file name
// (class, vendor, device, subsystem_vendor, subsystem_device, revision,
// uevent). The attribute files win; uevent fills what they lack.
func ParsePCISysDevice(slot string, files map[string]string) PCISysDevice {
	d := PCISysDevice{Slot: slot}
	if m := bdfRe.FindStringSubmatch(slot); m != nil {
		d.Slot = strings.ToLower(m[1])
	}
	attr := func(name string, width int) string {
		s, ok := files[name]
		if !ok {
			return ""
		}
		return sysHex(sysValue(s, name), width) // a pasted `cat` transcript reads too
	}
	d.Class = attr("class", 6)
	d.Vendor = attr("vendor", 4)
	d.Device = attr("device", 4)
	d.SubVendor = attr("subsystem_vendor", 4)
	d.SubDevice = attr("subsystem_device", 4)
	d.Revision = attr("revision", 2)
	if u, ok := files["uevent"]; ok {
		env := ParseEnv(u)
		d.Driver = strings.TrimSpace(env["DRIVER"])
		if d.Class == "" {
			d.Class = sysHex(env["PCI_CLASS"], 6)
		}
		if v, dev, ok := strings.Cut(env["PCI_ID"], ":"); ok && d.Vendor == "" && d.Device == "" {
			d.Vendor, d.Device = sysHex(v, 4), sysHex(dev, 4)
		}
		if v, dev, ok := strings.Cut(env["PCI_SUBSYS_ID"], ":"); ok && d.SubVendor == "" {
			d.SubVendor, d.SubDevice = sysHex(v, 4), sysHex(dev, 4)
		}
		if m := bdfRe.FindStringSubmatch(env["PCI_SLOT_NAME"]); m != nil && d.Slot == "" {
			d.Slot = strings.ToLower(m[1])
		}
	}
	return d
}

// IsDisplay is true for VGA, 3D and other display controllers (class 03).
func (d PCISysDevice) IsDisplay() bool { return strings.HasPrefix(d.Class, "03") }

// IsAMDNPU is true for AMD's XDNA NPU: an AMD (1022) signal-processing
// controller (class 1180), the class amdxdna binds to (amd/xdna-driver
// amdxdna_pci_drv.c: PCI_CLASS_SP_OTHER, any AMD device ID; 1502 Phoenix,
// 17f0 Strix/Krackan/Strix Halo).
func (d PCISysDevice) IsAMDNPU() bool {
	return d.Vendor == "1022" && strings.HasPrefix(d.Class, "1180")
}

// readPCISys reads every device copied from /sys/bus/pci/devices, sorted by slot.
func readPCISys(f *facts) []PCISysDevice {
	byDev := map[string]map[string]string{}
	for _, name := range f.b.Glob("sys/bus/pci/devices/*/*") {
		s, _ := f.read(name)
		dev, file := path.Base(path.Dir(name)), path.Base(name)
		if byDev[dev] == nil {
			byDev[dev] = map[string]string{}
		}
		byDev[dev][file] = s
	}
	var out []PCISysDevice
	for dev, files := range byDev {
		if d := ParsePCISysDevice(dev, files); d.Vendor != "" || d.Class != "" {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b PCISysDevice) int { return strings.Compare(a.Slot, b.Slot) })
	return out
}

// pciVendor is a PCI vendor of display controllers: its key in reports and its name.
type pciVendor struct{ key, name string }

// pciVendors are the vendors of the display controllers doctor meets: GPUs,
// server BMCs and virtual machines' displays (names from pci.ids 2023.04.10).
var pciVendors = map[string]pciVendor{
	"1002": {"amd", "AMD"},
	"10de": {"nvidia", "NVIDIA"},
	"8086": {"intel", "Intel"},
	"1a03": {"aspeed", "ASPEED"},
	"102b": {"matrox", "Matrox"},
	"15ad": {"vmware", "VMware"},
	"1af4": {"virtio", "virtio"},
	"1b36": {"qemu", "QEMU"},
	"1414": {"microsoft", "Microsoft Hyper-V"},
	"1013": {"cirrus", "Cirrus Logic"},
}

// pciDeviceNames are product names of common non-AMD display devices, by
// vendor:device, from pci.ids 2023.04.10 (AMD's GPUs are in amdDevices).
var pciDeviceNames = map[string]string{
	"10de:2330": "H100 SXM5 80GB",
	"10de:2331": "H100 PCIe",
	"10de:2339": "H100",
	"10de:2324": "H800",
	"10de:2322": "H800 PCIe",
	"10de:20b0": "A100 SXM4 40GB",
	"10de:20b2": "A100 SXM4 80GB",
	"10de:20b5": "A100 PCIe 80GB",
	"10de:20f1": "A100 PCIe 40GB",
	"10de:1db4": "Tesla V100 PCIe 16GB",
	"10de:1db6": "Tesla V100 PCIe 32GB",
	"10de:1eb8": "Tesla T4",
	"10de:2236": "A10",
	"10de:27b8": "L4",
	"10de:26b5": "L40",
	"10de:26b1": "RTX 6000 Ada Generation",
	"10de:2230": "RTX A6000",
	"10de:2684": "GeForce RTX 4090",
	"10de:2786": "GeForce RTX 4070",
	"10de:2204": "GeForce RTX 3090",
	"10de:2206": "GeForce RTX 3080",
	"8086:9bc4": "UHD Graphics (CometLake-H GT2)",
	"8086:46a6": "Iris Xe Graphics (Alder Lake-P)",
	"8086:a780": "UHD Graphics 770 (Raptor Lake-S)",
	"8086:9a49": "Iris Xe Graphics (Tiger Lake)",
	"8086:56a0": "Arc A770",
	"1a03:2000": "Graphics Family (server BMC)",
	"1af4:1050": "GPU (virtual)",
	"1b36:0100": "QXL display (virtual)",
	"15ad:0405": "SVGA II (virtual)",
}

// vendorTitle is the vendor's name for a report's vendor key ("nvidia" ->
// "NVIDIA"), "" for one the table lacks.
func vendorTitle(key string) string {
	for _, v := range pciVendors {
		if v.key == key {
			return v.name
		}
	}
	return ""
}

// pciName names a display device by its IDs: "NVIDIA H100 SXM5 80GB",
// "NVIDIA GPU" for a device the table lacks, "display controller" for an
// unknown vendor. The caller adds the IDs.
func pciName(vendor, device string) string {
	v, known := pciVendors[vendor]
	if n, ok := pciDeviceNames[vendor+":"+device]; ok && known {
		return v.name + " " + n
	}
	if known {
		return v.name + " GPU"
	}
	return "display controller"
}

// pciSysGPUs lists the display controllers sysfs shows.
func pciSysGPUs(f *facts) []sourceGPU {
	var out []sourceGPU
	for _, d := range f.pci {
		if !d.IsDisplay() || d.Vendor == "" {
			continue
		}
		s := sourceGPU{source: "pci-sysfs", vendorID: d.Vendor, devID: d.Device, slot: d.Slot}
		if v, ok := pciVendors[d.Vendor]; ok {
			s.vendor = v.key
		} else {
			s.vendor = "other"
		}
		if s.vendor != "amd" {
			s.name = pciName(d.Vendor, d.Device)
		}
		if s.vendor == "amd" && d.Driver == "radeon" {
			// The old radeon driver: a pre-GCN, SI or CIK card, none of which
			// current ROCm drives. Shown, not counted as a GPU for the tracks.
			s.vendor, s.name = "amd", "AMD GPU on the radeon driver"
			s.legacy = true
		}
		out = append(out, s)
	}
	return out
}
