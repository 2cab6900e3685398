package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/bench"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/steps/serve"
	"github.com/haloforge/haloforge/tui"
)

var _ tui.Server = (*Engine)(nil)

// replay is how the demo serves (Demo): one track's recorded run whatever
// the screen asked for, a model and a note of its own, no build to check,
// the recorded answers to the probes. The engine's own is the zero value:
// the track asked for, for real.
type replay struct {
	track        string // the track every serve and bench uses
	model        string // the model the form offers first
	note         string // said above the form
	noBuiltCheck bool
	prober       func() serve.Prober
}

// serveTrack is the track a serve or bench of track uses.
func (r replay) serveTrack(track string) string {
	if r.track != "" {
		return r.track
	}
	return track
}

// servePlan is the serve track's plan: its pins are the engine's. A serve
// needs no build script of the track here (the demo's tree has none).
func (e *Engine) servePlan(track string) (*steps.Plan, error) {
	p, err := e.newPlan(track)
	var missing *steps.MissingScriptError
	if err != nil && !errors.As(err, &missing) {
		return nil, err
	}
	return p, nil
}

// ServeSetup reads the track's defaults and this machine's GPU memory.
func (e *Engine) ServeSetup(ctx context.Context, track string) (*tui.ServeSetup, error) {
	return e.serveSetup(ctx, track, replay{})
}

func (e *Engine) serveSetup(ctx context.Context, track string, rp replay) (*tui.ServeSetup, error) {
	track = rp.serveTrack(track)
	engine := serve.EngineOf(track)
	if engine == "" {
		return nil, fmt.Errorf("track %s has no server haloforge can run", track)
	}
	p, err := e.servePlan(track)
	if err != nil {
		return nil, err
	}
	built, err := e.checkBuilt(p, rp)
	if err != nil {
		return nil, err
	}
	s := &tui.ServeSetup{Track: track, Engine: engine, Note: rp.note}
	if built.Note != "" {
		s.Note = strings.TrimSpace(s.Note + " Note: " + built.Note + ".")
	}
	if e.Detector != nil {
		if r, err := e.Detector(ctx); err == nil {
			s.Ceiling = serve.CeilingOf(r)
		}
	}
	req := serve.Request{Track: track, Pins: p.Env, Model: rp.model}
	if l, err := serve.Plan(req); err == nil {
		s.Model, s.Port = l.Model, l.Port
	} else if tiny := serve.TinyModel(e.StateDir, track); s.Model == "" && tiny != "" {
		if _, err := os.Stat(tiny); err == nil {
			s.Model = tiny // the verify step's tiny model: it runs, no speed claim
		}
	}
	if s.Port == 0 {
		if l, err := serve.Plan(serve.Request{Track: track, Pins: p.Env, Model: s.Model}); err == nil {
			s.Port = l.Port
		}
	}
	return s, nil
}

// checkBuilt refuses a track that is not built (serve.NotBuiltError),
// unless its box or image exists anyway (then the note says so).
func (e *Engine) checkBuilt(p *steps.Plan, rp replay) (serve.Built, error) {
	if rp.noBuiltCheck {
		return serve.Built{}, nil
	}
	st, err := steps.LoadState(e.StateDir)
	if err != nil {
		return serve.Built{}, err
	}
	probe := e.ProbeBuilt
	if probe == nil {
		probe = serve.ProbeContainers
	}
	return serve.CheckBuilt(p.Track, st, serve.Where{StateDir: e.StateDir, Flags: e.Flags}, p.Env, os.Getenv("HALOFORGE_DISTROBOX_ROOT") == "1", probe)
}

// request turns the form into a serve request.
func (e *Engine) request(r tui.ServeRequest, p *steps.Plan, rp replay, noGPU, unified bool) serve.Request {
	return serve.Request{Track: rp.serveTrack(r.Track), Pins: p.Env, Model: r.Model, Context: r.Context, Util: r.Util, Port: r.Port,
		Root: os.Getenv("HALOFORGE_DISTROBOX_ROOT") == "1", NoGPU: noGPU, Unified: unified}
}

// PlanServe decides the launch of a request and sizes it against the
// ceiling the last ServeSetup found.
func (e *Engine) PlanServe(r tui.ServeRequest) (serve.Launch, error) {
	return e.planServe(r, replay{})
}

func (e *Engine) planServe(r tui.ServeRequest, rp replay) (serve.Launch, error) {
	p, err := e.servePlan(rp.serveTrack(r.Track))
	if err != nil {
		return serve.Launch{}, err
	}
	c := e.ceiling()
	req := e.request(r, p, rp, e.noGPU(), c.Unified)
	l, err := serve.Plan(req)
	if err != nil {
		return serve.Launch{}, err
	}
	l.Estimate(req, c)
	return l, nil
}

