package detect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fixture reads a bundle file of testdata (copied from the shared real-machine fixtures).
func fixture(t testing.TB, path string) string {
	t.Helper()
	return fixtureAt(t, filepath.Join("testdata", "bundles", path))
}

func fixtureAt(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// pasteVariants is the same output as people paste it: behind a prompt with
// a comment, in ANSI colour, with CRLF, with trailing spaces, quoted in markdown.
func pasteVariants(s, cmd string) map[string]string {
	s = strings.TrimRight(s, "\n") + "\n"
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	each := func(f func(string) string) string {
		out := make([]string, len(lines))
		for i, l := range lines {
			out[i] = f(l)
		}
		return strings.Join(out, "\n") + "\n"
	}
	return map[string]string{
		"prompt":   "user@strix:~$ " + cmd + "\n# output below\n" + s,
		"root":     "$ sudo " + cmd + "\n" + s + "$ \n",
		"ansi":     each(func(l string) string { return "\x1b[37m" + l + "\x1b[0m" }),
		"crlf":     each(func(l string) string { return l + "\r" }),
		"trailing": each(func(l string) string { return l + "   \t" }),
		"quoted":   each(func(l string) string { return "> " + l }),
	}
}

// assertTolerant checks that a parser reads every pasted variant like the clean text.
func assertTolerant[T any](t *testing.T, name, clean, cmd string, parse func(string) T) T {
	t.Helper()
	want := parse(clean)
	for v, text := range pasteVariants(clean, cmd) {
		if d := cmp.Diff(want, parse(text)); d != "" {
			t.Errorf("%s, pasted %s: differs (-clean +pasted):\n%s", name, v, d)
		}
	}
	return want
}

func TestParseRocminfo(t *testing.T) {
	r := assertTolerant(t, "rocminfo", fixture(t, "gfx1151-intree-npu/rocminfo.txt"), "rocminfo", ParseRocminfo)
	if r.ModuleLoaded == nil || !*r.ModuleLoaded || r.ModuleVersion != "" {
		t.Errorf("module line: loaded=%v version=%q, want loaded, no version (in-tree)", r.ModuleLoaded, r.ModuleVersion)
	}
	if len(r.Agents) != 3 {
		t.Fatalf("agents = %d, want 3 (CPU, GPU, NPU)", len(r.Agents))
	}
	npu := r.Agents[2]
	if npu.Name != "aie2" || npu.DeviceType != "DSP" {
		t.Errorf("agent 3 = %q/%q, want the NPU aie2/DSP", npu.Name, npu.DeviceType)
	}
	gpus := r.GPUs()
	if len(gpus) != 1 {
		t.Fatalf("GPUs = %d, want 1: the NPU is not a GPU", len(gpus))
	}
	g := gpus[0]
	if g.Name != "gfx1151" || *g.ChipID != 5510 || *g.ComputeUnits != 40 || *g.BDFID != 50432 || !*g.APU || *g.PoolBytes != 67108864*1024 {
		t.Errorf("GPU agent = %+v", g)
	}
	if !cmp.Equal(g.ISAs, []string{"gfx1151", "gfx11-generic"}) {
		t.Errorf("ISAs = %v", g.ISAs)
	}
}

func TestParseRocminfoVariants(t *testing.T) {
	tests := []struct {
		file      string
		gpus      int
		firstName string
		version   string
		kfdErr    string
		loaded    *bool
	}{
		{"gfx1100/rocminfo.txt", 1, "gfx1100", "6.10.5", "", ptr(true)},
		{"gfx90a/rocminfo.txt", 1, "gfx90a", "6.16.13", "", ptr(true)},
		{"gfx900-7gpus/rocminfo.txt", 7, "gfx900", "", "", ptr(true)},
		{"gfx1150/rocminfo.txt", 1, "gfx1150", "", "", nil},
		{"gfx1151-override/rocminfo.txt", 1, "gfx1150", "", "", nil},
		{"gfx1151-no-devkfd/rocminfo.txt", 0, "", "", "No such file or directory", ptr(true)},
		{"no-kfd/rocminfo.txt", 0, "", "", "No such file or directory", ptr(false)},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			r := ParseRocminfo(fixture(t, tc.file))
			g := r.GPUs()
			if len(g) != tc.gpus {
				t.Fatalf("GPUs = %d, want %d", len(g), tc.gpus)
			}
			if tc.gpus > 0 && g[0].Name != tc.firstName {
				t.Errorf("name = %q, want %q", g[0].Name, tc.firstName)
			}
			if r.ModuleVersion != tc.version || r.KFDError != tc.kfdErr || !cmp.Equal(r.ModuleLoaded, tc.loaded) {
				t.Errorf("version %q kfd %q loaded %v, want %q %q %v", r.ModuleVersion, r.KFDError, r.ModuleLoaded, tc.version, tc.kfdErr, tc.loaded)
			}
		})
	}
}

