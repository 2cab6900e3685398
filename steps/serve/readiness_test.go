package serve

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func readLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}

// replay feeds lines one a second from start and returns the events, the
// machine and the time of the last line.
func replay(t *testing.T, r *Readiness, start time.Time, lines []string) ([]ReadinessEvent, time.Time) {
	t.Helper()
	var evs []ReadinessEvent
	now := start
	for _, l := range lines {
		now = now.Add(time.Second)
		evs = append(evs, r.Lines(now, []string{l})...)
	}
	return evs, now
}

func phasesOf(evs []ReadinessEvent) []PhaseID {
	var ids []PhaseID
	for _, e := range evs {
		if e, ok := e.(PhaseEntered); ok {
			ids = append(ids, e.Phase)
		}
	}
	return ids
}

// single is the one event of evs when there is exactly one and it is a T.
func single[T ReadinessEvent](evs []ReadinessEvent) (T, bool) {
	var none T
	if len(evs) != 1 {
		return none, false
	}
	e, ok := evs[0].(T)
	return e, ok
}

// isOnly says evs is exactly one T.
func isOnly[T ReadinessEvent](evs []ReadinessEvent) bool {
	_, ok := single[T](evs)
	return ok
}

// stalledIn says evs is exactly one stall, in phase id.
func stalledIn(evs []ReadinessEvent, id PhaseID) bool {
	st, ok := single[PhaseStalled](evs)
	return ok && st.Phase == id
}

func newR(t *testing.T, engine, model string) *Readiness {
	t.Helper()
	r, err := NewReadiness(ReadinessOptions{Engine: engine, Model: model}, t0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// recordedStartup is an engine's real start-up log and what the machine
// must make of it: the phases in order, then the probes that end it ready.
type recordedStartup struct {
	name   string
	engine string
	model  string
	logs   []string
	phases []PhaseID
	probes []probe
}

// vllmModels is vLLM's /v1/models answer for the recorded start-up's model.
const vllmModels = `{"object":"list","data":[{"id":"Qwen/Qwen3-30B-A3B-FP8","object":"model","owned_by":"vllm"}]}`

// recordedStartups are the engines' recorded start-ups (testdata/README.md
// says where each log comes from); every engine has one at least
// (TestEveryEngineIsComplete). llama-server's /v1/models answer is read
// from testdata/llama-server-sid-v1-models.json.
var recordedStartups = []recordedStartup{
	{
		name: "llama-server, Debian sid, default verbosity", engine: EngineLlamaCpp, model: "tiny.gguf",
		logs:   []string{"llama-server-sid-lavapipe.log"},
		phases: []PhaseID{PhaseLoading, PhaseModelLoaded, PhaseHealth},
		probes: []probe{{"/health", 200, `{"status":"ok"}`}, {"/v1/models", 200, "@llama-server-sid-v1-models.json"}},
	},
	{
		name: "llama-server, Debian sid, -lv 4", engine: EngineLlamaCpp, model: "/models/tiny.gguf",
		logs:   []string{"llama-server-sid-lavapipe-verbose.log"},
		phases: []PhaseID{PhaseLoading, PhaseModelLoaded, PhaseHealth},
		probes: []probe{{"/health", 200, `{"status":"ok"}`}, {"/v1/models", 200, "@llama-server-sid-v1-models.json"}},
	},
	{
		name: "vLLM 0.13 cold start with compile and graph capture", engine: EngineVLLM, model: "Qwen/Qwen3-30B-A3B-FP8",
		logs:   []string{"vllm-0.13-gb10-success.log"},
		phases: []PhaseID{PhaseEngine, PhaseLoading, PhaseCompile, PhaseKVCache, PhaseGraphCapture, PhaseAPI, PhaseHealth},
		probes: []probe{{"/health", 200, ""}, {"/v1/models", 200, vllmModels}},
	},
	{
		name: "Ollama: listening, GPU discovery, then /api/version", engine: EngineOllama,
		logs:   []string{"ollama-for-amd-37-listening.log", "ollama-batteries-1663-gpus.log"},
		phases: []PhaseID{PhaseListening, PhaseGPUDiscovery, PhaseHealth},
		probes: []probe{{"/api/version", 200, `{"version":"0.32.15"}`}},
	},
}

// Success on each engine's recorded log: the phases in order, then the probes.
func TestReadinessSuccess(t *testing.T) {
	tests := recordedStartups
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newR(t, tc.engine, tc.model)
			var lines []string
			for _, f := range tc.logs {
				lines = append(lines, readLines(t, f)...)
			}
			evs, now := replay(t, r, t0, lines)
			if got := phasesOf(evs); !slices.Equal(got, tc.phases) {
				t.Fatalf("phases %v, want %v", got, tc.phases)
			}
			if r.Done() {
				t.Fatal("ready before any probe answered")
			}
			var last []ReadinessEvent
			for _, p := range tc.probes {
				if path := r.NextProbe(); path != p.path {
					t.Fatalf("next probe %q, want %q", path, p.path)
				}
				// A failed probe first: nothing changes.
				if evs := r.Probe(now, p.path, 0, nil); len(evs) != 0 {
					t.Fatalf("a refused connection gave %v", evs)
				}
				now = now.Add(200 * time.Millisecond)
				body := []byte(p.body)
				if f, ok := strings.CutPrefix(p.body, "@"); ok {
					var err error
					if body, err = os.ReadFile(filepath.Join("testdata", f)); err != nil {
						t.Fatal(err)
					}
				}
				last = r.Probe(now, p.path, p.status, body)
			}
			if _, ready := single[ServerReady](last); !ready || !r.Done() || r.NextProbe() != "" {
				t.Fatalf("after the probes: %v (done %v)", last, r.Done())
			}
			if evs := r.Tick(now.Add(time.Hour)); evs != nil {
				t.Fatalf("a ready server stalled: %v", evs)
			}
		})
	}
}

