package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/detect/hostfix"
	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/steps/serve"
	"github.com/haloforge/haloforge/tui"
	"github.com/haloforge/haloforge/tui/demo"
)

// DemoSource names the demo's machine on its GPU card.
const DemoSource = "demo bundle: a real Strix Halo box, from public snapshots"

// Demo is the wizard on the demo's built-in data: the engine over a real
// machine's bundle, the demo's pins and its replayed step scripts, with
// what the demo does differently. It runs its own track only (the others
// are plans to read), opens no shell, applies no host fix, writes no pins
// file, applies the fix of the failure it plays before a retry, and serves
// by replaying a recorded serve.
type Demo struct {
	*Engine
	rec replay // the recorded serve of the llamacpp-distro proof
}

var (
	_ tui.Backend   = (*Demo)(nil)
	_ tui.Diagnoser = (*Demo)(nil)
	_ tui.HostFixer = (*Demo)(nil)
	_ tui.PinSetter = (*Demo)(nil)
	_ tui.Server    = (*Demo)(nil)
)

// NewDemo returns the demo on its built-in data. Everything it writes
// (scripts, state, logs) goes under dir, a fresh directory, so the story
// starts from the beginning every time and nothing else is touched.
func NewDemo(dir string) (*Demo, error) {
	scriptsDir := filepath.Join(dir, "scripts")
	if err := demo.WriteScripts(scriptsDir); err != nil {
		return nil, err
	}
	toolboxDir := filepath.Join(dir, "toolbox")
	if err := os.MkdirAll(toolboxDir, 0o755); err != nil {
		return nil, err
	}
	pf, err := demo.Pins()
	if err != nil {
		return nil, err
	}
	stateDir := filepath.Join(dir, "state")
	model, err := demo.WriteTinyModel(filepath.Join(dir, "models"))
	if err != nil {
		return nil, err
	}
	e := &Engine{
		Workspace: steps.Workspace{StateDir: stateDir, ScriptsDir: scriptsDir, Scripts: demo.Scripts(), ToolboxDir: toolboxDir, Pins: pf},
		Source:    DemoSource, Detector: demoDetector, Catalogue: demoCatalogue(), HostEvidence: demoBootEvidence,
	}
	// Its serve replays a recording: nothing is started, so there is no
	// build to check.
	rp := replay{track: demo.ServeTrack, model: model, note: demo.ServeNote, noBuiltCheck: true,
		prober: func() serve.Prober { return demo.Prober(stateDir) }}
	return &Demo{Engine: e, rec: rp}, nil
}

// Plan plans any track: the demo's own can run, the others are for
// reading (the demo has no scripts for them).
func (d *Demo) Plan(track string) (*tui.Plan, error) {
	if track == demo.TrackID {
		return d.Engine.Plan(track)
	}
	p, err := d.newPlan(track)
	var missing *steps.MissingScriptError
	if err != nil && !errors.As(err, &missing) {
		return nil, err
	}
	v := d.view(p)
	v.ReadOnly = readOnly(track, v.Needs)
	return v, nil
}

// readOnly is why the demo only shows the plan of track, and the command
// that builds it on a real machine, with the values it cannot run without.
func readOnly(track string, needs []string) string {
	build := "haloforge build --track " + track
	for _, n := range needs {
		build += " --set " + n + "=" + steps.InputExample(n)
	}
	return fmt.Sprintf("The demo runs %s only; this plan of %s is for reading (on a real machine: %s).", demo.TrackID, track, build)
}

// Start runs the demo's own track.
func (d *Demo) Start(ctx context.Context, req tui.RunRequest) (<-chan runner.Event, error) {
	if req.Track != demo.TrackID {
		return nil, errors.New(readOnly(req.Track, nil))
	}
	return d.Engine.Start(ctx, req)
}

