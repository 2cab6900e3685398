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
	EventStepStarted                   // Step, Index, Total, Log, ETA
	EventStepSkipped                   // Step, Index, Total, Reason
	EventLine                          // Step, Line, LineNo, Dropped
	EventFinding                       // Step, Finding
	EventStepFinished                  // Step, Status, ExitCode, Duration, Log, Err
	EventRunFinished                   // Status, Duration, Err
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
	Reason   string        // why a step was skipped
	Err      error
	At       time.Time
}
