package tui

import (
	"strings"
	"testing"
)

// TestTroubleshootScansTheFailedLogAtOnce: t on a failed run scans the failed
// log at once, the summary's commands stand alone on their lines, the run
// shows the log's path.
func TestTroubleshootScansTheFailedLogAtOnce(t *testing.T) {
	f := newFakeBackend(t)
	m := toRun(t, f, 120, 40)
	m.run.rs.Step("rocm").Findings = nil // a failure no rule knew
	drive(t, m, press("t"))
	if v := plain(m); strings.Contains(v, "log or bundle:") || !strings.Contains(v, "llamacpp-rocm-load-hang-sdma") {
		t.Errorf("t did not scan the failed log at once:\n%s", v)
	}
	drive(t, m, press("esc"))
	if !strings.Contains(plain(m), "/state/runs/fake-run/rocm.log") {
		t.Errorf("the run screen does not show the log's path:\n%s", plain(m))
	}
	drive(t, m, press("enter"))
	for _, l := range strings.Split(plain(m), "\n") {
		if strings.Contains(l, "$ haloforge build") && strings.Contains(l, "after the fix") {
			t.Errorf("a command shares its line with words: %q", l)
		}
	}
}
