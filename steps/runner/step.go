package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/installed"
)

// drainAfterExit bounds reading the pty once the supervisor has exited: a
// leftover daemon may keep the terminal open forever.
const drainAfterExit = 2 * time.Second

// outcome is how one step ended.
type outcome struct {
	status   string
	exitCode int
	err      error
	result   stepResult // what a step that exited 0 said it proved
	left     []Leftover // what its script left running when it ended by itself
	started  bool       // the script ran (its facts file may say what it consumed)
	why      string     // the consumer's verdict, when it settled the step
}

// runOne runs plan step i as the idx-th of total and records it in the
// state, the report and the events.
func (r *Runner) runOne(ctx context.Context, i, idx, total int) error {
	s := r.plan.Steps[i]
	sr := &r.report.Steps[i]
	logPath := filepath.Join(r.runDir, s.ID+".log")
	started := time.Now()
	sr.Status, sr.Started, sr.Log = steps.OutcomeRunning, started, logPath
	stateErr := r.recordStart(s, logPath, started)
	repErr := r.writeReport()
	r.dropVerdict() // one given before this step started is not about it
	r.send(StepStarted{Step: s.ID, Title: s.Title, Index: idx, Total: total, Optional: s.Optional, Log: logPath,
		ETA: r.eta(i), Elapsed: time.Since(r.started), At: started})

	r.stepIdx, r.stepStart = i, started
	res, out := r.execute(ctx, s, logPath)
	d := time.Since(started)
	sr.Status, sr.ExitCode, sr.Duration = out.status, out.exitCode, d
	sr.Bytes, sr.Lines, sr.Tail, sr.Findings = res.bytes, res.lines, res.tail, res.findings
	sr.Verified, sr.NotVerified = nonNil(out.result.verified), nonNil(out.result.notVerified)
	sr.Why = out.why
	sr.Leftovers = out.left
	var times map[string]time.Duration
	if out.started {
		facts, problems := readFacts(r.factsPath(s.ID))
		if !facts.resolved.Empty() {
			sr.Resolved = &facts.resolved
			r.report.Resolved.merge(s.ID, facts.resolved)
		}
		sr.Created, problems = r.recordCreated(s.ID, facts.created, problems)
		sr.FactErrors = problems
		times, sr.Times = facts.times, facts.times
	}
	if out.err != nil {
		sr.Error = out.err.Error()
	}
	if out.status == steps.OutcomeInterrupted {
		r.interrupted = true
	}
	stateErr = errors.Join(stateErr, r.recordEnd(s, out, started, d))
	repErr = errors.Join(repErr, r.writeReport())
	whyOptional := ""
	if s.Optional {
		whyOptional = s.Why
	}
	r.send(StepFinished{Step: s.ID, Title: s.Title, Index: idx, Total: total, Optional: s.Optional, WhyOptional: whyOptional,
		Status: out.status, ExitCode: out.exitCode, Duration: d, Elapsed: time.Since(r.started), Log: logPath,
		Err: out.err, Tail: res.tail, Findings: res.findings, Dropped: res.dropped,
		Verified: out.result.verified, NotVerified: out.result.notVerified, Leftovers: out.left, Why: out.why, Times: times, At: time.Now()})
	return errors.Join(stateErr, repErr)
}

