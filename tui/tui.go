// Package tui is haloforge's wizard: Bubble Tea v2 screens for detection,
// track picking, plan review, the live run with its hint panel, the summary
// and troubleshooting. It is the only package that imports bubbletea, huh,
// bubbles and lipgloss; everything it shows comes from the session's
// engine (Backend and the screens' own roles), so the screens know nothing
// about how detection, plans or runs are made.
package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
)

// Backend is the session's engine as the wizard's flow uses it: look at
// the machine, plan a track, run it. The CLI wires session.Engine (the
// demo wraps it); tests use fakes. The screens reach it through their
// common, each in the role it needs (common.go's role): the flow's roles
// are these three; a screen off the flow declares its own in its file
// (Diagnoser, HostFixer, PinSetter, Server), which the engine implements
// beside, so that a new screen never widens Backend.
type Backend interface {
	Detector
	Planner
	Runner
}

// Detector looks at the machine, for the detection screen.
type Detector interface {
	// Detect collects and analyses the machine (or the demo's bundle).
	Detect(ctx context.Context) (*Detection, error)
}

// Planner offers the tracks and plans one, for the picker and the plan.
type Planner interface {
	// Tracks lists the tracks the picker offers, in order.
	Tracks() []steps.Track
	// Plan computes the plan for a track against the current state.
	Plan(track string) (*Plan, error)
	// SetPin sets a pin for the rest of the session (NAME=VALUE, validated
	// like --set), as the plan screen does for a value the track needs.
	SetPin(assign string) error
}

// Runner runs a plan, for the run screen.
type Runner interface {
	// Start begins a run; the channel is closed after runner.RunFinished.
	// Cancelling ctx stops the running step cleanly.
	Start(ctx context.Context, req RunRequest) (<-chan runner.Event, error)
	// PrepareRetry runs before a failed step is retried; it returns a note
	// to show (the demo applies its fix here; the real wizard changes nothing).
	PrepareRetry(ctx context.Context, step string, f *diagnose.Finding) (string, error)
	// Shell returns the command that opens a shell in the track's own box,
	// or nil and the reason there is none (the track has no box, it does
	// not exist yet: then how to create it). It never creates a box.
	Shell(track string) (*exec.Cmd, string)
}

// Detection is what the detection screen shows: doctor's report of the
// machine, with the track it recommends (Report.RecommendedTrack), and
// what the session adds to it.
type Detection struct {
	*detect.Report
	Source string // where the facts came from: "this machine", "demo bundle …"
	// HostFixes counts the host changes haloforge can make for the checks
	// (doctor --plan's actions it applies); HostFixesByHand the ones it
	// leaves to the user (a bootloader it does not edit, advice). The
	// detection screen offers to apply the first, or to show the second.
	HostFixes, HostFixesByHand int
}

// Plan is a track's plan as the plan and run screens show it: the plan
// itself, and what the session knows that stops or qualifies it.
type Plan struct {
	*steps.Plan
	// Next are the track's next commands with the plan's values and the
	// user's flags, ready to paste once the track is built.
	Next []string
	// Last is how long each step's last success took, by step ID (absent:
	// never), for the plan's estimate.
	Last map[string]time.Duration
	// PinWarning is what the last `pins status` found retired or moved
	// among the track's pins, and how old that is (upstream.Warning's
	// lines); nil when nothing (tui/sets.go offers the known-good sets).
	PinWarning []string
	// Needs are the pins the track cannot run without that are empty now
	// (a model to load): the plan screen asks for them before it starts.
	Needs []string
	// Busy says another build holds the state dir ("" when free): the run
	// cannot start until it ends.
	Busy string
	// ReadOnly says why this plan can be read but not run ("" when it can
	// run): the demo plans every track, and runs one.
	ReadOnly string
	// Notes are what the user should know about where the plan comes from
	// (a ./scripts tree that replaces the built-in one).
	Notes []string
	// Box is the track's own distrobox ("" when it has none): s opens a
	// shell in it.
	Box string
}