func TestParseLspci(t *testing.T) {
	d := assertTolerant(t, "lspci", fixture(t, "gfx1151-no-devkfd/lspci.txt"), "lspci -nnk", ParseLspci)
	var gpu, npu PCIDevice
	for _, x := range d {
		switch x.Slot {
		case "c5:00.0":
			gpu = x
		case "c6:00.1":
			npu = x
		}
	}
	want := PCIDevice{Slot: "c5:00.0", Class: "Display controller", ClassID: "0380", Vendor: "1002", Device: "1586",
		Name: "Advanced Micro Devices, Inc. [AMD/ATI] Strix Halo [Radeon Graphics / Radeon 8050S Graphics / Radeon 8060S Graphics]", Driver: "amdgpu", Revision: "c1"}
	if d := cmp.Diff(want, gpu); d != "" {
		t.Errorf("GPU line (-want +got):\n%s", d)
	}
	if !gpu.IsDisplay() || npu.IsDisplay() || npu.Driver != "amdxdna" {
		t.Errorf("display: gpu %v npu %v (driver %q): the 0380 class is a GPU, the NPU is not", gpu.IsDisplay(), npu.IsDisplay(), npu.Driver)
	}
	plain := ParseLspci(fixture(t, "nvidia-only/lspci.txt"))
	if len(plain) != 2 || plain[1].VendorName() != "nvidia" || plain[0].VendorName() != "intel" || !plain[1].IsDisplay() || plain[1].Device != "" {
		t.Errorf("lspci without -nn: %+v", plain)
	}
}

func TestParseDmesg(t *testing.T) {
	tests := []struct {
		file            string
		release         string
		vram, gtt       *int64
		slot, drv       string
		deprecated      bool
		unknown         []string
		cmdlineContains string
	}{
		{"gfx1151-amdttm-wrapped/dmesg.txt", "6.12.48+deb13-amd64", ptr(int64(512) << 20), ptr(int64(128000) << 20), "c5:00.0", "", false, nil,
			"amdgpu.gttsize=128000 amdttm.pages_limit=32768000"}, // the terminal wrapped "amdgpu.gt|tsize"
		{"gfx1151-gttsize-deprecated/dmesg.txt", "", nil, nil, "c6:00.0", "6.14.14", true, []string{"gtt_size", "gtt_size"}, "amdgpu.gtt_size=122880"},
		{"gfx1151-gtt-auto/dmesg.txt", "", nil, ptr(int64(63968) << 20), "bd:00.0", "", false, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			d := ParseDmesg(fixture(t, tc.file))
			if d.KernelRelease != tc.release || !cmp.Equal(d.VRAMBytes, tc.vram) || !cmp.Equal(d.GTTBytes, tc.gtt) ||
				d.PCISlot != tc.slot || d.DriverVersion != tc.drv || d.GTTSizeDeprecated != tc.deprecated || !cmp.Equal(d.UnknownParams, tc.unknown) {
				t.Errorf("got %+v", d)
			}
			if !strings.Contains(d.Cmdline, tc.cmdlineContains) {
				t.Errorf("cmdline %q lacks %q", d.Cmdline, tc.cmdlineContains)
			}
		})
	}
	assertTolerant(t, "dmesg", fixture(t, "gfx1151-gttsize-deprecated/dmesg.txt"), "sudo dmesg", ParseDmesg)

	// ROCm/ROCm#6143: the fourth prefix format ("amdgpu: amdgpu:"), the GTT/TTM
	// disagreement, the PCI ID and CU count of the driver's init lines.
	d := ParseDmesg(fixtureAt(t, "testdata/holdout/rocm-6143/dmesg.txt"))
	if *d.GTTBytes != 98304<<20 || *d.VRAMBytes != 98304<<20 || *d.GTTAsked != 103079215104 || *d.TTMSize != 16638816256 ||
		d.DeviceID != "1586" || *d.ComputeUnits != 40 || d.DriverVersion != "6.16.13" || d.KernelRelease != "" || !strings.Contains(d.Cmdline, "iommu=pt") {
		t.Errorf("rocm-6143 dmesg %+v", d)
	}
}

