package tui

// rung is one thing to try when a GPU hangs, with how to try it.
type rung struct {
	Try, How string
}

// ladders are the walkthroughs for hang families: a hang has no error line
// to fix, so the user climbs from the cheapest check to the fallback track,
// stopping at the first rung that works. Sources: FAILURES.md, FACTS.md
// (kernel ≥ 6.18.4, MES 0x80, cwsr_enable=0 as a stop-gap, ROCm#5590, #5724).
var ladders = map[string][]rung{
	"llamacpp-rocm-load-hang-sdma": {
		{"Confirm it is the load hang", "the log ends at `load_all_data: using async uploads for device ROCm0` and nothing follows for minutes; that line alone is normal"},
		{"Copy without SDMA", "export HSA_ENABLE_SDMA=0, then start llama.cpp again"},
		{"Load without mmap", "llama-server --no-mmap … (pageable mmap memory is what stalls the SDMA path)"},
		{"Check kernel and firmware", "haloforge doctor: kernel-version must be ≥ 6.18.4 and mes-firmware 0x80 (not 0x83)"},
		{"Fall back to Vulkan", "haloforge build --track llamacpp-vulkan"},
	},
	"llamacpp-rocm-graph-reserve-hang": {
		{"Confirm it is the graph hang", "the log ends at `graph_reserve: reserving a graph for ubatch` and nothing follows"},
		{"Check kernel and firmware", "haloforge doctor: kernel-version ≥ 6.18.4, mes-firmware 0x80 or linux-firmware ≥ 20260108"},
		{"Stop-gap on older kernels", "add amdgpu.cwsr_enable=0 to the kernel command line and reboot (not needed on 7.0 with ROCm ≥ 7.2.1)"},
		{"Newer ROCm", "bump ROCM_VERSION in versions.env to the pinned TheRock release; haloforge pins diff shows what re-runs"},
		{"Fall back to Vulkan", "haloforge build --track llamacpp-vulkan"},
	},
	"amdgpu-mes-hang": {
		{"Read the firmware version", "sudo grep MES /sys/kernel/debug/dri/*/amdgpu_firmware_info: 0x83 is the bad one"},
		{"Update linux-firmware", "a package with MES 0x80, or ≥ 20260108; avoid 20251125"},
		{"Update the kernel", "≥ 6.18.4 carries the KFD/CWSR fixes for gfx1151"},
		{"Collect a bundle", "haloforge doctor --collect DIR, attach it to a ROCm issue"},
	},
	"gpu-hang-cwsr": {
		{"Check the kernel", "uname -r: ≥ 6.18.4 has the gfx1151 CWSR fix (haloforge doctor, check cwsr)"},
		{"Stop-gap on older kernels", "amdgpu.cwsr_enable=0 on the kernel command line, then reboot"},
		{"Check the firmware", "haloforge doctor, check mes-firmware: 0x80 is good"},
		{"Collect a bundle", "haloforge doctor --collect DIR, attach it to a ROCm issue"},
	},
}
