package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/installed"
)

// Defaults of Options.
const (
	DefaultGrace      = 5 * time.Second  // SIGTERM to SIGKILL
	DefaultStallCheck = 15 * time.Second // how often Analyzer.Idle is asked
	DefaultEvents     = 64               // events buffered (Lines holds a read chunk) before screen lines drop
	tailLines         = 20               // lines kept for a failure summary
)

// Analyzer watches one step's output and names the known failures in it.
// The runner calls it from one goroutine only; Diagnosis is the real one.
type Analyzer interface {
	// Line sees each sanitised line (n is 1-based, text without colours)
	// and returns the failure families this line made known for the first
	// time: usually none, sometimes several at once.
	Line(n int, text string) []diagnose.Finding
	// Idle is called every StallCheck while the step prints nothing, with
	// the time since its last output, and returns new findings (a hang).
	Idle(since time.Duration) []diagnose.Finding
	// End returns every finding of the step once its output has ended.
	End() []diagnose.Finding
}

// Diagnosis is the Analyzer of every haloforge run: diagnose's streaming
// matcher for the step, each new finding handed over as soon as it is known.
func Diagnosis(track, step string) Analyzer {
	return matcher{diagnose.NewMatcher(diagnose.MatcherOptions{Track: track, Step: step})}
}

// matcher adapts *diagnose.Matcher, which returns one finding per call and
// queues the others a line started, to the Analyzer's all-at-once contract.
type matcher struct{ m *diagnose.Matcher }

func (a matcher) Line(n int, text string) []diagnose.Finding  { return a.all(a.m.Line(n, text)) }
func (a matcher) Idle(since time.Duration) []diagnose.Finding { return a.all(a.m.Idle(since)) }
func (a matcher) End() []diagnose.Finding                     { return a.m.End() }

// all returns first and whatever the matcher queued behind it.
func (a matcher) all(first *diagnose.Finding) []diagnose.Finding {
	if first == nil {
		return nil
	}
	out := []diagnose.Finding{*first}
	for f := a.m.Next(); f != nil; f = a.m.Next() {
		out = append(out, *f)
	}
	return out
}

// Options configure a run. Plan, StateDir and ScriptsDir are required.
type Options struct {
	Plan *steps.Plan
	// Workspace is where the run reads and writes: the state dir, the
	// scripts on disk, the container definitions (toolbox.env, validated,
	// is passed to the scripts), the pins file named in the report.
	steps.Workspace
	DryRun bool   // HALOFORGE_DRY_RUN=1: scripts print commands; cache and state untouched
	From   string // run this step and every later one, cached or not
	Only   []string
	Skip   []string // steps the user chose to skip (optional ones, in the wizard)
	Resume bool     // continue the last failed or interrupted run of the track
	// Kind is what the run is for, recorded in its report (RunBuild when
	// empty): RunServe, RunBench.
	Kind string
	// NoHistory runs without the track's history: state.json is neither
	// written nor locked, nothing is cached as done. For runs that are not
	// builds (a server, a benchmark), which go beside builds of any track.
	NoHistory bool
	// Args are extra arguments of a step's script, by step ID: a serve
	// step's engine command, decided by the caller and run as it is.
	Args map[string][]string
	// Analyzer makes the diagnosis of a step; nil means no diagnosis.
	Analyzer   func(track, step string) Analyzer
	Grace      time.Duration // SIGTERM to SIGKILL on a stop; 0 means DefaultGrace
	StallCheck time.Duration // 0 means DefaultStallCheck
	// InputQuiet is the silence after which a step is checked for waiting
	// on its terminal (WaitingForInput); 0 means DefaultInputQuiet.
	InputQuiet time.Duration
	KeepColor  bool // keep SGR colours in Lines.Text
	// ProgressEvery is how often, at most, OpenLine and Progress are sent
	// (0 means DefaultProgressEvery; below 0, never).
	ProgressEvery time.Duration
	MaxLine       int    // bytes of a screen line; 0 means text.DefaultMaxLine
	Cols, Rows    uint16 // pty size; 0 means 160x50
	// Supervisor is the argv that runs "GRACE SCRIPT" under a supervisor
	// (see Supervise); nil means this binary: /proc/self/exe __supervise.
	Supervisor []string
	// Events is the channel capacity; 0 means DefaultEvents.
	Events int
	// Bin is the haloforge binary a step script calls ("$HALOFORGE_BIN"
	// verify …); "" means this binary (os.Executable).
	Bin string
}