// RunRequest asks the backend for a run of the chosen track.
type RunRequest struct {
	Track string
	// Resume continues the run it follows, as build --resume does (a retry,
	// or going on after a skip): what failed or stopped runs again with
	// HALOFORGE_RESUME=1.
	Resume bool
	// Skip lists optional steps the user chose to skip.
	Skip []string
}

// Command asks for a command line the wizard prints for the shell (the
// recap, the stop note, the summary's next steps).
type Command struct {
	Track string
	// Resume asks for the command that continues the track's last run;
	// Step is the step that failed or stopped, to narrow --from or --only.
	Resume bool
	Step   string
	// IgnoreChecks is set when the user ran the track despite failing
	// blocking checks (the plan screen's second Enter).
	IgnoreChecks bool
	// Sets are the pins set in this session (NAME=VALUE).
	Sets []string
	// Clean asks for the command that removes what haloforge created for
	// the track (haloforge clean --track, with the user's state dir).
	Clean bool
}

// Options configure a wizard session.
type Options struct {
	Demo  bool   // the banner says so and retries apply the demo's fix
	Track string // preselected track, overriding the recommendation
	// Plan starts the session at the run screen with this plan (the TUI of
	// `haloforge build`); it ends on the run's summary.
	Plan   *Plan
	Input  io.Reader
	Output io.Writer
	// Environ is the environment the colour profile is read from (NO_COLOR).
	Environ []string
	// Commands writes the command lines the wizard suggests, with the
	// user's flags; nil when there are none to suggest (the demo).
	Commands func(Command) string
	// Demo runs `haloforge demo` from the detection screen of a machine
	// without an AMD GPU; nil when there is no demo to offer.
	DemoCmd func() *exec.Cmd
	// Pager opens a log in the user's pager at a line; nil uses $PAGER,
	// else less.
	Pager func(path string, line int) *exec.Cmd
}

// Result is how a wizard session ended: what cmd prints as the recap once
// the full screen is gone.
type Result struct {
	Track  string
	Status string // steps.Outcome* of the last run; "" when no run started
	// Interrupted is true when the user quit while a step ran, or pressed
	// Ctrl-C before a run ended (exit 130, as gum does).
	Interrupted bool
	// RunDirs are the run directories of the session, oldest first: a retry
	// or a skip starts another run.
	RunDirs []string
	// Failed is the step the last run failed at, FailedLog its log; Stopped
	// is the step a quit stopped.
	Failed, FailedLog, Stopped string
	NotVerified                []string // steps built but not verified
	// Next are the track's commands once it is built, with the plan's values.
	Next []string
	// Resume continues the last run; Build builds the planned track (both
	// "" when there is nothing to suggest).
	Resume, Build string
	// Blocked are the planned track's blocking checks that fail on this
	// machine (their IDs): Build stops at them, BuildAnyway does not.
	Blocked     []string
	BuildAnyway string
	// Planned is true when the user reached a plan.
	Planned bool
	Demo    bool
}

// drainWait bounds how long an interrupted session waits for the runner to
// record the stopped step (its grace period is 5 s by default).
const drainWait = 15 * time.Second

// Run starts the wizard and blocks until the user leaves it.
func Run(ctx context.Context, b Backend, opts Options) (Result, error) {
	m := New(ctx, b, opts)
	restore := pushTitle(opts.Output)
	defer restore()
	var popts []tea.ProgramOption
	popts = append(popts, tea.WithContext(ctx))
	if opts.Input != nil {
		popts = append(popts, tea.WithInput(opts.Input))
	}
	if opts.Output != nil {
		popts = append(popts, tea.WithOutput(opts.Output))
	}
	env := opts.Environ
	if env == nil {
		env = os.Environ()
	}
	popts = append(popts, tea.WithEnvironment(env))
	final, err := tea.NewProgram(m, popts...).Run()
	if errors.Is(err, tea.ErrInterrupted) || errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		// A signal ended the session; the run's context is cancelled with
		// it, so the runner stops the step as on a quit.
		m.drain(drainWait)
		res := m.Result()
		res.Interrupted = true
		return res, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("wizard: %w", err)
	}
	return final.(*Model).Result(), nil
}
