package serve

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/internal/text"
)

// PhaseID names a start-up phase; the IDs are stable (screens and reports use them).
type PhaseID string

// Phases of the three engines. An engine goes through its own subset, in
// order; a phase may be skipped (vLLM with --enforce-eager has no graph capture).
const (
	PhaseStarting     PhaseID = "starting"      // the process runs, nothing recognised yet
	PhaseEngine       PhaseID = "engine"        // vLLM: the engine core process initialises
	PhaseLoading      PhaseID = "loading"       // weights are read and placed on the GPU
	PhaseModelLoaded  PhaseID = "model-loaded"  // llama.cpp: loaded, slots being set up
	PhaseCompile      PhaseID = "compile"       // vLLM: torch.compile (minutes when cold)
	PhaseKVCache      PhaseID = "kv-cache"      // vLLM: profiling run and KV cache sizing
	PhaseGraphCapture PhaseID = "graph-capture" // vLLM: CUDA/HIP graph capture
	PhaseAPI          PhaseID = "api"           // vLLM: the API server starts
	PhaseListening    PhaseID = "listening"     // Ollama: the API listens, GPUs not yet known
	PhaseGPUDiscovery PhaseID = "gpu-discovery" // Ollama: looking for usable GPUs
	PhaseHealth       PhaseID = "health"        // the log says ready: waiting for the health probe
	PhaseModels       PhaseID = "models"        // health answers: waiting for the model list
	PhaseReady        PhaseID = "ready"
)

// Phase is one step of a start-up with its stall budget: the silence (no new
// log line, no activity) it may take before haloforge calls it stuck.
type Phase struct {
	ID     PhaseID
	Title  string
	Budget time.Duration
}

// ReadinessEvent is one change of a start-up's readiness state. The set is
// closed: PhaseEntered, PhaseWarning, ServerReady, PhaseStalled and
// StartFailed, read with a type switch. A start-up enters its phases in
// order (PhaseEntered), may warn within one (PhaseWarning), and ends with
// exactly one of ServerReady, PhaseStalled or StartFailed; after that the
// machine reports nothing.
type ReadinessEvent interface{ readinessEvent() }

// PhaseEntered says a new phase of the start-up began.
type PhaseEntered struct {
	Phase   PhaseID
	Title   string
	At      time.Time
	Elapsed time.Duration // since the start
	Line    string        // the log line or probe that marked it; "" for the first phase
}

// PhaseWarning is a line worth showing now (a CPU fallback, a hint), seen
// within the phase the start-up is in; the phase does not change.
type PhaseWarning struct {
	Phase   PhaseID // the phase it was seen in
	Title   string
	At      time.Time
	Elapsed time.Duration // since the start
	Line    string        // the log line, cut short
	Text    string        // what it means for the user
}

// ServerReady says the server answers its health probe and lists the model
// (the health probe alone for an engine with no model list).
type ServerReady struct {
	At      time.Time
	Elapsed time.Duration // from the start to readiness
}

// PhaseStalled says a phase went silent (no new line, no activity) longer
// than its budget.
type PhaseStalled struct {
	Phase   PhaseID // the phase it is stuck in
	Title   string
	At      time.Time
	Elapsed time.Duration // since the start
	Reason  string        // the silence, the phase and the last line, in words
	Line    string        // the last log line; "" when there was none
}

// StartFailed says the engine failed before it was ready: its log said so,
// or it exited.
type StartFailed struct {
	Phase   PhaseID // the phase it failed in
	Title   string
	At      time.Time
	Elapsed time.Duration // since the start
	Reason  string        // why, in words
	Line    string        // the line that said so, or the last line before the exit
	// SuggestContext is vLLM's own "estimated maximum model length", to
	// offer as --ctx; 0 when the engine gave none.
	SuggestContext int
}

func (PhaseEntered) readinessEvent() {}
func (PhaseWarning) readinessEvent() {}
func (ServerReady) readinessEvent()  {}
func (PhaseStalled) readinessEvent() {}
func (StartFailed) readinessEvent()  {}

