// Package session is the wizard's engine in plain Go: it connects the
// screens of package tui to detection, plans, the pty runner and the
// diagnosis, and tells the same story in line mode when there is no
// terminal. It imports no Bubble Tea package of its own.
package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/detect/hostfix"
	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/steps/serve"
	"github.com/haloforge/haloforge/tui"
)

// Engine implements tui.Backend over the real packages.
type Engine struct {
	StateDir   string
	ScriptsDir string // the scripts tree on disk, for the runner
	Scripts    fs.FS  // the same tree, for plans' cache keys
	ToolboxDir string
	Pins       *pins.File
	PinsFile   string // the pins file on disk, "" when built in
	// Detector collects and analyses the machine (or a bundle); Source
	// says which, for the card.
	Detector func(ctx context.Context) (*detect.Report, error)
	Source   string
	// Catalogue is the tracks the picker offers.
	Catalogue []steps.Track
	// Runnable, when set, limits the tracks that can be planned (the demo
	// only has scripts for one); the others explain why.
	Runnable []string
	// Fix runs before a retry (the demo applies its fix); nil changes nothing.
	Fix func(ctx context.Context, step string, f *diagnose.Finding) (string, error)
	// Grace is the SIGTERM to SIGKILL delay when a step is stopped.
	Grace time.Duration
	// NoShell turns the toolbox shell off (the demo has no toolbox).
	NoShell bool
	// Tune adjusts the runner options of every run (build's --from,
	// --only, --dry-run, a test's supervisor); nil keeps the defaults.
	Tune func(*runner.Options)

	// Host fixes (tui/session/hostfix.go). HostRoot is the system they are
	// planned for and applied to: "" is this machine. HostEvidence reads how
	// it boots (nil: from HostRoot); HostRunner runs the apply's commands
	// (nil: for real, through sudo when not root); HostRefusal, when set,
	// is why this session never applies (the demo).
	HostRoot     string
	HostEvidence func() (*hostfix.Evidence, error)
	HostRunner   hostfix.Runner
	HostRefusal  string
	// Version is haloforge's version, recorded in host-fix plans and backups.
	Version string

	// Pins sets (tui/session/sets.go). ReloadPins reads the pins again after
	// the wizard wrote a set into PinsFile, with the command line's --set
	// (nil: PinsFile alone); PinsRefusal, when set, is why this session never
	// writes the pins file (the demo). Now is the clock (nil: time.Now).
	ReloadPins  func() (*pins.File, error)
	PinsRefusal string
	Now         func() time.Time

	mu     sync.Mutex
	report *detect.Report // the last detection, which the host fixes plan for
	// ServeTrack, when set, is the track every serve and bench uses: the
	// demo has a recorded run of one track only.
	ServeTrack string
	// ServeModel is the model the serve screen offers first ("" for the
	// track's pin, or the verify step's tiny model).
	ServeModel string
	// ServeNote is said above the serve screen's form.
	ServeNote string
	// Prober replaces the HTTP probes of a served engine (the demo's
	// recorded answers); nil probes the real server.
	Prober func() serve.Prober

	ceilingOnce  sync.Once
	ceilingValue serve.Ceiling
	hasGPU       bool
}

var _ tui.Backend = (*Engine)(nil)

// Detect runs the detector and turns its report into the card and checks.
func (e *Engine) Detect(ctx context.Context) (*tui.Detection, error) {
	if e.Detector == nil {
		return nil, errors.New("no detector")
	}
	r, err := e.Detector(ctx)
	if err != nil {
		return nil, err
	}
	e.setReport(r)
	d := Detection(r, e.Source)
	d.HostFixes = e.hostFixCount(r)
	return d, nil
}

// Detection converts a doctor report into what the detection screen shows.
func Detection(r *detect.Report, source string) *tui.Detection {
	d := &tui.Detection{Source: source, Recommended: steps.RecommendFor(r), Kernel: deref(r.Kernel.Release)}
	if g := r.Primary(); g != nil {
		d.GPU = &tui.GPU{
			Name: deref(g.Name), Gfx: deref(g.GFX), PCIID: deref(g.PCIID),
			Integrated: g.Integrated != nil && *g.Integrated,
			VRAMBytes:  derefInt(g.VRAMBytes), GTTBytes: derefInt(g.GTTBytes),
		}
		if g.ComputeUnits != nil {
			d.GPU.ComputeUnits = *g.ComputeUnits
		}
	}
	for _, c := range r.Checks {
		d.Checks = append(d.Checks, tui.Check{ID: c.ID, Status: c.Status, Summary: c.Summary, Fix: c.Fix})
	}
	return d
}

// Tracks lists the picker's tracks.
func (e *Engine) Tracks() []steps.Track {
	if e.Catalogue != nil {
		return e.Catalogue
	}
	return steps.Catalogue()
}

// Plan computes the track's plan against the state dir's history.
func (e *Engine) Plan(track string) (*tui.Plan, error) {
	p, err := e.newPlan(track)
	if err != nil {
		return nil, err
	}
	v := PlanView(p, e.StateDir)
	v.PinWarning = e.pinWarning(p.Track.PinNames())
	return v, nil
}

