package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/haloforge/haloforge/detect"
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
	// The serve screen replays the recorded serve of the llamacpp-distro proof.
	model, err := demo.WriteTinyModel(filepath.Join(dir, "models"))
	if err != nil {
		return nil, err
	}
	e.ServeTrack, e.ServeModel, e.ServeNote = demo.ServeTrack, model, demo.ServeNote
	e.Prober = func() serve.Prober { return demo.Prober(stateDir) }
	return e, nil
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
