package tui

import (
	"context"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// fixedClock makes elapsed times and ETAs the same on every run.
var fixedClock = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

// goldenModel is a model sized w×h on the fake backend, with a fixed clock.
func goldenModel(t *testing.T, w, h int) (*Model, *fakeBackend) {
	t.Helper()
	f := newFakeBackend(t)
	f.clock = fixedClock
	m := New(context.Background(), f, Options{})
	m.common.now = func() time.Time { return fixedClock.Add(90 * time.Second) }
	drive(t, m, tea.WindowSizeMsg{Width: w, Height: h})
	drive(t, m, m.Init()())
	return m, f
}

// TestGoldenViews pins every screen's stripped view at the minimum size and
// at the tmux test's size (-update rewrites testdata/*.golden).
func TestGoldenViews(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		w, h := size[0], size[1]
		name := func(s string) string { return s + "-" + itoa(w) + "x" + itoa(h) }
		t.Run(name("screens"), func(t *testing.T) {
			m, _ := goldenModel(t, w, h)
			golden(t, name("detect"), plain(m))
			drive(t, m, press("enter"))
			golden(t, name("picker"), plain(m))
			drive(t, m, press("enter"))
			golden(t, name("plan"), plain(m))
			drive(t, m, press("enter"))
			golden(t, name("run-failed"), plain(m))
			drive(t, m, press("h"))
			golden(t, name("run-help"), plain(m))
			drive(t, m, press("h"), press("r"))
			golden(t, name("summary"), plain(m))
		})
	}
}

func TestGoldenTroubleshoot(t *testing.T) {
	m, _ := goldenModel(t, 100, 30)
	drive(t, m, press("t"))
	for _, r := range "llama.log" {
		drive(t, m, press(string(r)))
	}
	drive(t, m, press("enter"))
	golden(t, "troubleshoot-ladder-100x30", plain(m))
}

func TestGoldenTooSmall(t *testing.T) {
	m, _ := goldenModel(t, 60, 20)
	golden(t, "too-small-60x20", plain(m))
}
