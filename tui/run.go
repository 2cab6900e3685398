package tui

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// noteLife is how long a note stays at least; it goes once another step
// than the one it is about has started (a note about a retry of rocm is
// stale once flash-attention runs).
const noteLife = 4 * time.Second

// runScreen is the live run: the step list, the log that follows the tail,
// and the hint panel of the step whose log is shown. This file is its life
// cycle (start, events, stop, retry, skip, shell, pager) and keys;
// runview.go draws it, steplist.go and hint.go are its parts.
type runScreen struct {
	*common
	own    runKeys // the keys only this screen has
	plan   *Plan
	rs     *runState
	steps  stepList
	log    logView
	spin   spinner.Model
	search prompt
	now    func() time.Time

	ch       <-chan runner.Event
	cancel   context.CancelFunc
	running  bool
	ended    bool     // a run ended (the session has an outcome of its own)
	stopping bool     // the user quit: the step is being stopped
	skip     []string // optional steps the user skipped
	skipping string   // optional step being stopped to skip it
	askSkip  string   // optional step the user asked to skip: y confirms
	ignore   bool     // the run goes despite failing blocking checks

	focus    pane
	autoView bool   // show the running step's log
	hideHint bool   // the user hid the hint panel (x)
	hint     string // the hint panel as laid out, "" when nothing is pinned
	note     string
	noteStep string    // the step the note is about
	noteAt   time.Time // when it was set
	w, h     int
}

func newRunScreen(c *common, p *Plan, ignoreChecks bool) *runScreen {
	rs := newRunState(p)
	rs.now = c.clock
	s := &runScreen{
		common: c, own: newRunKeys(), plan: p, rs: rs, steps: stepList{rs: rs},
		spin:   spinner.New(spinner.WithSpinner(spinner.MiniDot)),
		search: newPrompt("/", "", "find", "cancel"),
		now:    c.clock, autoView: true, focus: paneLog, ignore: ignoreChecks,
	}
	s.log = newLogView(rs.Steps[0].buf)
	return s
}

// runKeys are the run screen's own keys: its log reads like less (/ and ?
// search forward and back, n and N repeat, f follows the tail, w wraps, v
// opens the pager), then the run's actions. Its help is h, since ? is taken.
type runKeys struct {
	Search, SearchBack, NextMatch, PrevMatch, Follow, Wrap, Pager key.Binding
	HideHint, Shell, Retry, Skip, Help                            key.Binding
}

func newRunKeys() runKeys {
	return runKeys{
		Search:     key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "search")),
		SearchBack: key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "search back")),
		NextMatch:  key.NewBinding(key.WithKeys("n"), key.WithHelp("n/N", "next/prev match")),
		PrevMatch:  key.NewBinding(key.WithKeys("N")),
		Follow:     key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "follow/pause")),
		Wrap:       key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "wrap lines")),
		Pager:      key.NewBinding(key.WithKeys("v"), key.WithHelp("v", "open log in $PAGER")),
		HideHint:   key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "hide/show hint")),
		Shell:      key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "shell in the box")),
		Retry:      key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "retry")),
		Skip:       key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "skip optional step")),
		Help:       key.NewBinding(key.WithKeys("h"), key.WithHelp("h", "help")),
	}
}

// Running reports whether a run is in progress (or being stopped).
func (s *runScreen) Running() bool { return s.running }

// Ended reports whether a run of this screen came to its end.
func (s *runScreen) Ended() bool { return s.ended }

// setNote shows text on the status line, about step ("" for the run).
func (s *runScreen) setNote(text, step string) {
	s.note, s.noteStep, s.noteAt = text, step, s.now()
}

// expireNote drops a note once another step runs and it has been read.
func (s *runScreen) expireNote() {
	cur := s.rs.Current
	if s.note != "" && cur != "" && cur != s.noteStep && s.now().Sub(s.noteAt) >= noteLife {
		s.note = ""
	}
}