// Runner runs a plan once. Read Events until it is closed.
type Runner struct {
	o            Options
	plan         *steps.Plan
	st           *steps.State
	runID        string
	runDir       string
	events       chan Event
	kill         chan struct{}
	settle       chan Verdict    // the consumer's verdict on the running step
	runs         []bool          // per plan step: runs in this run
	reasons      []string        // per plan step: why it runs or not
	resumed      map[string]bool // steps that failed or stopped in the resumed run
	notices      []string        // said before the first step
	prevDurs     map[string]time.Duration
	interrupted  bool // a step was stopped, or the run was cancelled between steps
	started      time.Time
	report       *Report
	buildVars    map[string]string      // toolbox.env's build variables every step gets in its environment, beside the plan's pins (snapshot.go)
	stepVarNames []string               // the names of the pins and build variables, pins first, for PinNamesEnv
	pinsSnap     []byte                 // the record of the pins the steps got
	toolboxSnap  []byte                 // the record of toolbox.env's build variables; nil when there is none
	parked       []*supervisor          // supervisors keeping what a succeeded step left running until the run ends
	current      atomic.Pointer[stream] // the running step's stream (Input, Waiting)
	owner        string                 // the run's owner token (installed.OwnerEnv)
	stepIdx      int                    // the running step's plan index (set before its stream starts)
	stepStart    time.Time              // when it started
}

// New checks everything a run needs before any step runs: the state dir is
// writable, the selected steps exist and their scripts are executable.
// Every error it returns is bad input (exit 2).
func New(o Options) (*Runner, error) {
	if o.Plan == nil {
		return nil, errors.New("runner: no plan")
	}
	o = withDefaults(o)
	if err := CheckStateDir(o.StateDir); err != nil {
		return nil, err
	}
	st, err := steps.LoadState(o.StateDir)
	if err != nil {
		return nil, err
	}
	r := &Runner{o: o, plan: o.Plan, st: st, events: make(chan Event, o.Events), kill: make(chan struct{}, 1),
		settle:  make(chan Verdict, 1),
		resumed: map[string]bool{}, prevDurs: previousDurations(st, o.Plan, o.StateDir)}
	if err := r.selectSteps(); err != nil {
		return nil, err
	}
	if err := r.checkScripts(); err != nil {
		return nil, err
	}
	if o.Resume && o.NoHistory {
		return nil, errors.New("runner: a run without history cannot resume")
	}
	if err := r.snapshots(); err != nil {
		return nil, err
	}
	if o.Resume {
		if err := r.planResume(); err != nil {
			return nil, err
		}
	}
	if err := r.checkSupervisor(); err != nil {
		return nil, err
	}
	r.runID = newRunID(time.Now())
	r.runDir = filepath.Join(o.StateDir, "runs", r.runID)
	r.owner = installed.NewOwner(r.runID)
	return r, nil
}

func withDefaults(o Options) Options {
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.StallCheck <= 0 {
		o.StallCheck = DefaultStallCheck
	}
	if o.InputQuiet <= 0 {
		o.InputQuiet = DefaultInputQuiet
	}
	if o.Events <= 0 {
		o.Events = DefaultEvents
	}
	if o.MaxLine <= 0 {
		o.MaxLine = text.DefaultMaxLine
	}
	if o.Kind == "" {
		o.Kind = RunBuild
	}
	if o.ProgressEvery == 0 {
		o.ProgressEvery = DefaultProgressEvery
	}
	if o.Cols == 0 || o.Rows == 0 {
		o.Cols, o.Rows = 160, 50
	}
	if len(o.Supervisor) == 0 {
		o.Supervisor = []string{"/proc/self/exe", SuperviseArg}
	}
	if abs, err := filepath.Abs(o.StateDir); err == nil {
		o.StateDir = abs
	}
	if abs, err := filepath.Abs(o.ScriptsDir); err == nil {
		o.ScriptsDir = abs
	}
	return o
}

