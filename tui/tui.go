// Package tui is haloforge's wizard: Bubble Tea v2 screens for detection,
// track picking, plan review, the live run with its hint panel, the summary
// and troubleshooting. It is the only package that imports bubbletea, huh,
// bubbles and lipgloss; everything it shows comes through a Backend, so the
// screens know nothing about how detection, plans or runs are made.
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
	"github.com/haloforge/haloforge/steps/bench"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/steps/serve"
)

// Detection is what the detection screen shows: one GPU card and the doctor
// checks. GPU is nil when no AMD GPU was found.
type Detection struct {
	Source      string // where the facts came from: "this machine", "demo bundle …"
	GPU         *GPU
	Kernel      string
	Checks      []Check
	Recommended string // track ID
	// HostFixes counts the host changes haloforge can make for the checks
	// (doctor --plan's actions it applies); HostFixesByHand the ones it
	// leaves to the user (a bootloader it does not edit, advice). The
	// detection screen offers to apply the first, or to show the second.
	HostFixes, HostFixesByHand int
}

// GPU is the card at the top of the detection screen.
type GPU struct {
	Name         string
	Gfx          string
	PCIID        string
	Integrated   bool
	VRAMBytes    int64 // 0 when unknown
	GTTBytes     int64 // 0 when unknown
	ComputeUnits int   // 0 when unknown
}

// Check is one doctor check with its fix line.
type Check struct {
	ID           string
	Status       detect.Status
	Summary, Fix string
}

// Plan is a track's plan as the plan screen shows it.
type Plan struct {
	Track    steps.Track
	Steps    []PlanStep
	Floating []string // pin names whose values float
	// PinWarning is what the last `pins status` found retired or moved
	// among the track's pins, and how old that is (upstream.Warning's
	// lines); nil when nothing (tui/sets.go offers the known-good sets).
	PinWarning []string
	// Needs are the pins the track cannot run without that are empty now
	// (a model to load): the plan screen asks for them before it starts.
	Needs []Need
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

// Need is a pin a plan needs a value for, as the plan screen asks it.
type Need struct {
	Name    string // the pin, e.g. LLAMA_MODEL
	Help    string // what it is, from the pin's spec
	Example string // what a value looks like
}

// PlanStep is one step of a plan, with what the cache says about it.
type PlanStep struct {
	ID, Title string
	Optional  bool
	WillRun   bool
	Reason    string            // "first run", "pins changed: VLLM_REF", "up to date …"
	Pins      map[string]string // the pins this step reads, resolved
	Why       string            // why an optional step is optional
	// Last is how long the step's last success took (0: never), for the
	// plan's estimate.
	Last time.Duration
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

// Backend is everything the wizard needs from the rest of haloforge. The
// CLI wires the real one; the demo wires built-in data; tests use fakes.
type Backend interface {
	// Detect collects and analyses the machine (or the demo bundle).
	Detect(ctx context.Context) (*Detection, error)
	// Tracks lists the tracks the picker offers, in order.
	Tracks() []steps.Track
	// Plan computes the plan for a track against the current state.
	Plan(track string) (*Plan, error)
	// SetPin sets a pin for the rest of the session (NAME=VALUE, validated
	// like --set), as the plan screen does for a value the track needs.
	SetPin(assign string) error
	// Start begins a run; the channel is closed after EventRunFinished.
	// Cancelling ctx stops the running step cleanly.
	Start(ctx context.Context, req RunRequest) (<-chan runner.Event, error)
	// PrepareRetry runs before a failed step is retried; it returns a note
	// to show (the demo applies its fix here; the real wizard changes nothing).
	PrepareRetry(ctx context.Context, step string, f *diagnose.Finding) (string, error)
	// Shell returns the command that opens a shell in the track's own box,
	// or nil and the reason there is none (the track has no box, it does
	// not exist yet: then how to create it). It never creates a box.
	Shell(track string) (*exec.Cmd, string)
	// Diagnose scans a log file or a diagnostics bundle for known failures.
	Diagnose(path string) ([]diagnose.Finding, error)

	// Host fixes (tui/hostfix.go), as doctor --plan and --apply make them.
	// HostFix plans the fixes for the detected machine, with what applying
	// them changes now.
	HostFix(ctx context.Context) (*HostFix, error)
	// ApplyHostFix makes exactly the changes the user confirmed (fix.Changes),
	// writing its progress to out; it runs with the terminal handed over,
	// since sudo asks for a password there. It never reboots.
	ApplyHostFix(ctx context.Context, fix *HostFix, out io.Writer) (*HostFixResult, error)

	// Known-good pin sets (tui/sets.go), as pins sets and pins use make them.
	// PinSets lists the sets against the pins file, with what each changes.
	PinSets() (*PinSets, error)
	// UsePinSet writes a set into the pins file (the user said yes), keeping
	// a backup, and plans from the new pins afterwards.
	UsePinSet(id string) (*PinSetUsed, error)
	// ServeSetup is where the serve screen starts for a built track.
	ServeSetup(ctx context.Context, track string) (*ServeSetup, error)
	// PlanServe decides a launch and its fit without starting anything;
	// it is quick (a model header at most), for a live estimate.
	PlanServe(req ServeRequest) (serve.Launch, error)
	// Serve starts the server of a request and follows it.
	Serve(ctx context.Context, req ServeRequest) (Serving, error)
	// Bench runs the track's benchmark; the channel closes after RunFinished,
	// whose RunDir holds the results for BenchReport.
	Bench(ctx context.Context, req ServeRequest) (<-chan runner.Event, error)
	// BenchReport compares the results of a bench run with the references.
	BenchReport(runDir string) (*bench.Report, error)
}

// ServeSetup is where the serve screen starts: the engine the track serves
// with, its defaults, and how much GPU memory this machine has.
type ServeSetup struct {
	Track, Engine string
	Model         string // the default model ("" when none is known)
	Context       uint64
	Util          float64
	Port          int
	Ceiling       serve.Ceiling
	Note          string // said above the form (the demo names what it replays)
}

// ServeRequest is what the serve screen's form holds.
type ServeRequest struct {
	Track, Model string
	Context      uint64
	Util         float64
	Port         int
}

// Serving is a server the backend started: its events (the runner's and
// the server's own) close after RunFinished; Stop is the user's stop.
type Serving interface {
	Events() <-chan runner.Event
	Stop()
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
