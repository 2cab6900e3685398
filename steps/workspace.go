package steps

import (
	"io/fs"

	"github.com/haloforge/haloforge/pins"
)

// Workspace is where haloforge plans and runs: the state dir, the step
// scripts, the container definitions and the pins. cmd builds it once from
// the global flags (--state-dir, --scripts, --pins, --set); runner.Options
// and the wizard's session.Engine embed it, so that a run, a plan and the
// wizard all read the same four things.
type Workspace struct {
	StateDir string // state.json, runs/<run-id>/, cache/<track>/
	// ScriptsDir is the scripts tree on disk, which the runner executes
	// (<dir>/<track>/<file>); "" until something runs. Scripts is the same
	// tree, whose bytes go into the plans' cache keys.
	ScriptsDir string
	Scripts    fs.FS
	// ToolboxDir holds the container definitions and toolbox.env, which
	// the scripts read; "" when nothing runs.
	ToolboxDir string
	Pins       *pins.File
	PinsFile   string // the pins file on disk, named in reports and read by scripts; "" when built in
}

// Plan plans the track with the workspace's pins and scripts against the
// state dir's history. A *MissingScriptError comes with the plan it
// concerns, which can still be read.
func (w Workspace) Plan(t Track) (*Plan, error) {
	st, err := LoadState(w.StateDir)
	if err != nil {
		return nil, err
	}
	return NewPlan(t, w.Pins, w.Scripts, st)
}
