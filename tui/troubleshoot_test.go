package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/diagnose"
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

// TestTroubleshootCopySaysSo: c in troubleshooting copies the selected
// finding's fix and says so, as the run screen does; moving to another
// finding clears the note.
func TestTroubleshootCopySaysSo(t *testing.T) {
	s := &troubleshootScreen{common: testCommon(), scanned: true, w: 100, h: 30, source: "x.log",
		findings: []diagnose.Finding{{Family: "build-oom-killed", Summary: "killed", Fix: "export MAX_JOBS=4"}, {Family: "other", Summary: "s", Fix: "f"}}}
	if cmd := s.Update(press("c")); cmd == nil {
		t.Fatal("c copied nothing")
	}
	if !strings.Contains(ansi.Strip(s.View()), "Copied the fix of build-oom-killed (OSC 52") {
		t.Errorf("c is silent:\n%s", ansi.Strip(s.View()))
	}
	s.Update(press("down"))
	if strings.Contains(ansi.Strip(s.View()), "Copied the fix") {
		t.Errorf("the note outlived the selection:\n%s", ansi.Strip(s.View()))
	}
}
