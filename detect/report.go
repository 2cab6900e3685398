// Package detect collects raw facts about a machine into a Bundle (live, or
// pasted by someone else), analyses the bundle into a Report of GPUs, kernel,
// firmware and memory facts, and turns those into checks with exact fixes.
// Analysis is pure and tolerant; what cannot be known stays null.
package detect

import (
	"encoding/json"
	"slices"
)

// Status is a check's verdict, as doctor --json prints it.
type Status string

// Check statuses.
const (
	StatusOK   Status = "ok"
	StatusWarn Status = "warn"
	StatusFail Status = "fail"
	StatusSkip Status = "skip" // not applicable, or not knowable from what was collected
)

// Report is what doctor prints with --json: facts first, then checks.
type Report struct {
	GPUs      []GPU    `json:"gpus"`       // AMD GPUs ROCm could drive, in precedence order
	OtherGPUs []GPU    `json:"other_gpus"` // NVIDIA, Intel and pre-GCN AMD display devices
	Kernel    Kernel   `json:"kernel"`
	Firmware  Firmware `json:"firmware"`
	Memory    Memory   `json:"memory"`
	NPU       NPU      `json:"npu"` // the XDNA NPU, when a source shows one
	Host      Host     `json:"host"`
	Checks    []Check  `json:"checks"`
	// RecommendedTrack is filled by the caller from steps.RecommendFor:
	// detect knows hosts, not tracks. Empty (null in JSON) when none fits.
	RecommendedTrack string   `json:"recommended_track"`
	Sources          []string `json:"sources"`         // bundle files the analysis used
	Notes            []string `json:"notes,omitempty"` // conflicts between sources, worth a look
	Driver           Driver   `json:"driver"`
}

// GPU is one compute-capable graphics device. Pointer fields are null when
// no collected source states them.
type GPU struct {
	GFX          *string `json:"gfx"`
	PCIID        *string `json:"pci_id"`
	Name         *string `json:"name"`
	Integrated   *bool   `json:"integrated"`
	VRAMBytes    *int64  `json:"vram_bytes"`
	GTTBytes     *int64  `json:"gtt_bytes"`
	ComputeUnits *int    `json:"compute_units"`
	PCISlot      *string `json:"pci_slot"`    // bus:device.function, e.g. c5:00.0
	RuntimeGFX   *string `json:"runtime_gfx"` // what rocminfo reported, when it differs from the hardware
	PoolBytes    *int64  `json:"rocm_pool_bytes"`
	RenderMinor  *int    `json:"drm_render_minor"`
	Vendor       string  `json:"vendor"`   // amd, nvidia, intel, aspeed, matrox, vmware, virtio, qemu, microsoft, cirrus, other
	Source       string  `json:"source"`   // the highest-precedence source that listed it
	CWSR         *bool   `json:"cwsr_fix"` // KFD node lists cwsr_size and ctl_stack_size
}

// Kernel holds the running kernel's release, command line and GPU modules.
type Kernel struct {
	Release       *string           `json:"release"`
	Cmdline       map[string]string `json:"cmdline"` // GPU-relevant parameters; null when unknown
	TTMModule     *string           `json:"ttm_module"`
	AMDGPUDKMS    *bool             `json:"amdgpu_dkms"`
	TTMPagesLimit *int64            `json:"ttm_pages_limit"` // from /sys/module/<ttm>/parameters
	Watchdog      *Watchdog         `json:"watchdog"`        // amdgpu.lockup_timeout and the GPU resets dmesg shows; null when unknown
}

// Firmware holds GPU firmware versions and the package that installed them.
type Firmware struct {
	MES *string `json:"mes"` // the running MES firmware: sysfs fw_version/mes_fw_version, or debugfs (root)
	// Package is the installed package carrying the amdgpu firmware (null
	// when no package manager answered): what a plan pins or rolls back.
	Package *FirmwarePackage `json:"package"`
	// Overrides are the amdgpu firmware files under /lib/firmware/updates
	// ("updates/amdgpu/gc_11_5_1_mes_2.bin"), which the kernel loads before
	// the package's; null when the directories were not looked at.
	Overrides []string `json:"overrides"`
}

