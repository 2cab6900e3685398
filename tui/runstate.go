package tui

import (
	"fmt"
	"slices"
	"time"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/installed"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/tui/linemode"
)

// logLines is how many lines of each step the wizard keeps for scrolling.
const logLines = 5000

// stepState is where a step is in the run, as the step list shows it.
type stepState int

const (
	statePending stepState = iota
	stateRunning
	stateOK
	stateFailed
	stateSkipped // up to date, not asked for, or skipped by the user
	stateInterrupted
	stateNotVerified // ran to its end without proving its outcome
)

// stepRun is one step of the run as the screen tracks it.
type stepRun struct {
	ID, Title string
	Optional  bool
	Why       string
	State     stepState
	Reason    string // why it was skipped
	Started   time.Time
	Duration  time.Duration
	Log       string
	ExitCode  int
	Findings  []diagnose.Finding
	// Verified and NotVerified are what the step proved and could not check.
	Verified, NotVerified []string
	Dropped               int // screen lines the runner dropped under load
	// Attempts counts the runs of this step in the session (a retry is the
	// second); Earlier says how each earlier attempt ended.
	Attempts int
	Earlier  []string
	// Done is true once the step succeeded in this session: a later run of
	// the session (after a retry or a skip) skips it as up to date, and the
	// screens keep showing that it succeeded.
	Done       bool
	LastOutput time.Time // when the step last printed a line
	// Open is the line the step has begun and not ended (a '\r' progress
	// bar, ninja's status, a prompt), "" when none; Progress is how far its
	// tool says it is, nil when none. Both only while it runs.
	Open     string
	Progress *runner.Progress
	buf      *logBuffer
}

// runState folds runner events into what the run and summary screens show,
// for a whole wizard session: a retry or a skip starts another run of the
// runner, but the user sees one run of the plan, whose steps keep their
// numbers and their history. It is plain data so that it can be tested
// without a terminal.
type runState struct {
	Track    string
	Steps    []*stepRun
	RunID    string
	RunDir   string
	RunDirs  []string // every run of the session, oldest first
	Started  time.Time
	Finished bool
	Ended    time.Time // when the run finished
	Status   string    // run outcome once Finished
	Err      error
	Current  string        // step running now
	Total    int           // steps that run this time
	Done     int           // of those, finished
	ETA      time.Duration // remaining at ETAAt, from the runner
	ETAAt    time.Time
	Attempts int      // runs started on this screen (retries included)
	Notices  []string // what the runner wants the user to know (resume, re-plan)
	now      func() time.Time
	// Waiting is the step waiting for input on its terminal, until it
	// prints again or ends; nil when none is.
	Waiting *runner.WaitingForInput
	// Installed is what haloforge created for the track and holds on disk,
	// as the last run ended (RunFinished).
	Installed []installed.Item
}

func newRunState(p *Plan) *runState {
	rs := &runState{Track: p.Track.ID}
	for _, s := range p.Steps {
		rs.Steps = append(rs.Steps, &stepRun{ID: s.ID, Title: s.Title, Optional: s.Optional, Why: s.Why, buf: newLogBuffer(logLines)})
	}
	return rs
}

