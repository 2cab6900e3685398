package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/detect/hostfix"
	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/serve"
	"github.com/haloforge/haloforge/tui/demo"
)

// DemoSource names the demo's machine on its GPU card.
const DemoSource = "demo bundle: a real Strix Halo box, from public snapshots"

// NewDemo returns an engine on the demo's built-in data. Everything it
// writes (scripts, state, logs) goes under dir, a fresh directory, so the
// story starts from the beginning every time and nothing else is touched.
func NewDemo(dir string) (*Engine, error) {
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
	e := &Engine{
		StateDir: stateDir, ScriptsDir: scriptsDir, Scripts: demo.Scripts(), ToolboxDir: toolboxDir,
		Pins: pf, Source: DemoSource, Detector: demoDetector,
		Catalogue: demoCatalogue(), Runnable: []string{demo.TrackID}, NoShell: true,
	}
	e.Fix = func(_ context.Context, step string, f *diagnose.Finding) (string, error) {
		return demoFix(stateDir, step, f)
	}
	e.HostEvidence, e.HostRefusal = demoBootEvidence, DemoHostRefusal
	e.PinsRefusal = DemoPinsRefusal
	// The serve screen replays the recorded serve of the llamacpp-distro proof.
	model, err := demo.WriteTinyModel(filepath.Join(dir, "models"))
	if err != nil {
		return nil, err
	}
	e.ServeTrack, e.ServeModel, e.ServeNote = demo.ServeTrack, model, demo.ServeNote
	e.Prober = func() serve.Prober { return demo.Prober(stateDir) }
	e.NoBuiltCheck = true // its serve replays a recording: nothing is started
	return e, nil
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

// demoFix applies the demo's fix when the finding is the one it knows.
func demoFix(stateDir, step string, f *diagnose.Finding) (string, error) {
	if f == nil || f.Family != demo.FailureFamily {
		return "Retrying " + step + ".", nil
	}
	if err := demo.ApplyFix(stateDir); err != nil {
		return "", err
	}
	first, _, _ := strings.Cut(demo.FixCommand(), "\n")
	return "Applied the fix for " + f.Family + " (" + first + "); retrying " + step + ".", nil
}
