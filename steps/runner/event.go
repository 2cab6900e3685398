// Package runner runs a plan's steps, each in its own pty and process group,
// writes every byte to the step's log, and reports progress as events.
package runner

import (
	"time"

	"github.com/haloforge/haloforge/diagnose"
)

// Event is one thing the runner reports. The set is closed: RunStarted,
// Notice, StepStarted, StepSkipped, Lines, Found, WaitingForInput,
// StepFinished and RunFinished, read with a type switch. A run emits RunStarted first and
// RunFinished last; each step that runs emits StepStarted, then Lines and
// Found in the order the log produced them, then StepFinished.
//
// A consumer that sits between the runner and the screens may add events
// of its own package to the stream (steps/serve's watch adds a server's
// start-up phases, its readiness and its first answer): such a type embeds
// Added, so the runner declares and sends none of them.
//
// The runner never waits for a consumer to show lines: Lines events may be
// dropped while the consumer is behind (the next Lines, or StepFinished,
// counts them in Dropped); every other event is always delivered.
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
	Err      error // the run's own machinery (state, lock, report), not the steps
	At       time.Time
}

func (RunStarted) event()      {}
func (Notice) event()          {}
func (StepStarted) event()     {}
func (StepSkipped) event()     {}
func (Lines) event()           {}
func (Found) event()           {}
func (StepFinished) event()    {}
func (RunFinished) event()     {}
func (WaitingForInput) event() {}
func (Added) event()           {}

// Added makes a type of another package an Event: embed it in an event a
// consumer adds to a run's stream (steps/serve: StartupPhase, Ready, Smoke).
type Added struct{}
