package diagnose

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/haloforge/haloforge/detect"
)

// TestRulesSayWhatDoctorSays holds the host facts the rules print to the
// ones haloforge doctor judges by (package detect), and every rule's text to
// those facts: a kernel minimum, a firmware release or a watchdog value
// stated anywhere in a rule is the doctor's.
func TestRulesSayWhatDoctorSays(t *testing.T) {
	secs := func(ms int64, ok bool) string {
		if !ok || ms%1000 != 0 {
			t.Fatalf("detect's default watchdog: %d ms, %v", ms, ok)
		}
		return fmt.Sprintf("%d s", ms/1000)
	}
	facts := []struct{ name, here, doctor string }{
		{"fixed kernels", fixedKernels, detect.FixedKernelsText()},
		{"bad firmware", badFirmware, detect.BadMESRelease},
		{"fixed firmware", fixedFirmware, detect.FixedMESRelease},
		{"watchdog before 6.19", watchdogBefore619, secs(detect.DefaultLockupTimeoutMS("6.18.4"))},
		{"watchdog from 6.19", watchdogFrom619, secs(detect.DefaultLockupTimeoutMS("6.19.0"))},
		{"lockup_timeout before 6.19", lockupBefore619, detect.ProposedLockupTimeout("6.18.4")},
		{"lockup_timeout from 6.19", lockupFrom619, detect.ProposedLockupTimeout("7.0.0-31-generic")},
	}
	for _, f := range facts {
		t.Run(f.name, func(t *testing.T) {
			if f.here != f.doctor {
				t.Errorf("diagnose says %q, doctor says %q", f.here, f.doctor)
			}
		})
	}
	lockup := regexp.MustCompile(`lockup_timeout=(-?[0-9x,]+)`)
	kernel := regexp.MustCompile(`\b6\.18\.4\b|\b6\.12\.64\b`)
	for _, r := range Rules() {
		texts := []string{r.Summary, r.Cause, r.Fix}
		for _, g := range r.Ladder {
			texts = append(texts, g.How)
		}
		t.Run(r.ID, func(t *testing.T) {
			for _, text := range texts {
				for _, m := range lockup.FindAllStringSubmatch(text, -1) {
					if v := m[1]; v != lockupBefore619 && v != lockupFrom619 && v != "-1" {
						t.Errorf("proposes amdgpu.lockup_timeout=%s; doctor proposes %s (before Linux 6.19) or %s: %q", v, lockupBefore619, lockupFrom619, text)
					}
				}
				if kernel.MatchString(text) && !strings.Contains(text, fixedKernels) {
					t.Errorf("names a kernel minimum without all of doctor's (%s): %q", fixedKernels, text)
				}
				if strings.Contains(text, "lockup_timeout") && regexp.MustCompile(`\b60 ?s\b|60000`).MatchString(text) {
					t.Errorf("gives a watchdog 60 s, the compute default of Linux 5.x; doctor: %s before 6.19, %s from it: %q", watchdogBefore619, watchdogFrom619, text)
				}
				if strings.Contains(text, "0x80") {
					t.Errorf("calls MES 0x80 the good one; doctor knows only 0x83 as bad (linux-firmware %s, fixed from %s): %q", badFirmware, fixedFirmware, text)
				}
			}
		})
	}
}