// CheckStateDir makes sure dir exists, is the user's own, and takes a file.
// Permission bits do not stop root, so it writes for real. The state dir
// holds the scripts haloforge runs (the built-in copy, materialised once by
// content hash) and the records it trusts, so one that another user owns or
// that anyone may write to is refused: they could plant the scripts a build
// runs (for example a shared /tmp/haloforge-state made before you).
func CheckStateDir(dir string) error {
	if dir == "" {
		return errors.New("no state dir")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("state dir %s cannot be created: %w", dir, safefile.Cause(err))
	}
	if err := ownedByUser(dir); err != nil {
		return err
	}
	if err := plantedEntries(dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return fmt.Errorf("state dir %s is not writable: %w", dir, safefile.Cause(err))
	}
	name := f.Name()
	_, werr := f.Write([]byte("ok"))
	cerr := f.Close()
	os.Remove(name)
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("state dir %s is not writable: %w", dir, err)
	}
	return nil
}

// plantedEntries refuses, before anything runs, a state dir holding what
// haloforge never makes there: a symbolic link (its runs, backups, caches
// and scripts would go where the link leads), a FIFO, a socket or a
// device. Each file is also opened without following a link later
// (safefile.Tree); this says it once, up front, with the path.
func plantedEntries(dir string) error {
	entries, err := safefile.Tree(dir).ReadDir("")
	if err != nil {
		return fmt.Errorf("state dir %s: %w", dir, safefile.Cause(err))
	}
	for _, e := range entries {
		if e.Type()&(fs.ModeSymlink|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice|fs.ModeIrregular) != 0 {
			return fmt.Errorf("state dir: %s is %s: haloforge keeps only its own files and directories there and follows no link in it; remove it if you did not put it there (to keep the state on another disk, give that disk's directory as --state-dir)",
				filepath.Join(dir, e.Name()), safefile.Kind(e.Type()))
		}
	}
	return nil
}

