package tui

// The run screen: the log read like less, the hint panel, retry and skip,
// the header's times, the shell and the pager.

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
)

// TestShellIsTheTracksOwnBox: s is offered only on a track with a box of its
// own, opens the command the backend gives for that track, and says why when
// there is none.
func TestShellIsTheTracksOwnBox(t *testing.T) {
	f := newFakeBackend(t)
	f.shell = exec.Command("true")
	m := toRun(t, f, 120, 40)
	if !strings.Contains(lastLine(m), "s shell in the box") {
		t.Errorf("a track with a box does not offer s:\n%s", lastLine(m))
	}
	if cmd := m.run.shell(); cmd == nil {
		t.Error("s did not hand the terminal to the box's shell")
	}
	f.shell = nil
	m.run.plan.Box = ""
	drive(t, m, press("s"))
	if !strings.Contains(m.run.note, "builds no distrobox") {
		t.Errorf("note %q, want why there is no box", m.run.note)
	}
}

// TestLongLinesWrapAndThePagerOpensTheLog: the hint panel wraps the fix
// instead of cutting it; w wraps the log; v opens the shown step's log in the
// pager at the window's line.
func TestLongLinesWrapAndThePagerOpensTheLog(t *testing.T) {
	f := newFakeBackend(t)
	long := "error: running as root: distrobox refuses that (\"Running distrobox-create as sudo is not supported\"). Run haloforge as your normal user; HALOFORGE_DISTROBOX_ROOT=1"
	f.failLog = append(f.failLog, long)
	var opened []string
	m := New(context.Background(), f, Options{Pager: func(path string, line int) *exec.Cmd {
		opened = append(opened, path+":"+itoa(line))
		return exec.Command("true")
	}})
	drive(t, m, tea.WindowSizeMsg{Width: 80, Height: 24}, m.Init()(), press("enter"), press("enter"), press("enter"))
	st := m.run.rs.Step("rocm")
	st.Findings[0].Fix = "sed -i 's/rtld_global: bool = True/rtld_global: bool = False/' \"$(python -c 'import rocm_sdk,os;print(os.path.dirname(rocm_sdk.__file__))')/__init__.py\""
	drive(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	v := plain(m)
	if !strings.Contains(v, "')/__init__.py\"") || !strings.Contains(v, "↪") {
		t.Errorf("the fix's end (the file to edit) is cut:\n%s", v)
	}
	if strings.Contains(v, "HALOFORGE_DISTROBOX_ROOT=1") {
		t.Fatalf("the long line fits already; the test needs a longer one:\n%s", v)
	}
	drive(t, m, press("w"))
	if v := plain(m); !strings.Contains(v, "HALOFORGE_DISTROBOX_ROOT=1") || !strings.Contains(v, "wrapped") {
		t.Errorf("w did not wrap the long line:\n%s", v)
	}
	drive(t, m, press("w"), press("x"))
	if strings.Contains(plain(m), "therock-amdsmi-double-free") {
		t.Errorf("x did not hide the hint panel:\n%s", plain(m))
	}
	if cmd := m.run.openPager(); cmd == nil || len(opened) != 1 || !strings.HasPrefix(opened[0], "/state/runs/fake-run/rocm.log:") {
		t.Errorf("v opened %v, want rocm's log at a line", opened)
	}
}

// TestRunScreenSearchesLikeLess: on the run screen / searches forward from
// the window, ? backward, n goes on in the same direction, and the status
// line counts.
func TestRunScreenSearchesLikeLess(t *testing.T) {
	m := toRun(t, newFakeBackend(t), 120, 40)
	drive(t, m, press("g"), press("/"))
	for _, r := range ">>>" {
		drive(t, m, press(string(r)))
	}
	drive(t, m, press("enter"))
	if got := m.run.log.buf.Line(m.run.log.match); !strings.Contains(got, ">>> import torch") {
		t.Fatalf("/ from the top found %q, want the first >>> line", got)
	}
	if !strings.Contains(m.run.note, "match 1/2") {
		t.Errorf("note %q does not count the matches", m.run.note)
	}
	drive(t, m, press("n"))
	if got := m.run.log.buf.Line(m.run.log.match); !strings.Contains(got, "reprod") {
		t.Errorf("n found %q, want the next one down", got)
	}
	drive(t, m, press("n"))
	if !strings.Contains(m.run.note, "search hit BOTTOM, continuing at TOP") {
		t.Errorf("n past the last match: note %q", m.run.note)
	}
	drive(t, m, press("G"), press("?"))
	if !m.run.search.IsOpen() || m.help.ShowAll {
		t.Fatal("? on the run screen is the backward search (as in less), not the help")
	}
	for _, r := range ">>>" {
		drive(t, m, press(string(r)))
	}
	drive(t, m, press("enter"))
	if got := m.run.log.buf.Line(m.run.log.match); !strings.Contains(got, "reprod") {
		t.Errorf("? from the tail found %q, want the last >>> line", got)
	}
}

// TestRetryAndSkipKeepTheSessionsHistory: a retry and a skip keep the plan's
// numbering ("step 4/7" stays 4/7), a step that succeeded keeps its ✓, the
// summary tells the attempts and who skipped what, never "not in --only", and
// lists every run's directory.
func TestRetryAndSkipKeepTheSessionsHistory(t *testing.T) {
	f := newFakeBackend(t)
	f.lineGap = time.Millisecond
	f.extra = 300
	m := newSized(t, f, 120, 40)
	drive(t, m, press("enter"), press("enter"))
	drive(t, m, press("enter")) // runs to rocm's failure
	if h := plain(m); !strings.Contains(h, "step 3/7 · rocm") {
		t.Fatalf("header after the failure:\n%s", h)
	}
	driveHeld(t, m, press("r"))
	for m.run.rs.Current != "aiter" {
		if !pump(t, m) {
			t.Fatalf("aiter never ran (current %q)", m.run.rs.Current)
		}
	}
	v := plain(m)
	if !strings.Contains(v, "step 4/7 · aiter") || !strings.Contains(v, "✓ toolbox") || !strings.Contains(v, "✓ rocm") {
		t.Errorf("after the retry the numbering or the history changed:\n%s", v)
	}
	driveHeld(t, m, press("S"), press("y"))
	drive(t, m, waitEvents(m.run.ch)())
	if m.top().Crumb() != "summary" {
		t.Fatalf("top %T", m.top())
	}
	v = plain(m)
	mustContain(t, "summary", v, "✓ rocm             2s (2nd attempt; 1st: therock-amdsmi-double-free)",
		"↷ aiter            skipped by you (optional)", "✓ toolbox          2s",
		"run 1/3 /state/runs/fake-run", "run 2/3 /state/runs/fake-run-2", "run 3/3 /state/runs/fake-run-3")
	if strings.Contains(v, "--only") {
		t.Errorf("the summary speaks of --only, which nobody typed:\n%s", v)
	}
}

// TestHintAndNoteDoNotGoStale: the hint belongs to the step whose log is
// shown; notes go once another step has run a while; an optional failure is a
// warning.
func TestHintAndNoteDoNotGoStale(t *testing.T) {
	c := testCommon()
	now := fixedClock
	c.now = func() time.Time { return now }
	tr, _ := steps.Lookup("therock-toolbox")
	p, _ := newFakeBackend(t).Plan("therock-toolbox")
	p.Track = tr
	s := newRunScreen(withBackend(c, newFakeBackend(t)), p, false)
	s.SetSize(120, 38)
	asm := diagnose.Finding{Family: "gfx11-inline-asm-unsupported", Summary: "CDNA-only assembly", Fix: "skip aiter"}
	s.setNote("Applied the fix for therock-amdsmi-double-free; retrying rocm.", "rocm")
	for _, e := range []runner.Event{
		runner.StepStarted{Step: "aiter", Optional: true, At: now},
		runner.Found{Step: "aiter", Finding: asm},
		runner.StepFinished{Step: "aiter", Optional: true, Status: steps.OutcomeFailed, ExitCode: 1},
	} {
		s.Update(eventsMsg{events: []runner.Event{e}})
	}
	v := ansi.Strip(s.View())
	if !strings.Contains(v, "! gfx11-inline-asm-unsupported") || !strings.Contains(v, "optional: the run goes on without it") || !strings.Contains(v, "! aiter") {
		t.Errorf("an optional failure is not drawn as a warning:\n%s", v)
	}
	now = now.Add(10 * time.Second)
	s.Update(eventsMsg{events: []runner.Event{runner.StepStarted{Step: "flash-attention", At: now}}})
	v = ansi.Strip(s.View())
	if strings.Contains(v, "gfx11-inline-asm-unsupported") {
		t.Errorf("aiter's hint stays pinned over flash-attention's log:\n%s", v)
	}
	if strings.Contains(v, "Applied the fix") {
		t.Errorf("the retry's note is still there while flash-attention runs:\n%s", v)
	}
}

// TestHeaderTimeLeftAndSilence: no ETA on a first run says so; past the
// estimate the header says by how much, not "ETA ~0s"; a silent step says for
// how long.
func TestHeaderTimeLeftAndSilence(t *testing.T) {
	c := testCommon()
	now := fixedClock
	c.now = func() time.Time { return now }
	s := newRunScreen(withBackend(c, newFakeBackend(t)), testPlan(), false)
	s.SetSize(120, 30)
	s.Update(eventsMsg{events: []runner.Event{runner.StepStarted{Step: "rocm", At: now}}})
	if h := s.header(); !strings.Contains(h, "no ETA on a first run") {
		t.Errorf("first run: %q", h)
	}
	s.Update(eventsMsg{events: []runner.Event{runner.StepStarted{Step: "rocm", ETA: time.Minute, At: now}}})
	now = now.Add(73 * time.Second)
	if h := ansi.Strip(s.header()); !strings.Contains(h, "+13s over the last run's time") || strings.Contains(h, "ETA ~0s") {
		t.Errorf("overrun: %q", h)
	}
	if h := ansi.Strip(s.header()); !strings.Contains(h, "no output for 1m13s") {
		t.Errorf("silence: %q", h)
	}
}

// TestSearchSaysPlainText: the search prompt says it takes plain text (any
// case), since it is not less's regular expression.
func TestSearchSaysPlainText(t *testing.T) {
	for _, back := range []bool{false, true} {
		s := &runScreen{common: testCommon(), w: 80}
		s.log = newLogView(nil)
		s.openSearch(back)
		if v := ansi.Strip(s.search.input.View()); !strings.Contains(v, "plain text, any case") {
			t.Errorf("back %v: the prompt %q does not say plain text", back, v)
		}
	}
}