// Memory holds the OS-visible RAM.
type Memory struct {
	TotalBytes *int64 `json:"total_bytes"`
}

// Host holds the rest of the host facts the checks use.
type Host struct {
	OS          *string  `json:"os"`
	OSID        *string  `json:"os_id"`
	User        *string  `json:"user"`
	Groups      []string `json:"groups"`
	HSAOverride *string  `json:"hsa_override_gfx_version"`
	Podman      *string  `json:"podman"`
	Docker      *string  `json:"docker"`
	Distrobox   *string  `json:"distrobox"`
	DiskFree    *int64   `json:"disk_free_bytes"`
	DiskPath    *string  `json:"disk_path"`
	KFD         *string  `json:"dev_kfd"` // ok, missing, denied
	CollectedBy *string  `json:"collected_by"`
}

// Driver says what the amdgpu driver told about itself.
type Driver struct {
	Loaded  *bool   `json:"loaded"`
	Version *string `json:"version"` // amdgpu-dkms version, when that driver is in use
}

// Check is one doctor verdict with a ready-to-paste fix.
type Check struct {
	ID      CheckID `json:"id"`
	Status  Status  `json:"status"`
	Summary string  `json:"summary"`
	Fix     string  `json:"fix"` // the remedy as doctor prints it
	Detail  string  `json:"detail,omitempty"`
	// Remedy is what would make the check pass, as data: the plan is made
	// from it. Nil when there is nothing to change or advise.
	Remedy *Remedy `json:"-"`
}

// Flagged is true for a warning or a failure: what the plan tries to fix.
func (c Check) Flagged() bool { return c.Status == StatusWarn || c.Status == StatusFail }

// MarshalJSON writes an empty recommended track as null: unknown is null.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	out := struct {
		plain
		RecommendedTrack *string `json:"recommended_track"`
	}{plain: plain(r)}
	if r.RecommendedTrack != "" {
		out.RecommendedTrack = &r.RecommendedTrack
	}
	return json.Marshal(out)
}

// Check returns the check with this ID.
func (r *Report) Check(id CheckID) (Check, bool) {
	for _, c := range r.Checks {
		if c.ID == id {
			return c, true
		}
	}
	return Check{}, false
}

// Primary is the GPU the tracks target, nil if none: a gfx1151 when there
// is one, else the first GPU with a ROCm target, else the first GPU.
func (r *Report) Primary() *GPU {
	if len(r.GPUs) == 0 {
		return nil
	}
	best := 0
	for i := len(r.GPUs) - 1; i >= 0; i-- {
		g := r.GPUs[i].GFX
		switch {
		case g != nil && *g == "gfx1151":
			return &r.GPUs[i]
		case g != nil && slices.Contains(rocmGFX, *g):
			best = i
		}
	}
	return &r.GPUs[best]
}

// Failed lists the checks whose status is fail.
func (r *Report) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if c.Status == StatusFail {
			out = append(out, c)
		}
	}
	return out
}

// ROCmBroken reports whether ROCm cannot work on this host: the amdgpu
// driver is not loaded, or the MES firmware is the one that hangs the GPU
// (running, or installed as linux-firmware 20251125). A sandbox that hides
// /dev/kfd says nothing about the host, so it does not count.
func (r *Report) ROCmBroken() bool {
	if r.Driver.Loaded != nil && !*r.Driver.Loaded {
		return true
	}
	for _, id := range []CheckID{CheckMESFirmware, CheckFirmwarePair} {
		if c, ok := r.Check(id); ok && c.Status == StatusFail {
			return true
		}
	}
	return false
}

// CannotBuild reports whether the host lacks the disk or the RAM to compile
// a stack for hours (the disk-space or build-memory check fails).
func (r *Report) CannotBuild() bool {
	for _, id := range []CheckID{CheckDiskSpace, CheckBuildMemory} {
		if c, ok := r.Check(id); ok && c.Status == StatusFail {
			return true
		}
	}
	return false
}

// PrimaryGFX is the primary GPU's LLVM target, "" when unknown.
func (r *Report) PrimaryGFX() string {
	if g := r.Primary(); g != nil && g.GFX != nil {
		return *g.GFX
	}
	return ""
}