// Step returns the step with the given ID, or nil.
func (rs *runState) Step(id string) *stepRun {
	for _, s := range rs.Steps {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// Apply folds one event into the state.
func (rs *runState) Apply(e runner.Event) {
	switch e := e.(type) {
	case runner.RunStarted:
		rs.RunID, rs.RunDir, rs.Total, rs.Done = e.RunID, e.RunDir, e.Total, 0
		rs.Finished, rs.Status, rs.Err = false, "", nil
		if rs.Started.IsZero() { // the session's time counts from its first run
			rs.Started = at(e.At)
		}
		if e.RunDir != "" && !slices.Contains(rs.RunDirs, e.RunDir) {
			rs.RunDirs = append(rs.RunDirs, e.RunDir)
		}
		rs.Attempts++
	case runner.Notice:
		rs.Notices = append(rs.Notices, e.Text)
	case runner.StepStarted:
		rs.stepStarted(e)
	case runner.StepSkipped:
		// A step that succeeded earlier in the session is up to date for
		// the runner: it keeps its ✓.
		if s := rs.Step(e.Step); s != nil && !s.Done {
			s.State, s.Reason = stateSkipped, e.WhySkipped
		}
	case runner.WaitingForInput:
		rs.Waiting = &e
	case runner.OpenLine:
		if s := rs.Step(e.Step); s != nil && s.State == stateRunning {
			s.Open = e.Text
		}
	case runner.Progress:
		if s := rs.Step(e.Step); s != nil && s.State == stateRunning {
			s.Progress = nil
			if e.Kind != "" {
				s.Progress = &e
			}
		}
	case runner.Lines:
		rs.endWait(e.Step)
		if s := rs.Step(e.Step); s != nil {
			s.Open = "" // these lines end it
			s.Dropped += e.Dropped
			for i := range e.Text {
				s.buf.AppendAt(e.First+i, linemode.CutLine(e, i))
			}
			s.LastOutput = rs.clock()
		}
	case runner.Found:
		if s := rs.Step(e.Step); s != nil {
			s.addFinding(e.Finding)
		}
	case runner.StepFinished:
		rs.endWait(e.Step)
		rs.stepFinished(e)
	case runner.RunFinished:
		rs.Waiting = nil
		rs.Finished, rs.Status, rs.Err, rs.Current, rs.Ended = true, e.Status, e.Err, "", at(e.At)
		if e.Installed != nil {
			rs.Installed = e.Installed
		}
		for _, s := range rs.Steps {
			if s.State == stateRunning { // the run ended under it (quit, crash)
				s.State = stateInterrupted
			}
		}
	}
}

// endWait ends a step's wait for input: it printed again, or ended.
func (rs *runState) endWait(step string) {
	if rs.Waiting != nil && rs.Waiting.Step == step {
		rs.Waiting = nil
	}
}

func (rs *runState) stepStarted(e runner.StepStarted) {
	if e.Total > 0 {
		rs.Total = e.Total
	}
	rs.Current, rs.ETA, rs.ETAAt = e.Step, e.ETA, at(e.At)
	s := rs.Step(e.Step)
	if s == nil {
		return
	}
	s.State, s.Started, s.Log, s.Findings, s.Reason = stateRunning, at(e.At), e.Log, nil, ""
	s.Attempts++
	s.LastOutput = s.Started
}

// clock is the time of events that carry none (a line's arrival).
func (rs *runState) clock() time.Time {
	if rs.now != nil {
		return rs.now()
	}
	return time.Now()
}

// Position is where a step is in the plan (1-based) and how many steps the
// plan has: the numbers the user sees, which a retry does not change.
func (rs *runState) Position(id string) (int, int) {
	for i, s := range rs.Steps {
		if s.ID == id {
			return i + 1, len(rs.Steps)
		}
	}
	return 0, len(rs.Steps)
}

func (rs *runState) stepFinished(e runner.StepFinished) {
	rs.Done++
	if rs.Current == e.Step {
		rs.Current = ""
	}
	s := rs.Step(e.Step)
	if s == nil {
		return
	}
	s.Duration, s.ExitCode = e.Duration, e.ExitCode
	s.Verified, s.NotVerified = e.Verified, e.NotVerified
	s.Open, s.Progress = "", nil
	s.Dropped += e.Dropped
	if e.Log != "" {
		s.Log = e.Log
	}
	switch e.Status {
	case steps.OutcomeSucceeded:
		s.State, s.Done = stateOK, true
	case steps.OutcomeNotVerified:
		s.State, s.Done = stateNotVerified, true
	case steps.OutcomeSkipped:
		s.State = stateSkipped
	case steps.OutcomeInterrupted:
		s.State = stateInterrupted
	default:
		s.State = stateFailed
	}
}

// addFinding keeps one finding per family, updating its count.
func (s *stepRun) addFinding(f diagnose.Finding) {
	for i := range s.Findings {
		if s.Findings[i].Family == f.Family {
			s.Findings[i].Count = max(f.Count, s.Findings[i].Count+1)
			return
		}
	}
	if f.Count == 0 {
		f.Count = 1
	}
	s.Findings = append(s.Findings, f)
}

// Failed returns the first failed step that is not optional, or nil.
func (rs *runState) Failed() *stepRun {
	for _, s := range rs.Steps {
		if s.State == stateFailed && !s.Optional {
			return s
		}
	}
	return nil
}

// NotVerified lists the steps that ran to their end without proving their
// outcome, in plan order.
func (rs *runState) NotVerified() []string {
	var ids []string
	for _, s := range rs.Steps {
		if s.State == stateNotVerified {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// Hint returns the finding the hint panel pins: the first finding of the
// failed step, else of the running step, else of any step; nil for none.
func (rs *runState) Hint() (*stepRun, *diagnose.Finding) {
	order := []*stepRun{rs.Failed(), rs.Step(rs.Current)}
	order = append(order, rs.Steps...)
	for _, s := range order {
		if s != nil && len(s.Findings) > 0 {
			return s, &s.Findings[0]
		}
	}
	return nil, nil
}

// Remaining estimates the time left at now: the runner's ETA counted down.
func (rs *runState) Remaining(now time.Time) (time.Duration, bool) {
	if rs.ETA <= 0 || rs.Finished {
		return 0, false
	}
	return max(rs.ETA-now.Sub(rs.ETAAt), 0), true
}

// RunETA is the run's remaining time as the running step's progress last
// said it (its tool's rate and the later steps' last times); 0 unknown.
func (rs *runState) RunETA() time.Duration {
	if st := rs.Step(rs.Current); st != nil && st.Progress != nil {
		return st.Progress.RunETA
	}
	return 0
}

// Elapsed is the run's time so far, or its whole time once finished.
func (rs *runState) Elapsed(now time.Time) time.Duration {
	if rs.Finished && !rs.Ended.IsZero() {
		return rs.Ended.Sub(rs.Started)
	}
	return now.Sub(rs.Started)
}

// Progress is the share of this run's steps that finished, 0–100.
func (rs *runState) Progress() int {
	if rs.Total <= 0 {
		return 0
	}
	return min(100, rs.Done*100/rs.Total)
}

// ResetForRetry makes the failed and interrupted steps pending again and
// unpins their findings, before a retry starts; each keeps how the attempt
// ended, for the summary.
func (rs *runState) ResetForRetry() {
	for _, s := range rs.Steps {
		if s.State == stateFailed || s.State == stateInterrupted {
			s.Earlier = append(s.Earlier, s.attemptEnd())
			s.buf.Note(fmt.Sprintf("──── retry (attempt %d) ────", s.Attempts+1))
		}
		if s.State == stateFailed || s.State == stateInterrupted || s.State == statePending {
			s.State, s.Findings, s.Duration, s.Verified, s.NotVerified = statePending, nil, 0, nil, nil
		}
	}
	rs.Finished = false
}

// attemptEnd says how a step's attempt ended: its diagnosis, else how.
func (s *stepRun) attemptEnd() string {
	switch {
	case len(s.Findings) > 0:
		return s.Findings[0].Family
	case s.State == stateInterrupted:
		return "stopped"
	}
	return fmt.Sprintf("exit %d", s.ExitCode)
}

// Skip records that the user skipped an optional step.
func (rs *runState) Skip(id string) {
	s := rs.Step(id)
	if s == nil {
		return
	}
	s.State, s.Reason = stateSkipped, "skipped by you"
}

// at is when an event happened; events built without a time (tests) happen now.
func at(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}
