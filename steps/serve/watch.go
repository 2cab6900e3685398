package serve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
)

// Run is what a watch needs of the runner of a serve run.
type Run interface {
	Events() <-chan runner.Event
	Settle(runner.Verdict)
}

// Defaults of WatchOptions.
const (
	DefaultProbeEvery = 250 * time.Millisecond // readiness is seen within this of /health answering
	DefaultTickEvery  = time.Second            // stall checks and the engine's CPU time
)

// PortNeverOpens is the failure family of a server that stalls before it
// answers (diagnose/rules.go): the watch reports its stall as a finding of
// this family, naming the phase.
const PortNeverOpens = "server-port-never-opens"

// WatchOptions configure a watch.
type WatchOptions struct {
	Launch Launch
	Prober Prober
	// Cancel cancels the run's context: a stop before the server is ready
	// is an interruption.
	Cancel context.CancelFunc
	// Step is the server step's ID (StepID when empty).
	Step string
	// Budgets override the engine's phase budgets.
	Budgets    map[PhaseID]time.Duration
	ProbeEvery time.Duration
	TickEvery  time.Duration
	// Smoke sends a short completion once the server is ready.
	Smoke bool
	// PIDFile holds the engine's process ID as the host sees it (the serve
	// script writes it); its CPU time counts as activity in a quiet phase.
	PIDFile string
}

// Result is how a watched serve went, complete once Events is closed
// (`serve --json` prints it; durations in nanoseconds, as report.json).
type Result struct {
	Ready          bool          `json:"ready"`
	ReadyAfter     time.Duration `json:"ready_after_ns"`
	SinceHealth    time.Duration `json:"since_health_ns"` // from /health's first 200 to readiness
	Phase          PhaseID       `json:"phase"`           // the last phase reached
	Stalled        bool          `json:"stalled"`
	Failed         string        `json:"failed,omitempty"`          // why it failed (a line, a stall, an exit)
	SuggestContext int           `json:"suggest_context,omitempty"` // vLLM's estimated maximum model length
	Smoke          *SmokeResult  `json:"smoke"`
	StoppedByUser  bool          `json:"stopped_by_user"`
	Served         time.Duration `json:"served_ns"` // from readiness to the stop
	// RunStatus is the run's steps.Outcome* (RunFinished), RunDir its files.
	RunStatus string `json:"run_status"`
	RunDir    string `json:"run_dir"`
}

// Watcher follows one serve run: it passes the runner's events on and adds
// the server's phases, its readiness and the smoke request's timings.
type Watcher struct {
	o    WatchOptions
	run  Run
	out  chan runner.Event
	stop chan struct{}
	once sync.Once

	mu  sync.Mutex
	res Result

	rd          *Readiness
	started     time.Time
	firstHealth time.Time
	readyAt     time.Time
	lastCPU     time.Duration
	settled     bool
	smokeCtx    context.Context
	smokeCancel context.CancelFunc
	kill        func() // skips the rest of a stop's grace (Start sets it)
}

// Watch starts following run; read Events until it is closed.
func Watch(run Run, o WatchOptions) *Watcher {
	if o.Step == "" {
		o.Step = StepID
	}
	if o.ProbeEvery <= 0 {
		o.ProbeEvery = DefaultProbeEvery
	}
	if o.TickEvery <= 0 {
		o.TickEvery = DefaultTickEvery
	}
	if o.Prober == nil {
		o.Prober = NewHTTPProber(o.Launch.URL)
	}
	w := &Watcher{o: o, run: run, out: make(chan runner.Event, 16), stop: make(chan struct{})}
	w.smokeCtx, w.smokeCancel = context.WithCancel(context.Background())
	go w.loop()
	return w
}

// Events are the runner's events with the server's own among them; the
// channel closes after RunFinished.
func (w *Watcher) Events() <-chan runner.Event { return w.out }

// Stop is the user's stop: a ready server is stopped and recorded as
// served (succeeded); one not ready yet is interrupted. A second Stop
// kills what is left without waiting out the grace period.
func (w *Watcher) Stop() {
	first := false
	w.once.Do(func() { close(w.stop); first = true })
	if !first && w.kill != nil {
		w.kill()
	}
}

// Result says how the serve went; final once Events is closed.
func (w *Watcher) Result() Result {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.res
}

type probeResult struct {
	path   string
	status int
	body   []byte
	at     time.Time
}