func TestParseCmdline(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]string
		boot     string
	}{
		{"proc", fixture(t, "gfx1151-gttsize-deprecated/cmdline.txt"), map[string]string{"amdgpu.gtt_size": "122880"}, "6.14.0-1014-oem"},
		{"grub file", fixture(t, "gfx1151-dkms-512m/cmdline.txt"), map[string]string{"ttm.pages_limit": "32768000", "ttm.page_pool_size": "32768000",
			"amdttm.pages_limit": "32768000", "amdttm.page_pool_size": "32768000", "amdgpu.cwsr_enable": "0"}, ""},
		{"no gpu params", fixture(t, "gfx1151-gtt-auto/cmdline.txt"), map[string]string{}, ""},
		{"quoted and flags", `BOOT_IMAGE=(hd0,gpt2)/vmlinuz-6.18.9-200.fc43.x86_64 ro rhgb quiet amd_iommu=off nomodeset dyndbg="file x +p" ttm.pages_limit=32505856`,
			map[string]string{"amd_iommu": "off", "nomodeset": "", "ttm.pages_limit": "32505856"}, "6.18.9-200.fc43.x86_64"},
		{"wrapped", "root=UUID=1 ro amd_iommu=off\nttm.pages_limit=31457280\n", map[string]string{"amd_iommu": "off", "ttm.pages_limit": "31457280"}, ""},
		{"elided", "… iommu.passthrough=0 amd_pstate=active ttm.pages_limit=25165824", map[string]string{"iommu.passthrough": "0", "amd_pstate": "active", "ttm.pages_limit": "25165824"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := assertTolerant(t, tc.name, tc.in, "cat /proc/cmdline", ParseCmdline)
			if d := cmp.Diff(tc.want, c.Relevant()); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if c.BootKernel() != tc.boot {
				t.Errorf("boot kernel %q, want %q", c.BootKernel(), tc.boot)
			}
		})
	}
}

func TestGFXFromTarget(t *testing.T) {
	tests := map[int64]string{110501: "gfx1151", 110500: "gfx1150", 110000: "gfx1100", 110001: "gfx1101", 110003: "gfx1103",
		100300: "gfx1030", 90010: "gfx90a", 90012: "gfx90c", 90402: "gfx942", 90006: "gfx906", 90008: "gfx908", 80003: "gfx803", 120001: "gfx1201"}
	for v, want := range tests {
		if got, ok := GFXFromTarget(v); !ok || got != want {
			t.Errorf("GFXFromTarget(%d) = %q, %v; want %q", v, got, ok, want)
		}
	}
	for _, bad := range []int64{0, -1, 91600, 90017, 99} {
		if got, ok := GFXFromTarget(bad); ok {
			t.Errorf("GFXFromTarget(%d) = %q, want rejected", bad, got)
		}
	}
	if g, ok := GFXFromOverride("11.5.1"); !ok || g != "gfx1151" {
		t.Errorf("override 11.5.1 = %q", g)
	}
	if g, ok := GFXFromOverride("9.0.10"); !ok || g != "gfx90a" {
		t.Errorf("override 9.0.10 = %q", g)
	}
}

