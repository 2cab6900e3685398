package detect

import (
	"strings"
	"testing"
)

// TestQueueTimeouts follows amdgpu_device_get_job_timeout_settings and the
// lockup_timeout documentation of amdgpu_drv.c in both versions: before
// Linux 6.19 every queue defaults to 10 s and one value covers the
// non-compute queues only; from 6.19 every queue defaults to 2 s and one
// value covers them all. [GFX, compute, SDMA, video], -1 for none.
func TestQueueTimeouts(t *testing.T) {
	tests := []struct {
		value string
		old   bool
		want  [4]int64
	}{
		{"", true, [4]int64{10000, 10000, 10000, 10000}},
		{"", false, [4]int64{2000, 2000, 2000, 2000}},
		{"20000", true, [4]int64{20000, 10000, 20000, 20000}},
		{"20000", false, [4]int64{20000, 20000, 20000, 20000}},
		{"20000,20000", true, [4]int64{20000, 20000, 10000, 10000}},
		{"20000,20000", false, [4]int64{20000, 20000, 2000, 2000}},
		{"0,30000", true, [4]int64{10000, 30000, 10000, 10000}},
		{"-1", true, [4]int64{-1, 10000, -1, -1}},
		{"-1", false, [4]int64{-1, -1, -1, -1}},
		{"30000,60000,10000,10000", true, [4]int64{30000, 60000, 10000, 10000}},
	}
	for _, tc := range tests {
		got, ok := queueTimeouts(tc.value, tc.old)
		if !ok || got != tc.want {
			t.Errorf("queueTimeouts(%q, before 6.19 %v) = %v, want %v", tc.value, tc.old, got, tc.want)
		}
	}
	if _, ok := queueTimeouts("20s", true); ok {
		t.Error("a value the kernel rejects must not parse")
	}
	for ring, want := range map[string]int{"gfx_0.0.0": queueGFX, "comp_1.0.0": queueCompute, "comp_1.3.1": queueCompute, "sdma0": queueSDMA, "vcn_unified_0": queueVideo, "jpeg_dec_0": queueVideo, "mes_kiq_3.1.0": -1} {
		if got := ringQueue(ring); got != want {
			t.Errorf("ringQueue(%s) = %d, want %d", ring, got, want)
		}
	}
	// The proposal reaches GFX and compute on either side of 6.19.
	for rel, want := range map[string]string{"6.18.9-200.fc43.x86_64": "20000,20000", "7.1.3-100.fc43.x86_64": "20000"} {
		r := &Report{Kernel: Kernel{Release: &rel}}
		got := proposedLockup(r)
		q, _ := queueTimeouts(got, beforeWatchdog619(r))
		if got != want || q[queueGFX] != watchdogProposedMS || q[queueCompute] != watchdogProposedMS {
			t.Errorf("%s: proposed %q (%v), want %q", rel, got, q, want)
		}
	}
}

