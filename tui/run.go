package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/steps/runner"
)

// stepsPaneWidth is the width of the step list; the log takes the rest.
const stepsPaneWidth = 28

type pane int

const (
	paneSteps pane = iota
	paneLog
)

// runScreen is the live run: the step list, the log that follows the tail,
// and the hint panel pinned when a finding arrives.
type runScreen struct {
	*common
	backend Backend
	parent  context.Context
	plan    *Plan
	rs      *runState
	log     logView
	spin    spinner.Model
	input   textinput.Model
	now     func() time.Time

	ch       <-chan runner.Event
	cancel   context.CancelFunc
	running  bool
	stopping bool     // the user quit: the step is being stopped
	skip     []string // optional steps the user skipped
	skipping string   // optional step being stopped to skip it

	focus     pane
	selected  int  // step whose log is shown
	autoView  bool // show the running step's log
	searching bool
	note      string
	w, h      int
}

func newRunScreen(c *common, ctx context.Context, b Backend, p *Plan) *runScreen {
	rs := newRunState(p)
	in := textinput.New()
	in.Prompt = "/"
	s := &runScreen{
		common: c, backend: b, parent: ctx, plan: p, rs: rs,
		spin:  spinner.New(spinner.WithSpinner(spinner.MiniDot)),
		input: in, now: c.clock, autoView: true, focus: paneLog,
	}
	s.log = newLogView(rs.Steps[0].buf)
	return s
}

// Running reports whether a run is in progress (or being stopped).
func (s *runScreen) Running() bool { return s.running }

// Start begins a run of the plan; resume continues after a failure.
func (s *runScreen) Start(resume bool) tea.Cmd {
	ctx, cancel := context.WithCancel(s.parent)
	s.cancel, s.running, s.note = cancel, true, ""
	req := RunRequest{Track: s.plan.Track.ID, Resume: resume, Skip: append([]string(nil), s.skip...)}
	b := s.backend
	start := func() tea.Msg {
		ch, err := b.Start(ctx, req)
		return runStartedMsg{ch: ch, err: err}
	}
	return tea.Batch(start, s.spin.Tick)
}

// Stop cancels the run; the runner stops the step's process group cleanly
// and the channel closes once it is recorded as interrupted.
func (s *runScreen) Stop() {
	if s.cancel != nil && s.running {
		s.stopping = true
		s.note = "Stopping the running step…"
		s.cancel()
	}
}

func (s *runScreen) SetSize(w, h int) {
	s.w, s.h = w, h
	s.input.SetWidth(max(w-4, 10))
	s.layout()
}

func (s *runScreen) ShortHelp() []key.Binding {
	if s.searching {
		return []key.Binding{withHelp(s.Keys.Enter, "find"), withHelp(s.Keys.Back, "cancel")}
	}
	b := []key.Binding{s.Keys.Tab, s.Keys.Search, s.Keys.Follow}
	if s.canRetry() {
		b = append(b, s.Keys.Retry, s.Keys.Troubleshoot)
	}
	if s.canSkip() != "" {
		b = append(b, s.Keys.Skip)
	}
	if s.rs.Finished && !s.running {
		b = append(b, withHelp(s.Keys.Enter, "summary"))
	}
	return append(b, s.Keys.Shell, s.Keys.Help, s.Keys.Quit)
}

func (s *runScreen) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{s.Keys.Up, s.Keys.Down, s.Keys.PageUp, s.Keys.PageDown, s.Keys.Top, s.Keys.Bottom},
		{s.Keys.Tab, s.Keys.Search, s.Keys.NextMatch, s.Keys.Follow, withHelp(s.Keys.Enter, "summary")},
		{s.Keys.Retry, s.Keys.Skip, s.Keys.Shell, s.Keys.Troubleshoot, s.Keys.Help, s.Keys.Quit},
	}
}

func (s *runScreen) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case runStartedMsg:
		return s.started(msg)
	case eventsMsg:
		return s.events(msg)
	case retryPreparedMsg:
		return s.retryPrepared(msg)
	case shellDoneMsg:
		if msg.err != nil {
			s.note = "shell: " + msg.err.Error()
		}
	case spinner.TickMsg:
		if s.running {
			var cmd tea.Cmd
			s.spin, cmd = s.spin.Update(msg)
			return cmd
		}
	case tea.KeyPressMsg:
		if s.searching {
			return s.searchKey(msg)
		}
		return s.onKey(msg)
	}
	return nil
}

