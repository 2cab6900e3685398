package main

import "testing"

// sameDevice decides whether a benchmark file's run is this machine's
// (then --report records this machine's facts).
func TestSameDevice(t *testing.T) {
	for _, tc := range []struct {
		run, live string
		want      bool
	}{
		{"AMD Radeon 8060S Graphics (RADV GFX1151)", "Radeon 8060S Graphics", true},
		{"AMD Radeon 8060S Graphics (RADV GFX1151)", "", false},
		{"llvmpipe (LLVM 22.1.8, 256 bits)", "", true},
		{"llvmpipe (LLVM 22.1.8, 256 bits)", "Radeon 8060S Graphics", false},
		{"", "Radeon 8060S Graphics", false},
		{"AMD Radeon RX 7900 XTX (RADV NAVI31)", "Radeon 8060S Graphics", false},
	} {
		t.Run(tc.run+" vs "+tc.live, func(t *testing.T) {
			if got := sameDevice(tc.run, tc.live); got != tc.want {
				t.Errorf("sameDevice(%q, %q) = %v, want %v", tc.run, tc.live, got, tc.want)
			}
		})
	}
}