type probe struct {
	path   string
	status int
	body   string
}

// A stall in each phase: the success log cut right after the line that starts
// the phase; its budget later, the machine names that phase. A second before
// the budget, nothing.
func TestReadinessStallInEachPhase(t *testing.T) {
	for _, tc := range []struct {
		engine, log string
	}{
		{EngineLlamaCpp, "llama-server-sid-lavapipe.log"},
		{EngineVLLM, "vllm-0.13-gb10-success.log"},
		{EngineOllama, "ollama-for-amd-37-listening.log"},
		{EngineOllama, "ollama-batteries-1663-gpus.log"},
	} {
		lines := readLines(t, tc.log)
		seen := map[PhaseID]bool{}
		for cut := 0; cut <= len(lines); cut++ {
			r := newR(t, tc.engine, "")
			evs, now := replay(t, r, t0, lines[:cut])
			ph := r.Phase()
			if len(evs) > 0 && ph.ID != PhaseStarting {
				if _, entered := evs[len(evs)-1].(PhaseEntered); !entered {
					continue
				}
			}
			if seen[ph.ID] {
				continue
			}
			seen[ph.ID] = true
			t.Run(tc.engine+"/"+string(ph.ID), func(t *testing.T) {
				if evs := r.Tick(now.Add(ph.Budget - time.Second)); evs != nil {
					t.Fatalf("stalled before the budget of %s: %v", ph.Budget, evs)
				}
				evs := r.Tick(now.Add(ph.Budget))
				st, stalled := single[PhaseStalled](evs)
				if !stalled || st.Phase != ph.ID {
					t.Fatalf("after %s in %s: %v", ph.Budget, ph.ID, evs)
				}
				if !strings.Contains(st.Reason, string(ph.ID)) || !strings.Contains(st.Reason, ph.Title) {
					t.Errorf("the stall does not name its phase: %q", st.Reason)
				}
				if r.Tick(now.Add(2*ph.Budget)) != nil || r.Lines(now.Add(2*ph.Budget), []string{"late"}) != nil {
					t.Error("events after the stall")
				}
			})
		}
		if tc.log == "vllm-0.13-gb10-success.log" && len(seen) != 8 { // starting … health
			t.Errorf("vLLM phases reached by cuts: %v", seen)
		}
	}
	// The phases after the log: no answer from /health, then none from /v1/models.
	r := newR(t, EngineVLLM, "")
	_, now := replay(t, r, t0, readLines(t, "vllm-0.13-gb10-success.log"))
	r.Probe(now, "/health", 200, nil)
	if evs := r.Tick(now.Add(time.Minute)); !stalledIn(evs, PhaseModels) {
		t.Fatalf("no /v1/models answer: %v", evs)
	}
}

