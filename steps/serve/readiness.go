package serve

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/haloforge/haloforge/internal/text"
)

// PhaseID names a start-up phase; the IDs are stable (screens and reports use them).
type PhaseID string

// Phases of the engines. An engine goes through its own subset, in
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

// profile is an engine's start-up (Engine.profile): phases, the lines that
// mark them, and the HTTP probes that prove readiness after the log says so.
type profile struct {
	phases     []Phase
	milestones []milestone
	failures   []lineRule
	warnings   []lineRule
	heartbeats []string // lines the engine repeats while waiting: not progress
	health     string   // probe path that must answer 200
	models     string   // probe path that must list the model ("" when health is enough)
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
	e, ok := EngineNamed(o.Engine)
	if !ok {
		return nil, fmt.Errorf("unknown engine %q (known: %s)", o.Engine, strings.Join(EngineNames(), ", "))
	}
	p := e.profile()
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
	e, ok := EngineNamed(engine)
	if !ok {
		return nil
	}
	return e.profile().phases
}
