package detect

import "testing"

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