func TestReadinessVLLMBudgets(t *testing.T) {
	r := newR(t, EngineVLLM, "")
	for _, ph := range r.Phases() {
		if ph.ID == PhaseCompile || ph.ID == PhaseLoading {
			if ph.Budget != 20*time.Minute {
				t.Errorf("%s budget %s: a cold vLLM start on gfx1151 takes up to 20 minutes", ph.ID, ph.Budget)
			}
		}
	}
	o := ReadinessOptions{Engine: EngineVLLM, Budgets: map[PhaseID]time.Duration{PhaseCompile: time.Hour}}
	r2, _ := NewReadiness(o, t0)
	for _, ph := range r2.Phases() {
		if ph.ID == PhaseCompile && ph.Budget != time.Hour {
			t.Errorf("override ignored: %s", ph.Budget)
		}
	}
}

// vLLM repeating "Waiting for 1 local, 0 remote core engine proc(s)" every 10 s
// is not progress (Project-HAMi/HAMi-core#261; vllm#34113 on a Ryzen AI MAX+
// 395): after the starting phase's budget it stalls, though lines keep coming.
func TestReadinessHeartbeatIsNotProgress(t *testing.T) {
	lines := readLines(t, "vllm-hami-261-engine-wait.log")
	r := newR(t, EngineVLLM, "")
	budget := r.Phase().Budget
	now := t0
	var evs []ReadinessEvent
	for now.Sub(t0) < budget {
		now = now.Add(10 * time.Second)
		evs = append(evs, r.Lines(now, []string{lines[int(now.Sub(t0)/(10*time.Second))%len(lines)]})...)
		evs = append(evs, r.Tick(now)...)
	}
	if st, stalled := single[PhaseStalled](evs); !stalled || st.Phase != PhaseStarting ||
		!strings.Contains(st.Reason, "Waiting for 1 local, 0 remote core engine proc(s) to start.") {
		t.Fatalf("events %v", evs)
	}
}

func TestReadinessFailures(t *testing.T) {
	tests := []struct {
		name, engine, log string
		phase             PhaseID
		reason            string
		ctx               int
	}{
		{"vLLM engine core on a Ryzen AI MAX+ 395", EngineVLLM, "vllm-rocm-6055-strixhalo-enginecore.log", PhaseStarting,
			"vLLM's engine core failed to start", 0},
		{"vLLM estimated maximum model length on gfx1151", EngineVLLM, "vllm-lemonade-5-gfx1151-maxlen.log", PhaseStarting,
			"try --ctx 127776", 127776},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newR(t, tc.engine, "")
			evs, _ := replay(t, r, t0, readLines(t, tc.log))
			last, failed := evs[len(evs)-1].(StartFailed)
			if !failed || last.Phase != tc.phase || !strings.Contains(last.Reason, tc.reason) || last.SuggestContext != tc.ctx {
				t.Fatalf("last event %+v", evs[len(evs)-1])
			}
			if !r.Done() {
				t.Fatal("not done after a failure")
			}
		})
	}
}

func TestReadinessExitAndActivity(t *testing.T) {
	lines := readLines(t, "llama-server-sid-lavapipe.log")
	r := newR(t, EngineLlamaCpp, "")
	_, now := replay(t, r, t0, lines[:4]) // up to "load_model: loading model"
	if r.Phase().ID != PhaseLoading {
		t.Fatalf("phase %s", r.Phase().ID)
	}
	// CPU activity keeps a quiet load alive.
	r.Activity(now.Add(llamaLoadingBudget - time.Second))
	if evs := r.Tick(now.Add(llamaLoadingBudget + time.Second)); evs != nil {
		t.Fatalf("busy but quiet: %v", evs)
	}
	evs := r.Exited(now.Add(time.Minute), 139)
	if f, failed := single[StartFailed](evs); !failed || f.Phase != PhaseLoading ||
		!strings.Contains(f.Reason, "exited (code 139) in phase \"loading\"") || !strings.Contains(f.Reason, "load_model: loading model") {
		t.Fatalf("exit: %v", evs)
	}
}