// Start begins a run of the plan; resume continues after a failure.
func (s *runScreen) Start(resume bool) tea.Cmd {
	ctx, cancel := context.WithCancel(s.context())
	s.cancel, s.running = cancel, true
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
		s.setNote("Stopping the running step…", s.rs.Current)
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

// TakesText is true while the search is typed, and while the skip question
// is up, so that every key answers it (q is "no" then, not quit).
func (s *runScreen) TakesText() bool { return s.search.IsOpen() || s.askSkip != "" }

// HelpKey is h: ? searches the log backwards here, as in less.
func (s *runScreen) HelpKey() key.Binding { return s.own.Help }

// ShortHelp lists the keys that apply now, most useful first; the footer
// shows as many as fit, help and quit always.
func (s *runScreen) ShortHelp() []key.Binding {
	k := s.Keys
	if s.search.IsOpen() {
		return s.search.Help(k)
	}
	if s.askSkip != "" {
		return []key.Binding{withHelp(k.Yes, "skip "+s.askSkip), withHelp(k.No, "keep it running")}
	}
	var b []key.Binding
	if s.canRetry() {
		b = append(b, s.own.Retry, k.Troubleshoot)
	}
	if s.rs.Finished && !s.running {
		b = append(b, withHelp(k.Enter, "summary"))
	}
	if s.canSkip() != "" {
		b = append(b, s.own.Skip)
	}
	if s.plan.Box != "" {
		b = append(b, s.own.Shell)
	}
	b = append(b, s.own.Search, s.own.Pager, s.own.Follow, k.Tab, s.own.Wrap)
	if s.hint != "" || s.hideHint {
		b = append(b, s.own.HideHint)
	}
	if s.hint != "" {
		b = append(b, k.Copy)
	}
	return append(b, s.own.Help, k.Quit)
}

func (s *runScreen) FullHelp() [][]key.Binding {
	k := s.Keys
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Left},
		{s.own.Search, s.own.SearchBack, s.own.NextMatch, s.own.Follow, s.own.Wrap, s.own.Pager, k.Tab},
		{s.own.Retry, s.own.Skip, k.Troubleshoot, s.own.Shell, s.own.HideHint, k.Copy, withHelp(k.Enter, "summary"), s.own.Help, k.Quit},
	}
}

// Update handles the run's messages and keys, then lays the screen out
// again: events may pin or unpin the hint panel.
func (s *runScreen) Update(msg tea.Msg) tea.Cmd {
	cmd := s.update(msg)
	s.expireNote()
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
			s.setNote("shell: "+msg.err.Error(), "")
		}
	case spinner.TickMsg:
		if s.running {
			var cmd tea.Cmd
			s.spin, cmd = s.spin.Update(msg)
			return cmd
		}
	case tea.KeyPressMsg:
		switch {
		case s.search.IsOpen():
			return s.searchKey(msg)
		case s.askSkip != "":
			return s.skipKey(msg)
		}
		return s.onKey(msg)
	}
	return nil
}

