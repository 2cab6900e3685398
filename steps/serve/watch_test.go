package serve

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
)

func TestMain(m *testing.M) {
	// The runner starts this test binary as its step supervisor, as
	// haloforge starts itself.
	if runner.IsSupervise(os.Args) {
		os.Exit(runner.Supervise(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// engineServer is an HTTP server on the loopback that answers as the real
// llama-server of the sid proof did (its recorded /v1/models and stream);
// /health answers 503 until healthy is set.
type engineServer struct {
	*httptest.Server
	healthy     atomic.Bool
	opened      atomic.Int64 // unix ns when /health began to answer 200
	firstHealth atomic.Int64 // unix ns of the first 200 on /health
}

// open makes /health answer 200 from now on.
func (s *engineServer) open() {
	s.opened.CompareAndSwap(0, time.Now().UnixNano())
	s.healthy.Store(true)
}

func newEngineServer(t testing.TB) *engineServer {
	t.Helper()
	models, err := os.ReadFile("testdata/llama-server-sid-v1-models.json")
	if err != nil {
		t.Fatal(err)
	}
	stream, err := os.ReadFile("testdata/llama-server-sid-stream.sse")
	if err != nil {
		t.Fatal(err)
	}
	s := &engineServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {
		if !s.healthy.Load() {
			http.Error(w, `{"error":{"code":503,"message":"Loading model"}}`, http.StatusServiceUnavailable)
			return
		}
		s.firstHealth.CompareAndSwap(0, time.Now().UnixNano())
		fmt.Fprint(w, `{"status":"ok"}`)
	})
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, _ *http.Request) {
		if !s.healthy.Load() {
			http.Error(w, "loading", http.StatusServiceUnavailable)
			return
		}
		w.Write(models)
	})
	mux.HandleFunc("/v1/completions", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		time.Sleep(30 * time.Millisecond) // the prompt
		for _, chunk := range strings.SplitAfter(string(stream), "\n\n") {
			w.Write([]byte(chunk))
			w.(http.Flusher).Flush()
			time.Sleep(2 * time.Millisecond)
		}
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// served is one watched serve run of the stand-in engine script.
type served struct {
	events []runner.Event
	res    Result
	dir    string
}

// serveFixture runs the stand-in script on the first lines of a recorded
// log (all when lines < 0) under a real runner and a watch; onEvent sees
// every event with the watcher.
func serveFixture(t *testing.T, engine, log string, lines int, env map[string]string, wo WatchOptions, onEvent func(runner.Event, *Watcher)) served {
	t.Helper()
	all := readLines(t, log)
	if lines >= 0 {
		all = all[:lines]
	}
	dir := t.TempDir()
	logFile := filepath.Join(dir, "engine.log")
	if err := os.WriteFile(logFile, []byte(strings.Join(all, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := newEngineServer(t)
	e := map[string]string{"FX_LOG": logFile, "FX_GAP": "0.005"}
	for k, v := range env {
		e[k] = v
	}
	plan := &steps.Plan{Track: steps.Track{ID: "fx", Title: "fixture"}, Env: e}
	// tiny.gguf is the name the recorded /v1/models answer lists.
	l := Launch{Track: "fx", Engine: engine, URL: srv.URL, Served: "tiny.gguf", Mode: steps.ServeInBox,
		Command: []string{"llama-server", "-m", "tiny-random.gguf"}}
	if engine == EngineVLLM {
		l.Served = "Qwen/Qwen3-30B-A3B-FP8"
	}
	if wo.ProbeEvery == 0 {
		wo.ProbeEvery = 20 * time.Millisecond
	}
	if wo.TickEvery == 0 {
		wo.TickEvery = 20 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w, err := Start(ctx, l, RunOptions{Plan: plan,
		Workspace: steps.Workspace{StateDir: filepath.Join(dir, "state"), ScriptsDir: "testdata/scripts", ToolboxDir: "/nonexistent"}, Grace: 2 * time.Second}, wo)
	if err != nil {
		t.Fatal(err)
	}
	var s served
	for ev := range w.Events() {
		s.events = append(s.events, ev)
		if lines, ok := ev.(runner.Lines); ok && slices.ContainsFunc(lines.Text, func(l string) bool { return strings.Contains(l, "listening on") }) {
			if env["FX_NEVER_HEALTHY"] == "" {
				srv.open()
			}
		}
		if onEvent != nil {
			onEvent(ev, w)
		}
	}
	s.res = w.Result()
	s.dir = s.res.RunDir
	return s
}

func phaseIDs(evs []runner.Event) []string {
	var out []string
	for _, e := range evs {
		if p, ok := e.(StartupPhase); ok && p.Warning == "" {
			out = append(out, string(p.Phase))
		}
	}
	return out
}

func only[T runner.Event](evs []runner.Event) []T {
	var out []T
	for _, e := range evs {
		if x, ok := e.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

// The whole way on the real llama-server log: every phase, readiness once
// /health and /v1/models answer, the smoke request timed, then the user's
// stop records the step as served, with nothing left running.
func TestWatchReadySmokeAndStop(t *testing.T) {
	s := serveFixture(t, EngineLlamaCpp, "llama-server-sid-lavapipe.log", 8, nil, WatchOptions{Smoke: true},
		func(e runner.Event, w *Watcher) {
			if _, ok := e.(Smoke); ok {
				w.Stop()
			}
		})
	if got, want := phaseIDs(s.events), []string{"starting", "loading", "model-loaded", "health", "models"}; !slices.Equal(got, want) {
		t.Fatalf("phases %v, want %v", got, want)
	}
	ready := only[Ready](s.events)
	if len(ready) != 1 || ready[0].Model != "tiny.gguf" || ready[0].SinceHealth > time.Second {
		t.Fatalf("ready %+v", ready)
	}
	smoke := only[Smoke](s.events)
	if len(smoke) != 1 || smoke[0].Err != "" || smoke[0].Tokens != 9 || smoke[0].TTFT < 30*time.Millisecond || smoke[0].EngineTokensPerSecond < 586 {
		t.Fatalf("smoke %+v", smoke)
	}
	fin := only[runner.StepFinished](s.events)
	if len(fin) != 1 || fin[0].Status != steps.OutcomeSucceeded || !strings.HasPrefix(fin[0].Why, "ready in") ||
		len(fin[0].Verified) != 2 || !strings.Contains(fin[0].Verified[1], "first token after") {
		t.Fatalf("finished %+v", fin)
	}
	if !s.res.Ready || s.res.Phase != PhaseReady || !s.res.StoppedByUser || s.res.RunStatus != steps.OutcomeSucceeded || s.res.Smoke == nil {
		t.Fatalf("result %+v", s.res)
	}
	if pid := readPID(t, s.dir); pid > 0 {
		if _, ok := procCPU(pid); ok {
			t.Errorf("the engine (PID %d) still runs after the stop", pid)
		}
	}
	// The ServePhase events come after the lines that mark them.
	var sawLoadLine bool
	for _, e := range s.events {
		if l, ok := e.(runner.Lines); ok && slices.ContainsFunc(l.Text, func(x string) bool { return strings.Contains(x, "load_model: loading model") }) {
			sawLoadLine = true
		}
		if p, ok := e.(StartupPhase); ok && p.Phase == "loading" && !sawLoadLine {
			t.Fatal("the loading phase came before its line")
		}
	}
}

func readPID(t *testing.T, runDir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "serve.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// A start-up that goes quiet in a phase stalls there: a finding of the
// port-never-opens family names the phase, and the step fails with why.
func TestWatchStallNamesThePhase(t *testing.T) {
	s := serveFixture(t, EngineLlamaCpp, "llama-server-sid-lavapipe.log", 4, nil,
		WatchOptions{Budgets: map[PhaseID]time.Duration{PhaseLoading: 300 * time.Millisecond}}, nil)
	found := only[runner.Found](s.events)
	if len(found) != 1 || found[0].Finding.Family != PortNeverOpens || !found[0].Finding.Stall ||
		!strings.Contains(found[0].Finding.Text, `phase "loading"`) || !strings.Contains(found[0].Finding.Summary, "loading") {
		t.Fatalf("found %+v", found)
	}
	fin := only[runner.StepFinished](s.events)
	if len(fin) != 1 || fin[0].Status != steps.OutcomeFailed || !strings.Contains(fin[0].Why, `phase "loading"`) {
		t.Fatalf("finished %+v", fin)
	}
	if !s.res.Stalled || s.res.Phase != PhaseLoading || s.res.RunStatus != steps.OutcomeFailed {
		t.Fatalf("result %+v", s.res)
	}
}

// The engine's own CPU time keeps a quiet phase from counting as stalled.
func TestWatchActivityKeepsAQuietPhaseAlive(t *testing.T) {
	s := serveFixture(t, EngineLlamaCpp, "llama-server-sid-lavapipe.log", 4, map[string]string{"FX_BUSY": "1"},
		WatchOptions{Budgets: map[PhaseID]time.Duration{PhaseLoading: time.Second}}, func(e runner.Event, w *Watcher) {
			if p, ok := e.(StartupPhase); ok && p.Phase == "loading" {
				time.AfterFunc(3500*time.Millisecond, w.Stop) // three budgets of quiet, busy work
			}
		})
	if s.res.Stalled {
		t.Fatalf("a busy engine was called stalled: %+v", s.res)
	}
}

// A stop before readiness interrupts the run.
func TestWatchStopBeforeReady(t *testing.T) {
	s := serveFixture(t, EngineLlamaCpp, "llama-server-sid-lavapipe.log", 4, nil, WatchOptions{}, func(e runner.Event, w *Watcher) {
		if p, ok := e.(StartupPhase); ok && p.Phase == "loading" {
			w.Stop()
		}
	})
	fin := only[runner.StepFinished](s.events)
	if len(fin) != 1 || fin[0].Status != steps.OutcomeInterrupted || s.res.Ready || !s.res.StoppedByUser || s.res.RunStatus != steps.OutcomeInterrupted {
		t.Fatalf("finished %+v, result %+v", fin, s.res)
	}
}

// An engine that exits before it is ready fails in the phase it was in.
func TestWatchEngineExits(t *testing.T) {
	s := serveFixture(t, EngineLlamaCpp, "llama-server-sid-lavapipe.log", 8, map[string]string{"FX_EXIT": "3", "FX_NEVER_HEALTHY": "1"}, WatchOptions{}, nil)
	fin := only[runner.StepFinished](s.events)
	if len(fin) != 1 || fin[0].Status != steps.OutcomeFailed || fin[0].ExitCode != 3 {
		t.Fatalf("finished %+v", fin)
	}
	if !strings.Contains(s.res.Failed, "exited (code 3) in phase \"health\"") || s.res.Ready {
		t.Fatalf("result %+v", s.res)
	}
}

// vLLM saying the context does not fit fails at once, offering its length.
func TestWatchVLLMMaxModelLength(t *testing.T) {
	s := serveFixture(t, EngineVLLM, "vllm-lemonade-5-gfx1151-maxlen.log", -1, nil, WatchOptions{}, nil)
	fin := only[runner.StepFinished](s.events)
	if len(fin) != 1 || fin[0].Status != steps.OutcomeFailed || !strings.Contains(fin[0].Why, "try --ctx 127776") {
		t.Fatalf("finished %+v", fin)
	}
	if s.res.SuggestContext != 127776 {
		t.Fatalf("result %+v", s.res)
	}
}

// The machine's events reach the stream as StartupPhase events: a phase with
// its place and budget, then a warning within it (its text set, the phase
// unchanged); the result keeps the last phase reached.
func TestWatchPhasesAndWarningsOnTheStream(t *testing.T) {
	rd := newR(t, EngineLlamaCpp, "")
	w := &Watcher{o: WatchOptions{Step: StepID}, out: make(chan runner.Event, 16), rd: rd, started: t0}
	load := "load_model: loading model '/models/tiny.gguf'"
	cpu := "ggml_vulkan: Warning: Device type is CPU. This is probably not the device you want."
	w.readiness(rd.Lines(t0.Add(2*time.Second), []string{load, cpu}), false)
	close(w.out)
	var got []runner.Event
	for e := range w.out {
		got = append(got, e)
	}
	entered := StartupPhase{Step: StepID, Phase: "loading", Title: "loading the model", Index: 2, Total: 6,
		Budget: llamaLoadingBudget, Elapsed: 2 * time.Second, Line: load}
	warned := entered
	warned.Line, warned.Warning = cpu, "the Vulkan device is a CPU (llvmpipe), not a GPU"
	if want := []runner.Event{entered, warned}; !slices.Equal(got, want) {
		t.Fatalf("stream %+v, want %+v", got, want)
	}
	if r := w.Result(); r.Phase != PhaseLoading || r.Ready || r.Stalled || r.Failed != "" {
		t.Fatalf("result %+v", r)
	}
}