func (s *runScreen) started(msg runStartedMsg) tea.Cmd {
	if msg.err != nil {
		s.running = false
		s.rs.Finished, s.rs.Err = true, msg.err
		s.note = "Could not start the run: " + msg.err.Error()
		return nil
	}
	s.ch = msg.ch
	return waitEvents(s.ch)
}

func (s *runScreen) events(msg eventsMsg) tea.Cmd {
	notices := len(s.rs.Notices)
	for _, e := range msg.events {
		s.rs.Apply(e)
	}
	if len(s.rs.Notices) > notices {
		s.note = s.rs.Notices[len(s.rs.Notices)-1]
	}
	if s.autoView {
		s.showCurrent()
	}
	if !msg.closed {
		clear(msg.events) // drop references (findings, errors) before reuse
		return waitEvents(s.ch, msg.events...)
	}
	s.running, s.ch = false, nil
	if s.skipping != "" && !s.stopping {
		return s.afterSkip()
	}
	s.finishedNote()
	return nil
}

// showCurrent points the log at the running step, or the failed one.
func (s *runScreen) showCurrent() {
	id := s.rs.Current
	if f := s.rs.Failed(); id == "" && f != nil {
		id = f.ID
	}
	for i, st := range s.rs.Steps {
		if st.ID == id {
			s.selected = i
			s.log.SetBuffer(st.buf)
		}
	}
}

func (s *runScreen) finishedNote() {
	switch {
	case s.stopping:
		s.note = "Stopped. `haloforge build --resume` continues from the interrupted step."
	case s.rs.Failed() != nil && s.Demo:
		s.note = fmt.Sprintf("Step %s failed. Press r: the demo applies the fix above and retries %s.", s.rs.Failed().ID, s.rs.Failed().ID)
	case s.rs.Failed() != nil:
		s.note = fmt.Sprintf("Step %s failed. r: retry   t: troubleshoot   s: shell", s.rs.Failed().ID)
	case s.rs.Err != nil:
		s.note = "Run ended: " + s.rs.Err.Error()
	default:
		s.note = "Done. enter: summary"
	}
}

func (s *runScreen) onKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(k, s.Keys.Tab):
		s.focus = 1 - s.focus
	case key.Matches(k, s.Keys.Up), key.Matches(k, s.Keys.Down):
		s.move(key.Matches(k, s.Keys.Down))
	case key.Matches(k, s.Keys.PageUp):
		s.log.Scroll(-s.log.height)
	case key.Matches(k, s.Keys.PageDown):
		s.log.Scroll(s.log.height)
	case key.Matches(k, s.Keys.Top):
		s.log.Home()
	case key.Matches(k, s.Keys.Bottom):
		s.log.End()
	case key.Matches(k, s.Keys.Follow):
		s.follow()
	case key.Matches(k, s.Keys.Search):
		s.searching = true
		s.input.SetValue("")
		return s.input.Focus()
	case key.Matches(k, s.Keys.NextMatch), key.Matches(k, s.Keys.PrevMatch):
		s.nextMatch(key.Matches(k, s.Keys.NextMatch))
	case key.Matches(k, s.Keys.Retry):
		return s.retry()
	case key.Matches(k, s.Keys.Skip):
		s.skipCurrent()
	case key.Matches(k, s.Keys.Shell):
		return s.shell()
	}
	return nil
}

// move scrolls the log, or picks another step in the step list.
func (s *runScreen) move(down bool) {
	d := -1
	if down {
		d = 1
	}
	if s.focus == paneLog {
		s.log.Scroll(d)
		return
	}
	s.selected = min(max(s.selected+d, 0), len(s.rs.Steps)-1)
	s.autoView = false
	s.log.SetBuffer(s.rs.Steps[s.selected].buf)
}

func (s *runScreen) follow() {
	if s.log.follow && s.autoView {
		s.log.ToggleFollow()
		return
	}
	s.autoView = true
	s.log.End()
	s.showCurrent()
}