// milestone moves the machine to a phase when a line contains any of its texts.
type milestone struct {
	phase PhaseID
	texts []string
}

// lineRule turns a line into a failure or a warning: the line must hold one of
// texts (when given) and every one of all.
type lineRule struct {
	texts  []string
	all    []string
	reason string
}

// profile is an engine's start-up: phases, the lines that mark them, and the
// HTTP probes that prove readiness after the log says so.
type profile struct {
	phases     []Phase
	milestones []milestone
	failures   []lineRule
	warnings   []lineRule
	heartbeats []string // lines the engine repeats while waiting: not progress
	health     string   // probe path that must answer 200
	models     string   // probe path that must list the model ("" when health is enough)
}

// Stall budgets. llama.cpp's loading phase is quiet at the default verbosity
// for the whole read of the weights, so it gets twice diagnose's hang window;
// vLLM's compile and loading phases get the 20 minutes a cold start on gfx1151
// can take (kyuz0's warm-up waits 1200 s; ROCm/aiter#900 saw init take 1040 s).
var (
	llamaLoadingBudget = 2 * diagnose.DefaultStallTimeout
	vllmColdBudget     = 20 * time.Minute
)

var profiles = map[string]profile{
	EngineLlamaCpp: {
		phases: []Phase{
			{PhaseStarting, "starting llama-server", 2 * time.Minute},
			{PhaseLoading, "loading the model", llamaLoadingBudget},
			{PhaseModelLoaded, "model loaded, setting up slots", 2 * time.Minute},
			{PhaseHealth, "listening: waiting for /health", time.Minute},
			{PhaseModels, "healthy: waiting for /v1/models", time.Minute},
			{PhaseReady, "ready", 0},
		},
		milestones: []milestone{
			{PhaseLoading, []string{"load_model: loading model", "llama_model_loader: loaded meta data", "load_tensors:", "main: loading model", "srv    load_model:"}},
			{PhaseModelLoaded, []string{"llama_server: model loaded", "main: model loaded"}},
			{PhaseHealth, []string{"llama_server: listening on", "main: server is listening on"}},
		},
		failures: []lineRule{
			{texts: []string{"failed to load model", "error loading model", "llama_init_from_model: failed", "failed to allocate"}, reason: "llama.cpp could not load the model"},
			{texts: []string{"couldn't bind HTTP server socket", "address already in use"}, reason: "the port is taken by another process"},
		},
		warnings: []lineRule{
			{texts: []string{"Device type is CPU"}, reason: "the Vulkan device is a CPU (llvmpipe), not a GPU"},
			{texts: []string{"no usable GPU found", "--gpu-layers option will be ignored"}, reason: "llama.cpp found no GPU: it runs on the CPU"},
		},
		health: "/health", models: "/v1/models",
	},
	EngineVLLM: {
		phases: []Phase{
			{PhaseStarting, "starting vLLM", 5 * time.Minute},
			{PhaseEngine, "initialising the engine", 5 * time.Minute},
			{PhaseLoading, "loading weights", vllmColdBudget},
			{PhaseCompile, "torch.compile", vllmColdBudget},
			{PhaseKVCache, "profiling and sizing the KV cache", 10 * time.Minute},
			{PhaseGraphCapture, "capturing graphs", 10 * time.Minute},
			{PhaseAPI, "starting the API server", 5 * time.Minute},
			{PhaseHealth, "application started: waiting for /health", 2 * time.Minute},
			{PhaseModels, "healthy: waiting for /v1/models", time.Minute},
			{PhaseReady, "ready", 0},
		},
		milestones: []milestone{
			{PhaseEngine, []string{"Initializing a V1 LLM engine", "Initializing a V0 LLM engine", "Initializing an LLM engine", "Waiting for init message from front-end"}},
			{PhaseLoading, []string{"Starting to load model", "Loading safetensors checkpoint shards", "Loading weights took", "Loading model weights"}},
			{PhaseCompile, []string{"for vLLM's torch.compile", "Dynamo bytecode transform time", "Compiling a graph", "Directly load the compiled graph"}},
			{PhaseKVCache, []string{"Available KV cache memory", "GPU KV cache size", "Memory profiling takes", "# cuda blocks:", "# rocm blocks:"}},
			{PhaseGraphCapture, []string{"Capturing CUDA graph", "Capturing cudagraphs"}},
			{PhaseAPI, []string{"init engine (profile, create kv cache, warmup model) took", "Graph capturing finished", "Starting vLLM API server", "Available routes are:"}},
			{PhaseHealth, []string{"Application startup complete", "Uvicorn running on"}},
		},
		failures: []lineRule{
			{texts: []string{"estimated maximum model length is"}, reason: "the KV cache cannot hold one request of the model's length"},
			{texts: []string{"Engine core initialization failed", "EngineCore failed to start", "Engine process failed to start"}, reason: "vLLM's engine core failed to start"},
			{texts: []string{"CUDA out of memory", "HIP out of memory", "hipErrorOutOfMemory", "torch.OutOfMemoryError"}, reason: "out of GPU memory"},
			{texts: []string{"No available memory for the cache blocks"}, reason: "no GPU memory left for the KV cache"},
		},
		warnings: []lineRule{
			{texts: []string{"UnspecifiedPlatform", "No platform detected, vLLM is running on UnspecifiedPlatform"}, reason: "vLLM found no ROCm platform (amdsmi missing?): it will not use the GPU"},
		},
		heartbeats: []string{"Waiting for 1 local, 0 remote core engine proc", "core engine proc(s) to start"},
		health:     "/health", models: "/v1/models",
	},
	EngineOllama: {
		phases: []Phase{
			{PhaseStarting, "starting Ollama", time.Minute},
			{PhaseListening, "listening: discovering GPUs", 2 * time.Minute},
			{PhaseGPUDiscovery, "discovering GPUs", 3 * time.Minute},
			{PhaseHealth, "GPUs known: waiting for /api/version", time.Minute},
			{PhaseReady, "ready", 0},
		},
		milestones: []milestone{
			{PhaseListening, []string{"Listening on "}},
			{PhaseGPUDiscovery, []string{"looking for compatible GPUs", "discovering available GPUs"}},
			{PhaseHealth, []string{"msg=\"inference compute\""}},
		},
		failures: []lineRule{
			{texts: []string{"bind: address already in use"}, reason: "the port is taken by another process"},
			{texts: []string{"Error: listen tcp"}, reason: "Ollama could not listen on its address"},
		},
		warnings: []lineRule{
			{texts: []string{"filtering device which didn't fully initialize"}, reason: "Ollama dropped a GPU that did not initialise (the gfx1151 iGPU on 0.18–0.2x: use ≥ 0.30)"},
			{all: []string{"msg=\"inference compute\"", "library=cpu"}, reason: "Ollama found no usable GPU: models will run on the CPU"},
			{texts: []string{"no compatible GPUs were discovered"}, reason: "Ollama found no usable GPU: models will run on the CPU"},
		},
		health: "/api/version",
	},
}

