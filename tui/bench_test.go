package tui

import (
	"context"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/haloforge/haloforge/steps/runner"
)

// BenchmarkRunScreenFlood measures one frame's worth of work under a flood:
// a full batch of log lines folded into the run screen, then a frame. The
// tmux test's 200 MB step is about 2.5 M such lines; the screen must stay
// far cheaper than the pty (run with -benchtime=1x while developing).
func BenchmarkRunScreenFlood(b *testing.B) {
	f := newFakeBackend(b)
	m := New(context.Background(), f, Options{Plan: mustPlan(b, f)})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	line := "[ 83%] Building HIP object CMakeFiles/_C.dir/csrc/attention/paged_attention_v1.hip.o \x1b[32mok\x1b[0m"
	// What the runner sends under a flood: every event a read chunk of lines.
	chunk := make([]string, 64)
	for i := range chunk {
		chunk[i] = line
	}
	batch := make([]runner.Event, maxBatch)
	for i := range batch {
		batch[i] = runner.Lines{Step: "toolbox", First: i*len(chunk) + 1, Text: chunk}
	}
	m.run.rs.Apply(runner.RunStarted{Track: "therock-toolbox", Total: 7})
	m.run.rs.Apply(runner.StepStarted{Step: "toolbox", Total: 7})
	m.run.running = true
	ch := make(chan runner.Event)
	m.run.ch = ch
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		m.Update(eventsMsg{events: batch})
		if v := m.View(); !strings.Contains(v.Content, "paged_attention") {
			b.Fatal("the frame does not show the flood")
		}
	}
	b.ReportMetric(float64(b.N*len(batch)*len(chunk))/b.Elapsed().Seconds(), "lines/s")
}

func mustPlan(tb testing.TB, f *fakeBackend) *Plan {
	tb.Helper()
	p, err := f.Plan("therock-toolbox")
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestFloodKeepsMemoryBounded: a step far longer than the ring keeps only
// the ring, and the frame still shows the newest line.
func TestFloodKeepsMemoryBounded(t *testing.T) {
	f := newFakeBackend(t)
	m := New(context.Background(), f, Options{Plan: mustPlan(t, f)})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.run.rs.Apply(runner.StepStarted{Step: "toolbox", Total: 7})
	batch := make([]runner.Event, 100)
	for n := range 20 {
		for i := range batch {
			text := make([]string, 10)
			for j := range text {
				text[j] = "line " + itoa(n*1000+i*10+j)
			}
			batch[i] = runner.Lines{Step: "toolbox", First: n*1000 + i*10 + 1, Text: text}
		}
		m.Update(eventsMsg{events: batch})
	}
	buf := m.run.rs.Step("toolbox").buf
	if buf.Len() != logLines || buf.End() != 20000 {
		t.Errorf("kept %d of %d lines, want the last %d", buf.Len(), buf.End(), logLines)
	}
	if v := plain(m); !strings.Contains(v, "line 19999") || !strings.Contains(v, "toolbox log · 20000 lines") {
		t.Errorf("the frame does not follow the tail:\n%s", v)
	}
}