func (s *runScreen) started(msg runStartedMsg) tea.Cmd {
	if msg.err != nil {
		s.running, s.ended = false, true
		s.rs.Finished, s.rs.Err = true, msg.err
		s.setNote("Could not start the run: "+msg.err.Error(), "")
		return send(s.endedMsg())
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
		latest := s.rs.Notices[len(s.rs.Notices)-1]
		if s.note != "" && s.noteStep != "" {
			// a note about a step (the fix a retry applied) stays first
			s.setNote(s.note+" · "+latest, s.noteStep)
		} else {
			s.setNote(latest, "")
		}
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
	s.ended = true
	s.finishedNote()
	return send(s.endedMsg())
}

// endedMsg says how the run ended, for the root: the result it reports and
// whether the summary comes next.
func (s *runScreen) endedMsg() runEndedMsg {
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
	failed := s.rs.Failed()
	switch {
	case s.stopping:
		s.setNote("Stopped.", "")
		if c := s.resumeCommand(s.stoppedStep()); c != "" {
			s.setNote("Stopped. `"+c+"` continues from the interrupted step.", "")
		}
	case failed != nil && s.Demo:
		s.setNote(fmt.Sprintf("Step %s failed. Press r: the demo applies the fix above and retries %s.", failed.ID, failed.ID), "")
	case failed != nil && fixExports(failed.Findings) != "":
		// An export typed in another shell never reaches this run's
		// steps: r would retry with the old value and fail the same way.
		resume := cmp.Or(s.resumeCommand(failed.ID), "build it again with --resume")
		s.setNote(fmt.Sprintf("Step %s failed. Its fix sets %s, which this run cannot see: quit (q), run the fix, then %s   t: troubleshoot   v: open its log",
			failed.ID, fixExports(failed.Findings), resume), "")
	case failed != nil:
		s.setNote(fmt.Sprintf("Step %s failed. r: retry   t: troubleshoot   v: open its log   enter: summary", failed.ID), "")
	case s.rs.Err != nil:
		s.setNote("Run ended: "+s.rs.Err.Error(), "")
	default:
		s.setNote("Done. enter: summary", "")
	}
}

// fixExports names the variables the first finding's fix exports ("" for
// none): a fix the running wizard cannot pass on to a retry.
func fixExports(fs []diagnose.Finding) string {
	if len(fs) == 0 {
		return ""
	}
	var names []string
	for _, l := range strings.Split(fs[0].Fix, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(l), "export ")
		if !ok {
			continue
		}
		for _, w := range strings.Fields(rest) {
			if strings.HasPrefix(w, "#") {
				break // a comment
			}
			if name, _, ok := strings.Cut(w, "="); ok && name != "" && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	return strings.Join(names, ", ")
}

// stoppedStep is the step a stop interrupted, "" when none.
func (s *runScreen) stoppedStep() string {
	for _, st := range s.rs.Steps {
		if st.State == stateInterrupted {
			return st.ID
		}
	}
	return ""
}

// resumeCommand is the shell command that continues this run after step.
func (s *runScreen) resumeCommand(step string) string {
	return s.command(Command{Track: s.plan.Track.ID, Resume: true, Step: step, IgnoreChecks: s.ignore})
}

func (s *runScreen) onKey(k tea.KeyPressMsg) tea.Cmd {
	keys := s.Keys
	switch {
	case key.Matches(k, keys.Tab):
		s.focus = 1 - s.focus
	case key.Matches(k, keys.Up), key.Matches(k, keys.Down):
		s.move(key.Matches(k, keys.Down))
	case key.Matches(k, keys.PageUp):
		s.log.Scroll(-s.log.height)
	case key.Matches(k, keys.PageDown):
		s.log.Scroll(s.log.height)
	case key.Matches(k, keys.Top):
		s.log.Home()
		s.olderOnlyInFile()
	case key.Matches(k, keys.Bottom):
		s.log.End()
	case key.Matches(k, keys.Left):
		s.log.ScrollX(-s.log.width / 2)
	case key.Matches(k, keys.Right):
		s.log.ScrollX(s.log.width / 2)
	case key.Matches(k, s.own.Wrap):
		s.log.ToggleWrap()
	case key.Matches(k, s.own.Follow):
		s.follow()
	case key.Matches(k, s.own.Search), key.Matches(k, s.own.SearchBack):
		return s.openSearch(key.Matches(k, s.own.SearchBack))
	case key.Matches(k, s.own.NextMatch), key.Matches(k, s.own.PrevMatch):
		s.nextMatch(key.Matches(k, s.own.PrevMatch))
	case key.Matches(k, s.own.HideHint):
		s.hideHint = !s.hideHint
	case key.Matches(k, keys.Copy):
		if st := s.steps.Selected(); len(st.Findings) > 0 && st.Findings[0].Fix != "" {
			s.setNote("Copied the fix of "+st.Findings[0].Family+" (OSC 52: the terminal must allow it).", "")
			return tea.SetClipboard(st.Findings[0].Fix)
		}
	case key.Matches(k, s.own.Pager):
		return s.openPager()
	case key.Matches(k, s.own.Retry):
		return s.retry()
	case key.Matches(k, s.own.Skip):
		s.askToSkip()
	case key.Matches(k, s.own.Shell):
		return s.shell()
	case key.Matches(k, keys.Troubleshoot):
		return troubleshootStep(s.common, s.troubleStep())
	case key.Matches(k, keys.Enter) && s.rs.Finished && !s.running:
		return openSummary
	}
	return nil
}

// troubleStep is the step troubleshooting opens on: the one whose log is
// shown when it has findings or failed, else the failed step.
func (s *runScreen) troubleStep() *stepRun {
	if st := s.steps.Selected(); len(st.Findings) > 0 || st.State == stateFailed {
		return st
	}
	if f := s.rs.Failed(); f != nil {
		return f
	}
	return s.steps.Selected()
}

// troubleshootStep opens troubleshooting on a step: its findings at once,
// else a scan of its log; without a step, it asks for a log.
func troubleshootStep(c *common, st *stepRun) tea.Cmd {
	if st == nil {
		return open(newTroubleshootScreen(c, "", nil))
	}
	return open(newTroubleshootScreen(c, st.Log, append([]diagnose.Finding(nil), st.Findings...)))
}

// olderOnlyInFile says so when the top of the kept lines is not the top
// of the log file.
func (s *runScreen) olderOnlyInFile() {
	if first := s.steps.Selected().buf.FirstNo(); first > 1 {
		s.setNote(fmt.Sprintf("Lines 1–%d are only in the log file (the screen keeps the last %d): v opens it in the pager.", first-1, logLines), "")
	}
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

// openSearch opens the search prompt: / forward, ? backward.
func (s *runScreen) openSearch(back bool) tea.Cmd {
	// plain text, any case: not less's regular expressions (shader_50. finds
	// itself; shader_50\. would look for a backslash)
	s.search = newPrompt("/", "plain text, any case", "find", "cancel")
	if back {
		s.search = newPrompt("?", "plain text, any case", "find backward", "cancel")
	}
	s.search.SetWidth(max(s.w-4, 10))
	s.log.back = back
	return s.search.Open()
}

func (s *runScreen) searchKey(k tea.KeyPressMsg) tea.Cmd {
	res, cmd := s.search.Key(k, s.Keys)
	if res != promptSubmitted {
		return cmd
	}
	s.search.Close()
	query := s.search.Value()
	if query == "" { // as in less: an empty pattern repeats the last search
		s.nextMatch(false)
		return nil
	}
	s.showSearch(query, s.log.Search(query, s.log.back))
	return nil
}

func (s *runScreen) nextMatch(reverse bool) {
	if s.log.query == "" {
		s.setNote("No search yet: / searches forward, ? backward.", "")
		return
	}
	s.showSearch(s.log.query, s.log.Next(reverse))
}

// showSearch puts a search's outcome on the status line.
func (s *runScreen) showSearch(query string, r searchResult) {
	if r.found {
		s.setNote(r.Note(query, s.log.back)+"   n/N: next/previous   G: back to the tail", "")
		return
	}
	st := s.steps.Selected()
	s.setNote(fmt.Sprintf("No match for %q in lines %d–%d of %s; v opens the whole log (%s) in the pager.",
		query, max(st.buf.FirstNo(), 1), st.buf.LastNo(), st.ID, st.Log), "")
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
	var f *diagnose.Finding
	if len(failed.Findings) > 0 {
		f = &failed.Findings[0]
	}
	b, ctx, id := s.backend, s.context(), failed.ID
	s.setNote("Preparing to retry "+id+"…", id)
	return func() tea.Msg {
		note, err := b.PrepareRetry(ctx, id, f)
		return retryPreparedMsg{note: note, err: err}
	}
}

func (s *runScreen) retryPrepared(msg retryPreparedMsg) tea.Cmd {
	if msg.err != nil {
		s.setNote("Retry: "+msg.err.Error(), "")
		return nil
	}
	failed := s.rs.Failed()
	s.rs.ResetForRetry()
	cmd := s.Start(true)
	if failed != nil {
		s.setNote(msg.note, failed.ID)
	}
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

// askToSkip asks before the running optional step is stopped and skipped.
func (s *runScreen) askToSkip() {
	id := s.canSkip()
	if id == "" {
		if s.running {
			s.setNote("Only an optional step can be skipped, while it runs.", "")
		}
		return
	}
	s.askSkip = id
	why := ""
	if st := s.rs.Step(id); st.Why != "" {
		why = " (" + st.Why + ")"
	}
	s.setNote("Skip "+id+"? It is stopped now and the run goes on without it"+why+".  y: skip  n: keep it running", id)
}

func (s *runScreen) skipKey(k tea.KeyPressMsg) tea.Cmd {
	id := s.askSkip
	s.askSkip = ""
	if !key.Matches(k, s.Keys.Yes) || s.canSkip() != id {
		s.setNote("Not skipped: "+id+" goes on.", id)
		return nil
	}
	s.skipping = id
	s.skip = append(s.skip, id)
	s.setNote("Skipping "+id+"…", id)
	s.cancel()
	return nil
}

func (s *runScreen) afterSkip() tea.Cmd {
	id := s.skipping
	s.rs.Skip(id)
	s.skipping = ""
	cmd := s.Start(true)
	s.setNote("Skipped "+id+" (optional); going on.", id)
	return cmd
}

// shell opens a shell in the track's own box when it exists; it never
// creates one, and says why there is none.
func (s *runScreen) shell() tea.Cmd {
	c, why := s.backend.Shell(s.plan.Track.ID)
	if c == nil {
		s.setNote(why, "")
		return nil
	}
	return tea.ExecProcess(c, func(err error) tea.Msg { return shellDoneMsg{err: err} })
}

// openPager hands the terminal to the user's pager on the shown step's
// full log, at the line at the top of the window.
func (s *runScreen) openPager() tea.Cmd {
	st := s.steps.Selected()
	if st.Log == "" {
		s.setNote(st.ID+" has no log yet.", "")
		return nil
	}
	line := s.log.TopNo()
	if s.log.match >= 0 {
		line = st.buf.No(s.log.match)
	}
	c := pagerCommand(s.pager, st.Log, max(line, 1))
	if c == nil {
		s.setNote("No pager found: set $PAGER, or open "+st.Log, "")
		return nil
	}
	return tea.ExecProcess(c, func(err error) tea.Msg { return execDoneMsg{what: "pager", err: err} })
}

// pagerCommand opens path at line in $PAGER, else less; nil without one.
func pagerCommand(custom func(string, int) *exec.Cmd, path string, line int) *exec.Cmd {
	if custom != nil {
		return custom(path, line)
	}
	if p := os.Getenv("PAGER"); p != "" {
		// $PAGER may carry flags ("less -S"): the shell splits it. +N is
		// the line for less, more, most and vi alike; less takes +Ng.
		at := "+" + strconv.Itoa(line)
		if filepath.Base(firstWord(p)) == "less" {
			at += "g"
		}
		return exec.Command("sh", "-c", p+` "$1" "$2"`, "sh", at, path)
	}
	if less, err := exec.LookPath("less"); err == nil {
		return exec.Command(less, "-R", "+"+strconv.Itoa(line)+"g", path)
	}
	return nil
}

func firstWord(s string) string {
	for i, r := range s {
		if r == ' ' || r == '\t' {
			return s[:i]
		}
	}
	return s
}

// Summary is the summary screen of this run.
func (s *runScreen) Summary() *summaryScreen {
	return newSummaryScreen(s.common, s.rs, s.plan, s.resumeCommand(s.failedID()))
}

func (s *runScreen) failedID() string {
	if f := s.rs.Failed(); f != nil {
		return f.ID
	}
	return ""
}

// fillResult puts the run's outcome and the next commands into the
// session's result, for the recap cmd prints.
func (s *runScreen) fillResult(res *Result) {
	rs := s.rs
	res.Track, res.RunDirs = s.plan.Track.ID, append([]string(nil), rs.RunDirs...)
	res.NotVerified = rs.NotVerified()
	if f := rs.Failed(); f != nil {
		res.Failed, res.FailedLog = f.ID, f.Log
	}
	res.Stopped = s.stoppedStep()
	if s.running { // a signal ended the session mid-step
		res.Stopped = rs.Current
	}
	if res.Failed != "" || res.Stopped != "" {
		res.Resume = s.resumeCommand(res.Failed + res.Stopped)
	}
	if rs.Finished && rs.Failed() == nil && rs.Err == nil && !s.stopping {
		res.Next = s.plan.Next
	}
}