// reMaxLen reads vLLM's suggestion, e.g. "the estimated maximum model length is 127776".
var reMaxLen = regexp.MustCompile(`estimated maximum model length is (\d+)`)

// ReadinessOptions configure one start-up to watch.
type ReadinessOptions struct {
	Engine string
	// Model is the name /v1/models must list ("" accepts any listed model).
	Model string
	// Budgets override phase budgets by phase ID (e.g. a longer compile).
	Budgets map[PhaseID]time.Duration
}

// Readiness follows one server's start-up from its log lines, activity and
// HTTP probes, and reports phase changes, readiness, a stall naming the phase
// it is stuck in, or a failure. It reads no clock: callers pass the time, so a
// recorded log replays exactly. Not safe for concurrent use.
type Readiness struct {
	p        profile
	o        ReadinessOptions
	start    time.Time
	phase    int       // index into p.phases
	since    time.Time // last progress: a new line, activity or phase change
	lastLine string
	done     bool
	warned   map[string]bool
}

// NewReadiness starts watching an engine that started at start.
func NewReadiness(o ReadinessOptions, start time.Time) (*Readiness, error) {
	p, ok := profiles[o.Engine]
	if !ok {
		return nil, fmt.Errorf("unknown engine %q (known: %s, %s, %s)", o.Engine, EngineLlamaCpp, EngineVLLM, EngineOllama)
	}
	p.phases = append([]Phase(nil), p.phases...)
	for i, ph := range p.phases {
		if b, ok := o.Budgets[ph.ID]; ok && b > 0 {
			p.phases[i].Budget = b
		}
	}
	return &Readiness{p: p, o: o, start: start, since: start, warned: map[string]bool{}}, nil
}