func TestParseKFD(t *testing.T) {
	nodes := ParseKFDNodes(fixture(t, "gfx942-kfd/kfd-topology.txt"))
	if len(nodes) != 7 {
		t.Fatalf("nodes = %d, want 4 CPU + 3 GPU", len(nodes))
	}
	var gpus int
	for _, n := range nodes {
		if n.IsGPU() {
			gpus++
			if g, _ := GFXFromTarget(n.Props["gfx_target_version"]); g != "gfx942" {
				t.Errorf("node %d gfx %q", n.ID, g)
			}
		}
	}
	if gpus != 3 {
		t.Errorf("GPU nodes = %d, want 3 (simd_count 0 is a CPU)", gpus)
	}
	p := ParseKFDProperties(fixture(t, "gfx1151-kfd-partial/sys/class/kfd/kfd/topology/nodes/1/properties"))
	if p["vendor_id"] != 4098 || p["device_id"] != 5510 || p["location_id"] != 49664 {
		t.Errorf("partial properties %v", p)
	}
	// An author's "# notes" after values and a path header, as pasted in a doc.
	annotated := "   /sys/class/kfd/kfd/topology/nodes/1/properties:\n   local_mem_size 0   # Should be 96GB but shows 0!\n"
	n := ParseKFDNodes(annotated)
	if len(n) != 1 || n[0].ID != 1 || n[0].Props["local_mem_size"] != 0 || len(n[0].Props) != 1 {
		t.Errorf("annotated node %+v", n)
	}
}

func TestParseSMI(t *testing.T) {
	static := assertTolerant(t, "amd-smi static", "GPU: 0\n    ASIC:\n        MARKET_NAME: AMD Radeon Graphics\n        DEVICE_ID: 0x1586\n        NUM_COMPUTE_UNITS: 40\n        TARGET_GRAPHICS_VERSION: gfx1151\n    VRAM:\n        TYPE: LPDDR5\n        SIZE: 512 MB\n", "amd-smi static", ParseAMDSMI)
	g := static.GPUs[0]
	if g.DeviceID != "1586" || *g.CUs != 40 || g.GFX != "gfx1151" || *g.VRAMBytes != 512<<20 {
		t.Errorf("amd-smi static %+v", g)
	}
	table := ParseAMDSMI(fixture(t, "gfx1151-dkms-512m/amd-smi.txt"))
	if table.DriverVersion != "6.16.6" || len(table.GPUs) != 1 || table.GPUs[0].BDF != "c2:00.0" || *table.GPUs[0].VRAMBytes != 512<<20 {
		t.Errorf("amd-smi table %+v", table)
	}
	list := ParseAMDSMI(fixture(t, "gfx1151-no-devkfd/amd-smi.txt"))
	if len(list.GPUs) != 1 || list.GPUs[0].BDF != "c5:00.0" || *list.GPUs[0].NodeID != 1 {
		t.Errorf("amd-smi list %+v", list)
	}
	rs := ParseROCmSMI(fixture(t, "gfx1151-carveout-96g/rocm-smi.txt"))
	if len(rs.GPUs) != 1 || *rs.GPUs[0].VRAMBytes != 103079215104 || rs.GPUs[0].GFX != "gfx1151" || rs.GPUs[0].Name != "AMD Radeon 8060S Graphics" {
		t.Errorf("rocm-smi %+v", rs)
	}
	conc := ParseROCmSMI(fixture(t, "gfx1100/rocm-smi.txt"))
	if len(conc.GPUs) != 1 || conc.GPUs[0].DeviceID != "744c" {
		t.Errorf("rocm-smi concise %+v", conc)
	}
}

