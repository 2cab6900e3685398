// Package runner runs a plan's steps, each in its own pty and process group,
// writes every byte to the step's log, and reports progress as events.
package runner

import (
	"time"

	"github.com/haloforge/haloforge/diagnose"
)

// EventKind tells what happened.
type EventKind int

// Event kinds, in the order a run emits them.
const (
	EventRunStarted   EventKind = iota // Total, RunID, RunDir
	EventStepStarted                   // Step, Title, Index, Total, Log, ETA, Optional
	EventStepSkipped                   // Step, Title, Total, Reason (Index is 0: it does not run)
	EventLine                          // Step, Line (or Lines), LineNo, Dropped, Cut
	EventFinding                       // Step, Finding
	EventStepFinished                  // Step, Index, Total, Status, ExitCode, Duration, Log, Err, Tail, Findings, Optional, Reason (why it is optional)
	EventRunFinished                   // Status, Duration, Err, Dropped
	EventNotice                        // Reason: what the user should know before the steps (resume, re-plan)
)

// Event is one thing the runner reports. The runner never waits for a
// consumer: screen lines may be coalesced or dropped (Dropped counts them),
// the other kinds are always delivered.
type Event struct {
	Kind     EventKind
	RunID    string
	RunDir   string
	Step     string
	Index    int // 1-based position of Step among the steps that run
	Total    int
	Line     string // sanitised for a screen
	LineNo   int    // 1-based line number in the step's log
	Dropped  int    // screen lines dropped just before this one
	Finding  *diagnose.Finding
	Status   string // steps.Outcome* for a step or a run
	ExitCode int
	Duration time.Duration
	ETA      time.Duration // remaining, from previous runs' durations; 0 when unknown
	Log      string        // path of the step's raw log
	Reason   string        // why a step was skipped; a notice; why a finished step is optional
	Err      error
	At       time.Time

	Title    string             // the step's human title
	Optional bool               // the step's failure does not fail the run
	Cut      int                // bytes of Line cut for the screen (the log has them)
	Lines    []string           // with Options.BatchLines: several lines from LineNo on, instead of Line
	Tail     []string           // last lines of the step, sanitised, for a failure summary
	Findings []diagnose.Finding // every finding of the step, at its end
	Elapsed  time.Duration      // since the run started
}