func (w *Watcher) loop() {
	defer close(w.out)
	defer w.smokeCancel()
	in := w.run.Events()
	tick := time.NewTicker(w.o.TickEvery)
	defer tick.Stop()
	probe := time.NewTicker(w.o.ProbeEvery)
	defer probe.Stop()
	probes := make(chan probeResult, 1)
	smokes := make(chan SmokeResult, 1)
	inflight := false
	stop := w.stop
	for {
		select {
		case e, ok := <-in:
			if !ok {
				return
			}
			w.event(e)
		case <-probe.C:
			if w.rd == nil || w.rd.Done() || inflight {
				continue
			}
			inflight = true
			go w.probe(w.rd.NextProbe(), probes)
		case pr := <-probes:
			inflight = false
			w.probed(pr, smokes)
			switch {
			case w.rd != nil && w.rd.Done():
				probe.Stop() // a ready or failed server is not probed again
			case w.rd != nil && w.rd.NextProbe() != pr.path:
				// /health answered: ask for the model list at once, not a tick later
				inflight = true
				go w.probe(w.rd.NextProbe(), probes)
			}
		case sr := <-smokes:
			w.o.Launch.roof.add(&sr)
			w.mu.Lock()
			w.res.Smoke = &sr
			w.mu.Unlock()
			w.emit(Smoke{Step: w.o.Step, SmokeResult: sr})
		case now := <-tick.C:
			if w.rd == nil || w.rd.Done() {
				continue
			}
			if cpu, ok := EngineCPU(w.o.PIDFile); ok && cpu > w.lastCPU {
				w.lastCPU = cpu
				w.rd.Activity(now)
			}
			w.readiness(w.rd.Tick(now), false)
		case <-stop:
			stop = nil
			w.userStop()
		}
	}
}

// probe asks one path and hands the answer to the loop.
func (w *Watcher) probe(path string, out chan<- probeResult) {
	status, body, _ := w.o.Prober.Get(w.smokeCtx, path)
	out <- probeResult{path: path, status: status, body: body, at: time.Now()}
}

// event passes a runner event on and feeds the readiness machine.
func (w *Watcher) event(e runner.Event) {
	w.emit(e)
	switch e := e.(type) {
	case runner.RunFinished:
		w.mu.Lock()
		w.res.RunStatus, w.res.RunDir = e.Status, e.RunDir
		w.mu.Unlock()
	case runner.StepStarted:
		if e.Step != w.o.Step {
			return
		}
		w.started = e.At
		rd, err := NewReadiness(ReadinessOptions{Engine: w.o.Launch.Engine, Model: w.o.Launch.Served, Budgets: w.o.Budgets}, e.At)
		if err != nil {
			return
		}
		w.rd = rd
		ph := rd.Phase()
		w.emit(w.servePhase(ph.ID, ph.Title, e.At, ""))
	case runner.Lines:
		if e.Step == w.o.Step && w.rd != nil {
			w.readiness(w.rd.Lines(time.Now(), e.Text), false)
		}
	case runner.StepFinished:
		if e.Step == w.o.Step && w.rd != nil && !w.rd.Done() {
			w.readiness(w.rd.Exited(time.Now(), e.ExitCode), true)
		}
	}
}

// probed feeds a probe's answer.
func (w *Watcher) probed(pr probeResult, smokes chan<- SmokeResult) {
	if w.rd == nil || w.rd.Done() {
		return
	}
	if pr.status == 200 && w.firstHealth.IsZero() && pr.path == w.rd.p.health {
		w.firstHealth = pr.at
	}
	for _, ev := range w.rd.Probe(pr.at, pr.path, pr.status, pr.body) {
		w.readiness([]ReadinessEvent{ev}, false)
		// An engine started without a model (Ollama) has nothing to ask yet.
		if _, ready := ev.(ServerReady); ready && w.o.Smoke && w.o.Launch.Served != "" {
			sr := DefaultSmoke(w.o.Launch.Served)
			go func() { smokes <- w.o.Prober.Complete(w.smokeCtx, sr) }()
		}
	}
}

// readiness turns the machine's events into stream events and verdicts;
// exited says the step is over already (nothing to settle).
func (w *Watcher) readiness(evs []ReadinessEvent, exited bool) {
	for _, ev := range evs {
		switch ev := ev.(type) {
		case PhaseEntered:
			w.setPhase(ev.Phase)
			w.emit(w.servePhase(ev.Phase, ev.Title, ev.At, ev.Line))
		case PhaseWarning:
			w.setPhase(ev.Phase)
			sp := w.servePhase(ev.Phase, ev.Title, ev.At, ev.Line)
			sp.Warning = ev.Text
			w.emit(sp)
		case ServerReady:
			w.readyAt = ev.At
			w.mu.Lock()
			w.res.Phase = PhaseReady
			w.res.Ready, w.res.ReadyAfter = true, ev.At.Sub(w.started)
			if !w.firstHealth.IsZero() {
				w.res.SinceHealth = ev.At.Sub(w.firstHealth)
			}
			r := w.res
			w.mu.Unlock()
			w.emit(Ready{Step: w.o.Step, URL: w.o.Launch.URL, Model: w.o.Launch.Served, Elapsed: r.ReadyAfter, SinceHealth: r.SinceHealth})
		case PhaseStalled:
			w.mu.Lock()
			w.res.Phase, w.res.Stalled, w.res.Failed = ev.Phase, true, ev.Reason
			w.mu.Unlock()
			w.emit(runner.Found{Step: w.o.Step, Finding: stallFinding(ev)})
			w.failed(ev.Reason, exited)
		case StartFailed:
			w.mu.Lock()
			w.res.Phase, w.res.Stalled, w.res.Failed = ev.Phase, false, ev.Reason
			if ev.SuggestContext > 0 {
				w.res.SuggestContext = ev.SuggestContext
			}
			w.mu.Unlock()
			w.failed(ev.Reason, exited)
		}
	}
}

