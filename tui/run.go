package tui

import (
	"context"
	"fmt"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps/runner"
)

type pane int

const (
	paneSteps pane = iota
	paneLog
)

// runScreen is the live run: the step list, the log that follows the tail,
// and the hint panel pinned when a finding arrives. This file is its life
// cycle (start, events, stop, retry, skip, shell) and keys; runview.go draws
// it, steplist.go and hint.go are its parts.
type runScreen struct {
	*common
	backend Backend
	parent  context.Context
	plan    *Plan
	rs      *runState
	steps   stepList
	log     logView
	spin    spinner.Model
	search  prompt
	now     func() time.Time

	ch       <-chan runner.Event
	cancel   context.CancelFunc
	running  bool
	stopping bool     // the user quit: the step is being stopped
	skip     []string // optional steps the user skipped
	skipping string   // optional step being stopped to skip it

	focus    pane
	autoView bool   // show the running step's log
	hint     string // the hint panel as laid out, "" when nothing is pinned
	note     string
	w, h     int
}

func newRunScreen(ctx context.Context, c *common, b Backend, p *Plan) *runScreen {
	rs := newRunState(p)
	s := &runScreen{
		common: c, backend: b, parent: ctx, plan: p, rs: rs, steps: stepList{rs: rs},
		spin:   spinner.New(spinner.WithSpinner(spinner.MiniDot)),
		search: newPrompt("/", "", "find", "cancel"),
		now:    c.clock, autoView: true, focus: paneLog,
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

// Drain stops a run that the program left behind (a signal ended it) and
// waits, up to d, for its events to close, folding them, so that the
// stopped step is recorded.
func (s *runScreen) Drain(d time.Duration) {
	if s.ch == nil {
		return
	}
	s.Stop()
	deadline := time.After(d)
	for {
		select {
		case e, ok := <-s.ch:
			if !ok {
				s.running = false
				return
			}
			s.rs.Apply(e)
		case <-deadline:
			return
		}
	}
}

func (s *runScreen) SetSize(w, h int) {
	s.w, s.h = w, h
	s.search.SetWidth(max(w-4, 10))
	s.layout()
}

func (s *runScreen) Crumb() string { return "run" }

func (s *runScreen) TakesText() bool { return s.search.IsOpen() }

func (s *runScreen) ShortHelp() []key.Binding {
	if s.search.IsOpen() {
		return s.search.Help(s.Keys)
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

// Update handles the run's messages and keys, then lays the screen out
// again: events may pin or unpin the hint panel.
func (s *runScreen) Update(msg tea.Msg) tea.Cmd {
	cmd := s.update(msg)
	s.layout()
	return cmd
}

func (s *runScreen) update(msg tea.Msg) tea.Cmd {
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
		if s.search.IsOpen() {
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
	return send(s.ended())
}

// ended says how the run ended, for the root: the result it reports and
// whether the summary comes next.
func (s *runScreen) ended() runEndedMsg {
	rs := s.rs
	clean := rs.Finished && rs.Failed() == nil && rs.Err == nil && !s.stopping && s.skipping == ""
	return runEndedMsg{status: rs.Status, interrupted: s.stopping, clean: clean}
}

// showCurrent points the log at the running step, or the failed one.
func (s *runScreen) showCurrent() {
	id := s.rs.Current
	if f := s.rs.Failed(); id == "" && f != nil {
		id = f.ID
	}
	if s.steps.Select(id) {
		s.log.SetBuffer(s.steps.Selected().buf)
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
		s.search.SetValue("")
		return s.search.Open()
	case key.Matches(k, s.Keys.NextMatch), key.Matches(k, s.Keys.PrevMatch):
		s.nextMatch(key.Matches(k, s.Keys.NextMatch))
	case key.Matches(k, s.Keys.Retry):
		return s.retry()
	case key.Matches(k, s.Keys.Skip):
		s.skipCurrent()
	case key.Matches(k, s.Keys.Shell):
		return s.shell()
	case key.Matches(k, s.Keys.Troubleshoot):
		return troubleshootRun(s.rs)
	case key.Matches(k, s.Keys.Enter) && s.rs.Finished && !s.running:
		return openSummary
	}
	return nil
}

// troubleshootRun opens troubleshooting on a run: the pinned finding's step
// with its findings, else the failed step's log to scan.
func troubleshootRun(rs *runState) tea.Cmd {
	var msg openTroubleshootMsg
	if st, _ := rs.Hint(); st != nil {
		msg.path, msg.findings = st.Log, append([]diagnose.Finding(nil), st.Findings...)
	} else if f := rs.Failed(); f != nil {
		msg.path = f.Log
	}
	return send(msg)
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
	s.steps.Move(d)
	s.autoView = false
	s.log.SetBuffer(s.steps.Selected().buf)
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
	res, cmd := s.search.Key(k, s.Keys)
	if res != promptSubmitted {
		return cmd
	}
	s.search.Close()
	query := s.search.Value()
	if !s.log.Search(query, false) {
		s.note = fmt.Sprintf("No match for %q in the kept log (the full log is at %s).", query, s.steps.Selected().Log)
	} else {
		s.note = "n/N: next/previous match   G: back to the tail"
	}
	return nil
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

// Summary is the summary screen of this run.
func (s *runScreen) Summary() *summaryScreen {
	return newSummaryScreen(s.common, s.rs, s.plan.Track)
}
