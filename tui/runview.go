package tui

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/tui/linemode"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// The run screen's view: header, step list beside the log, the hint of the
// shown step and the bottom line. Everything here only reads the screen;
// layout runs from Update and SetSize.

// silenceAfter is how long a step may print nothing before the header
// says so.
const silenceAfter = time.Minute

// layout renders the hint panel of the step whose log is shown and gives
// the log pane what is left after the header, the hint and the bottom line.
func (s *runScreen) layout() {
	s.hint = ""
	if st := s.steps.Selected(); !s.hideHint && len(st.Findings) > 0 {
		s.hint = hintPanel(st, &st.Findings[0], len(st.Findings)-1, max(s.w-2, 20), s.Styles)
	}
	hint := 0
	if s.hint != "" {
		hint = lipgloss.Height(s.hint)
	}
	live := 0
	if s.liveRow() != "" {
		live = 1 // the log gives its last row to the step's progress or open line
	}
	s.log.SetSize(s.w-s.steps.Width()-3, max(s.h-hint-2-lineCount(s.bottomLine())-live, 3))
}

// liveRow is the shown step's progress, else its open line, while it runs:
// the last row of the log pane, redrawn as it changes; "" for none.
func (s *runScreen) liveRow() string {
	st := s.steps.Selected()
	if st == nil || st.State != stateRunning {
		return ""
	}
	switch {
	case st.Progress != nil:
		return "… " + linemode.ProgressText(*st.Progress)
	case strings.TrimSpace(st.Open) != "":
		return "… " + strings.TrimLeft(st.Open, " ")
	}
	return ""
}

func (s *runScreen) View() string {
	var parts []string
	parts = append(parts, s.header())
	steps := s.steps.View(s.paneHeight(), s.focus == paneSteps, s.spin.View(), s.now(), s.Styles)
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
	step := rs.Current
	if f := rs.Failed(); step == "" && f != nil {
		step = f.ID
	}
	if step != "" {
		i, n := rs.Position(step)
		b.WriteString(fmt.Sprintf("  step %d/%d · ", i, n) + s.Styles.Bold.Render(step))
		if st := rs.Step(step); st != nil && st.Progress != nil && st.State == stateRunning {
			b.WriteString(" " + s.Styles.Bold.Render(st.Progress.Badge()))
		}
	}
	if !rs.Started.IsZero() {
		b.WriteString(s.Styles.Subtle.Render(" · " + text.Duration(rs.Elapsed(s.now())) + " elapsed"))
	}
	if t := s.timeLeft(); t != "" {
		b.WriteString(s.Styles.Subtle.Render(" · " + t))
	}
	if q := s.silence(); q != "" {
		b.WriteString(" · " + s.Styles.Warn.Render(q))
	}
	if rs.Finished {
		b.WriteString("  " + s.outcome())
	}
	return ansiCut(b.String(), s.w)
}

// timeLeft is the ETA from the last runs, counted down; once the steps
// run past it, by how much; on a first run, that there is no estimate yet.
func (s *runScreen) timeLeft() string {
	rs := s.rs
	if rs.Finished || rs.Current == "" {
		return ""
	}
	if eta := rs.RunETA(); eta > 0 {
		return "run ETA ~" + text.Duration(eta) // the step's own rate, and the later steps' last times
	}
	if rs.ETA <= 0 {
		if st := rs.Step(rs.Current); st != nil && st.Progress != nil && st.Progress.ETA > 0 {
			return "" // the step's badge has its ETA; the run's needs an earlier run
		}
		return "no ETA on a first run"
	}
	left := rs.ETA - s.now().Sub(rs.ETAAt)
	if left < 0 {
		return "+" + text.Duration(-left) + " over the last run's time"
	}
	return "ETA ~" + text.Duration(left)
}

// silence says how long the running step has printed nothing, once that
// is long enough to wonder.
func (s *runScreen) silence() string {
	st := s.rs.Step(s.rs.Current)
	if st == nil || st.State != stateRunning || st.LastOutput.IsZero() {
		return ""
	}
	if quiet := s.now().Sub(st.LastOutput); quiet >= silenceAfter {
		return "no output for " + text.Duration(quiet)
	}
	return ""
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

// WindowTitle is the terminal's title during a run: the step and its place
// in the plan, then the outcome; "haloforge" before the run has steps.
func (s *runScreen) WindowTitle() string {
	rs := s.rs
	if rs.Total == 0 && !rs.Finished {
		return "haloforge"
	}
	if rs.Finished {
		return "haloforge — " + rs.Track + " " + s.outcomeWord()
	}
	i, n := rs.Position(rs.Current)
	return fmt.Sprintf("haloforge — %s %d/%d", cmp.Or(rs.Current, rs.Track), i, n)
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
	return s.Styles.Subtle.Render(strings.TrimRight(strings.Repeat(" │\n", s.paneHeight()), "\n")) + " "
}

// paneHeight is the rows of the log pane: its title, the log and the live
// row when there is one.
func (s *runScreen) paneHeight() int {
	if s.liveRow() != "" {
		return s.log.height + 2
	}
	return s.log.height + 1
}

// logPane is the selected step's log with its title line: the step, where
// the window is in the file (file line numbers), and the log's path.
func (s *runScreen) logPane() string {
	st := s.steps.Selected()
	state := s.Styles.OK.Render("following")
	if !s.log.follow {
		state = s.Styles.Warn.Render(fmt.Sprintf("paused at line %d", s.log.TopNo()))
	}
	if s.log.wrap {
		state += s.Styles.Subtle.Render(" · wrapped")
	} else if s.log.xoff > 0 {
		state += s.Styles.Subtle.Render(fmt.Sprintf(" · → %d", s.log.xoff))
	}
	title := fmt.Sprintf("%s log · %s · ", st.ID, text.Plural(st.buf.LastNo(), "line"))
	if s.focus == paneLog {
		title = s.Styles.Selected.Render(title)
	} else {
		title = s.Styles.Bold.Render(title)
	}
	if st.Dropped > 0 {
		state += s.Styles.Subtle.Render(fmt.Sprintf(" · %d lines only in the file", st.Dropped))
	}
	if st.Log != "" {
		// the path's end is the part that tells runs and steps apart: cut
		// from the left (…/runs/<id>/<step>.log), never its file name
		room := s.log.width - ansi.StringWidth(title+state) - 3
		state += s.Styles.Subtle.Render(" · " + pathTail(st.Log, max(room, 8)))
	}
	pane := ansiCutTail(title+state, s.log.width) + "\n" + s.log.View(s.Styles)
	if row := s.liveRow(); row != "" {
		pane += "\n" + s.Styles.Subtle.Render(ansiCutTail(row, s.log.width))
	}
	return pane
}

// bottomLine is the search prompt, or the note: wrapped, at most two
// lines, so that a long note is read whole.
func (s *runScreen) bottomLine() string {
	if s.search.IsOpen() {
		return s.search.View()
	}
	// A step waiting for input outranks every note: it stops until answered.
	if w := s.rs.Waiting; w != nil {
		return ansiCut(s.Styles.Warn.Render(waitingLine(w)), s.w)
	}
	if s.note == "" {
		return ""
	}
	rows := strings.Split(wrap(s.note, max(s.w, 10)), "\n")
	for i, r := range rows {
		rows[i] = ansiCutTail(r, s.w)
	}
	if len(rows) > 2 { // the rest is in the log or the summary
		rows = []string{rows[0], ansiCutTail(rows[1]+" …", s.w)}
	}
	return s.Styles.Subtle.Render(strings.Join(rows, "\n"))
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