// setPhase records the last phase reached.
func (w *Watcher) setPhase(id PhaseID) {
	w.mu.Lock()
	w.res.Phase = id
	w.mu.Unlock()
}

// failed settles a start-up that stalled or failed as a failed step, unless
// the step is over already (exited).
func (w *Watcher) failed(why string, exited bool) {
	if !exited {
		w.settle(runner.Verdict{Status: steps.OutcomeFailed, Why: why})
	}
}

// stallFinding is the stall as a finding of the port-never-opens family,
// its text naming the phase.
func stallFinding(ev PhaseStalled) diagnose.Finding {
	f := diagnose.Finding{Family: PortNeverOpens, Text: ev.Reason, Summary: "The server never answered: it stalled in phase " + string(ev.Phase) + ".", Stall: true}
	if r, ok := diagnose.RuleByID(PortNeverOpens); ok {
		f.Summary, f.Fix, f.Title, f.Links, f.Ladder = r.Summary, r.Fix, r.Title, r.Links, r.Ladder
		f.Summary = strings.TrimSuffix(f.Summary, ".") + ": stuck in phase " + string(ev.Phase) + " (" + ev.Title + ")."
	}
	return f
}

// servePhase is the stream's event for a phase entered at at (or warned in).
func (w *Watcher) servePhase(id PhaseID, title string, at time.Time, line string) StartupPhase {
	i := w.rd.index(id)
	return StartupPhase{Step: w.o.Step, Phase: id, Title: title, Index: i + 1, Total: len(w.rd.p.phases),
		Budget: w.rd.p.phases[i].Budget, Elapsed: at.Sub(w.started), Line: line}
}

// userStop settles a ready server as served, or interrupts one that is not.
func (w *Watcher) userStop() {
	w.mu.Lock()
	w.res.StoppedByUser = true
	ready, smoke := w.res.Ready, w.res.Smoke
	w.mu.Unlock()
	w.smokeCancel()
	if !ready || w.settled {
		if w.o.Cancel != nil && !w.settled {
			w.o.Cancel()
		}
		return
	}
	served := time.Since(w.readyAt)
	w.mu.Lock()
	w.res.Served = served
	r := w.res
	w.mu.Unlock()
	v := runner.Verdict{Status: steps.OutcomeSucceeded,
		Why:      fmt.Sprintf("ready in %s; stopped by you after %s of service", text.Duration(r.ReadyAfter), text.Duration(served)),
		Verified: []string{fmt.Sprintf("ready at %s in %s: %s answered", w.o.Launch.URL, text.Duration(r.ReadyAfter), w.rd.p.health)}}
	if w.rd.p.models != "" {
		v.Verified[0] += " and " + w.rd.p.models + " lists " + orAny(w.o.Launch.Served)
	}
	switch {
	case smoke != nil && smoke.Err == "":
		v.Verified = append(v.Verified, smoke.Sentence())
	case smoke != nil:
		v.NotVerified = append(v.NotVerified, smoke.Sentence())
	case w.o.Smoke && w.o.Launch.Served != "":
		v.NotVerified = append(v.NotVerified, "stopped before the first completion answered")
	}
	w.settle(v)
}

func (w *Watcher) settle(v runner.Verdict) {
	if w.settled {
		return
	}
	w.settled = true
	w.run.Settle(v)
}

// emit passes an event to the consumer, waiting for it: the screens see
// every server event (only the runner's Lines may be dropped, upstream).
func (w *Watcher) emit(e runner.Event) { w.out <- e }

func orAny(s string) string {
	if s == "" {
		return "a model"
	}
	return s
}

// EngineCPU is the CPU time (user + system) of the process in pidfile and
// every process below it; false when there is no such process.
func EngineCPU(pidfile string) (time.Duration, bool) {
	if pidfile == "" {
		return 0, false
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0, false
	}
	total, ok := procCPU(pid)
	if !ok {
		return 0, false
	}
	for _, c := range runner.Descendants(pid) {
		if t, ok := procCPU(c); ok {
			total += t
		}
	}
	return total, true
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux).
const clockTick = 10 * time.Millisecond

// procCPU reads utime + stime of one process.
func procCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+st) * clockTick, true
}