// TestLockupTimeoutCheck covers the GPU watchdog: the kernel's default is
// fine without evidence of resets; resets in dmesg, a disabled watchdog or a
// value the kernel rejects are not.
func TestLockupTimeoutCheck(t *testing.T) {
	mesHang := fixtureAt(t, "testdata/logs/f058-mes-hang-dmesg.txt")
	compRing := fixtureAt(t, "testdata/logs/comp-ring-timeout-dmesg.txt")
	slowJob := strings.Join(strings.Split(mesHang, "\n")[:5], "\n") + "\n" // the timeout, before any MES error
	tests := []struct {
		checkCase
		gfxMS int64 // the effective watchdog the facts must show (0: not asserted)
	}{
		{checkCase{"default on 7.0 (sysfs empty)", map[string]string{"uname.txt": "7.0.0-31-generic\n", "sys/module/amdgpu/parameters/lockup_timeout": "\n"},
			StatusOK, "amdgpu.lockup_timeout not set: the kernel's 2 s GPU watchdog; dmesg not read", ""}, 2000},
		{checkCase{"default on 6.18", map[string]string{"uname.txt": "6.18.9-200.fc43.x86_64\n", "cmdline.txt": "ro quiet\n", "dmesg.txt": "[    0.0] Linux version 6.18.9-200.fc43.x86_64\n"},
			StatusOK, "not on the kernel command line: the kernel's 10 s GPU watchdog; no GPU job timeouts in dmesg", "amdgpu.lockup_timeout=20000,20000"}, 10000},
		{checkCase{"nothing says how it is set", map[string]string{"uname.txt": "7.0.0-31-generic\n"},
			StatusSkip, "amdgpu.lockup_timeout unknown", "cat /sys/module/amdgpu/parameters/lockup_timeout"}, 0},
		{checkCase{"one value from 6.19: every queue", map[string]string{"uname.txt": "7.1.3-100.fc43.x86_64\n", "cmdline.txt": "ro amdgpu.lockup_timeout=20000\n"},
			StatusOK, "amdgpu.lockup_timeout=20000: GFX jobs may run 20 s and compute jobs 20 s", ""}, 20000},
		{checkCase{"one value before 6.19: not compute", map[string]string{"uname.txt": "6.18.9-200.fc43.x86_64\n", "cmdline.txt": "ro amdgpu.lockup_timeout=20000\n"},
			StatusWarn, "gives GFX jobs 20 s but compute jobs (llama.cpp's Vulkan, ROCm's kernel queues) only 10 s", "amdgpu.lockup_timeout=20000,20000"}, 20000},
		{checkCase{"GFX and compute named before 6.19", map[string]string{"uname.txt": "6.18.9-200.fc43.x86_64\n", "cmdline.txt": "ro amdgpu.lockup_timeout=20000,20000\n"},
			StatusOK, "GFX jobs may run 20 s and compute jobs 20 s", ""}, 20000},
		{checkCase{"per-queue list, kernel unknown", map[string]string{"sys/module/amdgpu/parameters/lockup_timeout": "30000,60000,10000,10000\n"},
			StatusOK, "a GFX job may run 30 s", ""}, 30000},
		{checkCase{"disabled (-1)", map[string]string{"cmdline.txt": "ro amdgpu.lockup_timeout=-1\n"},
			StatusWarn, "the GPU watchdog is off", `--remove-args="amdgpu.lockup_timeout"`}, -1},
		{checkCase{"not a number", map[string]string{"cmdline.txt": "ro amdgpu.lockup_timeout=20s\n"},
			StatusFail, "amdgpu refuses to start", "amdgpu.lockup_timeout=20000"}, 0},
		{checkCase{"a slow job reset the GPU", map[string]string{"uname.txt": "7.0.0-31-generic\n", "cmdline.txt": "ro quiet\n", "dmesg.txt": slowJob},
			StatusWarn, "1 GPU job timeout: a job ran longer than its watchdog and the GPU was reset (ring gfx_0.0.0: the GFX queue's 2 s watchdog", "amdgpu.lockup_timeout=20000"}, 2000},
		// A compute ring (llama.cpp's Vulkan queue) is judged by the compute queue's timeout: one value
		// (20000) does not reach it before Linux 6.19, so the job was still cut at 10 s.
		{checkCase{"compute ring with one value before 6.19", map[string]string{"uname.txt": "6.18.9-200.fc43.x86_64\n", "cmdline.txt": "ro amdgpu.lockup_timeout=20000\n", "dmesg.txt": compRing},
			StatusWarn, "ring comp_1.0.0: the compute queue's 10 s watchdog", "amdgpu.lockup_timeout=20000,20000"}, 20000},
		{checkCase{"compute ring with GFX and compute named", map[string]string{"uname.txt": "6.18.9-200.fc43.x86_64\n", "cmdline.txt": "ro amdgpu.lockup_timeout=20000,20000\n", "dmesg.txt": compRing},
			StatusWarn, "a job hangs rather than runs long", "dmesg | grep"}, 20000},
		{checkCase{"the MES hang is not a slow job", map[string]string{"uname.txt": "7.0.0-31-generic\n", "cmdline.txt": "ro quiet\n", "dmesg.txt": mesHang},
			StatusWarn, "1 GPU job timeout with 1 MES error", "firmware-kernel-pair"}, 2000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := analyseStrix(t, tc.files)
			c := mustCheck(t, r, "lockup-timeout", tc.status)
			if !strings.Contains(c.Summary, tc.want) || !strings.Contains(c.Fix+c.Detail, tc.fix) {
				t.Errorf("summary %q\nfix:\n%s\ndetail:\n%s\nwant %q / %q", c.Summary, c.Fix, c.Detail, tc.want, tc.fix)
			}
			if w := r.Kernel.Watchdog; tc.gfxMS != 0 && (w == nil || w.GFXTimeoutMS == nil || *w.GFXTimeoutMS != tc.gfxMS) {
				t.Errorf("watchdog facts %s, want gfx_timeout_ms %d", jsonOf(w), tc.gfxMS)
			}
		})
	}
	// Replacing a value: the old one is removed before the new one is added,
	// or the removal would take the new value with it.
	c := mustCheck(t, Analyse(bundleOf(t, map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": strixKFD, "cmdline.txt": "amdgpu.lockup_timeout=-1\n"})), "lockup-timeout", StatusWarn)
	rm, add := strings.Index(c.Fix, `--remove-args="amdgpu.lockup_timeout"`), strings.Index(c.Fix, `--args="amdgpu.lockup_timeout=20000,20000"`)
	sedRm, sedAdd := strings.Index(c.Fix, `amdgpu\.lockup_timeout=[^ "]*//g`), strings.Index(c.Fix, `&amdgpu.lockup_timeout=20000,20000 /`)
	modRm, modAdd := strings.Index(c.Fix, `s/[[:space:]]+lockup_timeout=[^[:space:]#]*//g`), strings.Index(c.Fix, `"options amdgpu lockup_timeout=20000,20000" | sudo tee -a /etc/modprobe.d/haloforge-amdgpu.conf`)
	if rm < 0 || add < rm || sedRm < 0 || sedAdd < sedRm || modRm < 0 || modAdd < modRm {
		t.Errorf("replacing the value must remove before adding (grubby, GRUB sed, modprobe.d):\n%s", c.Fix)
	}
	mustCheck(t, Analyse(mustBundle(t, "gfx1100")), "lockup-timeout", StatusSkip)
}

// TestParseLockupTimeout follows amdgpu_device_get_job_timeout_settings.
func TestParseLockupTimeout(t *testing.T) {
	for in, want := range map[string]struct {
		ms      int64
		set, ok bool
	}{
		"": {0, false, true}, "0": {0, false, true}, "20000": {20000, true, true}, "-1": {-1, true, true},
		"0x4e20": {20000, true, true}, "10000,60000,10000,10000": {10000, true, true}, "0,60000": {0, false, true},
		"abc": {0, false, false}, "20_000": {0, false, false}, "20000,x": {0, false, false},
	} {
		ms, set, ok := parseLockupTimeout(in)
		if ms != want.ms || set != want.set || ok != want.ok {
			t.Errorf("parseLockupTimeout(%q) = %d %v %v, want %+v", in, ms, set, ok, want)
		}
	}
}
