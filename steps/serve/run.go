package serve

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"time"

	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
)

// DefaultGrace is a server's SIGTERM to SIGKILL time: vLLM takes a few
// seconds to shut its engine core down, and the serve script needs its own
// grace (HALOFORGE_SERVE_GRACE) inside the runner's.
const DefaultGrace = 20 * time.Second

// scriptGrace is the serve script's own SIGTERM to SIGKILL time.
const scriptGrace = 10

// RunOptions are what a serve or bench run needs besides the launch.
type RunOptions struct {
	// Plan is the track's plan: its Env (every pin) is the step's too.
	Plan       *steps.Plan
	StateDir   string
	ScriptsDir string
	ToolboxDir string
	PinsFile   string
	KeepColor  bool
	// Tune adjusts the runner's options last (tests: the supervisor).
	Tune func(*runner.Options)
}

// onePlan is a plan of one step of the track, whatever its history says.
func onePlan(p *steps.Plan, id, title, script string, env map[string]string) *steps.Plan {
	t := p.Track
	st := steps.Step{ID: id, Title: title, Script: filepath.Base(script)}
	t.Steps = []steps.Step{st}
	e := maps.Clone(p.Env)
	if e == nil {
		e = map[string]string{}
	}
	maps.Copy(e, env)
	return &steps.Plan{Track: t, Env: e, Steps: []steps.PlannedStep{{Step: st, ScriptPath: script, WillRun: true,
		Reason: "asked for", PinValues: map[string]string{}}}}
}

// NewRunner makes the runner of a serve run: one step that runs the
// track's serve script with the launch's command, keeps no build history,
// and is diagnosed like any step.
func NewRunner(l Launch, o RunOptions) (*runner.Runner, error) {
	if o.Plan == nil {
		return nil, fmt.Errorf("serve: no plan of track %s", l.Track)
	}
	env := map[string]string{"HALOFORGE_SERVE_GRACE": strconv.Itoa(scriptGrace), "HALOFORGE_SERVE_CONTAINER": l.Container}
	title := fmt.Sprintf("Serve %s with %s on %s", orAny(l.Served), l.Engine, l.URL)
	p := onePlan(o.Plan, StepID, title, ServeScript(l.Track), env)
	ro := runner.Options{Plan: p, StateDir: o.StateDir, ScriptsDir: o.ScriptsDir, ToolboxDir: o.ToolboxDir, PinsFile: o.PinsFile,
		Kind: runner.RunServe, NoHistory: true, Args: map[string][]string{StepID: l.ScriptArgs()}, Analyzer: runner.Diagnosis,
		Grace: DefaultGrace, KeepColor: o.KeepColor}
	if o.Tune != nil {
		o.Tune(&ro)
	}
	return runner.New(ro)
}

// PIDFile is where a serve run's script writes the engine's PID.
func PIDFile(runDir string) string { return filepath.Join(runDir, StepID+".pid") }

// Start runs a launch: the runner of its serve step, and the watch that
// follows it. Read the watcher's Events until they close; Watcher.Stop is
// the user's stop. Cancelling ctx interrupts the run as a stop before
// readiness would.
func Start(ctx context.Context, l Launch, o RunOptions, wo WatchOptions) (*Watcher, error) {
	r, err := NewRunner(l, o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	wo.Launch, wo.Cancel = l, cancel
	if wo.PIDFile == "" {
		wo.PIDFile = PIDFile(r.RunDir())
	}
	w := Watch(r, wo)
	w.kill = r.Kill
	go func() {
		defer cancel()
		_, _ = r.Run(ctx) // the outcome arrives as runner.RunFinished
	}()
	return w, nil
}
