package tui

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/tui/linemode"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// The run screen's view: header, step list beside the log, the pinned hint
// and the bottom line. Everything here only reads the screen; layout runs
// from Update and SetSize.

// layout renders the hint panel for the current state and gives the log
// pane what is left after the header, the hint and the bottom line.
func (s *runScreen) layout() {
	s.hint = ""
	if st, f := s.rs.Hint(); f != nil {
		s.hint = hintPanel(st.ID, f, len(st.Findings)-1, max(s.w-2, 20), s.Styles)
	}
	hint := 0
	if s.hint != "" {
		hint = lipgloss.Height(s.hint)
	}
	s.log.SetSize(s.w-stepsPaneWidth-3, max(s.h-hint-3, 3))
}

func (s *runScreen) View() string {
	var parts []string
	parts = append(parts, s.header())
	steps := s.steps.View(s.log.height+1, s.focus == paneSteps, s.spin.View(), s.now(), s.Styles)
	parts = append(parts, lipgloss.JoinHorizontal(lipgloss.Top, steps, s.separator(), s.logPane()))
	if s.hint != "" {
		parts = append(parts, s.hint)
	}
	parts = append(parts, s.bottomLine())
	return strings.Join(parts, "\n")
}

func (s *runScreen) header() string {
	rs := s.rs
	var b strings.Builder
	b.WriteString(s.Styles.Title.Render(rs.Track))
	if rs.Total > 0 {
		idx := min(rs.Done+1, rs.Total)
		if rs.Finished {
			idx = rs.Done
		}
		b.WriteString(fmt.Sprintf("  step %d/%d", idx, rs.Total))
	}
	if rs.Current != "" {
		b.WriteString(" · " + s.Styles.Bold.Render(rs.Current))
	}
	if !rs.Started.IsZero() {
		b.WriteString(s.Styles.Subtle.Render(" · " + linemode.FormatDuration(rs.Elapsed(s.now())) + " elapsed"))
	}
	if left, ok := rs.Remaining(s.now()); ok {
		b.WriteString(s.Styles.Subtle.Render(" · ETA ~" + linemode.FormatDuration(left)))
	}
	if rs.Finished {
		b.WriteString("  " + s.outcome())
	}
	return ansiCut(b.String(), s.w)
}

// outcomeWord is the run's outcome without colour, for the window title.
func (s *runScreen) outcomeWord() string {
	switch {
	case s.stopping:
		return "stopped"
	case s.rs.Failed() != nil || s.rs.Err != nil:
		return "failed"
	default:
		return "done"
	}
}

func (s *runScreen) outcome() string {
	switch s.outcomeWord() {
	case "stopped":
		return s.Styles.Warn.Render("stopped")
	case "failed":
		return s.Styles.Fail.Render("failed")
	default:
		return s.Styles.OK.Render("done")
	}
}

// WindowTitle is the terminal's title during a run: the step and the count,
// then the outcome; "haloforge" before the run has steps.
func (s *runScreen) WindowTitle() string {
	rs := s.rs
	if rs.Total == 0 {
		return "haloforge"
	}
	if rs.Finished {
		return "haloforge — " + rs.Track + " " + s.outcomeWord()
	}
	return fmt.Sprintf("haloforge — %s %d/%d", cmp.Or(rs.Current, rs.Track), min(rs.Done+1, rs.Total), rs.Total)
}

// ProgressBar drives the terminal's own progress bar (OSC 9;4) during a
// run: a warning once a finding is pinned, an error once it failed.
func (s *runScreen) ProgressBar() *tea.ProgressBar {
	rs := s.rs
	if rs.Total == 0 {
		return nil
	}
	_, pinned := rs.Hint()
	switch {
	case rs.Finished && rs.Failed() == nil && rs.Err == nil:
		return nil
	case rs.Finished:
		return tea.NewProgressBar(tea.ProgressBarError, max(rs.Progress(), 1))
	case len(rs.Steps) > 0 && pinned != nil:
		return tea.NewProgressBar(tea.ProgressBarWarning, rs.Progress())
	default:
		return tea.NewProgressBar(tea.ProgressBarDefault, rs.Progress())
	}
}

func (s *runScreen) separator() string {
	return s.Styles.Subtle.Render(strings.TrimRight(strings.Repeat(" │\n", s.log.height+1), "\n")) + " "
}

// logPane is the selected step's log with its title line.
func (s *runScreen) logPane() string {
	st := s.steps.Selected()
	state := s.Styles.OK.Render("following")
	if !s.log.follow {
		state = s.Styles.Warn.Render(fmt.Sprintf("paused at line %d", s.log.Top()+1))
	}
	title := fmt.Sprintf("%s log · %d lines · ", st.ID, st.buf.End())
	if s.focus == paneLog {
		title = s.Styles.Selected.Render(title)
	} else {
		title = s.Styles.Bold.Render(title)
	}
	if st.Dropped > 0 {
		state += s.Styles.Subtle.Render(fmt.Sprintf(" · %d lines only in the file", st.Dropped))
	}
	return ansiCut(title+state, s.log.width) + "\n" + s.log.View(s.Styles)
}

func (s *runScreen) bottomLine() string {
	if s.search.IsOpen() {
		return s.search.View()
	}
	if w := s.rs.Waiting; w != nil {
		return ansiCut(s.Styles.Warn.Render(waitingLine(w)), s.w)
	}
	return ansiCut(s.Styles.Subtle.Render(s.note), s.w)
}

// waitingLine says which step waits for input and that the wizard cannot
// answer it (it owns the keyboard): stop, answer it first, resume.
func waitingLine(w *runner.WaitingForInput) string {
	what := "it reads its terminal"
	if w.Prompt != "" {
		what = w.Prompt
	}
	return fmt.Sprintf("? %s waits for input: %s · the wizard cannot answer it: stop, answer it first (a sudo password: sudo -v), resume", w.Step, what)
}