// dropVerdict forgets a verdict nobody ran a step for.
func (r *Runner) dropVerdict() {
	select {
	case <-r.settle:
	default:
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// recordStart marks the step running in state.json, so that a crash of
// haloforge itself still shows where it was.
func (r *Runner) recordStart(s steps.PlannedStep, logPath string, at time.Time) error {
	if r.o.DryRun || r.o.NoHistory {
		return nil // a dry run changes nothing, not even the history
	}
	t := r.st.Track(r.plan.Track.ID)
	ss := t.Steps[s.ID]
	if ss == nil {
		ss = &steps.StepState{}
		t.Steps[s.ID] = ss
	}
	t.LastRun = r.runID
	ss.Status, ss.RunID, ss.CacheKey, ss.Started, ss.Log = steps.OutcomeRunning, r.runID, s.CacheKey, at, logPath
	ss.ExitCode, ss.Duration = 0, 0
	return r.saveState()
}

func (r *Runner) recordEnd(s steps.PlannedStep, out outcome, at time.Time, d time.Duration) error {
	if r.o.DryRun || r.o.NoHistory {
		return nil
	}
	ss := r.st.Track(r.plan.Track.ID).Steps[s.ID]
	ss.Status, ss.ExitCode, ss.Duration = out.status, out.exitCode, d
	// A step that could not verify its outcome still ran to its end: the
	// cache counts it done, and remembers why it is not verified.
	if out.status == steps.OutcomeSucceeded || out.status == steps.OutcomeNotVerified {
		r.st.RecordSuccess(r.plan.Track.ID, s, r.runID, at, d)
		ss.LastSuccess.NotVerified = out.result.notVerified
	}
	return r.saveState()
}

func (r *Runner) saveState() error {
	if err := r.st.Save(r.o.StateDir); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return nil
}

// execute runs the step's script under a supervisor in a fresh pty and
// streams its output until it has ended; a step that exits 0 is then
// judged by its result file.
func (r *Runner) execute(ctx context.Context, s steps.PlannedStep, logPath string) (streamResult, outcome) {
	// The cache dir outlives runs (wheels, clones): scripts may rely on it.
	state := safefile.Tree(r.o.StateDir)
	if err := state.MkdirAll("cache/"+r.plan.Track.ID, 0o755); err != nil {
		return streamResult{}, outcome{status: steps.OutcomeFailed, exitCode: -1, err: fmt.Errorf("cache dir: %w", err)}
	}
	// Only what this run of the step writes may count.
	for _, p := range []string{s.ID + resultSuffix, s.ID + factsSuffix} {
		if err := state.Remove(RunName(r.runID) + "/" + p); err != nil {
			return streamResult{}, outcome{status: steps.OutcomeFailed, exitCode: -1, err: fmt.Errorf("result file: %w", err)}
		}
	}
	logf, err := state.OpenFile(RunName(r.runID)+"/"+s.ID+".log", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return streamResult{}, outcome{status: steps.OutcomeFailed, exitCode: -1, err: fmt.Errorf("log: %w", err)}
	}
	res, end, err := r.inPty(ctx, s, logf, logPath)
	// What the step left running goes after its own output.
	for _, l := range leftoverLines(end.left) {
		if _, werr := logf.WriteString(l + "\n"); werr != nil {
			res.err = errors.Join(res.err, fmt.Errorf("log %s: %w", logPath, safefile.Cause(werr)))
			break
		}
	}
	// The log promises every byte: one that does not close whole fails the step.
	if cerr := logf.Close(); cerr != nil {
		res.err = errors.Join(res.err, fmt.Errorf("log %s: %w", logPath, safefile.Cause(cerr)))
	}
	if err != nil {
		return res, outcome{status: steps.OutcomeFailed, exitCode: -1, err: errors.Join(err, res.err)}
	}
	out := r.outcomeOf(end, res.err)
	if end.verdict != nil {
		out = settled(*end.verdict, out)
		out.left, out.started = end.left, true
		res.findings = append(res.findings, end.verdict.Findings...)
		return res, out
	}
	out.left, out.started = end.left, true
	if out.status == steps.OutcomeSucceeded {
		out.result = readResult(r.resultPath(s.ID))
		if len(out.result.notVerified) > 0 {
			out.status = steps.OutcomeNotVerified
		}
	}
	return res, out
}

// settled is the outcome of a step its consumer judged: the verdict's
// status and proof, with the exit code and the runner's own trouble kept.
func settled(v Verdict, out outcome) outcome {
	status := v.Status
	switch status {
	case steps.OutcomeSucceeded, steps.OutcomeNotVerified, steps.OutcomeFailed:
	default:
		status = steps.OutcomeFailed
	}
	if status == steps.OutcomeSucceeded && len(v.NotVerified) > 0 {
		status = steps.OutcomeNotVerified
	}
	if out.err != nil && status != steps.OutcomeFailed {
		status = steps.OutcomeFailed // the log is incomplete: say so, as for any step
	}
	return outcome{status: status, exitCode: out.exitCode, err: out.err, why: v.Why,
		result: stepResult{verified: v.Verified, notVerified: v.NotVerified}}
}

// ended is how a step's supervisor ended, or why it goes on.
type ended struct {
	waitErr error    // from the supervisor's Wait
	stopped bool     // haloforge stopped the step (a cancel)
	verdict *Verdict // the consumer settled the step (Settle) and it was stopped
	// parked: the script ended by itself (exit code in code) and left
	// strays, which its supervisor keeps until the run ends (Runner.unpark).
	parked bool
	// release: the script ended by itself and what it left stays running
	// (a service, the container runtime); its supervisor is told so once
	// the terminal is hung up.
	release bool
	code    int
	left    []Leftover // what the script left running, with their fates
}

// supervisor is a step's supervisor process and its control pipe.
type supervisor struct {
	step string
	cmd  *exec.Cmd
	ctl  *os.File
	done chan error // the result of cmd.Wait, once
}

// inPty starts the step in a new pty with its output going to logf, and
// waits for it and its output; err is set when it could not start.
func (r *Runner) inPty(ctx context.Context, s steps.PlannedStep, logf *os.File, logPath string) (res streamResult, end ended, err error) {
	master, slave, err := pty.Open()
	if err != nil {
		return res, end, fmt.Errorf("pty: %w", err)
	}
	defer master.Close()
	_ = pty.Setsize(master, &pty.Winsize{Cols: r.o.Cols, Rows: r.o.Rows})
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		slave.Close()
		return res, end, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		slave.Close()
		ctlR.Close()
		ctlW.Close()
		return res, end, err
	}
	slaveName := slave.Name()
	cmd := r.command(s, slave, ctlR, repW)
	err = cmd.Start()
	slave.Close() // the children hold it now; EIO on master means they are all gone
	ctlR.Close()
	repW.Close()
	if err != nil {
		ctlW.Close()
		repR.Close()
		return res, end, fmt.Errorf("start %s: %w", s.ScriptPath, err)
	}
	ends := make(chan scriptEnd, 1)
	go func() {
		defer repR.Close()
		if e, ok := readScriptEnd(repR); ok {
			ends <- e
		}
	}()
	sup := &supervisor{step: s.ID, cmd: cmd, ctl: ctlW, done: make(chan error, 1)}
	go func() { sup.done <- cmd.Wait() }()
	st := newStream(master, logf, logPath, r, s)
	st.supervisor, st.slave = cmd.Process.Pid, slaveName
	r.current.Store(st)
	defer r.current.Store(nil)
	defer st.shut()
	go st.read()
	go st.process()
	end = r.wait(ctx, s, sup, ends)
	st.stopReader(slaveName, drainAfterExit)
	res = st.result()
	switch {
	case end.parked:
		r.parked = append(r.parked, sup)
	case end.release:
		// Hang the terminal up first: the supervisor leading the session
		// would otherwise take the step's process group down with it.
		st.shut()
		_, _ = ctlW.Write([]byte{ctlRelease})
		r.waitSupervisor(sup)
		end.waitErr = <-sup.done
	default:
		ctlW.Close()
	}
	return res, end, nil
}

// command is the supervisor running the step's script in the pty, as the
// leader of a new session whose controlling terminal is the pty, with its
// control pipe (fd 3) and its report pipe (fd 4).
func (r *Runner) command(s steps.PlannedStep, slave, ctl, report *os.File) *exec.Cmd {
	sup := r.o.Supervisor
	args := append(slices.Clone(sup[1:]), r.o.Grace.String(), r.scriptPath(s))
	args = append(args, r.o.Args[s.ID]...)
	cmd := &exec.Cmd{
		Path:        sup[0],
		Args:        append([]string{"haloforge"}, args...),
		Env:         r.stepEnv(s),
		Dir:         r.runDir,
		Stdin:       slave,
		Stdout:      slave,
		Stderr:      slave,
		ExtraFiles:  []*os.File{ctl, report},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0},
	}
	return cmd
}

