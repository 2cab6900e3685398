// Package runner runs a plan's steps, each in its own pty and process group,
// writes every byte to the step's log, and reports progress as events.
package runner

import (
	"time"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps/installed"
)

// Event is one thing the runner reports. The set is closed: RunStarted,
// Notice, StepStarted, StepSkipped, Lines, OpenLine, Progress, Found,
// WaitingForInput, StepFinished and RunFinished, read with a type switch.
// A run emits RunStarted first and RunFinished last; each step that runs
// emits StepStarted, then Lines and Found in the order the log produced
// them (OpenLine and Progress among them), then StepFinished.
//
// A consumer that sits between the runner and the screens may add events
// of its own package to the stream (steps/serve's watch adds a server's
// start-up phases, its readiness and its first answer): such a type embeds
// Added, so the runner declares and sends none of them.
//
// The runner never waits for a consumer to show lines: Lines events may be
// dropped while the consumer is behind (the next Lines, or StepFinished,
// counts them in Dropped), and so may OpenLine and Progress (the next one
// says the same, newer); every other event is always delivered.
type Event interface{ event() }

// RunStarted opens a run.
type RunStarted struct {
	Track  string // the track's ID
	RunID  string
	RunDir string // <state-dir>/runs/<run-id>: the logs and report.json
	Total  int    // steps that run this time
	At     time.Time
}

// Notice is what the user should know before the steps run: what a resume
// continues, what changed since the run it resumes.
type Notice struct {
	Text string
}

// StepStarted says a step began.
type StepStarted struct {
	Step     string
	Title    string
	Index    int // 1-based position among the steps that run
	Total    int // steps that run this time
	Optional bool
	Log      string        // path of the step's raw log
	ETA      time.Duration // the run's remaining time, from earlier runs; 0 when unknown
	Elapsed  time.Duration // since the run started
	At       time.Time
}

// StepSkipped says a step of the plan does not run this time.
type StepSkipped struct {
	Step       string
	Title      string
	Optional   bool
	WhySkipped string // "up to date (succeeded …)", "not in --only", …
}

// Lines carries a step's output as the screen shows it: sanitised (no
// control sequences; colours only with Options.KeepColor), one entry per
// log line, in order. This is the only way lines travel: one event per
// chunk the step printed, so that a flood costs a consumer one event per
// read, not one per line.
type Lines struct {
	Step string
	// First is the log line number (1-based) of Text[0]. The lines after it
	// follow in order; a line that held nothing but terminal controls is not
	// shown, so their numbers may skip.
	First int
	Text  []string
	// Cut is nil unless a line was longer than Options.MaxLine; then Cut[i]
	// is how many bytes of Text[i] only the log has.
	Cut []int
	// Dropped counts this step's lines not shown just before these, because
	// the consumer was behind (the log has them all).
	Dropped int
}

// OpenLine is the line a step has begun and not ended: a progress bar
// redrawn with '\r', ninja's status line, a prompt. Text is sanitised like
// Lines (no colours); "" says the open line ended. It is sent at most every
// Options.ProgressEvery, when it changed; a Lines event of the step ends
// the open line it follows, and so does StepFinished.
type OpenLine struct {
	Step string
	Text string
}

// Progress is how far a step's current tool is, read from what it prints
// (progress.go lists the forms): a build's [N/M], a download's bytes, a
// pull's layers. It is sent at most every Options.ProgressEvery, when it
// changed; Kind "" says there is no counter to show any more (it finished).
type Progress struct {
	Step  string
	Kind  string // KindNinja, KindPull, …; "" when there is none now
	Label string // what is in progress: the file, the object, the phase
	Done  int64
	Total int64  // 0 for a label without a counter (a wheel being built)
	Unit  string // UnitBytes, UnitPercent or UnitCount
	// Rate is Units per second over the last half minute, measured by
	// haloforge; ETA the time to Total at that rate (0: not known yet).
	Rate float64
	ETA  time.Duration
	// Since is how long this counter (or label) has been going.
	Since time.Duration
	// RunETA is the run's remaining time: this step's, from its last
	// duration (or ETA when longer), and the later steps' last durations;
	// 0 when a step has never run to its end before.
	RunETA time.Duration
}

// Found is a known failure recognised in a step's output, sent right after
// the Lines holding the line it names.
type Found struct {
	Step    string
	Finding diagnose.Finding
}

// StepFinished says how a step ended.
type StepFinished struct {
	Step     string
	Title    string
	Index    int // as in StepStarted
	Total    int
	Optional bool
	// WhyOptional says why the step's failure does not fail the run ("" for
	// a step that is not optional).
	WhyOptional string
	Status      string // steps.Outcome*: succeeded, not-verified, failed, interrupted
	ExitCode    int
	Duration    time.Duration
	Elapsed     time.Duration // since the run started
	Log         string        // path of the step's raw log
	Err         error         // the runner's own trouble with the step (log, pty), not its exit code
	Tail        []string      // the step's last lines, sanitised, for a failure summary
	Findings    []diagnose.Finding
	Dropped     int // lines not shown since the last Lines event
	// Verified and NotVerified are what the step proved and what it could
	// not check (ResultEnv); a NotVerified entry makes Status not-verified.
	Verified    []string
	NotVerified []string
	// Leftovers are the processes the step's script left running when it
	// ended by itself, each with its fate (killed after a failure, stopped
	// when the run ends, kept).
	Leftovers []Leftover
	// Why is the verdict of the consumer that judged the step with
	// Runner.Settle (a server's readiness, or the phase it stalled in);
	// "" when the step ended by itself.
	Why string
	// Times are what the step timed of its own work, by name (FactsEnv's
	// time lines: a bench step's "engine"); nil when it timed nothing.
	Times map[string]time.Duration
	At    time.Time
}

// WaitingForInput says a step waits for an answer on its terminal: it has
// printed nothing for a while, and a process of it is blocked reading the
// terminal, or the line it left open asks something (a password, [y/N]).
// The wait ends with the step's next Lines, or its StepFinished. While it
// lasts, Runner.Input hands typed text to the step.
type WaitingForInput struct {
	Step   string
	Prompt string        // the question, sanitised; "" when the step printed none
	Echo   bool          // false: the terminal does not echo (a password)
	Quiet  time.Duration // how long the step had been silent
}

// RunFinished closes a run; the channel closes after it.
type RunFinished struct {
	RunID    string
	RunDir   string // "" when the run could not start (lock, run dir)
	Status   string // steps.Outcome*: succeeded, not-verified, failed, interrupted
	Duration time.Duration
	// Installed is what haloforge created for the track, this run and
	// earlier ones (the report's installed): none for a dry run or a run
	// without history.
	Installed []installed.Item
	Err       error // the run's own machinery (state, lock, report), not the steps
	At        time.Time
}

func (RunStarted) event()      {}
func (Notice) event()          {}
func (StepStarted) event()     {}
func (StepSkipped) event()     {}
func (Lines) event()           {}
func (OpenLine) event()        {}
func (Progress) event()        {}
func (Found) event()           {}
func (StepFinished) event()    {}
func (RunFinished) event()     {}
func (WaitingForInput) event() {}
func (Added) event()           {}

// Added makes a type of another package an Event: embed it in an event a
// consumer adds to a run's stream (steps/serve: StartupPhase, Ready, Smoke).
type Added struct{}
