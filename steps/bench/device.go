package bench

import (
	"fmt"
	"strings"
)

// Device is a GPU whose memory bandwidth haloforge knows, each figure with
// where it comes from (docs/facts.md lists the sources in full, with dates).
type Device struct {
	Name            string  // "Radeon 8060S"
	Memory          string  // the bus the theoretical figure follows from, "256-bit LPDDR5X-8000"
	BandwidthGBs    float64 // theoretical peak, decimal GB/s
	BandwidthSource string
	MeasuredGBs     float64 // what a bandwidth test reached, 0 when not measured
	MeasuredSource  string
	FP16TFLOPS      float64 // dense FP16 peak, 0 when unknown
	FP16Source      string
	// StrixHalo: the class the published references were measured on, so
	// the share tuned runs reach applies.
	StrixHalo bool
	match     []string // lower-case pieces of llama-bench's gpu_info that name it
}

// The 256-bit LPDDR5X-8000 bus of Strix Halo moves 8000 MT/s × 32 bytes.
const strixHaloBus = "256-bit LPDDR5X-8000 (8000 MT/s × 32 bytes)"

// devices is the table, most specific names first: "Radeon 8060S Graphics
// (RADV GFX1151)" is an 8060S before it is a gfx1151, and an RX 7900 XTX
// before an RX 7900 XT.
var devices = []Device{
	{
		Name: "Radeon 8060S", Memory: strixHaloBus, BandwidthGBs: 256,
		BandwidthSource: "AMD's Ryzen AI Max+ 395 specifications: LPDDR5X-8000 on a 256-bit bus",
		MeasuredGBs:     212, MeasuredSource: "adiudiuu/tps#1 (2026-04-30); AMD-AGI/TraceLens#943 measured 202 GB/s read, 231 GB/s write",
		FP16TFLOPS: 59.4, FP16Source: "40 CUs × 2.9 GHz × 512 FP16 FLOPs per clock per CU (RDNA 3.5 WMMA)",
		StrixHalo: true, match: []string{"8060s"},
	},
	{
		Name: "Radeon 8050S", Memory: strixHaloBus, BandwidthGBs: 256,
		BandwidthSource: "AMD's Ryzen AI Max 385 specifications: LPDDR5X-8000 on a 256-bit bus",
		FP16TFLOPS:      45.9, FP16Source: "32 CUs × 2.8 GHz × 512 FP16 FLOPs per clock per CU (RDNA 3.5 WMMA)",
		StrixHalo: true, match: []string{"8050s"},
	},
	{
		Name: "Radeon 8065S", Memory: "256-bit LPDDR5X-8533 (8533 MT/s × 32 bytes; a third-party figure AMD has not confirmed)", BandwidthGBs: 273,
		BandwidthSource: "third-party listings of the Ryzen AI Max+ PRO 495 (Gorgon Halo); AMD's own specification page was not checked",
		StrixHalo:       true, match: []string{"8065s"},
	},
	{
		Name: "Strix Halo (gfx1151: Radeon 8060S or 8050S)", Memory: strixHaloBus, BandwidthGBs: 256,
		BandwidthSource: "the Ryzen AI Max 300 series' LPDDR5X-8000 on a 256-bit bus; the device names no model, so no compute peak",
		StrixHalo:       true, match: []string{"strix_halo", "strix halo", "gfx1151"},
	},
	{
		Name: "Radeon RX 7900 XTX", Memory: "384-bit GDDR6, 20 Gbps", BandwidthGBs: 960,
		BandwidthSource: "board specifications: 20 Gbps × 384 bits / 8",
		match:           []string{"7900 xtx"},
	},
	{
		Name: "Radeon RX 7900 XT", Memory: "320-bit GDDR6, 20 Gbps", BandwidthGBs: 800,
		BandwidthSource: "board specifications: 20 Gbps × 320 bits / 8",
		match:           []string{"7900 xt"},
	},
	{
		Name: "Instinct MI325X", Memory: "HBM3E", BandwidthGBs: 6000,
		BandwidthSource: "AMD's MI325X specifications: 6.0 TB/s",
		FP16TFLOPS:      1307.4, FP16Source: "AMD's MI325X specifications: dense FP16",
		match: []string{"mi325x"},
	},
	{
		Name: "Instinct MI300X", Memory: "HBM3", BandwidthGBs: 5300,
		BandwidthSource: "AMD's MI300X datasheet: 5.3 TB/s, a theoretical peak (ROCm/rocm_bandwidth_test#121)",
		FP16TFLOPS:      1307.4, FP16Source: "AMD's MI300X specifications: dense FP16",
		match: []string{"mi300x"},
	},
}

// cpuDevices name a device that is the CPU itself: its speed is the host
// RAM's, which haloforge does not know.
var cpuDevices = []string{"llvmpipe", "lavapipe", "softpipe", "cpu"}

// sharedMemoryAPUs are integrated GPUs whose bandwidth is the laptop's RAM:
// the same GPU ships with DDR5-5600 or LPDDR5X-8000.
var sharedMemoryAPUs = []string{"890m", "880m", "860m", "840m", "780m", "760m", "740m", "680m", "660m"}

// LookupDevice finds the device a benchmark names (llama-bench's gpu_info,
// or detect's name): the device, or why its memory bandwidth is not known.
func LookupDevice(name string) (Device, string) {
	d, class := lookupDevice(name)
	return d, missingFigure(name, class, "memory bandwidth")
}

// Why a device has no figures.
const (
	deviceKnown   = ""
	deviceNone    = "none"
	deviceCPU     = "cpu"
	deviceAPU     = "apu"
	deviceUnknown = "unknown"
)

func lookupDevice(name string) (Device, string) {
	l := strings.ToLower(name)
	if strings.TrimSpace(l) == "" {
		return Device{}, deviceNone
	}
	for _, d := range devices {
		for _, m := range d.match {
			if strings.Contains(l, m) {
				return d, deviceKnown
			}
		}
	}
	for _, c := range cpuDevices {
		if strings.Contains(l, c) {
			return Device{}, deviceCPU
		}
	}
	for _, a := range sharedMemoryAPUs {
		if strings.Contains(l, a) {
			return Device{}, deviceAPU
		}
	}
	return Device{}, deviceUnknown
}

// missingFigure says why a device's figure (memory bandwidth, compute
// peak) is not known, or "" when the device is known.
func missingFigure(name, class, figure string) string {
	switch class {
	case deviceKnown:
		return ""
	case deviceNone:
		return "the run names no device, so its " + figure + " is not known"
	case deviceCPU:
		if figure == "memory bandwidth" {
			return fmt.Sprintf("no known memory bandwidth: %s runs on the CPU, whose speed is this machine's RAM", name)
		}
		return fmt.Sprintf("no known %s: %s runs on the CPU", figure, name)
	case deviceAPU:
		return fmt.Sprintf("no known %s: %s shares the machine's RAM, whose speed varies from one laptop to another", figure, name)
	}
	return fmt.Sprintf("no known %s for %s (haloforge knows %s)", figure, name, knownDeviceNames())
}

func knownDeviceNames() string {
	var names []string
	for _, d := range devices {
		if !strings.Contains(d.Name, "(") {
			names = append(names, d.Name)
		}
	}
	return strings.Join(names, ", ")
}
