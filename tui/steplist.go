package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/haloforge/haloforge/internal/text"
)

// stepsPaneWidth is the widest the step list gets; the log takes the rest.
const stepsPaneWidth = 28

// durWidth is the width of a step's time in the list.
const durWidth = 6

// stepList is the run screen's left pane: every step of the run with its
// mark and time, and the cursor on the step whose log is shown.
type stepList struct {
	rs       *runState
	selected int // index of the step whose log is shown
}

// Width is the pane's width: as wide as the longest step ID needs, so
// that at 80 columns the log keeps as much room as it can.
func (l *stepList) Width() int {
	longest := 0
	for _, s := range l.rs.Steps {
		longest = max(longest, len(s.ID))
	}
	return min(stepsPaneWidth, 3+longest+1+durWidth)
}

// Selected is the step under the cursor.
func (l *stepList) Selected() *stepRun { return l.rs.Steps[l.selected] }

// Move moves the cursor by d steps, within the list.
func (l *stepList) Move(d int) { l.selected = min(max(l.selected+d, 0), len(l.rs.Steps)-1) }

// Select puts the cursor on the step with this ID; false when there is none.
func (l *stepList) Select(id string) bool {
	for i, st := range l.rs.Steps {
		if st.ID == id {
			l.selected = i
			return true
		}
	}
	return false
}

// View renders the pane h lines high: a title, then one line per step.
// spin is the spinner's frame for the running step.
func (l *stepList) View(h int, focused bool, spin string, now time.Time, st Styles) string {
	lines := make([]string, 0, h)
	title := "Steps"
	if focused {
		title = st.Selected.Render("Steps ◂")
	}
	lines = append(lines, st.Bold.Render(title))
	for i, s := range l.rs.Steps {
		lines = append(lines, l.stepLine(i, s, spin, now, st))
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	w := l.Width()
	for i := range lines {
		lines[i] = padRight(ansiCut(lines[i], w), w)
	}
	return strings.Join(lines[:h], "\n")
}

func (l *stepList) stepLine(i int, s *stepRun, spin string, now time.Time, st Styles) string {
	cursor := " "
	if i == l.selected {
		cursor = st.Selected.Render("›")
	}
	mark, dur := stepMark(s, spin, st), ""
	switch s.State {
	case stateRunning:
		dur = text.Duration(now.Sub(s.Started))
	case stateOK, stateFailed, stateInterrupted, stateNotVerified:
		dur = text.Duration(s.Duration)
	case stateSkipped:
		dur = "skip"
	}
	name := s.ID
	if i == l.selected {
		name = st.Selected.Render(name)
	}
	return cursor + mark + " " + padRight(name, l.Width()-3-durWidth) + st.Subtle.Render(fmt.Sprintf("%*s", durWidth, dur))
}

// stepMark is a step's state as one cell: the spinner while it runs.
func stepMark(s *stepRun, spin string, st Styles) string {
	switch s.State {
	case stateRunning:
		return st.Running.Render(spin)
	case stateOK:
		return st.OK.Render("✓")
	case stateNotVerified:
		return st.Warn.Render("⚠")
	case stateFailed:
		if s.Optional { // the run went on: a warning, not a failure
			return st.Warn.Render("!")
		}
		return st.Fail.Render("✗")
	case stateSkipped:
		return st.Skip.Render("↷")
	case stateInterrupted:
		return st.Warn.Render("■")
	default:
		return st.Skip.Render("·")
	}
}
