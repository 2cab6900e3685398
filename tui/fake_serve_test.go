package tui

import (
	"context"
	"errors"
	"io/fs"
	"sync"
	"time"

	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/bench"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/steps/serve"
	"github.com/haloforge/haloforge/tui/demo"
)

// The fake backend's server stands in for what cannot run in a unit test:
// an engine. It plays the events a serve of the llamacpp-distro proof gave
// (the real phases, readiness and timings of its recorded run), and its
// bench gives the proof's real llama-bench results.

// fakePins are the pins the fake's launches read.
var fakePins = map[string]string{"LLAMACPP_DISTRO_BOX": "haloforge-llamacpp", "LLAMA_MODEL": ""}

// fakeTinyModel is the proof's tiny model (its real header), written once
// per backend in the test's own directory.
func (f *fakeBackend) fakeTinyModel() (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.model == "" {
		p, err := demo.WriteTinyModel(f.t.TempDir())
		if err != nil {
			return "", err
		}
		f.model = p
	}
	return f.model, nil
}

func (f *fakeBackend) ServeSetup(_ context.Context, track string) (*ServeSetup, error) {
	if serve.EngineOf(track) == "" {
		return nil, errors.New("track " + track + " has no server")
	}
	if f.serveErr != nil {
		return nil, f.serveErr
	}
	model, err := f.fakeTinyModel()
	if err != nil {
		return nil, err
	}
	gtt := *strixHalo().Primary().GTTBytes
	return &ServeSetup{Track: "llamacpp-distro", Engine: serve.EngineLlamaCpp, Model: model, Port: 8080,
		Ceiling: serve.Ceiling{Bytes: uint64(gtt), Unified: true, Source: "the GTT of the integrated GPU"}}, nil
}

func (f *fakeBackend) PlanServe(r ServeRequest) (serve.Launch, error) {
	req := serve.Request{Track: "llamacpp-distro", Pins: fakePins, Model: r.Model, Context: r.Context, Util: r.Util, Port: r.Port, Unified: true}
	l, err := serve.Plan(req)
	if err != nil {
		return l, err
	}
	l.Estimate(req, serve.Ceiling{Bytes: uint64(*strixHalo().Primary().GTTBytes), Unified: true, Source: "GTT"})
	return l, nil
}

// fakeServing plays a serve run; Stop ends it as a user's stop does.
type fakeServing struct {
	ch   chan runner.Event
	stop chan struct{}
	once sync.Once
}

func (s *fakeServing) Events() <-chan runner.Event { return s.ch }
func (s *fakeServing) Stop()                       { s.once.Do(func() { close(s.stop) }) }

func (f *fakeBackend) Serve(ctx context.Context, r ServeRequest) (Serving, error) {
	l, err := f.PlanServe(r)
	if err != nil {
		return nil, err
	}
	if l.Fit != nil && !l.Fit.Fits {
		return nil, errors.New(l.Fit.Advice)
	}
	s := &fakeServing{ch: make(chan runner.Event, 16), stop: make(chan struct{})}
	go f.playServe(ctx, s, l)
	return s, nil
}

// playServe sends the recorded run's events: the phases at their recorded
// times (starting 0s, loading, model-loaded, health 1s, models 2s), then
// readiness and the first completion.
func (f *fakeBackend) playServe(ctx context.Context, s *fakeServing, l serve.Launch) {
	defer close(s.ch)
	out := f.stamp(s.ch)
	phases := serve.PhasesOf(serve.EngineLlamaCpp)
	out <- runner.RunStarted{Track: "llamacpp-distro", RunID: "fake-serve", RunDir: "/state/runs/fake-serve", Total: 1}
	out <- runner.StepStarted{Step: serve.StepID, Title: "Serve", Index: 1, Total: 1, Log: "/state/runs/fake-serve/serve.log"}
	at := []time.Duration{0, time.Second, time.Second, time.Second, 2 * time.Second}
	for i, ph := range phases[:len(phases)-1] {
		out <- serve.StartupPhase{Step: serve.StepID, Phase: ph.ID, Title: ph.Title, Index: i + 1, Total: len(phases), Budget: ph.Budget, Elapsed: at[i]}
		out <- runner.Lines{Step: serve.StepID, First: i + 1, Text: []string{"0.00.596.347 I srv  llama_server: phase " + string(ph.ID)}}
		time.Sleep(f.lineGap)
	}
	out <- serve.Ready{Step: serve.StepID, URL: l.URL, Model: l.Served, Elapsed: 2 * time.Second, SinceHealth: 250 * time.Millisecond}
	out <- serve.Smoke{Step: serve.StepID, SmokeResult: serve.SmokeResult{Endpoint: serve.SmokeEndpoint, TTFT: 118 * time.Millisecond, Tokens: 9, TokensPerSecond: 385.9, EngineTokensPerSecond: 365.1, Text: "7a7a7a"}}
	select {
	case <-s.stop:
	case <-ctx.Done():
	}
	out <- runner.StepFinished{Step: serve.StepID, Status: steps.OutcomeSucceeded, Why: "ready in 2s; stopped by you after 5s of service"}
	out <- runner.RunFinished{RunID: "fake-serve", RunDir: "/state/runs/fake-serve", Status: steps.OutcomeSucceeded}
}

func (f *fakeBackend) Bench(_ context.Context, _ ServeRequest) (<-chan runner.Event, error) {
	ch := make(chan runner.Event, 8)
	ch <- runner.RunStarted{Track: "llamacpp-distro", RunID: "fake-bench", RunDir: "/state/runs/fake-bench", Total: 1}
	// The engine's time arrives typed, in StepFinished: never read from a line.
	ch <- runner.Lines{Step: serve.BenchStepID, First: 1, Text: []string{"ggml_vulkan: 0 = llvmpipe (LLVM 22.1.8, 256 bits) (llvmpipe)"}}
	ch <- runner.StepFinished{Step: serve.BenchStepID, Status: steps.OutcomeSucceeded, Times: map[string]time.Duration{serve.EngineTime: 1216 * time.Millisecond}}
	ch <- runner.RunFinished{RunID: "fake-bench", RunDir: "/state/runs/fake-bench", Status: steps.OutcomeSucceeded}
	close(ch)
	return ch, nil
}

// BenchReport compares the proof's real llama-bench results.
func (f *fakeBackend) BenchReport(string) (*bench.Report, error) {
	raw, err := fs.ReadFile(demo.Scripts(), "logs/llama-bench.jsonl")
	if err != nil {
		return nil, err
	}
	run, err := bench.Parse(raw)
	if err != nil {
		return nil, err
	}
	rep := bench.Compare(run, bench.References(), bench.Host{})
	return &rep, nil
}