// lastResortAfter is how long a supervisor gets to end after it was told
// to stop, before it is killed with its process group.
func (r *Runner) lastResortAfter() <-chan time.Time {
	return time.After(r.o.Grace + killWait + 5*time.Second)
}

// wait waits for the supervisor; a cancelled ctx asks it to stop, Kill to
// stop now, and a verdict (Settle) stops it too and is kept in e.verdict. When the script ends by itself and leaves processes running,
// the supervisor reports them and the runner decides their fate
// (leftoverFate): the supervisor stops them now, lets them go, or keeps
// them until the run ends (parked). A supervisor that does not end after
// its own deadlines is killed with its process group, the last resort.
func (r *Runner) wait(ctx context.Context, s steps.PlannedStep, sup *supervisor, ends <-chan scriptEnd) (e ended) {
	stopping := ctx.Done()
	settling := (<-chan Verdict)(r.settle)
	var lastResort <-chan time.Time
	scriptEnded := false
	for {
		select {
		case err := <-sup.done:
			e.waitErr = err
			return e
		case end := <-ends:
			scriptEnded, stopping = true, nil
			word := leftoverFate(s, end)
			e.left, e.code = end.left, end.code
			switch word {
			case 0:
			case ctlPark:
				e.parked = true
				return e
			case ctlRelease:
				e.release = true
				return e
			default:
				_, _ = sup.ctl.Write([]byte{word})
				lastResort = r.lastResortAfter()
			}
		case v := <-settling:
			// The consumer judged the step (a server ready and stopped, or
			// stalled): stop it as on a cancel; its outcome is the verdict.
			e.verdict, settling, stopping = &v, nil, nil
			_, _ = sup.ctl.Write([]byte{ctlStop})
			lastResort = r.lastResortAfter()
		case <-stopping:
			e.stopped, stopping, settling = true, nil, nil
			_, _ = sup.ctl.Write([]byte{ctlStop})
			lastResort = r.lastResortAfter()
		case <-r.kill:
			if e.stopped || scriptEnded || e.verdict != nil {
				_, _ = sup.ctl.Write([]byte{ctlKill})
			}
		case <-lastResort:
			sup.kill()
		}
	}
}