// ownedByUser refuses a state dir another user owns, or one anybody may
// write to (without the sticky bit, which would at least keep them from
// replacing haloforge's own files).
func ownedByUser(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("state dir %s: %w", dir, safefile.Cause(err))
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return fmt.Errorf("state dir %s belongs to uid %d, not to you (uid %d): another user could plant the scripts a build runs there; use --state-dir DIR of your own", dir, st.Uid, uid)
	}
	if fi.Mode().Perm()&0o002 != 0 && fi.Mode()&os.ModeSticky == 0 {
		return fmt.Errorf("state dir %s is writable by every user (mode %04o): another user could plant the scripts a build runs there; chmod o-w %s", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// selectSteps decides, per plan step, whether it runs and why.
func (r *Runner) selectSteps() error {
	o, ps := r.o, r.plan.Steps
	if o.From != "" && len(o.Only) > 0 {
		return errors.New("--from and --only do not go together")
	}
	for _, id := range append(slices.Clone(o.Only), o.From) {
		if _, ok := r.plan.Step(id); id != "" && !ok {
			return fmt.Errorf("track %s has no step %q (steps: %s)", r.plan.Track.ID, id, strings.Join(r.plan.Track.StepIDs(), ", "))
		}
	}
	r.runs, r.reasons = make([]bool, len(ps)), make([]string, len(ps))
	from := slices.IndexFunc(ps, func(s steps.PlannedStep) bool { return s.ID == o.From })
	for i, s := range ps {
		switch {
		case slices.Contains(o.Skip, s.ID):
			r.reasons[i] = "skipped by you"
		case len(o.Only) > 0 && !slices.Contains(o.Only, s.ID):
			r.reasons[i] = "not in --only"
		case len(o.Only) > 0:
			r.runs[i], r.reasons[i] = true, "asked for with --only"
		case from > i:
			r.reasons[i] = "before --from " + o.From
		case from >= 0:
			r.runs[i], r.reasons[i] = true, "asked for with --from "+o.From
		case o.DryRun:
			r.runs[i], r.reasons[i] = true, "dry run: "+s.Reason
		default:
			r.runs[i], r.reasons[i] = s.WillRun, s.Reason
		}
	}
	return nil
}

// checkScripts finds every script that will run, executable, on disk.
func (r *Runner) checkScripts() error {
	var problems []string
	for i, s := range r.plan.Steps {
		if !r.runs[i] {
			continue
		}
		p := r.scriptPath(s)
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("step %s: script %s: %v", s.ID, p, safefile.Cause(err)))
		case !fi.Mode().IsRegular():
			problems = append(problems, fmt.Sprintf("step %s: script %s is not a regular file", s.ID, p))
		case fi.Mode().Perm()&0o111 == 0:
			problems = append(problems, fmt.Sprintf("step %s: script %s is not executable (chmod +x %s)", s.ID, p, p))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

func (r *Runner) scriptPath(s steps.PlannedStep) string {
	return filepath.Join(r.o.ScriptsDir, filepath.FromSlash(s.ScriptPath))
}

func (r *Runner) checkSupervisor() error {
	exe := r.o.Supervisor[0]
	if _, err := os.Stat(exe); err != nil {
		return fmt.Errorf("step supervisor %s: %w", exe, safefile.Cause(err))
	}
	return nil
}

// historyRuns bounds the run reports read for the ETA of steps state.json
// has no success of.
const historyRuns = 30

// previousDurations are the last successful durations, for the ETA: from
// state.json, else from the newest reports of the track's runs that saw
// the step succeed (state.json forgets successes when clean removed what
// they built; the time they took still says how long a rebuild takes).
func previousDurations(st *steps.State, p *steps.Plan, stateDir string) map[string]time.Duration {
	out := map[string]time.Duration{}
	if ts := st.Tracks[p.Track.ID]; ts != nil {
		for id, ss := range ts.Steps {
			if ss != nil && ss.LastSuccess != nil && ss.LastSuccess.Duration > 0 {
				out[id] = ss.LastSuccess.Duration
			}
		}
	}
	missing := 0
	for _, s := range p.Steps {
		if _, ok := out[s.ID]; !ok {
			missing++
		}
	}
	for i, id := range RunIDs(stateDir) {
		if missing == 0 || i == historyRuns {
			break
		}
		rep, err := ReadReport(stateDir, id)
		if err != nil || rep.Track != p.Track.ID || rep.DryRun || (rep.Kind != "" && rep.Kind != RunBuild) {
			continue
		}
		for _, sr := range rep.Steps {
			if _, ok := out[sr.ID]; ok || sr.Duration <= 0 || (sr.Status != steps.OutcomeSucceeded && sr.Status != steps.OutcomeNotVerified) {
				continue
			}
			if _, inPlan := p.Step(sr.ID); inPlan {
				out[sr.ID] = sr.Duration
				missing--
			}
		}
	}
	return out
}

func newRunID(t time.Time) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return t.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

// Events delivers the run's progress; it is closed when Run returns.
func (r *Runner) Events() <-chan Event { return r.events }

// RunID names this run; its files are under RunDir.
func (r *Runner) RunID() string { return r.runID }

// RunDir is <state-dir>/runs/<run-id>.
func (r *Runner) RunDir() string { return r.runDir }

// Notices are what New found worth saying before the first step (resume).
func (r *Runner) Notices() []string { return slices.Clone(r.notices) }

// Kill skips the rest of the grace period of a stop in progress (a second
// Ctrl-C); cancel Run's context first.
func (r *Runner) Kill() {
	select {
	case r.kill <- struct{}{}:
	default:
	}
}

// Verdict is a consumer's judgement of the running step, given with Settle.
type Verdict struct {
	// Status is the step's outcome: steps.OutcomeSucceeded,
	// OutcomeNotVerified or OutcomeFailed.
	Status string
	// Why says in one line what the consumer saw ("ready in 4s, answered a
	// completion; stopped by you", "stalled in phase loading").
	Why         string
	Verified    []string
	NotVerified []string
	// Findings are what the consumer recognised besides the step's own
	// output (a server's wrong answers): they join the step's findings in
	// the report and in StepFinished.
	Findings []diagnose.Finding
}

// Settle ends the running step with the consumer's verdict instead of its
// exit code: a long-lived step (a server) succeeds when it is ready and is
// stopped by the one watching it, or fails when that one sees it stall.
// The step is stopped as on a cancel (SIGTERM, grace, SIGKILL to all its
// processes) and recorded with the verdict; the run goes on as after any
// step with that outcome. A verdict given while no step runs, or after the
// run's context was cancelled, is ignored: a stop by the user wins.
func (r *Runner) Settle(v Verdict) {
	select {
	case r.settle <- v:
	default: // one verdict is pending already: the first one counts
	}
}

// Run runs the selected steps in order. Cancelling ctx stops the running
// step (SIGTERM, grace, SIGKILL to all its processes) and ends the run as
// interrupted. A failed step that is not optional ends the run as failed.
// The error is for the run's own machinery (state, lock, files), not for
// steps: those are in the report.
func (r *Runner) Run(ctx context.Context) (*Report, error) {
	defer close(r.events)
	// A dry run changes no state (only its own run directory), so it may
	// run beside a real build of the same state dir; a run without history
	// (serve) neither writes nor locks state.json.
	if !r.o.DryRun && !r.o.NoHistory {
		unlock, err := lockStateDir(r.o.StateDir)
		if err != nil {
			r.send(RunFinished{RunID: r.runID, Status: steps.OutcomeFailed, Err: err, At: time.Now()})
			return nil, err
		}
		defer unlock()
	}
	// The track itself: a build holds it alone, servers share it.
	if !r.o.DryRun {
		unlock, err := lockTrack(r.o.StateDir, r.plan.Track.ID, !r.o.NoHistory)
		if err != nil {
			r.send(RunFinished{RunID: r.runID, Status: steps.OutcomeFailed, Err: err, At: time.Now()})
			return nil, err
		}
		defer unlock()
	}
	if err := safefile.Tree(r.o.StateDir).MkdirAll(RunName(r.runID), 0o755); err != nil {
		err := fmt.Errorf("run dir: %w", err)
		r.send(RunFinished{RunID: r.runID, Status: steps.OutcomeFailed, Err: err, At: time.Now()})
		return nil, err
	}
	if err := r.writeSnapshots(); err != nil {
		r.send(RunFinished{RunID: r.runID, Status: steps.OutcomeFailed, Err: err, At: time.Now()})
		return nil, err
	}
	r.started = time.Now()
	r.report = r.newReport()
	if !r.o.DryRun && !r.o.NoHistory {
		// What earlier runs created for the track, until this run's steps
		// add to it (a run whose steps are all up to date still has it).
		if rec, err := installed.Load(r.o.StateDir); err == nil {
			r.report.Installed = append(r.report.Installed, rec.Items(r.plan.Track.ID)...)
		}
	}
	total := r.countRuns()
	r.send(RunStarted{Track: r.plan.Track.ID, RunID: r.runID, RunDir: r.runDir, Total: total, At: r.started})
	for _, n := range r.notices {
		r.send(Notice{Text: n})
	}
	err := errors.Join(r.writeReport(), r.runSteps(ctx, total))
	r.unpark()
	err = errors.Join(err, r.measureInstalled())
	r.report.Duration = time.Since(r.started)
	r.report.Status = r.runStatus()
	// The record says what the steps got, whatever a step made of the file.
	err = errors.Join(err, r.writeReport(), r.writeSnapshots())
	r.send(RunFinished{RunID: r.runID, RunDir: r.runDir, Status: r.report.Status,
		Duration: r.report.Duration, Installed: slices.Clone(r.report.Installed), Err: err, At: time.Now()})
	return r.report, err
}

func (r *Runner) countRuns() int {
	n := 0
	for _, run := range r.runs {
		if run {
			n++
		}
	}
	return n
}

// runSteps runs or skips each plan step; after a failure or a stop the
// remaining steps are recorded as not run.
func (r *Runner) runSteps(ctx context.Context, total int) error {
	var errs []error
	idx := 0
	var stopped string // why the rest does not run
	for i, s := range r.plan.Steps {
		sr := &r.report.Steps[i]
		switch {
		case stopped != "":
			sr.Status, sr.Reason = StatusNotRun, stopped
		case !r.runs[i]:
			sr.Status, sr.Reason = steps.OutcomeSkipped, r.reasons[i]
			r.send(StepSkipped{Step: s.ID, Title: s.Title, Optional: s.Optional, WhySkipped: r.reasons[i]})
		case ctx.Err() != nil:
			sr.Status, sr.Reason = StatusNotRun, "interrupted before it started"
			stopped = sr.Reason
			r.interrupted = true
		default:
			idx++
			errs = append(errs, r.runOne(ctx, i, idx, total))
			switch {
			case sr.Status == steps.OutcomeInterrupted:
				stopped = "interrupted during " + s.ID
			case sr.Status == steps.OutcomeFailed && !s.Optional:
				stopped = s.ID + " failed"
			}
		}
	}
	return errors.Join(errs...)
}

// runStatus is the run's outcome from its steps: interrupted, else failed,
// else not-verified when a step could not prove its outcome, else succeeded.
func (r *Runner) runStatus() string {
	status := steps.OutcomeSucceeded
	for i, s := range r.report.Steps {
		switch {
		case s.Status == steps.OutcomeInterrupted || r.interrupted:
			return steps.OutcomeInterrupted
		case s.Status == steps.OutcomeFailed && !r.plan.Steps[i].Optional:
			status = steps.OutcomeFailed
		case s.Status == steps.OutcomeNotVerified && status == steps.OutcomeSucceeded:
			status = steps.OutcomeNotVerified
		}
	}
	return status
}

// eta sums the last durations of the steps from plan index i on that run;
// 0 when one of them never succeeded before.
func (r *Runner) eta(i int) time.Duration {
	d, _ := r.etaFrom(i)
	return d
}

// etaFrom is eta, and whether every step from i on has a last duration
// (true, with 0, when none of them runs).
func (r *Runner) etaFrom(i int) (time.Duration, bool) {
	var sum time.Duration
	for j := i; j < len(r.plan.Steps); j++ {
		if !r.runs[j] {
			continue
		}
		d, ok := r.prevDurs[r.plan.Steps[j].ID]
		if !ok {
			return 0, false
		}
		sum += d
	}
	return sum, true
}

// runETA is the run's remaining time while plan step i has run for
// elapsed and its counter says stepETA: what is left of its last duration
// (or stepETA, when longer), and the later steps' last durations. 0 when
// a step has no last duration, or this one has outrun its own and its
// counter knows no better.
func (r *Runner) runETA(i int, elapsed, stepETA time.Duration) time.Duration {
	prev, ok := r.prevDurs[r.plan.Steps[i].ID]
	if !ok {
		return 0
	}
	rem := max(prev-elapsed, stepETA)
	if rem <= 0 {
		return 0
	}
	later, ok := r.etaFrom(i + 1)
	if !ok {
		return 0
	}
	return rem + later
}

// send delivers an event that must not be lost; it waits for the consumer.
func (r *Runner) send(e Event) { r.events <- e }

// offer delivers an event only if the consumer has room for it, and says
// whether it did: screen lines are never worth slowing a step down.
func (r *Runner) offer(e Event) bool {
	select {
	case r.events <- e:
		return true
	default:
		return false
	}
}
