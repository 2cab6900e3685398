package detect

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
)

func mustBundle(t testing.TB, name string) *Bundle {
	t.Helper()
	b, err := ReadBundle(filepath.Join("testdata", "bundles", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func bundleOf(t testing.TB, files map[string]string) *Bundle {
	t.Helper()
	b := NewBundle()
	for k, v := range files {
		if err := b.Set(k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func mustCheck(t *testing.T, r *Report, id CheckID, status Status) Check {
	t.Helper()
	c, ok := r.Check(id)
	if !ok {
		t.Fatalf("no check %s", id)
	}
	if c.Status != status {
		t.Fatalf("%s = %s (%s), want %s", id, c.Status, c.Summary, status)
	}
	return c
}

// TestChecksCoverContract: every check ID of docs/ids.md, in order, for any bundle.
func TestChecksCoverContract(t *testing.T) {
	for _, b := range []*Bundle{NewBundle(), mustBundle(t, "gfx1151-no-devkfd")} {
		r := Analyse(b)
		var ids []CheckID
		for _, c := range r.Checks {
			ids = append(ids, c.ID)
			if !slices.Contains([]Status{StatusOK, StatusWarn, StatusFail, StatusSkip}, c.Status) || c.Summary == "" || strings.Contains(c.Summary, "\n") {
				t.Errorf("check %+v: status must be ok/warn/fail/skip with a one-line summary", c)
			}
			if (c.Status == StatusFail || c.Status == StatusWarn) && c.Fix == "" {
				t.Errorf("check %s is %s without a fix", c.ID, c.Status)
			}
		}
		if !slices.Equal(ids, CheckIDs) {
			t.Errorf("check IDs %v, want %v", ids, CheckIDs)
		}
	}
}

func TestJSONShape(t *testing.T) {
	raw, err := json.Marshal(Analyse(NewBundle()))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"gpus", "kernel", "firmware", "memory", "checks", "recommended_track"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if m["recommended_track"] != nil {
		t.Errorf("recommended_track = %v on an empty bundle, want null", m["recommended_track"])
	}
	k := m["kernel"].(map[string]any)
	for _, f := range []string{"release", "cmdline", "ttm_module", "amdgpu_dkms"} {
		if v, ok := k[f]; !ok || v != nil {
			t.Errorf("kernel.%s = %v (present %v), want null", f, v, ok)
		}
	}
	if gpus, ok := m["gpus"].([]any); !ok || len(gpus) != 0 {
		t.Errorf("gpus = %v, want []", m["gpus"])
	}
}

// TestGTTFixFromRAM: the GTT advice is computed from this machine's RAM,
// shows the GiB and the reserve, and carries amdttm. when dkms is loaded.
func TestGTTFixFromRAM(t *testing.T) {
	base := map[string]string{
		"sys/class/kfd/kfd/topology/nodes/1/properties":  "gfx_target_version 110501\nsimd_count 80\nsimd_per_cu 2\nvendor_id 4098\ndevice_id 5510\ndrm_render_minor 128\nlocation_id 50432\nmax_engine_clk_ccompute 2900\n",
		"sys/class/drm/card1/device/mem_info_vram_total": "536870912\n",
		"sys/class/drm/card1/device/mem_info_gtt_total":  "67108864000\n",
		"meminfo.txt":    "MemTotal:       131171464 kB\n",
		"os-release.txt": "ID=fedora\nPRETTY_NAME=\"Fedora Linux 43\"\n",
		"lsmod.txt":      "ttm 126976 2 amdgpu,drm_ttm_helper\namdgpu 20107264 3\n",
	}
	r := Analyse(bundleOf(t, base))
	c := mustCheck(t, r, "gtt-size", StatusWarn)
	p := planGTT(131171464 * 1024)
	if p.GiB != 117 || p.Pages != 117*262144 || p.ReserveGiB != 8 {
		t.Fatalf("plan %+v, want 117 GiB (125 GiB RAM - 8 GiB reserve)", p)
	}
	for _, want := range []string{"ttm.pages_limit=30670848", "117 GiB", "8 GiB kept for the OS", "sudo grubby --update-kernel=ALL --args=\"ttm.pages_limit=30670848 ttm.page_pool_size=30670848\"",
		"GRUB_CMDLINE_LINUX_DEFAULT", "sudo update-grub", `echo "options ttm pages_limit=30670848 page_pool_size=30670848" | sudo tee -a /etc/modprobe.d/haloforge-ttm.conf`} {
		if !strings.Contains(c.Fix, want) {
			t.Errorf("gtt-size fix lacks %q:\n%s", want, c.Fix)
		}
	}
	if strings.Contains(c.Fix, "amdttm") {
		t.Errorf("in-tree ttm: the fix must not mention amdttm:\n%s", c.Fix)
	}
	if strings.Index(c.Fix, "Fedora") > strings.Index(c.Fix, "Ubuntu") {
		t.Errorf("on Fedora the grubby block comes first:\n%s", c.Fix)
	}
	mustCheck(t, r, "carveout", StatusOK)
	mustCheck(t, r, "cwsr", StatusWarn) // properties without cwsr_size

	base["lsmod.txt"] = "amdttm 126976 2 amdgpu\namdgpu 20107264 3\n"
	base["os-release.txt"] = "ID=ubuntu\nID_LIKE=debian\n"
	dk := mustCheck(t, Analyse(bundleOf(t, base)), "gtt-size", StatusWarn)
	if !strings.Contains(dk.Fix, "amdttm.pages_limit=30670848") || strings.Index(dk.Fix, "Ubuntu") > strings.Index(dk.Fix, "Fedora") {
		t.Errorf("dkms on Ubuntu: want amdttm. and the GRUB block first:\n%s", dk.Fix)
	}

	base["df.txt"] = "Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/x 1 1 20000000 99% /home\n"
	if r := Analyse(bundleOf(t, base)); !r.CannotBuild() || r.ROCmBroken() {
		t.Errorf("gfx1151 with 20 GB free: cannot build %v, ROCm broken %v; want a host that cannot build (steps recommends the prebuilt image)", r.CannotBuild(), r.ROCmBroken())
	}
	base["sys/class/drm/card1/device/mem_info_gtt_total"] = "125627793408\n"
	mustCheck(t, Analyse(bundleOf(t, base)), "gtt-size", StatusOK)
}

func TestHostChecks(t *testing.T) {
	strix := "gfx_target_version 110501\nsimd_count 80\nsimd_per_cu 2\nvendor_id 4098\ndevice_id 5510\ndrm_render_minor 128\ncwsr_size 1\nctl_stack_size 1\n"
	tests := []struct {
		name   string
		files  map[string]string
		id     CheckID
		status Status
		fix    string // must appear in the fix (or detail)
	}{
		{"groups missing", map[string]string{"groups.txt": "alice : alice wheel\n"}, "render-groups", StatusWarn, "sudo usermod -aG render,video $USER"},
		{"groups ok", map[string]string{"groups.txt": "alice wheel render video\n"}, "render-groups", StatusOK, ""},
		{"mes 0x83", map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": strix, "firmware.txt": "MES feature version: 1, firmware version: 0x00000083\n"}, "mes-firmware", StatusFail, "20260110"},
		{"cwsr fixed", map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": strix}, "cwsr", StatusOK, ""},
		// The KFD topology is the evidence: a kernel that lists cwsr_size has the fixes, whatever its number says.
		{"old number, fixed KFD", map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": strix, "uname.txt": "6.14.0-1014-oem\n"}, "kernel-version", StatusOK, ""},
		{"old kernel", map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": strings.ReplaceAll(strix, "cwsr_size 1\nctl_stack_size 1\n", "max_engine_clk_ccompute 2900\n"), "uname.txt": "6.14.0-1014-oem\n"}, "kernel-version", StatusWarn, "linux-oem-24.04d"},
		{"iommu off", map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": strix, "cmdline.txt": "ro amd_iommu=off\n"}, "iommu", StatusOK, "--remove-args=\"amd_iommu\""},
		{"iommu on is never pushed", map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": strix, "cmdline.txt": "ro quiet\n"}, "iommu", StatusOK, "NPU"},
		{"override on gfx1151", map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": strix, "env.txt": "HSA_OVERRIDE_GFX_VERSION=11.0.0\n"}, "hsa-override", StatusWarn, "unset HSA_OVERRIDE_GFX_VERSION"},
		{"no override", map[string]string{"env.txt": ""}, "hsa-override", StatusOK, ""},
		{"rocminfo alone without /dev/kfd is not 'no GPU'", map[string]string{"rocminfo.txt": "ROCk module is loaded\nUnable to open /dev/kfd read-write: No such file or directory\n"}, "gpu", StatusWarn, "not in a container or sandbox"},
		{"…and its kfd-access says why", map[string]string{"rocminfo.txt": "ROCk module is loaded\nUnable to open /dev/kfd read-write: No such file or directory\n"}, "kfd-access", StatusFail, "--device /dev/kfd"},
		{"kfd denied", map[string]string{"dev.txt": "/dev/kfd denied\n"}, "kfd-access", StatusFail, "usermod"},
		{"no podman", map[string]string{"collect.txt": "podman: not found\ndocker: not found\ndistrobox: not found\n"}, "container-engine", StatusFail, "dnf install podman"},
		{"no distrobox", map[string]string{"collect.txt": "distrobox: not found\n"}, "distrobox", StatusFail, "apt install distrobox"},
		{"podman only in a paste", map[string]string{"podman.txt": "podman version 5.6.2\n"}, "container-engine", StatusOK, ""},
		{"disk low", map[string]string{"df.txt": "Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/x 1 1 20000000 99% /home\n"}, "disk-space", StatusFail, "--state-dir"},
		{"small RAM", map[string]string{"meminfo.txt": "MemTotal: 8000000 kB\n"}, "build-memory", StatusFail, "MAX_JOBS"},
		{"gtt mismatch", map[string]string{"dmesg.txt": "[    3.6] amdgpu 0000:c5:00.0: amdgpu: GTT size has been set as 130996502528 but TTM size has been set as 66571993088, this is unusual\n"}, "gttsize-deprecated", StatusWarn, "remove amdgpu.gttsize"},
		{"gttsize", map[string]string{"cmdline.txt": "ro amdgpu.gttsize=126976 ttm.pages_limit=32505856\n", "meminfo.txt": "MemTotal: 131171464 kB\n"}, "gttsize-deprecated", StatusWarn, "--remove-args=\"amdgpu.gttsize\""},
		{"dkms ignores ttm.", map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": strix, "lsmod.txt": "amdttm 1 1\n", "cmdline.txt": "ttm.pages_limit=32505856\n"}, "ttm-module", StatusWarn, "amdttm.pages_limit=32505856"},
		{"big carve-out", map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": strix, "sys/class/drm/card1/device/mem_info_vram_total": "103079215104\n"}, "carveout", StatusWarn, "512 MB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCheck(t, Analyse(bundleOf(t, tc.files)), tc.id, tc.status)
			if !strings.Contains(c.Fix+c.Detail, tc.fix) {
				t.Errorf("fix/detail lacks %q:\n%s\n%s", tc.fix, c.Fix, c.Detail)
			}
		})
	}
}

// TestPrecedence: KFD sysfs beats rocminfo, which beats amd-smi and lspci;
// an HSA override shows separately and never becomes the hardware's gfx.
func TestPrecedence(t *testing.T) {
	b := bundleOf(t, map[string]string{
		"sys/class/kfd/kfd/topology/nodes/1/properties": "gfx_target_version 110501\nsimd_count 80\nsimd_per_cu 2\nvendor_id 4098\ndevice_id 5510\ndrm_render_minor 128\nlocation_id 50432\n",
		"rocminfo.txt": "Agent 2\n  Name:                    gfx1100\n  Marketing Name:          Radeon 8060S Graphics\n  Device Type:             GPU\n  Compute Unit:            38\n  BDFID:                   50432\n",
		"amd-smi.txt":  "GPU: 0\n    BDF: 0000:c5:00.0\n    MARKET_NAME: AMD Radeon Graphics\n    NUM_COMPUTE_UNITS: 36\n",
		"lspci.txt":    fixture(t, "gfx1151-intree-npu/lspci.txt"),
		"env.txt":      "HSA_OVERRIDE_GFX_VERSION=11.0.0\n",
	})
	r := Analyse(b)
	if len(r.GPUs) != 1 {
		t.Fatalf("%d GPUs, want the four sources merged into 1", len(r.GPUs))
	}
	g := r.GPUs[0]
	if *g.GFX != "gfx1151" || *g.ComputeUnits != 40 || *g.Name != "Radeon 8060S Graphics" || g.Source != "kfd" || *g.PCISlot != "c5:00.0" {
		t.Errorf("merged GPU %s", jsonOf(g))
	}
	if g.RuntimeGFX == nil || *g.RuntimeGFX != "gfx1100" {
		t.Errorf("runtime gfx = %v, want gfx1100 shown separately", g.RuntimeGFX)
	}
	mustCheck(t, r, "hsa-override", StatusWarn)
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

func BenchmarkAnalyse(b *testing.B) {
	for _, name := range []string{"gfx1151-no-devkfd", "gfx900-7gpus", "gfx942-kfd"} {
		bundle := mustBundle(b, name)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				Analyse(bundle)
			}
		})
	}
}

// TestHumanOutput: flutter-doctor marks, fixes under warnings, skips only with -v.
func TestHumanOutput(t *testing.T) {
	r := Analyse(mustBundle(t, "gfx1151-no-devkfd"))
	r.RecommendedTrack = "therock-toolbox" // the caller's (steps.RecommendFor)
	var short, long strings.Builder
	if err := r.WriteText(&short, false); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteText(&long, true); err != nil {
		t.Fatal(err)
	}
	s := short.String()
	for _, want := range []string{"[✓] GPU: ", "[✓] Kernel: kernel 6.17.0-35-generic has the gfx1151 KFD fixes", "[✗] /dev/kfd: ", "    Run on the host", "Recommended track: therock-toolbox"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "[-]") {
		t.Errorf("skipped checks belong to -v only:\n%s", s)
	}
	if !strings.Contains(long.String(), "[-] MES firmware") || !strings.Contains(long.String(), "Facts:") {
		t.Errorf("-v lacks skips or facts:\n%s", long.String())
	}
}

func TestBundleRoundTrip(t *testing.T) {
	src := mustBundle(t, "gfx1151-sysfs-transcript")
	dir := t.TempDir()
	if err := src.WriteDir(filepath.Join(dir, "d")); err != nil {
		t.Fatal(err)
	}
	tgz := filepath.Join(dir, "b.tar.gz")
	if err := src.WriteTarGz(tgz); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "d"), tgz} {
		got, err := ReadBundle(p)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Names(), src.Names()) {
			t.Errorf("%s: files %v, want %v", p, got.Names(), src.Names())
		}
		if jsonOf(Analyse(got)) != jsonOf(Analyse(src)) {
			t.Errorf("%s: analysis differs after a round trip", p)
		}
	}
	if _, err := ReadBundle(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing bundle must be an error")
	}
	if err := os.WriteFile(filepath.Join(dir, "x.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadBundle(filepath.Join(dir, "x.txt")); err == nil {
		t.Error("a plain file is not a bundle")
	}
	if err := NewBundle().Set("../../etc/passwd", nil); err == nil {
		t.Error("a path leaving the bundle must be refused")
	}
}

func TestFilterDmesg(t *testing.T) {
	in := "[    0.000000] Linux version 6.18.9-200.fc43.x86_64 (mockbuild@x)\n" +
		"[    1.0] usb 1-2: SerialNumber: 0123456789AB\n" +
		"[    2.0] r8169 0000:c0:00.0 eth0: RTL8125B, 9c:6b:00:00:00:01, XID 641\n" +
		"[    3.636121] [drm] amdgpu: 512M of VRAM memory ready\n" +
		"[    3.7] amdgpu 0000:c5:00.0: amdgpu: [drm] Configuring gttsize via module parameter is deprecated, please use ttm.pages_limit\n"
	got := string(filterDmesg([]byte(in)))
	if strings.Contains(got, "SerialNumber") || strings.Contains(got, "9c:6b") {
		t.Errorf("private lines kept:\n%s", got)
	}
	d := ParseDmesg(got)
	if d.KernelRelease != "6.18.9-200.fc43.x86_64" || d.VRAMBytes == nil || !d.GTTSizeDeprecated {
		t.Errorf("filtered dmesg lost facts: %+v", d)
	}
}

func TestCollectFakeRoot(t *testing.T) {
	// A fake root stands in for a Strix Halo host's sysfs (no GPU here);
	// its values are the real ones of the fixtures.
	root := t.TempDir()
	write := func(p, s string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sys/class/kfd/kfd/topology/nodes/1/properties", "gfx_target_version 110501\nsimd_count 80\nsimd_per_cu 2\nvendor_id 4098\ndevice_id 5510\ndrm_render_minor 128\nlocation_id 49664\n")
	write("sys/class/kfd/kfd/topology/nodes/0/properties", "simd_count 0\ngfx_target_version 0\ncpu_cores_count 32\n")
	write("sys/class/drm/card1/device/mem_info_vram_total", "536870912\n")
	write("sys/class/drm/card1/device/mem_info_gtt_total", "123480309760\n")
	write("sys/module/ttm/parameters/pages_limit", "26214400\n")
	write("proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz-6.18.1 ro amdgpu.gttsize=117760 iommu=pt\n")
	write("proc/meminfo", "MemTotal:       131171464 kB\n")
	write("proc/sys/kernel/osrelease", "6.18.1\n")
	// AMD's MES workaround, left behind (ROCm/legacy-rocm-build#5616), in both override directories.
	write("lib/firmware/updates/amdgpu/gc_11_5_1_mes_2.bin", "firmware\n")
	write("lib/firmware/updates/6.18.1/amdgpu/gc_11_5_1_mes_2.bin.zst", "firmware\n")
	write("lib/firmware/amdgpu/gc_11_5_1_mes_2.bin", "the package's\n")
	b, err := Collect(t.Context(), CollectOptions{Root: root, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := Analyse(b)
	g := r.Primary()
	if g == nil || *g.GFX != "gfx1151" || *g.GTTBytes != 123480309760 || *g.VRAMBytes != 536870912 || !*g.Integrated || *g.PCISlot != "c2:00.0" {
		t.Fatalf("collected GPU %s", jsonOf(g))
	}
	if *r.Kernel.Release != "6.18.1" || *r.Kernel.TTMPagesLimit != 26214400 || r.Kernel.Cmdline["amdgpu.gttsize"] != "117760" {
		t.Errorf("kernel %s", jsonOf(r.Kernel))
	}
	mustCheck(t, r, "gttsize-deprecated", StatusWarn)
	mustCheck(t, r, "kfd-access", StatusFail) // the fake root has no /dev/kfd
	if !slices.Equal(r.Firmware.Overrides, []string{"updates/amdgpu/gc_11_5_1_mes_2.bin", "updates/6.18.1/amdgpu/gc_11_5_1_mes_2.bin.zst"}) {
		t.Errorf("firmware overrides %q", r.Firmware.Overrides)
	}
	if !b.Has("dev.txt") || !b.Has("collect.txt") || b.Has("rocminfo.txt") {
		t.Errorf("files %v: a fake root runs no commands", b.Names())
	}
}

// TestCollectLive runs every collector on this machine (no GPU here; some
// commands are absent).
func TestCollectLive(t *testing.T) {
	// The 1 s budget of a live doctor is measured by BenchmarkCollectLive,
	// not asserted here: a wall-clock assertion fails on a busy machine.
	b, err := Collect(t.Context(), CollectOptions{Timeout: 800 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r := Analyse(b)
	m, _ := b.Get("collect.txt")
	for _, c := range commands {
		if !strings.Contains(m, c.args[0]+": ") {
			t.Errorf("collect.txt does not say what happened to %s:\n%s", c.args[0], m)
		}
	}
	env, _ := b.Get("env.txt")
	for _, l := range strings.Split(strings.TrimSpace(env), "\n") {
		k, _, _ := strings.Cut(l, "=")
		if l != "" && !slices.Contains(envKeys, k) && !strings.HasPrefix(k, "HSA_OVERRIDE_GFX_VERSION_") {
			t.Errorf("env.txt leaks %q: only GPU variables may go into a shared bundle", k)
		}
	}
	if r.Memory.TotalBytes == nil || *r.Memory.TotalBytes <= 0 {
		t.Errorf("RAM unknown on a live Linux machine")
	}
	t.Logf("live collect+analyse: %d checks", len(r.Checks))
}

// BenchmarkCollectLive is the live doctor's cost on this machine (target
// under 1 s per collect+analyse): it reports seconds per run so `make bench`
// shows the figure next to its budget.
func BenchmarkCollectLive(b *testing.B) {
	for b.Loop() {
		bundle, err := Collect(b.Context(), CollectOptions{Timeout: 800 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		Analyse(bundle)
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/doctor")
}

// TestGorgonHalo: the Ryzen AI Max+ PRO 495's Radeon 8065S is recognised by
// name as gfx1151 (ROCm 10.0.0 release notes) and gets the same memory math
// at 192 GB: RAM minus the 8 GiB OS reserve, in 4 KiB TTM pages.
func TestGorgonHalo(t *testing.T) {
	if g := gfxFromName("AMD Radeon 8065S Graphics"); g != "gfx1151" {
		t.Errorf("8065S -> %q, want gfx1151", g)
	}
	// 192 GiB of LPDDR5X less a 512 MiB carve-out, as MemTotal in kB.
	ram := int64(192*1024*1024-512*1024) * 1024
	p := planGTT(ram)
	if p.GiB != 183 || p.ReserveGiB != 8 || p.Pages != 183*262144 {
		t.Fatalf("plan for 191.5 GiB: %+v, want 183 GiB (8 GiB reserve) = 47972352 pages", p)
	}
	r := Analyse(bundleOf(t, map[string]string{
		"amd-smi.txt": "GPU: 0\n    ASIC:\n        MARKET_NAME: AMD Radeon 8065S Graphics\n        NUM_COMPUTE_UNITS: 40\n",
		"meminfo.txt": fmt.Sprintf("MemTotal:       %d kB\n", ram/1024),
		// The kernel's default: about half of RAM.
		"sys/module/ttm/parameters/pages_limit": fmt.Sprintf("%d\n", ram/4096/2),
	}))
	g := r.Primary()
	if g == nil || *g.GFX != "gfx1151" || !*g.Integrated {
		t.Fatalf("GPU %s", jsonOf(r.GPUs))
	}
	mustCheck(t, r, "gfx-support", StatusOK)
	c := mustCheck(t, r, "gtt-size", StatusWarn)
	if !strings.Contains(c.Fix, "ttm.pages_limit=47972352") || !strings.Contains(c.Fix, "183 GiB") {
		t.Errorf("192 GB fix:\n%s", c.Fix)
	}
}

// TestHostileBundleNeverReachesTheReport: a bundle is text from outside. A
// right-to-left override, an isolate, a C1 CSI and an escape sequence in
// its files reach neither doctor's text (verbose, with the facts) nor its
// JSON.
func TestHostileBundleNeverReachesTheReport(t *testing.T) {
	b, err := ReadBundle(filepath.Join("testdata", "bundles", "gfx1151-kernel72-fw20260810"))
	if err != nil {
		t.Fatal(err)
	}
	const evil = "\u202eevil\u2066\u009b2J\x1b]0;t\x07"
	for _, name := range b.Names() {
		s, _ := b.Get(name)
		lines := strings.Split(s, "\n")
		for i := range lines {
			if i%3 == 0 && lines[i] != "" {
				lines[i] += " " + evil
			}
		}
		_ = b.Set(name, []byte(strings.Join(lines, "\n")))
	}
	_ = b.Set("uname.txt", []byte("Linux halo 6.18.4"+evil+" #1 SMP x86_64 GNU/Linux\n"))
	_ = b.Set("cmdline.txt", []byte("BOOT_IMAGE=/vmlinuz root=/dev/x ro amdgpu.gttsize="+evil+" ttm.pages_limit=1"+evil+"\n"))
	r := Analyse(b)
	var out strings.Builder
	if err := r.WriteText(&out, true); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{"text": out.String(), "json": string(js)} {
		if i := strings.IndexFunc(s, func(r rune) bool {
			return r == 0x1b || r == 0x07 || (r >= 0x80 && r <= 0x9f) || unicode.Is(unicode.Bidi_Control, r)
		}); i >= 0 {
			t.Errorf("%s: %q reaches the report: %q", name, []rune(s[i:])[0], s[max(0, i-60):min(len(s), i+20)])
		}
	}
	if !strings.Contains(out.String(), "kernel: 6.18.4evil") {
		t.Errorf("the kernel release is not shown:\n%s", out.String())
	}
}

// strixKFD is a gfx1151 KFD node (values of the fixtures' prose, see INDEX.md).
const strixKFD = "gfx_target_version 110501\nsimd_count 80\nsimd_per_cu 2\nvendor_id 4098\ndevice_id 5510\ndrm_render_minor 128\ncwsr_size 1\nctl_stack_size 1\n"

// checkCase is one row of a check's table test: the files, the status, a
// text the summary must hold and one the fix (or detail) must hold.
type checkCase struct {
	name   string
	files  map[string]string
	status Status
	want   string
	fix    string
}

// analyseStrix analyses a gfx1151 host (its KFD node) with these files added.
func analyseStrix(t *testing.T, files map[string]string) *Report {
	t.Helper()
	all := map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": strixKFD}
	for k, v := range files {
		all[k] = v
	}
	return Analyse(bundleOf(t, all))
}
