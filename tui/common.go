package tui

import (
	"context"
	"math"
	"os/exec"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps/runner"
)

// Minimum terminal size the wizard lays itself out for.
const (
	MinWidth  = 80
	MinHeight = 24
)

// common is what every screen shares (gh-dash's ProgramContext, soft-serve's
// Common): size, styles and keys, the session's context, and its engine,
// which a screen asks for in the role it needs (role).
type common struct {
	Width, Height int
	Styles        Styles
	Keys          KeyMap
	Demo          bool             // the session runs on the demo's data
	now           func() time.Time // the clock of elapsed times and ETAs; tests fix it
	// ctx is the session's: cancelling it stops what the screens started.
	ctx     context.Context
	backend Backend
	// commands writes the shell commands the screens suggest (Options.Commands).
	commands func(Command) string
	// pager opens a log at a line (Options.Pager); nil uses $PAGER or less.
	pager func(path string, line int) *exec.Cmd
	// sets are the pins the user set in this session (NAME=VALUE).
	sets []string
}

// role is the session's engine in the role R a screen works with
// (soft-serve's Common.Backend()): Detector, Planner or Runner, which
// every engine is, or the interface a screen off the flow declares in its
// own file. ok is false when this session's engine has no such role; the
// screen then says so instead of offering it.
func role[R any](c *common) (r R, ok bool) {
	r, ok = c.backend.(R)
	return r, ok
}

// context is the session's context (the background one in a test that
// gave none).
func (c *common) context() context.Context {
	if c.ctx == nil {
		return context.Background()
	}
	return c.ctx
}

// command is the shell command for c with the session's pins, "" when the
// session suggests none (the demo).
func (c *common) command(cmd Command) string {
	if c.commands == nil {
		return ""
	}
	cmd.Sets = append(cmd.Sets, c.sets...)
	return c.commands(cmd)
}

func (c *common) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// Messages of the run's life cycle: the runner's events and what the run
// screen asked for.
type (
	runStartedMsg struct {
		ch  <-chan runner.Event
		err error
	}
	// eventsMsg carries every event that was waiting, so that a flood of
	// lines costs one Update and one frame, not one per line.
	eventsMsg struct {
		events []runner.Event
		closed bool
	}
	retryPreparedMsg struct {
		note string
		err  error
	}
	shellDoneMsg struct{ err error }
)

// maxBatch bounds how many events one Update folds, so that keys are still
// answered between batches of a 200 MB step.
const maxBatch = 4096

// frame is how long a batch gathers events. Bubble Tea renders the view
// after every message, so a flood read line by line would cost a frame per
// line; gathering for a frame's time keeps it to about 30 frames a second
// whatever the step prints. The runner drops screen lines, never log bytes,
// while the channel is full.
const frame = time.Second / 30

// waitEvents reads the next batch from the runner's channel: it blocks for
// the first event, then gathers for one frame or until the batch is full.
// reuse is the previous batch, already folded: its array is filled again
// instead of allocating a megabyte a frame under a flood.
func waitEvents(ch <-chan runner.Event, reuse ...runner.Event) tea.Cmd {
	return func() tea.Msg {
		e, ok := <-ch
		if !ok {
			return eventsMsg{closed: true}
		}
		batch := append(reuse[:0], e)
		timer := time.NewTimer(frame)
		defer timer.Stop()
		for len(batch) < maxBatch {
			select {
			case e, ok := <-ch:
				if !ok {
					return eventsMsg{events: batch, closed: true}
				}
				batch = append(batch, e)
			case <-timer.C:
				return eventsMsg{events: batch}
			}
		}
		return eventsMsg{events: batch}
	}
}

// wrap breaks text into lines of at most width cells at spaces (never
// inside a word: a path or a flag such as --state-dir stays whole; a word
// wider than the line stays whole too). Newlines in text are kept.
func wrap(s string, width int) string {
	var rows []string
	for _, l := range strings.Split(s, "\n") {
		rows = append(rows, text.Wrap(l, max(width, 10), "")...)
	}
	return strings.Join(rows, "\n")
}

// wrapHard is wrap, and a word wider than the line (an image reference, a
// digest) is broken across rows rather than cut by the screen's edge.
func wrapHard(text string, width int) string {
	var rows []string
	for _, r := range strings.Split(wrap(text, width), "\n") {
		rows = append(rows, hardLines(r, max(width, 10), 0, plainText)...)
	}
	return strings.Join(rows, "\n")
}

// padRight pads or cuts s to exactly w cells.
func padRight(s string, w int) string {
	n := lipgloss.Width(s)
	if n >= w {
		return s
	}
	return s + strings.Repeat(" ", w-n)
}

// window returns at most h lines of lines starting at off (clamped), and
// the clamped offset.
func window(lines []string, off, h int) ([]string, int) {
	off = min(max(off, 0), max(len(lines)-h, 0))
	end := min(off+h, len(lines))
	return lines[off:end], off
}

// ansiCut cuts a styled string to w cells.
func ansiCut(s string, w int) string { return ansi.Truncate(s, max(w, 0), "") }

// ansiCutTail cuts a styled string to w cells, ending a cut one in "…".
func ansiCutTail(s string, w int) string { return ansi.Truncate(s, max(w, 0), "…") }

// scrollBy moves a screen's offset for the scroll keys every scrolling
// view shares (↑/↓, PgUp/PgDn, g/G with Home/End: scrollHelp) and reports
// whether msg was one of them; the screen then clamps the offset
// (clampOffset) in Update, so that View only reads it.
func scrollBy(k KeyMap, msg tea.KeyPressMsg, offset *int, height int) bool {
	switch {
	case key.Matches(msg, k.Up):
		*offset--
	case key.Matches(msg, k.Down):
		*offset++
	default:
		return pageBy(k, msg, offset, height)
	}
	return true
}

// pageBy is scrollBy without the line keys, for a view where ↑/↓ choose
// something else (a set, a finding) and the page keys scroll its text.
func pageBy(k KeyMap, msg tea.KeyPressMsg, offset *int, height int) bool {
	switch {
	case key.Matches(msg, k.PageUp):
		*offset -= max(height/2, 1)
	case key.Matches(msg, k.PageDown):
		*offset += max(height/2, 1)
	case key.Matches(msg, k.Top):
		*offset = 0
	case key.Matches(msg, k.Bottom):
		*offset = math.MaxInt32 // clampOffset brings it to the last page
	default:
		return false
	}
	return true
}

// scrollHelp are the scroll keys as a scrolling view's help lists them.
func scrollHelp(k KeyMap) []key.Binding {
	return []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom}
}

// pageHelp are pageBy's keys as a view's help lists them.
func pageHelp(k KeyMap) []key.Binding {
	return []key.Binding{k.PageUp, k.PageDown, k.Top, k.Bottom}
}

// clampOffset keeps a scroll offset within lines shown h at a time.
func clampOffset(off, lines, h int) int { return min(max(off, 0), max(lines-h, 0)) }