// PrepareRetry applies the demo's fix when the finding is the one it knows.
func (d *Demo) PrepareRetry(_ context.Context, step string, f *diagnose.Finding) (string, error) {
	if f == nil || f.Family != demo.FailureFamily {
		return "Retrying " + step + ".", nil
	}
	if err := demo.ApplyFix(d.StateDir); err != nil {
		return "", err
	}
	// named as the panel showed it: the finding's first fix line
	first, _, _ := strings.Cut(cmp.Or(f.Fix, demo.FixCommand()), "\n")
	if c, _, ok := strings.Cut(first, "   #"); ok {
		first = c
	}
	return "Applied the fix for " + f.Family + " (" + strings.TrimSpace(first) + "); retrying " + step + ".", nil
}

// Shell opens nothing: the demo installs no box.
func (d *Demo) Shell(string) (*exec.Cmd, string) {
	return nil, "The demo installs nothing, so there is no box; on your machine s opens a shell in the track's distrobox."
}

// HostFix plans the fixes of the demo's machine, which it never applies.
func (d *Demo) HostFix(context.Context) (*tui.HostFix, error) {
	p, err := d.lastHostPlan()
	if err != nil {
		return nil, err
	}
	return &tui.HostFix{Plan: p, Refusal: DemoHostRefusal}, nil
}

// ApplyHostFix refuses: the demo's machine is not this one.
func (d *Demo) ApplyHostFix(context.Context, *tui.HostFix, io.Writer) (*tui.HostFixResult, error) {
	return nil, errors.New(DemoHostRefusal)
}

// PinSets lists the sets against the demo's pins, which it never writes.
func (d *Demo) PinSets() (*tui.PinSets, error) {
	ps, err := d.Engine.PinSets()
	if err != nil {
		return nil, err
	}
	ps.CannotWrite, ps.Creates = DemoPinsRefusal, ""
	return ps, nil
}

// UsePinSet refuses: the demo writes no pins file.
func (d *Demo) UsePinSet(string) (*tui.PinSetUsed, error) {
	return nil, errors.New(DemoPinsRefusal)
}

// ServeSetup is the recorded serve's track, model and note.
func (d *Demo) ServeSetup(ctx context.Context, track string) (*tui.ServeSetup, error) {
	return d.serveSetup(ctx, track, d.rec)
}

// PlanServe plans the recorded serve's launch of the form's values.
func (d *Demo) PlanServe(r tui.ServeRequest) (serve.Launch, error) { return d.planServe(r, d.rec) }

// Serve replays the recorded serve through the real runner.
func (d *Demo) Serve(ctx context.Context, r tui.ServeRequest) (tui.Serving, error) {
	return d.serve(ctx, r, d.rec)
}

// Bench replays the recorded llama-bench run.
func (d *Demo) Bench(ctx context.Context, r tui.ServeRequest) (<-chan runner.Event, error) {
	return d.bench(ctx, r, d.rec)
}

// DemoHostRefusal is the demo's answer to APPLY on the host-fix screen.
const DemoHostRefusal = "demo: nothing is applied (sample data, not this machine)"

// DemoPinsRefusal is why the demo never writes a set into a pins file.
const DemoPinsRefusal = "demo: nothing is written (sample data); on your machine, u writes the set into your versions.env after a y/N question, as haloforge pins use does."

// demoBootEvidence is how the demo's machine boots, as far as its bundle says.
func demoBootEvidence() (*hostfix.Evidence, error) {
	b, err := demo.Bundle()
	if err != nil {
		return nil, err
	}
	ev, _ := hostfix.FromBundle(b)
	return ev, nil
}

// demoCatalogue is the real catalogue with the demo's track in its place.
func demoCatalogue() []steps.Track {
	cat := steps.Catalogue()
	for i := range cat {
		if cat[i].ID == demo.TrackID {
			cat[i] = demo.Track()
		}
	}
	return cat
}

// demoDetector analyses the demo's bundle exactly as `doctor --bundle` would.
func demoDetector(context.Context) (*detect.Report, error) {
	b, err := demo.Bundle()
	if err != nil {
		return nil, err
	}
	return detect.Analyse(b), nil
}
