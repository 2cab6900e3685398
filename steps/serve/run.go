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
	Plan *steps.Plan
	// Workspace is where the run reads its scripts and writes its log.
	steps.Workspace
	KeepColor bool
	// Grace is the SIGTERM to SIGKILL time of a stop; 0 means the run's
	// own (DefaultGrace for a server, the runner's for a benchmark).
	Grace time.Duration
}

// runnerOptions are the runner's options of a serve or bench run of p,
// whose one step gets args: no build history, diagnosed like any step.
func (o RunOptions) runnerOptions(p *steps.Plan, step string, args []string, grace time.Duration) runner.Options {
	if o.Grace != 0 {
		grace = o.Grace
	}
	kind := runner.RunServe
	if step == BenchStepID {
		kind = runner.RunBench
	}
	return runner.Options{Plan: p, Workspace: o.Workspace, Kind: kind, NoHistory: true, Args: map[string][]string{step: args},
		Analyzer: runner.Diagnosis, Grace: grace, KeepColor: o.KeepColor}
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
	return runner.New(o.runnerOptions(p, StepID, l.ScriptArgs(), DefaultGrace))
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