func (e *Engine) newPlan(track string) (*steps.Plan, error) {
	if e.Runnable != nil && !slices.Contains(e.Runnable, track) {
		return nil, fmt.Errorf("the demo only runs %s; %s needs a real machine", strings.Join(e.Runnable, ", "), track)
	}
	return e.planOf(track)
}

// planOf is the track's plan against the state dir's history.
func (e *Engine) planOf(track string) (*steps.Plan, error) {
	t, err := e.track(track)
	if err != nil {
		return nil, err
	}
	st, err := steps.LoadState(e.StateDir)
	if err != nil {
		return nil, err
	}
	return steps.NewPlan(t, e.Pins, e.Scripts, st)
}

func (e *Engine) track(id string) (steps.Track, error) {
	for _, t := range e.Tracks() {
		if t.ID == id {
			return t, nil
		}
	}
	return steps.Lookup(id)
}

// PlanView converts a plan into what the plan screen shows. The track's
// next commands get the plan's values ($TOOLBOX_NAME becomes the pin), so
// they can be pasted as they are.
func PlanView(p *steps.Plan, stateDir string) *tui.Plan {
	v := &tui.Plan{Track: p.Track, Floating: p.Floating}
	v.Track.Next = expandNext(p.Track.Next, p.Env, stateDir)
	for _, s := range p.Steps {
		v.Steps = append(v.Steps, tui.PlanStep{
			ID: s.ID, Title: s.Title, Optional: s.Optional, Why: s.Why,
			WillRun: s.WillRun, Reason: s.Reason, Pins: s.PinValues,
		})
	}
	return v
}

// Start plans the track again (the state changed after a failure or a
// skip) and runs it; the runner closes the channel when the run is over.
func (e *Engine) Start(ctx context.Context, req tui.RunRequest) (<-chan runner.Event, error) {
	r, err := e.newRunner(req)
	if err != nil {
		return nil, err
	}
	go func() { _, _ = r.Run(ctx) }() // the outcome arrives as runner.RunFinished
	return r.Events(), nil
}

func (e *Engine) newRunner(req tui.RunRequest) (*runner.Runner, error) {
	p, err := e.newPlan(req.Track)
	if err != nil {
		return nil, err
	}
	o := runner.Options{
		Plan: p, StateDir: e.StateDir, ScriptsDir: e.ScriptsDir, ToolboxDir: e.ToolboxDir,
		PinsFile: e.PinsFile, Grace: e.Grace, Analyzer: runner.Diagnosis, KeepColor: true,
	}
	if e.Tune != nil {
		e.Tune(&o)
	}
	// A retry continues the run it follows, as build --resume does: the
	// steps that failed or stopped run again with HALOFORGE_RESUME=1, and
	// the run says what it resumes. A dry run keeps no state to resume.
	if req.Resume && !o.DryRun {
		o.Resume = true
	}
	if len(req.Skip) > 0 {
		// Going on after a skip runs what the plan says is left, minus the
		// skipped steps: --from and --only were for the first run.
		if len(runnableExcept(p, req.Skip)) == 0 {
			return nil, errors.New("nothing left to run")
		}
		o.From, o.Only, o.Skip = "", nil, req.Skip
	}
	return runner.New(o)
}

// runnableExcept lists the steps the plan would run, minus the skipped ones.
func runnableExcept(p *steps.Plan, skip []string) []string {
	var ids []string
	for _, s := range p.Steps {
		if s.WillRun && !slices.Contains(skip, s.ID) {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// PrepareRetry applies the configured fix, if any.
func (e *Engine) PrepareRetry(ctx context.Context, step string, f *diagnose.Finding) (string, error) {
	if e.Fix == nil {
		return "Retrying " + step + ".", nil
	}
	return e.Fix(ctx, step, f)
}

// Shell opens a shell in the toolbox, when distrobox and the pin are there.
func (e *Engine) Shell() *exec.Cmd {
	name := ""
	if e.NoShell {
		return nil
	}
	if e.Pins != nil {
		name = e.Pins.Values()["TOOLBOX_NAME"]
	}
	path, err := exec.LookPath("distrobox")
	if err != nil || name == "" {
		return nil
	}
	return exec.Command(path, "enter", name)
}

// Diagnose scans a log file, a run directory (steps named from the file
// names) or a bundle (directory or .tar.gz), exactly as `haloforge diagnose`.
func (e *Engine) Diagnose(path string) ([]diagnose.Finding, error) {
	in, err := diagnose.OpenInput(path, nil)
	if err != nil {
		return nil, err
	}
	return in.Scan()
}

// expandNext fills $NAME in the next commands from the plan's environment;
// unknown names stay as written.
func expandNext(cmds []string, env map[string]string, stateDir string) []string {
	out := make([]string, len(cmds))
	for i, c := range cmds {
		out[i] = os.Expand(c, func(name string) string {
			if name == "HALOFORGE_STATE_DIR" && stateDir != "" {
				return stateDir
			}
			if v, ok := env[name]; ok && v != "" {
				return v
			}
			return "$" + name
		})
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefInt(n *int64) int64 {
	if n == nil {
		return 0
	}
	return *n
}
