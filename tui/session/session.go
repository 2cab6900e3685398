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
	// Flags are the global flags the user gave (--pins, --set, --scripts,
	// --state-dir), quoted for a shell: every haloforge command the session
	// prints carries them, so that it acts on the same pins and state.
	Flags []string
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
	// Busy says, in one line, which other build holds the state dir ("" when
	// none): the plan shows it and nothing starts. nil never is busy.
	Busy func() string
	// Notes are shown with every plan (a ./scripts tree in use).
	Notes []string
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
	// CreatePins, when the pins are the built-in copy (PinsFile ""), is the
	// pins file the sets view's u creates after its y/N question, as
	// `haloforge pins use SET` does: nil means it creates none.
	CreatePins *PinsCreate
	Now        func() time.Time

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
	// ProbeBuilt finds a track's box or image before a serve or bench
	// (nil: the container manager, serve.ProbeContainers);
	// NoBuiltCheck skips the check (the demo replays a recorded serve).
	ProbeBuilt   serve.Probe
	NoBuiltCheck bool

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
	d.HostFixes, d.HostFixesByHand = e.hostFixCount(r)
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
		d.Checks = append(d.Checks, tui.Check{ID: string(c.ID), Status: c.Status, Summary: c.Summary, Fix: c.Fix})
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

// Plan computes the track's plan against the state dir's history, with
// what would stop it: a value it needs, another build. The demo plans
// every track and runs its own: the others are plans to read.
func (e *Engine) Plan(track string) (*tui.Plan, error) {
	p, readOnly, err := e.newPlan(track)
	if err != nil {
		return nil, err
	}
	st, _ := steps.LoadState(e.StateDir)
	v := PlanView(p, e.StateDir, st, e.Flags...)
	v.ReadOnly, v.Notes = readOnly, e.Notes
	v.Needs = needs(p.Track, e.Pins)
	if e.Busy != nil {
		v.Busy = e.Busy()
	}
	v.PinWarning = e.pinWarning(p.Track.PinNames())
	return v, nil
}

// needs lists the pins the track cannot run without that are empty.
func needs(t steps.Track, pf *pins.File) []tui.Need {
	var values map[string]string
	if pf != nil {
		values = pf.Values()
	}
	var out []tui.Need
	for _, n := range t.MissingInputs(values) {
		need := tui.Need{Name: n, Example: "/path/to/model.gguf"}
		if spec, ok := pins.Lookup(n); ok {
			need.Help = spec.Help
			if spec.Kind != pins.KindPath {
				need.Example = string(spec.Kind)
			}
		}
		out = append(out, need)
	}
	return out
}

// SetPin sets a pin for the rest of the session, validated like --set; a
// path the track needs must be a file that is there.
func (e *Engine) SetPin(assign string) error {
	if e.Pins == nil {
		return errors.New("no pins to set")
	}
	name, value, _ := strings.Cut(assign, "=")
	if spec, ok := pins.Lookup(name); ok && spec.Kind == pins.KindPath && value != "" {
		st, err := os.Stat(value)
		switch {
		case err != nil:
			return fmt.Errorf("%s=%s: no such file", name, value)
		case !st.Mode().IsRegular():
			return fmt.Errorf("%s=%s: not a regular file", name, value)
		}
	}
	return e.Pins.Set(assign)
}

// planOf is the track's plan against the state dir's history (serve plans
// the track it serves; a demo-only plan is fine to read).
func (e *Engine) planOf(track string) (*steps.Plan, error) {
	p, _, err := e.newPlan(track)
	return p, err
}

// newPlan plans a track; readOnly says why it cannot run here ("" when
// it can): the demo has scripts for its own track only.
func (e *Engine) newPlan(track string) (*steps.Plan, string, error) {
	t, err := e.track(track)
	if err != nil {
		return nil, "", err
	}
	st, err := steps.LoadState(e.StateDir)
	if err != nil {
		return nil, "", err
	}
	p, err := steps.NewPlan(t, e.Pins, e.Scripts, st)
	if e.Runnable != nil && !slices.Contains(e.Runnable, track) {
		var missing *steps.MissingScriptError
		if err != nil && !errors.As(err, &missing) {
			return nil, "", err
		}
		return p, fmt.Sprintf("The demo runs %s only; this plan of %s is for reading (on a real machine: haloforge build --track %s).", strings.Join(e.Runnable, ", "), track, track), nil
	}
	return p, "", err
}

