// Package session is the wizard's engine in plain Go: it connects the
// screens of package tui to detection, plans, the pty runner and the
// diagnosis, and tells the same story in line mode when there is no
// terminal. It imports no Bubble Tea package of its own.
package session

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/haloforge/haloforge/steps/bench"
	"github.com/haloforge/haloforge/steps/preflight"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/steps/serve"
	"github.com/haloforge/haloforge/tui"
)

// Engine is the wizard's engine over the real packages: it is every role
// the screens ask for (tui.Backend, tui.Diagnoser, tui.HostFixer,
// tui.PinSetter, tui.Server). The demo wraps it (Demo).
type Engine struct {
	// Workspace is the state dir, the scripts, the container definitions
	// and the pins the session plans and runs with.
	steps.Workspace
	// Flags are the global flags the user gave (--pins, --set, --scripts,
	// --state-dir), quoted for a shell: every haloforge command the session
	// prints carries them, so that it acts on the same pins and state.
	Flags []string
	// Detector collects and analyses the machine (or a bundle); Source
	// says which, for the card.
	Detector func(ctx context.Context) (*detect.Report, error)
	Source   string
	// Catalogue is the tracks the picker offers (nil: steps.Catalogue()).
	Catalogue []steps.Track
	// Run holds the runner options every build of the session starts from
	// (build's --from, --only, --dry-run and --resume on a terminal, the
	// grace of a stop, a test's supervisor); the engine sets the plan, the
	// workspace, the diagnosis and the colours.
	Run runner.Options
	// Busy says, in one line, which other build holds the state dir ("" when
	// none): the plan shows it and nothing starts. nil never is busy.
	Busy func() string
	// Notes are shown with every plan (a ./scripts tree in use).
	Notes []string

	// Host fixes (tui/session/hostfix.go). HostRoot is the system they are
	// planned for and applied to: "" is this machine. HostEvidence reads how
	// it boots (nil: from HostRoot); HostRunner runs the apply's commands
	// (nil: for real, through sudo when not root).
	HostRoot     string
	HostEvidence func() (*hostfix.Evidence, error)
	HostRunner   hostfix.Runner
	// Version is haloforge's version, recorded in host-fix plans and backups.
	Version string

	// Pins sets (tui/session/sets.go). ReloadPins reads the pins again after
	// the wizard wrote a set into PinsFile, with the command line's --set
	// (nil: PinsFile alone). Now is the clock (nil: time.Now).
	ReloadPins func() (*pins.File, error)
	// CreatePins, when the pins are the built-in copy (PinsFile ""), is the
	// pins file the sets view's u creates after its y/N question, as
	// `haloforge pins use SET` does: nil means it creates none.
	CreatePins *PinsCreate
	Now        func() time.Time
	// Preflight, when set, asks upstream about a track's pins when its plan
	// is shown (steps/preflight, as `plan` and `build` do): a pin that is gone
	// makes the plan one to read until a set is used. nil: the plan shows
	// what the last `pins status` found.
	Preflight func(ctx context.Context, t steps.Track, pf *pins.File) *preflight.Result

	// ProbeBuilt finds a track's box or image before a serve or bench
	// (tui/session/serve.go; nil: the container manager, serve.ProbeContainers).
	ProbeBuilt serve.Probe

	mu     sync.Mutex
	report *detect.Report // the last detection, which the host fixes plan for

	ceilingOnce  sync.Once
	ceilingValue serve.Ceiling
	hasGPU       bool
	// benchModel is what a token of the last benchmark's model reads, from
	// its file (guarded by mu): its report's roofline uses it.
	benchModel *bench.Weights
}

var (
	_ tui.Backend   = (*Engine)(nil)
	_ tui.Diagnoser = (*Engine)(nil)
)

