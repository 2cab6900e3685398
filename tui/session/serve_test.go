package session

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/bench"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/steps/serve"
	"github.com/haloforge/haloforge/steps/verify"
	"github.com/haloforge/haloforge/tui"
	"github.com/haloforge/haloforge/tui/demo"
)

// The demo's serve screen backend, end to end through the real runner: the
// recorded llama-server run replays phase by phase, the recorded probes make
// it ready, the recorded stream is timed, the stop records it as served, and
// the recorded llama-bench run compares with the references.
func TestDemoServeAndBench(t *testing.T) {
	t.Setenv(demo.SpeedEnv, "20")
	e, err := NewDemo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	setup, err := e.ServeSetup(ctx, demo.TrackID)
	if err != nil {
		t.Fatal(err)
	}
	if setup.Track != demo.ServeTrack || setup.Engine != "llama.cpp" || !strings.HasSuffix(setup.Model, "tiny-random.gguf") ||
		setup.Ceiling.Bytes == 0 || !setup.Ceiling.Unified || setup.Note == "" {
		t.Fatalf("setup %+v", setup)
	}
	req := tui.ServeRequest{Track: demo.TrackID, Model: setup.Model, Port: setup.Port}
	l, err := e.PlanServe(req)
	if err != nil {
		t.Fatal(err)
	}
	if l.Fit == nil || !l.Fit.Fits || l.Fit.WeightsBytes != 730624 || l.Fit.LimitBytes != setup.Ceiling.Bytes {
		t.Fatalf("fit %+v", l.Fit)
	}
	s, err := e.Serve(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	var ready, smoke bool
	var fin runner.StepFinished
	for ev := range s.Events() {
		switch ev := ev.(type) {
		case serve.StartupPhase:
			phases = append(phases, string(ev.Phase))
		case serve.Ready:
			ready = true
		case serve.Smoke:
			smoke = ev.Err == "" && ev.Tokens == 9 && ev.TTFT >= 100*time.Millisecond
			s.Stop()
		case runner.StepFinished:
			fin = ev
		}
	}
	if strings.Join(phases, ",") != "starting,loading,model-loaded,health,models" || !ready || !smoke {
		t.Fatalf("phases %v, ready %v, smoke %v", phases, ready, smoke)
	}
	if fin.Status != steps.OutcomeSucceeded || !strings.Contains(fin.Why, "stopped by you") {
		t.Fatalf("finished %+v", fin)
	}
	events, err := e.Bench(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var runDir, status string
	for ev := range events {
		if f, ok := ev.(runner.RunFinished); ok {
			runDir, status = f.RunDir, f.Status
		}
	}
	if status != steps.OutcomeSucceeded {
		t.Fatalf("bench run %s", status)
	}
	rep, err := e.BenchReport(runDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Comparisons) != 2 || !strings.HasPrefix(rep.Verdict, "no reference for this hardware") {
		t.Fatalf("report %+v", rep)
	}
	// The report says what was last found of the answers (never checked:
	// the stand-in serve ran no check), as bench --track does.
	if rep.Answers == nil || rep.Answers.Verdict != bench.Unchecked {
		t.Fatalf("answers %+v", rep.Answers)
	}
	// A track whose answers were last found wrong is not measured.
	wrong := verify.Result{Verdict: verify.Wrong, Reason: `prompt 1 (capital, "The capital of France is"): degenerate output`}
	if err := verify.RecordLast(e.StateDir, e.rec.serveTrack(req.Track), "serve", wrong, time.Now()); err != nil {
		t.Fatal(err)
	}
	var ws *serve.WrongStackError
	if _, err := e.Bench(ctx, req); !errors.As(err, &ws) || !strings.Contains(err.Error(), "not measured: its answers were wrong when serve last checked them") ||
		!strings.Contains(err.Error(), "--despite-wrong-answers") {
		t.Fatalf("bench of a wrong stack: %v", err)
	}
	if rep, err := e.BenchReport(runDir); err != nil || !strings.HasPrefix(rep.Verdict, "not normal, whatever the figures: its answers were wrong") || rep.Answers.Verdict != "wrong" {
		t.Fatalf("report of a wrong stack: %v %+v", err, rep)
	}
	// A request that does not fit is refused before anything starts.
	huge := req
	huge.Context = 1 << 40
	if _, err := e.Serve(ctx, huge); err == nil {
		t.Error("a context of 2^40 tokens was served")
	}
}

// Serve and bench check the build first: the state dir's record of the
// track and its box, as the probe finds it.
func TestServeSetupChecksTheBuild(t *testing.T) {
	for _, tc := range []struct {
		name          string
		exists, known bool
		err, note     string
	}{
		{"no build, no box", false, true, "llamacpp-distro is not built yet in state dir STATE; build it first: haloforge build --track llamacpp-distro --scripts /s --state-dir STATE (nothing", ""},
		{"no build, box there", true, true, "", "Note: the state dir has no finished build of llamacpp-distro; its box haloforge-llamacpp exists, so it is served as it is."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestDemo(t)
			e.rec.noBuiltCheck, e.rec.note = false, ""
			// The build command carries the user's global flags, and the
			// refusal names the state dir it looked in.
			e.Flags = []string{"--scripts", "/s", "--state-dir", e.StateDir}
			tc.err = strings.ReplaceAll(tc.err, "STATE", e.StateDir)
			e.ProbeBuilt = func(mode, name string, _ bool) (bool, bool) { return tc.exists, tc.known }
			s, err := e.ServeSetup(context.Background(), demo.TrackID)
			if tc.err != "" {
				var nb *serve.NotBuiltError
				if !errors.As(err, &nb) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				if _, err := e.Serve(context.Background(), tui.ServeRequest{Track: demo.TrackID, Model: e.rec.model}); !errors.As(err, &nb) {
					t.Fatalf("Serve of an unbuilt track: %v", err)
				}
				if _, err := e.Bench(context.Background(), tui.ServeRequest{Track: demo.TrackID, Model: e.rec.model}); !errors.As(err, &nb) {
					t.Fatalf("Bench of an unbuilt track: %v", err)
				}
				return
			}
			if err != nil || s.Note != tc.note {
				t.Fatalf("setup note %q, err %v; want %q", s.Note, err, tc.note)
			}
		})
	}
}
