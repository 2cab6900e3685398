package tui

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/haloforge/haloforge/tui/linemode"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/serve"
)

// summaryScreen closes a run: each step's result, where the logs and the
// report are, and what to type next.
type summaryScreen struct {
	*common
	rs     *runState
	track  steps.Track
	lines  []string // the whole summary at the current width
	offset int
	w, h   int
}

func newSummaryScreen(c *common, rs *runState, t steps.Track) *summaryScreen {
	return &summaryScreen{common: c, rs: rs, track: t}
}

func (s *summaryScreen) SetSize(w, h int) {
	s.w, s.h = w, h
	s.lines = strings.Split(summaryText(s.rs, s.track, s.Styles, w), "\n")
	s.offset = clampOffset(s.offset, len(s.lines), h)
}

func (s *summaryScreen) Crumb() string { return "summary" }

func (s *summaryScreen) TakesText() bool { return false }

func (s *summaryScreen) ShortHelp() []key.Binding {
	b := []key.Binding{s.Keys.Up, s.Keys.Down, withHelp(s.Keys.Back, "back to the run"), s.Keys.Troubleshoot}
	if s.canServe() {
		b = append(b, s.Keys.Serve)
	}
	return append(b, withHelp(s.Keys.Quit, "quit"))
}

// canServe says the run built a track haloforge serve can run.
func (s *summaryScreen) canServe() bool {
	return s.rs.Failed() == nil && s.rs.Err == nil && serve.EngineOf(s.track.ID) != ""
}

func (s *summaryScreen) FullHelp() [][]key.Binding { return [][]key.Binding{s.ShortHelp()} }

func (s *summaryScreen) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	switch {
	case key.Matches(k, s.Keys.Back):
		return closeScreen
	case key.Matches(k, s.Keys.Troubleshoot):
		return troubleshootRun(s.rs)
	case key.Matches(k, s.Keys.Serve) && s.canServe():
		return send(openServeMsg{track: s.track.ID})
	case scrollBy(s.Keys, k, &s.offset, s.h):
		s.offset = clampOffset(s.offset, len(s.lines), s.h)
	}
	return nil
}

func (s *summaryScreen) View() string {
	visible, _ := window(s.lines, s.offset, s.h)
	return strings.Join(visible, "\n")
}

// summaryText renders the whole summary; the screen windows it.
func summaryText(rs *runState, t steps.Track, st Styles, width int) string {
	var b strings.Builder
	failed := rs.Failed()
	switch {
	case failed != nil:
		b.WriteString(st.Fail.Render("✗ "+t.ID+" stopped at "+failed.ID) + "\n")
	case rs.Err != nil:
		b.WriteString(st.Fail.Render("✗ "+t.ID+": "+rs.Err.Error()) + "\n")
	case len(rs.NotVerified()) > 0:
		b.WriteString(st.Warn.Render("⚠ "+t.ID+" is built, not verified: "+strings.Join(rs.NotVerified(), ", ")) + "\n")
	default:
		b.WriteString(st.OK.Render("✓ "+t.ID+" is built") + "\n")
	}
	b.WriteString("\n" + st.Bold.Render("Results") + "\n")
	for _, s := range rs.Steps {
		b.WriteString(summaryStepLine(s, st) + "\n")
	}
	if failed == nil && rs.Err == nil && len(t.Next) > 0 {
		b.WriteString("\n" + st.Bold.Render("Next") + "\n")
		for _, c := range t.Next {
			b.WriteString("  " + st.Key.Render("$ "+c) + "\n")
		}
	}
	if failed != nil {
		b.WriteString("\n" + st.Bold.Render("Next") + "\n")
		b.WriteString("  " + st.Key.Render("$ haloforge build --track "+t.ID+" --resume") + st.Subtle.Render("   after the fix") + "\n")
		b.WriteString("  " + st.Key.Render("$ haloforge diagnose "+failed.Log) + "\n")
	}
	if rs.RunDir != "" {
		b.WriteString("\n" + st.Bold.Render("Artifacts") + "\n")
		b.WriteString("  report  " + filepath.Join(rs.RunDir, "report.json") + "\n")
		b.WriteString("  logs    " + rs.RunDir + string(filepath.Separator) + "<step>.log\n")
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	for i, l := range lines {
		lines[i] = ansiCut(l, width)
	}
	return strings.Join(lines, "\n")
}

func summaryStepLine(s *stepRun, st Styles) string {
	var mark, what string
	switch s.State {
	case stateOK:
		mark, what = st.OK.Render("✓"), linemode.FormatDuration(s.Duration)
	case stateFailed:
		mark, what = st.Fail.Render("✗"), fmt.Sprintf("exit %d after %s", s.ExitCode, linemode.FormatDuration(s.Duration))
		if s.Optional {
			mark, what = st.Warn.Render("✗"), what+" (optional: the build went on)"
		}
	case stateSkipped:
		mark, what = st.Skip.Render("↷"), cmp.Or(s.Reason, "skipped")
	case stateInterrupted:
		mark, what = st.Warn.Render("■"), "interrupted"
	case stateNotVerified:
		mark, what = st.Warn.Render("⚠"), "not verified: "+strings.Join(s.NotVerified, "; ")
	default:
		mark, what = st.Skip.Render("·"), "not run"
	}
	line := fmt.Sprintf("  %s %s %s", mark, padRight(s.ID, 16), what)
	for _, f := range s.Findings {
		line += "\n      " + st.HintTitle.Render(f.Family) + " " + st.Subtle.Render(f.Summary)
	}
	return line
}