func (s *runScreen) searchKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(k, s.Keys.Enter):
		s.searching = false
		s.input.Blur()
		if !s.log.Search(s.input.Value(), false) {
			s.note = fmt.Sprintf("No match for %q in the kept log (the full log is at %s).", s.input.Value(), s.rs.Steps[s.selected].Log)
		} else {
			s.note = "n/N: next/previous match   G: back to the tail"
		}
		return nil
	case key.Matches(k, s.Keys.Back):
		s.searching = false
		s.input.Blur()
		return nil
	}
	var cmd tea.Cmd
	s.input, cmd = s.input.Update(k)
	return cmd
}

func (s *runScreen) nextMatch(older bool) {
	if s.log.query == "" {
		return
	}
	// n goes on in the direction of the first search: towards older lines.
	if !s.log.Search(s.log.query, !older) {
		s.note = "No more matches."
	}
}

func (s *runScreen) canRetry() bool {
	return !s.running && s.rs.Finished && s.rs.Failed() != nil
}

// retry prepares (the demo applies its fix) and starts a resumed run.
func (s *runScreen) retry() tea.Cmd {
	if !s.canRetry() {
		return nil
	}
	failed := s.rs.Failed()
	_, f := s.rs.Hint()
	b, ctx, id := s.backend, s.parent, failed.ID
	s.note = "Preparing to retry " + id + "…"
	return func() tea.Msg {
		note, err := b.PrepareRetry(ctx, id, f)
		return retryPreparedMsg{note: note, err: err}
	}
}

func (s *runScreen) retryPrepared(msg retryPreparedMsg) tea.Cmd {
	if msg.err != nil {
		s.note = "Retry: " + msg.err.Error()
		return nil
	}
	s.rs.ResetForRetry()
	cmd := s.Start(true)
	s.note = msg.note
	s.autoView = true
	s.log.End()
	return cmd
}

// canSkip returns the running step when it is optional.
func (s *runScreen) canSkip() string {
	st := s.rs.Step(s.rs.Current)
	if !s.running || st == nil || !st.Optional || s.skipping != "" {
		return ""
	}
	return st.ID
}

// skipCurrent stops the running optional step; the run resumes without it.
func (s *runScreen) skipCurrent() {
	id := s.canSkip()
	if id == "" {
		if s.running {
			s.note = "Only an optional step can be skipped, while it runs."
		}
		return
	}
	s.skipping = id
	s.skip = append(s.skip, id)
	s.note = "Skipping " + id + "…"
	s.cancel()
}

func (s *runScreen) afterSkip() tea.Cmd {
	st := s.rs.Step(s.skipping)
	st.State, st.Reason = stateSkipped, "skipped by you"
	if st.Why != "" {
		st.Reason += ": " + st.Why
	}
	s.skipping = ""
	cmd := s.Start(true)
	s.note = "Skipped " + st.ID + "; going on."
	return cmd
}

func (s *runScreen) shell() tea.Cmd {
	c := s.backend.Shell()
	if c == nil {
		s.note = "No toolbox to enter here (distrobox or the toolbox is missing)."
		if s.Demo {
			s.note = "The demo installs nothing, so there is no toolbox; on your machine s runs `distrobox enter <TOOLBOX_NAME>`."
		}
		return nil
	}
	return tea.ExecProcess(c, func(err error) tea.Msg { return shellDoneMsg{err: err} })
}

// layout gives the log pane what is left after the header, hint and footer.
func (s *runScreen) layout() {
	hint := 0
	if h := s.hintView(); h != "" {
		hint = lipgloss.Height(h)
	}
	s.log.SetSize(s.w-stepsPaneWidth-3, max(s.h-hint-3, 3))
}