func TestParseVulkaninfo(t *testing.T) {
	tests := []struct {
		name, in string
		want     []VulkanDevice
	}{
		{"grep summary", fixture(t, "gfx1151-override/vulkaninfo.txt"), []VulkanDevice{{Name: "Radeon 8060S Graphics (RADV GFX1151)", GFX: "gfx1151"}}},
		{"device select", "selectable devices:\n  GPU 0: 10de:2786 \"NVIDIA GeForce RTX 4070\" discrete GPU 0000:3c:00.0\n  GPU 2: 10005:0 \"llvmpipe (LLVM 19.1.1, 256 bits)\" CPU 0000:00:00.0\n",
			[]VulkanDevice{{Name: "NVIDIA GeForce RTX 4070", VendorID: "10de", DeviceID: "2786", Integrated: ptr(false)}, {Name: "llvmpipe (LLVM 19.1.1, 256 bits)", VendorID: "10005", DeviceID: "0", CPU: true}}},
		{"ggml", "ggml_vulkan: 0 = AMD Radeon Graphics (RADV GFX1151) (radv) | uma: 1 | fp16: 1 | warp size: 64\n",
			[]VulkanDevice{{Name: "AMD Radeon Graphics (RADV GFX1151)", GFX: "gfx1151", Integrated: ptr(true)}}},
		{"summary block", "GPU0:\n\tvendorID = 0x1002\n\tdeviceID = 0x1586\n\tdeviceType = PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU\n\tdeviceName = Radeon 8060S Graphics (RADV STRIX_HALO)\n",
			[]VulkanDevice{{Name: "Radeon 8060S Graphics (RADV STRIX_HALO)", GFX: "gfx1151"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, ParseVulkaninfo(tc.in)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestParseSmallSources(t *testing.T) {
	if r := ParseUname(fixture(t, "gfx1151-carveout-96g/uname.txt")); r != "7.0.0-31-generic" {
		t.Errorf("uname -a: %q", r)
	}
	if r := ParseUname("$ uname -r\n6.18.9-200.fc43.x86_64\n"); r != "6.18.9-200.fc43.x86_64" {
		t.Errorf("uname -r: %q", r)
	}
	mods := assertTolerant(t, "lsmod", fixture(t, "gfx1151-no-devkfd/lsmod.txt"), "lsmod", ParseLsmod)
	if !mods["ttm"] || !mods["amdgpu"] || !mods["amdxdna"] || mods["amdttm"] {
		t.Errorf("lsmod %v", mods)
	}
	if mes := ParseFirmwareMES(fixture(t, "gfx1151-dkms-512m/firmware.txt")); mes != "0x00000080" {
		t.Errorf("MES %q (MES_KIQ must not match)", mes)
	}
	if m := ParseFree(fixture(t, "gfx1151-dkms-512m/free.txt")); m == nil || *m != 131171464*1024 {
		t.Errorf("free (KiB) = %v", m)
	}
	if m := ParseFree(fixture(t, "gfx803/free.txt")); m == nil || *m != 16635121664 {
		t.Errorf("free -b = %v", m)
	}
	if m := ParseFree("$ free -h\n               total        used\nMem:           125Gi       1.2Gi\n"); m == nil || *m != 125<<30 {
		t.Errorf("free -h = %v", m)
	}
	if m := ParseMeminfo("MemTotal:       131171464 kB\nMemFree: 1 kB\n"); m == nil || *m != 131171464*1024 {
		t.Errorf("meminfo = %v", m)
	}
	mi := ParseModinfo("filename:       /lib/modules/6.8.0-60-generic/updates/dkms/amdgpu.ko.zst\nversion:        6.12.12\nvermagic:       6.8.0-60-generic SMP preempt mod_unload modversions\n")
	if d := mi.DKMS(); d == nil || !*d || mi.Version != "6.12.12" || mi.Vermagic != "6.8.0-60-generic" {
		t.Errorf("modinfo dkms %+v", mi)
	}
	intree := ParseModinfo("filename:       /lib/modules/6.18.9-200.fc43.x86_64/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.xz\n")
	if d := intree.DKMS(); d == nil || *d {
		t.Errorf("modinfo in-tree %+v", intree)
	}
	for in, want := range map[string][]string{
		"alice : alice wheel render video\n":                                 {"alice", "wheel", "render", "video"},
		"uid=1000(bob) gid=1000(bob) groups=1000(bob),44(video),993(render)": {"bob", "video", "render"},
		"bob adm video\n": {"bob", "adm", "video"},
	} {
		if got := ParseGroups(in); !cmp.Equal(got, want) {
			t.Errorf("groups %q = %v, want %v", in, got, want)
		}
	}
	if a, m := ParseDf("Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/nvme0n1p3 1000 10 83886080 1% /home\n"); a == nil || *a != 83886080*1024 || m != "/home" {
		t.Errorf("df = %v %q", a, m)
	}
	if v := ParseToolVersion("podman version 5.6.2\n"); v != "5.6.2" {
		t.Errorf("podman %q", v)
	}
	if v := ParseToolVersion("distrobox: 1.8.1.2\n"); v != "1.8.1.2" {
		t.Errorf("distrobox %q", v)
	}
	if s := ParseDev(fixture(t, "gfx1151-no-devkfd/dev.txt")); s != "missing" {
		t.Errorf("ls /dev/kfd = %q", s)
	}
	if s := ParseDev("/dev/kfd denied\n"); s != "denied" {
		t.Errorf("dev.txt = %q", s)
	}
	env := ParseEnv("export HSA_OVERRIDE_GFX_VERSION=11.0.0\nHIP_VISIBLE_DEVICES='0'\n")
	if env["HSA_OVERRIDE_GFX_VERSION"] != "11.0.0" || env["HIP_VISIBLE_DEVICES"] != "0" {
		t.Errorf("env %v", env)
	}
}

func TestSysValueTranscript(t *testing.T) {
	s := fixture(t, "gfx1151-sysfs-transcript/sys/class/drm/card0/device/mem_info_gtt_total")
	if v := sysValue(s, "mem_info_gtt_total"); v != "123480309760" {
		t.Errorf("gtt_total from a transcript of two cats = %q, want the first cat's value", v)
	}
	if v := sysValue("26214400\n", "pages_limit"); v != "26214400" {
		t.Errorf("plain file = %q", v)
	}
}

// TestParsePCISysDevice reads a device's sysfs attributes as the kernel
// writes them, as a pasted `cat`, and from uevent alone.
func TestParsePCISysDevice(t *testing.T) {
	dir := "nvidia-h100-sysfs/sys/bus/pci/devices/0000:18:00.0/"
	files := map[string]string{}
	for _, f := range []string{"class", "vendor", "device", "subsystem_vendor", "subsystem_device", "uevent"} {
		files[f] = fixture(t, dir+f)
	}
	want := PCISysDevice{Slot: "18:00.0", Class: "030200", Vendor: "10de", Device: "2330", SubVendor: "10de", SubDevice: "16c1", Driver: "nvidia"}
	if d := cmp.Diff(want, ParsePCISysDevice("0000:18:00.0", files)); d != "" {
		t.Errorf("attribute files (-want +got):\n%s", d)
	}
	onlyUevent := map[string]string{"uevent": files["uevent"]}
	if d := cmp.Diff(want, ParsePCISysDevice("0000:18:00.0", onlyUevent)); d != "" {
		t.Errorf("uevent alone (-want +got):\n%s", d)
	}
	for v, text := range pasteVariants(files["vendor"], "cat /sys/bus/pci/devices/0000:18:00.0/vendor") {
		if got := ParsePCISysDevice("0000:18:00.0", map[string]string{"vendor": text}); got.Vendor != "10de" {
			t.Errorf("vendor pasted %s: %q", v, got.Vendor)
		}
	}
	if d := ParsePCISysDevice("x", map[string]string{"class": "0x0302000000\n", "vendor": "nvidia\n"}); d.Class != "" || d.Vendor != "" {
		t.Errorf("junk read as IDs: %+v", d)
	}
}