// ctlPark is the runner's own decision to keep a supervisor waiting until
// the run ends; it is never written to the pipe.
const ctlPark = 'p'

// leftoverFate decides what becomes of what a step's script left running
// when it ended by itself, sets each leftover's Fate, and returns the word
// for its supervisor (0: nothing was left, nothing to say). The container
// runtime's processes are podman's. After a failure the rest is killed at
// once; after a success it runs on until the run ends (a later step may use
// it), unless the step keeps a service running on purpose (KeepsRunning).
func leftoverFate(s steps.PlannedStep, end scriptEnd) byte {
	word := byte(0)
	for i := range end.left {
		l := &end.left[i]
		switch {
		case l.Container:
			l.Fate = FateContainer
		case end.code != 0:
			l.Fate, word = FateKilled, ctlClean
		case s.KeepsRunning:
			l.Fate, word = FateKept, ctlRelease
		default:
			l.Fate, word = FateRunEnd, ctlPark
		}
	}
	if word == 0 && len(end.left) > 0 {
		word = ctlRelease // only the container runtime's
	}
	return word
}

// unpark stops what the steps of this run left running until its end, and
// waits for their supervisors.
func (r *Runner) unpark() {
	for _, sup := range r.parked {
		_, _ = sup.ctl.Write([]byte{ctlClean})
	}
	for _, sup := range r.parked {
		r.waitSupervisor(sup)
		sup.ctl.Close()
	}
	r.parked = nil
}

// waitSupervisor waits for a supervisor that was told to end, and kills it
// with its process group after lastResortAfter; sup.done still holds its
// Wait result afterwards.
func (r *Runner) waitSupervisor(sup *supervisor) {
	select {
	case err := <-sup.done:
		sup.done <- err
	case <-r.lastResortAfter():
		sup.kill()
	}
}