func (s *runScreen) View() string {
	s.layout()
	var parts []string
	parts = append(parts, s.header())
	parts = append(parts, lipgloss.JoinHorizontal(lipgloss.Top, s.stepsView(), s.separator(), s.logView()))
	if h := s.hintView(); h != "" {
		parts = append(parts, h)
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
		b.WriteString(s.Styles.Subtle.Render(" · " + fmtDuration(rs.Elapsed(s.now())) + " elapsed"))
	}
	if left, ok := rs.Remaining(s.now()); ok {
		b.WriteString(s.Styles.Subtle.Render(" · ETA ~" + fmtDuration(left)))
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
	switch {
	case s.stopping:
		return s.Styles.Warn.Render("stopped")
	case s.rs.Failed() != nil || s.rs.Err != nil:
		return s.Styles.Fail.Render("failed")
	default:
		return s.Styles.OK.Render("done")
	}
}

func (s *runScreen) stepsView() string {
	h := s.log.height + 1
	lines := make([]string, 0, h)
	title := "Steps"
	if s.focus == paneSteps {
		title = s.Styles.Selected.Render("Steps ◂")
	}
	lines = append(lines, s.Styles.Bold.Render(title))
	for i, st := range s.rs.Steps {
		lines = append(lines, s.stepLine(i, st))
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	for i := range lines {
		lines[i] = padRight(ansiCut(lines[i], stepsPaneWidth), stepsPaneWidth)
	}
	return strings.Join(lines[:h], "\n")
}

func (s *runScreen) stepLine(i int, st *stepRun) string {
	cursor := " "
	if i == s.selected {
		cursor = s.Styles.Selected.Render("›")
	}
	mark, dur := s.stepMark(st), ""
	switch st.State {
	case stateRunning:
		dur = fmtDuration(s.now().Sub(st.Started))
	case stateOK, stateFailed, stateInterrupted:
		dur = fmtDuration(st.Duration)
	case stateSkipped:
		dur = "skip"
	}
	name := st.ID
	if i == s.selected {
		name = s.Styles.Selected.Render(name)
	}
	return cursor + mark + " " + padRight(name, stepsPaneWidth-10) + s.Styles.Subtle.Render(fmt.Sprintf("%6s", dur))
}

func (s *runScreen) stepMark(st *stepRun) string {
	switch st.State {
	case stateRunning:
		return s.Styles.Running.Render(s.spin.View())
	case stateOK:
		return s.Styles.OK.Render("✓")
	case stateFailed:
		if st.Optional {
			return s.Styles.Warn.Render("✗")
		}
		return s.Styles.Fail.Render("✗")
	case stateSkipped:
		return s.Styles.Skip.Render("↷")
	case stateInterrupted:
		return s.Styles.Warn.Render("■")
	default:
		return s.Styles.Skip.Render("·")
	}
}

func (s *runScreen) separator() string {
	return s.Styles.Subtle.Render(strings.TrimRight(strings.Repeat(" │\n", s.log.height+1), "\n")) + " "
}

func (s *runScreen) logView() string {
	st := s.rs.Steps[s.selected]
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

// hintView is the hint panel: the pinned finding's family code, summary,
// fix and link. Empty when nothing was recognised.
func (s *runScreen) hintView() string {
	st, f := s.rs.Hint()
	if f == nil {
		return ""
	}
	width := max(s.w-2, 20)
	inner := width - 4 // border and padding
	head := s.Styles.HintTitle.Render("✗ "+f.Family) + s.Styles.Subtle.Render(fmt.Sprintf("  step %s, log line %d", st.ID, f.Line))
	if n := len(st.Findings); n > 1 {
		head += s.Styles.Subtle.Render(fmt.Sprintf("  (+%d more: t)", n-1))
	}
	lines := []string{ansiCut(head, inner)}
	if f.Summary != "" {
		lines = append(lines, clipLines(wrap(f.Summary, inner), 2))
	}
	lines = append(lines, fixLines(f.Fix, inner, 3, s.Styles)...)
	if len(f.Links) > 0 {
		lines = append(lines, ansiCut(s.Styles.Subtle.Render("More: "+f.Links[0]), inner))
	}
	return s.Styles.Hint.Width(width).Render(strings.Join(lines, "\n"))
}

// fixLines shows the first lines of a fix as written (commands must not be
// re-wrapped), each cut to the width; t shows all of it.
func fixLines(fix string, width, n int, st Styles) []string {
	if fix == "" {
		return nil
	}
	all := strings.Split(fix, "\n")
	var out []string
	for i, l := range all[:min(n, len(all))] {
		prefix := "     "
		if i == 0 {
			prefix = st.Bold.Render("Fix: ")
		}
		out = append(out, ansi.Truncate(prefix+l, width, "…"))
	}
	if len(all) > n {
		out = append(out, st.Subtle.Render(fmt.Sprintf("     … %d more lines: t shows the whole fix", len(all)-n)))
	}
	return out
}

func (s *runScreen) bottomLine() string {
	if s.searching {
		return s.input.View()
	}
	return ansiCut(s.Styles.Subtle.Render(s.note), s.w)
}