// Phase is the current phase.
func (r *Readiness) Phase() Phase { return r.p.phases[r.phase] }

// Phases lists the engine's phases in order (for a progress display).
func (r *Readiness) Phases() []Phase { return append([]Phase(nil), r.p.phases...) }

// Done says the start-up ended: ready, failed or stalled.
func (r *Readiness) Done() bool { return r.done }

// NextProbe is the HTTP path to probe now ("" once done). Probing before the
// log says ready is allowed: an answer moves the machine on all the same.
func (r *Readiness) NextProbe() string {
	if r.done {
		return ""
	}
	if r.Phase().ID == PhaseModels {
		return r.p.models
	}
	return r.p.health
}

// Lines feeds log lines that arrived by now (a batch: the runner's Lines event).
func (r *Readiness) Lines(now time.Time, lines []string) []ReadinessEvent {
	var out []ReadinessEvent
	for _, raw := range lines {
		if r.done {
			break
		}
		line := text.Screen(raw)
		if strings.TrimSpace(line) == "" {
			continue
		}
		if !r.heartbeat(line) {
			r.since = now
		}
		out = append(out, r.line(now, line)...)
	}
	return out
}

// Activity records progress seen some other way (the engine's CPU or GPU time
// grew), so a quiet but busy phase is not called stuck.
func (r *Readiness) Activity(now time.Time) {
	if !r.done {
		r.since = now
	}
}

// Probe feeds one HTTP probe's result: status 0 when the connection failed.
func (r *Readiness) Probe(now time.Time, path string, status int, body []byte) []ReadinessEvent {
	if r.done || status != 200 {
		return nil
	}
	var out []ReadinessEvent
	switch path {
	case r.p.health:
		if r.p.models == "" {
			return r.ready(now)
		}
		if r.Phase().ID != PhaseModels {
			out = append(out, r.enter(now, r.index(PhaseModels), path+" answers 200")...)
		}
	case r.p.models:
		if r.Phase().ID != PhaseModels {
			return nil
		}
		if listsModel(body, r.o.Model) {
			return append(out, r.ready(now)...)
		}
	}
	return out
}

// Tick checks the stall budget at time now.
func (r *Readiness) Tick(now time.Time) []ReadinessEvent {
	if r.done {
		return nil
	}
	ph := r.Phase()
	if ph.Budget > 0 && now.Sub(r.since) >= ph.Budget {
		reason := fmt.Sprintf("no progress for %s in phase %q (%s); last line: %s", text.Duration(now.Sub(r.since)), ph.ID, ph.Title, text.OrNone(r.lastLine))
		r.done = true
		return []ReadinessEvent{PhaseStalled{Phase: ph.ID, Title: ph.Title, At: now, Elapsed: now.Sub(r.start), Reason: reason, Line: r.lastLine}}
	}
	return nil
}

// Exited records the engine's exit: before ready, that is a failure in the current phase.
func (r *Readiness) Exited(now time.Time, code int) []ReadinessEvent {
	if r.done {
		return nil
	}
	reason := fmt.Sprintf("the engine exited (code %d) in phase %q (%s); last line: %s", code, r.Phase().ID, r.Phase().Title, text.OrNone(r.lastLine))
	return r.fail(now, reason, 0)
}