// kill is the last resort for a supervisor that does not end: SIGKILL to
// every process below it (the script leads a group of its own), then to
// its process group.
func (sup *supervisor) kill() {
	for _, pid := range Descendants(sup.cmd.Process.Pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = syscall.Kill(-sup.cmd.Process.Pid, syscall.SIGKILL)
}

func (r *Runner) outcomeOf(e ended, streamErr error) outcome {
	code := e.code
	var ee *exec.ExitError
	switch {
	case e.parked || e.release:
	case errors.As(e.waitErr, &ee):
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	case e.waitErr != nil:
		return outcome{status: steps.OutcomeFailed, exitCode: -1, err: e.waitErr}
	default:
		code = 0
	}
	switch {
	case e.stopped:
		return outcome{status: steps.OutcomeInterrupted, exitCode: code, err: streamErr}
	case code != 0:
		return outcome{status: steps.OutcomeFailed, exitCode: code, err: streamErr}
	case streamErr != nil:
		// The step worked but its log is incomplete (disk full): say so, and
		// why a step whose script exited 0 is failed.
		return outcome{status: steps.OutcomeFailed, exitCode: 0, err: streamErr,
			why: "the script exited 0, but haloforge could not keep its whole log, so the step counts as failed: " + text.Printable(streamErr.Error(), maxResultText) + "; free space and run it again with --resume"}
	}
	return outcome{status: steps.OutcomeSucceeded}
}

// BinEnv names the haloforge binary to a step script: a verify step asks
// it whether the stack's answers are right ("$HALOFORGE_BIN" verify …).
const BinEnv = "HALOFORGE_BIN"

// bin is the binary a step script calls: Options.Bin, else this one.
func (r *Runner) bin() string {
	if r.o.Bin != "" {
		return r.o.Bin
	}
	if self, err := os.Executable(); err == nil {
		return self
	}
	return ""
}

// stepEnv is the environment contract of the step scripts: haloforge's own
// environment, every pin and toolbox.env build variable (the one channel
// pins reach a step by, named in PinNamesEnv), the track's variables (""
// unsets one) and the HALOFORGE_* variables.
func (r *Runner) stepEnv(s steps.PlannedStep) []string {
	set := map[string]string{}
	for k, v := range r.buildVars {
		set[k] = v
	}
	for k, v := range r.plan.Env {
		set[k] = v
	}
	cacheDir := filepath.Join(r.o.StateDir, "cache", r.plan.Track.ID)
	hf := map[string]string{
		"HALOFORGE_TRACK":       r.plan.Track.ID,
		"HALOFORGE_STEP":        s.ID,
		"HALOFORGE_RUN_ID":      r.runID,
		"HALOFORGE_STATE_DIR":   r.o.StateDir,
		"HALOFORGE_RUN_DIR":     r.runDir,
		"HALOFORGE_CACHE_DIR":   cacheDir,
		"HALOFORGE_SCRIPTS_DIR": r.o.ScriptsDir,
		"HALOFORGE_TOOLBOX_DIR": r.o.ToolboxDir,
		"HALOFORGE_CACHE_KEY":   s.CacheKey,
		PinNamesEnv:             strings.Join(r.stepVarNames, " "),
		PinsFileEnv:             "",
		ToolboxEnvFile:          "",
		ResultEnv:               r.resultPath(s.ID),
		installed.OwnerEnv:      r.owner,
		FactsEnv:                r.factsPath(s.ID),
		"HALOFORGE_DRY_RUN":     "",
		"HALOFORGE_RESUME":      "",
		BinEnv:                  r.bin(),
	}
	if r.o.DryRun {
		hf["HALOFORGE_DRY_RUN"] = "1"
	}
	if r.resumed[s.ID] {
		hf["HALOFORGE_RESUME"] = "1"
	}
	for k, v := range hf {
		set[k] = v
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			env = append(env, kv)
		}
	}
	if os.Getenv("TERM") == "" {
		env = append(env, "TERM=xterm-256color") // CI runners often have none; the pty is a terminal
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if set[k] != "" {
			env = append(env, k+"="+set[k])
		}
	}
	return env
}