// ceiling is this machine's GPU memory ceiling, detected once.
func (e *Engine) ceiling() serve.Ceiling {
	e.ceilingOnce.Do(func() {
		if e.Detector == nil {
			return
		}
		if r, err := e.Detector(context.Background()); err == nil {
			e.ceilingValue = serve.CeilingOf(r)
			e.hasGPU = r.Primary() != nil
		}
	})
	return e.ceilingValue
}

// noGPU says a CPU Vulkan device stands in for the GPU (tests, GPU-less machines).
func (e *Engine) noGPU() bool {
	e.ceiling()
	return os.Getenv("HALOFORGE_ALLOW_NO_GPU") == "1" && !e.hasGPU
}

// runOptions are the runner's inputs of a serve or bench run.
func (e *Engine) runOptions(p *steps.Plan) serve.RunOptions {
	return serve.RunOptions{Plan: p, Workspace: e.Workspace, KeepColor: true}
}

// Serve starts the server of a request, unless its fit says no.
func (e *Engine) Serve(ctx context.Context, r tui.ServeRequest) (tui.Serving, error) {
	return e.serve(ctx, r, replay{})
}

func (e *Engine) serve(ctx context.Context, r tui.ServeRequest, rp replay) (tui.Serving, error) {
	l, err := e.planServe(r, rp)
	if err != nil {
		return nil, err
	}
	if l.Fit != nil && !l.Fit.Fits {
		return nil, errors.New(l.Fit.Advice)
	}
	p, err := e.servePlan(l.Track)
	if err != nil {
		return nil, err
	}
	if _, err := e.checkBuilt(p, rp); err != nil {
		return nil, err
	}
	wo := serve.WatchOptions{Smoke: true}
	if rp.prober != nil {
		wo.Prober = rp.prober()
	}
	return serve.Start(ctx, l, e.runOptions(p), wo)
}

// Bench runs the track's benchmark: llama-bench on the form's model, or
// vLLM's benchmark against the form's server.
func (e *Engine) Bench(ctx context.Context, r tui.ServeRequest) (<-chan runner.Event, error) {
	return e.bench(ctx, r, replay{})
}

func (e *Engine) bench(ctx context.Context, r tui.ServeRequest, rp replay) (<-chan runner.Event, error) {
	track := rp.serveTrack(r.Track)
	p, err := e.servePlan(track)
	if err != nil {
		return nil, err
	}
	if _, err := e.checkBuilt(p, rp); err != nil {
		return nil, err
	}
	// A benchmark of a server measures the one the form started.
	url := serve.DefaultURL(track, p.Env)
	if r.Port != 0 {
		url = "http://127.0.0.1:" + strconv.Itoa(r.Port)
	}
	b, err := serve.PlanBench(serve.BenchRequest{Track: track, Pins: p.Env, Model: r.Model, URL: url,
		Tiny: serve.TinyModel(e.StateDir, track), Root: os.Getenv("HALOFORGE_DISTROBOX_ROOT") == "1", NoGPU: e.noGPU()})
	if err != nil {
		return nil, err
	}
	run, err := serve.NewBenchRunner(b, e.runOptions(p))
	if err != nil {
		return nil, err
	}
	// The model's own file, where the engine reads one, says what a token
	// reads for the report's roofline, as bench --track does.
	var model *bench.Weights
	if en, ok := serve.EngineNamed(b.Engine); ok {
		if shape, note := en.Shape(b.Model); note == "" {
			model = shape.Weights
		}
	}
	e.mu.Lock()
	e.benchModel = model
	e.mu.Unlock()
	go func() { _, _ = run.Run(ctx) }() // the outcome arrives as runner.RunFinished
	return run.Events(), nil
}

// BenchReport compares a bench run's results with the references.
func (e *Engine) BenchReport(runDir string) (*bench.Report, error) {
	for _, name := range serve.BenchResultFiles() {
		raw, err := os.ReadFile(filepath.Join(runDir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if len(raw) > bench.MaxInput {
			return nil, fmt.Errorf("%s: larger than %d MiB", name, bench.MaxInput>>20)
		}
		run, err := bench.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		e.mu.Lock()
		run.Model = e.benchModel
		e.mu.Unlock()
		rep := bench.Compare(run, bench.References(), bench.Host{Device: e.ceiling().GPU})
		return &rep, nil
	}
	return nil, fmt.Errorf("%s holds no benchmark results", runDir)
}