// A /health answer before the log's milestone (lines lost, verbosity off)
// moves the machine on: the probe is the truth.
func TestReadinessProbeBeforeLog(t *testing.T) {
	r := newR(t, EngineLlamaCpp, "")
	evs := r.Probe(t0.Add(time.Second), "/health", 200, nil)
	if e, entered := single[PhaseEntered](evs); !entered || e.Phase != PhaseModels || r.NextProbe() != "/v1/models" {
		t.Fatalf("%v, next %q", evs, r.NextProbe())
	}
	if evs := r.Probe(t0.Add(2*time.Second), "/v1/models", 200, []byte(`{"data":[]}`)); evs != nil {
		t.Fatalf("an empty model list made it ready: %v", evs)
	}
	if evs := r.Probe(t0.Add(2*time.Second), "/v1/models", 200, []byte(`not json`)); evs != nil {
		t.Fatalf("a broken answer made it ready: %v", evs)
	}
	if evs := r.Probe(t0.Add(3*time.Second), "/v1/models", 200, []byte(`{"data":[{"id":"m.gguf"}]}`)); !isOnly[ServerReady](evs) {
		t.Fatalf("%v", evs)
	}
}

func TestReadinessWarnings(t *testing.T) {
	r := newR(t, EngineLlamaCpp, "")
	// llama-bench's stderr of the real lavapipe run names the CPU device once.
	line := "ggml_vulkan: Warning: Device type is CPU. This is probably not the device you want."
	evs := r.Lines(t0, []string{line, line})
	if w, warned := single[PhaseWarning](evs); !warned || !strings.Contains(w.Text, "llvmpipe") {
		t.Fatalf("%v", evs)
	}
}

func TestNewReadinessUnknownEngine(t *testing.T) {
	if _, err := NewReadiness(ReadinessOptions{Engine: "tgi"}, t0); err == nil {
		t.Fatal("unknown engine accepted")
	}
}

// TestReadinessShowsLinesAsATerminalWould: an engine's last line reaches an
// event as a terminal shows it (colours gone, the last redraw of a progress
// bar), without bidi overrides or C1 codes, and bounded.
func TestReadinessShowsLinesAsATerminalWould(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"colours", "\x1b[1;36m(EngineCore_DP0 pid=123)\x1b[0;0m INFO GPU KV cache size: 1 tokens", "(EngineCore_DP0 pid=123) INFO GPU KV cache size: 1 tokens"},
		{"progress redraws", "Capturing:  10%\rCapturing:  90%\rCapturing: 100%\r\n", "Capturing: 100%"},
		{"bidi override and C1 CSI", "model \u202eevil\u009b31m", "model evil31m"},
		{"bounded", strings.Repeat("é", 300), strings.Repeat("é", 240) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newR(t, EngineVLLM, "")
			r.Lines(t0, []string{tt.in})
			f, ok := single[StartFailed](r.Exited(t0, 1))
			if !ok || f.Line != tt.want {
				t.Errorf("last line %q, want %q", f.Line, tt.want)
			}
		})
	}
}

// FuzzReadiness: any lines and probes keep the machine sane: phases only move
// forward, at most one terminal event, no panic.
func FuzzReadiness(f *testing.F) {
	f.Add(0, "load_model: loading model 'x'\nllama_server: model loaded\nllama_server: listening on http://x", 200, `{"data":[{"id":"x"}]}`)
	f.Add(1, "Initializing a V1 LLM engine\nestimated maximum model length is 99", 0, "")
	f.Add(2, "msg=\"Listening on 127.0.0.1\"\nmsg=\"inference compute\" library=cpu", 200, "{}")
	engines := []string{EngineLlamaCpp, EngineVLLM, EngineOllama}
	f.Fuzz(func(t *testing.T, e int, log string, status int, body string) {
		if e < 0 {
			e = -e
		}
		r, err := NewReadiness(ReadinessOptions{Engine: engines[e%3]}, t0)
		if err != nil {
			t.Fatal(err)
		}
		evs := r.Lines(t0.Add(time.Second), strings.Split(log, "\n"))
		evs = append(evs, r.Probe(t0.Add(2*time.Second), r.NextProbe(), status, []byte(body))...)
		evs = append(evs, r.Tick(t0.Add(time.Hour))...)
		evs = append(evs, r.Exited(t0.Add(2*time.Hour), 1)...)
		last, terminal := -1, 0
		for _, ev := range evs {
			switch ev := ev.(type) {
			case PhaseEntered:
				i := r.index(ev.Phase)
				if i <= last {
					t.Fatalf("phase went back: %v", evs)
				}
				last = i
			case ServerReady, PhaseStalled, StartFailed:
				terminal++
			}
		}
		if terminal != 1 {
			t.Fatalf("%d terminal events: %v", terminal, evs)
		}
	})
}
