package tui

// The track picker: the filter, detection's pick, coming back to it.

import (
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/steps"
)

// TestPickerEscClearsTheFilterFirst: Esc while typing a filter keeps it, Esc
// with a filter set clears it, only Esc without one goes back; the footer
// names / filter.
func TestPickerEscClearsTheFilterFirst(t *testing.T) {
	m := newSized(t, newFakeBackend(t), 120, 40)
	drive(t, m, press("enter"))
	if !strings.Contains(lastLine(m), "/ filter") {
		t.Errorf("the footer does not name the filter:\n%s", lastLine(m))
	}
	drive(t, m, press("/"), press("o"), press("l"), press("l"))
	if !m.picker.TakesText() {
		t.Fatal("typing the filter is not text: q would quit")
	}
	drive(t, m, press("q"))
	if m.top() != m.picker {
		t.Fatal("q while filtering left the picker")
	}
	drive(t, m, press("backspace"))
	drive(t, m, press("esc"))
	if m.top() != m.picker || !strings.Contains(plain(m), "ollama") || strings.Contains(plain(m), "vllm-image") {
		t.Fatalf("esc while typing did not keep the filter:\n%s", plain(m))
	}
	drive(t, m, press("esc"))
	if m.top() != m.picker || !strings.Contains(plain(m), "vllm-image") {
		t.Fatalf("esc with a filter did not clear it:\n%s", plain(m))
	}
	drive(t, m, press("esc"))
	if m.top() != m.detect {
		t.Errorf("esc without a filter did not go back: top %T", m.top())
	}
}

// TestPickerUsesDetection: the picker marks detection's pick, says which
// tracks do not build for this GPU, shows the blocking checks' verdicts, and
// on a machine without an AMD GPU stars nothing.
func TestPickerUsesDetection(t *testing.T) {
	det := strixHalo()
	det.Checks = append(det.Checks, detect.Check{ID: "kfd-access", Status: detect.StatusFail, Summary: "/dev/kfd is missing"})
	p := newPickerScreen(testCommon(), steps.Catalogue(), "therock-toolbox", det)
	p.SetSize(120, 40)
	p.Update(p.Init()())
	v := ansi.Strip(p.View())
	mustContain(t, "picker", v, "therock-toolbox   ★ for this box", "legacy-gfx803     not for gfx1151", "✗ /dev/kfd: /dev/kfd is missing", "✓ GPU: Radeon 8060S")
	p = newPickerScreen(testCommon(), steps.Catalogue(), "", &Detection{Report: &detect.Report{}, Source: "this machine"})
	p.SetSize(120, 40)
	p.Update(p.Init()())
	if v := ansi.Strip(p.View()); strings.Contains(v, "★") || !strings.Contains(v, "No AMD GPU here") {
		t.Errorf("no GPU, yet:\n%s", v)
	}
	p.SetSize(80, 20)
	before := ansi.Strip(p.View())
	p.Update(press("pgdown"))
	if after := ansi.Strip(p.View()); after == before || !strings.Contains(before, "more lines: pgdn") {
		t.Errorf("the details do not scroll at 80×20:\n%s", before)
	}
}

// TestPickerComesBackAsLeft: a track chosen through the filter, then Esc from
// its plan, brings back the list as it was left: the filter, the cursor on
// the track, the footer for a set filter; Enter plans the same track again.
func TestPickerComesBackAsLeft(t *testing.T) {
	m := newSized(t, newFakeBackend(t), 120, 40)
	drive(t, m, press("enter"))
	drive(t, m, press("/"), press("o"), press("l"), press("l"), press("enter"))
	if _, ok := m.top().(*planScreen); !ok {
		t.Fatalf("enter on the filtered list did not open the plan: %T", m.top())
	}
	drive(t, m, press("esc"))
	v := plain(m)
	if m.top() != m.picker || !strings.Contains(v, "> ollama") || strings.Contains(v, "vllm-image") {
		t.Fatalf("back from the plan, the filtered list is not as left:\n%s", v)
	}
	if !strings.Contains(lastLine(m), "esc clear the filter") {
		t.Errorf("the footer is not the filtered list's: %s", lastLine(m))
	}
	drive(t, m, press("enter"))
	if p, ok := m.top().(*planScreen); !ok || p.plan.Track.ID != "ollama" {
		t.Fatalf("enter again did not plan ollama: %T", m.top())
	}
	drive(t, m, press("esc"), press("esc"))
	if v := plain(m); !strings.Contains(v, "vllm-image") || !strings.Contains(v, "> ollama") {
		t.Errorf("esc did not clear the filter with the cursor kept on ollama:\n%s", v)
	}
}

// TestPickerIntroWithoutAnAMDGPU: with no AMD GPU the picker's intro names
// the tracks that build anyway (no GPU among their blocking checks), so
// "builds stop at the GPU check" is true of the others only.
func TestPickerIntroWithoutAnAMDGPU(t *testing.T) {
	p := &pickerScreen{common: testCommon(), tracks: steps.Catalogue(), det: &Detection{Report: &detect.Report{}}}
	got := p.intro()
	for _, tr := range steps.Catalogue() {
		builds := !slices.Contains(tr.BlockingChecks, detect.CheckGPU)
		if named := strings.Contains(got, tr.ID+",") || strings.Contains(got, tr.ID+":"); named != builds {
			t.Errorf("intro names %s: %v, but it builds without a GPU: %v\n%s", tr.ID, named, builds, got)
		}
	}
}