func (r *Readiness) line(now time.Time, line string) []ReadinessEvent {
	r.lastLine = text.Printable(line, 240)
	var out []ReadinessEvent
	for _, f := range r.p.failures {
		if matches(line, f) {
			if m := reMaxLen.FindStringSubmatch(line); m != nil {
				var suggest int
				fmt.Sscan(m[1], &suggest)
				return r.fail(now, fmt.Sprintf("%s: vLLM estimates a maximum model length of %s; try --ctx %s", f.reason, m[1], m[1]), suggest)
			}
			return r.fail(now, f.reason, 0)
		}
	}
	for _, w := range r.p.warnings {
		if matches(line, w) && !r.warned[w.reason] {
			r.warned[w.reason] = true
			ph := r.Phase()
			out = append(out, PhaseWarning{Phase: ph.ID, Title: ph.Title, At: now, Elapsed: now.Sub(r.start), Line: r.lastLine, Text: w.reason})
		}
	}
	for _, m := range r.p.milestones {
		if containsAny(line, m.texts) {
			if i := r.index(m.phase); i > r.phase {
				out = append(out, r.enter(now, i, r.lastLine)...)
			}
		}
	}
	return out
}

func (r *Readiness) heartbeat(line string) bool { return containsAny(line, r.p.heartbeats) }

func (r *Readiness) enter(now time.Time, i int, line string) []ReadinessEvent {
	r.phase, r.since = i, now
	ph := r.p.phases[i]
	return []ReadinessEvent{PhaseEntered{Phase: ph.ID, Title: ph.Title, At: now, Elapsed: now.Sub(r.start), Line: line}}
}

// ready ends the start-up in the ready phase.
func (r *Readiness) ready(now time.Time) []ReadinessEvent {
	r.done, r.phase = true, len(r.p.phases)-1
	return []ReadinessEvent{ServerReady{At: now, Elapsed: now.Sub(r.start)}}
}

// fail ends the start-up in the current phase; suggest is vLLM's estimated
// maximum model length (0 when none).
func (r *Readiness) fail(now time.Time, reason string, suggest int) []ReadinessEvent {
	r.done = true
	ph := r.Phase()
	return []ReadinessEvent{StartFailed{Phase: ph.ID, Title: ph.Title, At: now, Elapsed: now.Sub(r.start),
		Reason: reason, Line: r.lastLine, SuggestContext: suggest}}
}

func (r *Readiness) index(id PhaseID) int {
	for i, ph := range r.p.phases {
		if ph.ID == id {
			return i
		}
	}
	return r.phase
}

func matches(line string, rule lineRule) bool {
	if len(rule.texts) > 0 && !containsAny(line, rule.texts) {
		return false
	}
	for _, t := range rule.all {
		if !strings.Contains(line, t) {
			return false
		}
	}
	return len(rule.texts) > 0 || len(rule.all) > 0
}

func containsAny(s string, subs []string) bool {
	for _, t := range subs {
		if strings.Contains(s, t) {
			return true
		}
	}
	return false
}

// listsModel reads an OpenAI /v1/models answer: any listed model when want is
// "", else one whose id, name or alias is want (or its file name).
func listsModel(body []byte, want string) bool {
	if len(body) > 1<<20 {
		body = body[:1<<20]
	}
	var v struct {
		Data []struct {
			ID      string   `json:"id"`
			Aliases []string `json:"aliases"`
		} `json:"data"`
		Models []struct {
			Name  string `json:"name"`
			Model string `json:"model"`
		} `json:"models"`
	}
	if json.Unmarshal(body, &v) != nil {
		return false
	}
	var names []string
	for _, d := range v.Data {
		names = append(names, d.ID)
		names = append(names, d.Aliases...)
	}
	for _, m := range v.Models {
		names = append(names, m.Name, m.Model)
	}
	for _, n := range names {
		if n == "" {
			continue
		}
		if want == "" || n == want || baseName(n) == baseName(want) {
			return true
		}
	}
	return false
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// PhasesOf lists an engine's start-up phases in order (nil for an unknown
// engine), for a display of the phases to come.
func PhasesOf(engine string) []Phase {
	p, ok := profiles[engine]
	if !ok {
		return nil
	}
	return append([]Phase(nil), p.phases...)
}