// Detect runs the detector and adds to its report what the detection
// screen shows with it: the recommended track, where the facts came from,
// the host fixes doctor --plan would make.
func (e *Engine) Detect(ctx context.Context) (*tui.Detection, error) {
	if e.Detector == nil {
		return nil, errors.New("no detector")
	}
	r, err := e.Detector(ctx)
	if err != nil {
		return nil, err
	}
	if r.RecommendedTrack == "" {
		r.RecommendedTrack = steps.RecommendFor(r)
	}
	e.setReport(r)
	d := &tui.Detection{Report: r, Source: e.Source}
	d.HostFixes, d.HostFixesByHand = e.hostFixCount(r)
	return d, nil
}

// Tracks lists the picker's tracks.
func (e *Engine) Tracks() []steps.Track {
	if e.Catalogue != nil {
		return e.Catalogue
	}
	return steps.Catalogue()
}

// Plan computes the track's plan against the state dir's history, with
// what would stop it: a value it needs, another build.
func (e *Engine) Plan(track string) (*tui.Plan, error) {
	p, err := e.newPlan(track)
	if err != nil {
		return nil, err
	}
	return e.view(p), nil
}

// view is the plan as the plan and run screens show it: the next commands
// as they will be pasted, the steps' last times for the estimate, and what
// would stop it (a value it needs, another build, retired pins).
func (e *Engine) view(p *steps.Plan) *tui.Plan {
	v := &tui.Plan{Plan: p, Next: NextCommands(p, e.StateDir, e.Flags...), Box: BoxName(p.Track, p.Env), Notes: e.Notes}
	if st, _ := steps.LoadState(e.StateDir); st != nil && st.Tracks[p.Track.ID] != nil {
		v.Last = map[string]time.Duration{}
		for id, s := range st.Tracks[p.Track.ID].Steps {
			if s != nil && s.LastSuccess != nil {
				v.Last[id] = s.LastSuccess.Duration
			}
		}
	}
	var values map[string]string
	if e.Pins != nil {
		values = e.Pins.Values()
	}
	v.Needs = p.Track.MissingInputs(values)
	if e.Busy != nil {
		v.Busy = e.Busy()
	}
	if e.Preflight == nil || e.Pins == nil {
		v.PinWarning = e.pinWarning(p.Track.PinNames())
		return v
	}
	up := e.Preflight(context.Background(), p.Track, e.Pins)
	if up.Blocks() || len(up.Moved) > 0 || up.Offline != "" {
		v.PinWarning = up.Lines(e.clock())
	}
	if up.Blocks() && v.ReadOnly == "" {
		v.ReadOnly = fmt.Sprintf("%s needs a pin that is gone upstream (above): step %s would fail. p shows the known-good sets; using one plans the track again.", p.Track.ID, up.FirstStep)
	}
	return v
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

// newPlan plans a track of the engine's catalogue in its workspace; a
// *steps.MissingScriptError comes with the plan.
func (e *Engine) newPlan(track string) (*steps.Plan, error) {
	t, err := e.track(track)
	if err != nil {
		return nil, err
	}
	return e.Workspace.Plan(t)
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

// NextCommands are the track's next commands as they are pasted once it is
// built: $NAME filled from the plan's values ($TOOLBOX_NAME becomes the
// pin), each haloforge command with flags (the user's global flags).
func NextCommands(p *steps.Plan, stateDir string, flags ...string) []string {
	return WithFlags(expandNext(p.Track.Next, p.Env, stateDir), flags)
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
	p, err := e.newPlan(req.Track)
	if err != nil {
		return nil, err
	}
	o := e.Run
	o.Plan, o.Workspace, o.Analyzer, o.KeepColor = p, e.Workspace, runner.Diagnosis, true
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

// PrepareRetry changes nothing: on a real machine the user applies the
// fix the hint panel shows before pressing r.
func (e *Engine) PrepareRetry(_ context.Context, step string, _ *diagnose.Finding) (string, error) {
	return "Retrying " + step + ".", nil
}

// Shell opens a shell in the track's own distrobox, and only when it
// exists: `distrobox enter` offers to create a missing box (default yes)
// without the GPU devices haloforge gives it, so this never gets that far.
func (e *Engine) Shell(track string) (*exec.Cmd, string) {
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

// deref is the string p points at, "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