func (e *Engine) track(id string) (steps.Track, error) {
	for _, t := range e.Tracks() {
		if t.ID == id {
			return t, nil
		}
	}
	return steps.Lookup(id)
}

// PinsCreate is a pins file to create from the built-in copy (Base, named
// BaseName in messages) with a set's values.
type PinsCreate struct {
	Path, BaseName string
	Base           []byte
}

// PlanView converts a plan into what the plan screen shows. The track's
// next commands get the plan's values ($TOOLBOX_NAME becomes the pin), so
// they can be pasted as they are, and each haloforge command carries flags
// (the user's global flags); st (may be nil) gives each step's last time,
// for the estimate.
func PlanView(p *steps.Plan, stateDir string, st *steps.State, flags ...string) *tui.Plan {
	v := &tui.Plan{Track: p.Track, Floating: p.Floating, Box: BoxName(p.Track, p.Env)}
	v.Track.Next = WithFlags(expandNext(p.Track.Next, p.Env, stateDir), flags)
	var ts *steps.TrackState
	if st != nil {
		ts = st.Tracks[p.Track.ID]
	}
	for _, s := range p.Steps {
		ps := tui.PlanStep{
			ID: s.ID, Title: s.Title, Optional: s.Optional, Why: s.Why,
			WillRun: s.WillRun, Reason: s.Reason, Pins: s.PinValues,
		}
		if ts != nil && ts.Steps[s.ID] != nil && ts.Steps[s.ID].LastSuccess != nil {
			ps.Last = ts.Steps[s.ID].LastSuccess.Duration
		}
		v.Steps = append(v.Steps, ps)
	}
	return v
}

// BoxName is the distrobox a track builds in, "" when it has none: the
// value of the box-name pin its toolbox step reads (TOOLBOX_NAME for
// therock-toolbox, LLAMACPP_DISTRO_BOX for llamacpp-distro).
func BoxName(t steps.Track, env map[string]string) string {
	s, ok := t.Step("toolbox")
	if !ok {
		return ""
	}
	for _, name := range s.Pins {
		if spec, ok := pins.Lookup(name); ok && spec.Kind == pins.KindName {
			return env[name]
		}
	}
	return ""
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
	p, readOnly, err := e.newPlan(req.Track)
	if err != nil {
		return nil, err
	}
	if readOnly != "" {
		return nil, errors.New(readOnly)
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

// Shell opens a shell in the track's own distrobox, and only when it
// exists: `distrobox enter` offers to create a missing box (default yes)
// without the GPU devices haloforge gives it, so this never gets that far.
func (e *Engine) Shell(track string) (*exec.Cmd, string) {
	if e.NoShell {
		return nil, "The demo installs nothing, so there is no box; on your machine s opens a shell in the track's distrobox."
	}
	t, err := e.track(track)
	if err != nil {
		return nil, err.Error()
	}
	var values map[string]string
	if e.Pins != nil {
		values = e.Pins.Values()
	}
	box := BoxName(t, values)
	if box == "" {
		return nil, track + " builds no distrobox, so there is no box to enter; its containers are listed by `podman ps -a`."
	}
	distrobox, err := exec.LookPath("distrobox")
	if err != nil {
		return nil, "distrobox is not installed, so there is no box " + box + " to enter."
	}
	switch exists, known := serve.BoxExists(box, os.Getenv("HALOFORGE_DISTROBOX_ROOT") == "1"); {
	case !known:
		return nil, "Could not tell whether the box " + box + " exists (podman or docker missing): `distrobox enter " + box + "` opens it by hand."
	case !exists:
		return nil, "The box " + box + " does not exist yet: its toolbox step creates it (haloforge build --track " + track + " --only toolbox)."
	}
	args := []string{"enter"}
	if os.Getenv("HALOFORGE_DISTROBOX_ROOT") == "1" {
		args = append(args, "--root")
	}
	return exec.Command(distrobox, append(args, box)...), ""
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
// WithFlags appends flags to each command of cmds that runs haloforge (a
// launcher script is left as it is).
func WithFlags(cmds []string, flags []string) []string {
	if len(flags) == 0 {
		return cmds
	}
	out := make([]string, len(cmds))
	for i, c := range cmds {
		out[i] = c
		if strings.HasPrefix(c, "haloforge ") {
			out[i] = c + " " + strings.Join(flags, " ")
		}
	}
	return out
}

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
