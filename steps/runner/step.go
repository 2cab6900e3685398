package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/haloforge/haloforge/steps"
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
	r.send(StepStarted{Step: s.ID, Title: s.Title, Index: idx, Total: total, Optional: s.Optional, Log: logPath,
		ETA: r.eta(i), Elapsed: time.Since(r.started), At: started})

	res, out := r.execute(ctx, s, logPath)
	d := time.Since(started)
	sr.Status, sr.ExitCode, sr.Duration = out.status, out.exitCode, d
	sr.Bytes, sr.Lines, sr.Tail, sr.Findings = res.bytes, res.lines, res.tail, res.findings
	sr.Verified, sr.NotVerified = nonNil(out.result.verified), nonNil(out.result.notVerified)
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
		Verified: out.result.verified, NotVerified: out.result.notVerified, At: time.Now()})
	return errors.Join(stateErr, repErr)
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
	if r.o.DryRun {
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
	if r.o.DryRun {
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
	if err := os.MkdirAll(filepath.Join(r.o.StateDir, "cache", r.plan.Track.ID), 0o755); err != nil {
		return streamResult{}, outcome{status: steps.OutcomeFailed, exitCode: -1, err: fmt.Errorf("cache dir: %w", err)}
	}
	// The step reads the validated pins, whatever became of the files since.
	if err := r.writeSnapshots(); err != nil {
		return streamResult{}, outcome{status: steps.OutcomeFailed, exitCode: -1, err: err}
	}
	// Only what this run of the step writes may count.
	if err := os.Remove(r.resultPath(s.ID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return streamResult{}, outcome{status: steps.OutcomeFailed, exitCode: -1, err: fmt.Errorf("result file: %w", err)}
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return streamResult{}, outcome{status: steps.OutcomeFailed, exitCode: -1, err: fmt.Errorf("log: %w", err)}
	}
	res, waitErr, stopped, err := r.inPty(ctx, s, logf, logPath)
	// The log promises every byte: one that does not close whole fails the step.
	if cerr := logf.Close(); cerr != nil {
		res.err = errors.Join(res.err, fmt.Errorf("log %s: %w", logPath, unwrapPath(cerr)))
	}
	if err != nil {
		return res, outcome{status: steps.OutcomeFailed, exitCode: -1, err: errors.Join(err, res.err)}
	}
	out := r.outcomeOf(waitErr, stopped, res.err)
	if out.status == steps.OutcomeSucceeded {
		out.result = readResult(r.resultPath(s.ID))
		if len(out.result.notVerified) > 0 {
			out.status = steps.OutcomeNotVerified
		}
	}
	return res, out
}

// inPty starts the step in a new pty with its output going to logf, and
// waits for it and its output; err is set when it could not start.
func (r *Runner) inPty(ctx context.Context, s steps.PlannedStep, logf *os.File, logPath string) (res streamResult, waitErr error, stopped bool, err error) {
	master, slave, err := pty.Open()
	if err != nil {
		return res, nil, false, fmt.Errorf("pty: %w", err)
	}
	defer master.Close()
	_ = pty.Setsize(master, &pty.Winsize{Cols: r.o.Cols, Rows: r.o.Rows})
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		slave.Close()
		return res, nil, false, err
	}
	defer ctlW.Close()
	slaveName := slave.Name()
	cmd := r.command(s, slave, ctlR)
	err = cmd.Start()
	slave.Close() // the children hold it now; EIO on master means they are all gone
	ctlR.Close()
	if err != nil {
		return res, nil, false, fmt.Errorf("start %s: %w", s.ScriptPath, err)
	}
	st := newStream(master, logf, logPath, r, s)
	go st.read()
	go st.process()
	stopped, waitErr = r.wait(ctx, cmd, ctlW)
	st.stopReader(slaveName, drainAfterExit)
	return st.result(), waitErr, stopped, nil
}

// command is the supervisor running the step's script in the pty, as the
// leader of a new session whose controlling terminal is the pty.
func (r *Runner) command(s steps.PlannedStep, slave, ctl *os.File) *exec.Cmd {
	sup := r.o.Supervisor
	args := append(slices.Clone(sup[1:]), r.o.Grace.String(), r.scriptPath(s))
	cmd := &exec.Cmd{
		Path:        sup[0],
		Args:        append([]string{"haloforge"}, args...),
		Env:         r.stepEnv(s),
		Dir:         r.runDir,
		Stdin:       slave,
		Stdout:      slave,
		Stderr:      slave,
		ExtraFiles:  []*os.File{ctl},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0},
	}
	return cmd
}

// wait waits for the supervisor; a cancelled ctx asks it to stop, Kill to
// stop now. A supervisor that does not end after its own deadlines is
// killed with its process group, the last resort.
func (r *Runner) wait(ctx context.Context, cmd *exec.Cmd, ctl *os.File) (stopped bool, err error) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopping := ctx.Done()
	var lastResort <-chan time.Time
	for {
		select {
		case err := <-done:
			return stopped, err
		case <-stopping:
			stopped, stopping = true, nil
			_, _ = ctl.Write([]byte{ctlStop})
			lastResort = time.After(r.o.Grace + killWait + 5*time.Second)
		case <-r.kill:
			if stopped {
				_, _ = ctl.Write([]byte{ctlKill})
			}
		case <-lastResort:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
}

func (r *Runner) outcomeOf(waitErr error, stopped bool, streamErr error) outcome {
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(waitErr, &ee):
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	case waitErr != nil:
		return outcome{status: steps.OutcomeFailed, exitCode: -1, err: waitErr}
	}
	switch {
	case stopped:
		return outcome{status: steps.OutcomeInterrupted, exitCode: code, err: streamErr}
	case code != 0:
		return outcome{status: steps.OutcomeFailed, exitCode: code, err: streamErr}
	case streamErr != nil:
		// The step worked but its log is incomplete (disk full): say so.
		return outcome{status: steps.OutcomeFailed, exitCode: 0, err: streamErr}
	}
	return outcome{status: steps.OutcomeSucceeded}
}

// stepEnv is the environment contract of the step scripts: haloforge's own
// environment, every pin, the track's variables ("" unsets one) and the
// HALOFORGE_* variables.
func (r *Runner) stepEnv(s steps.PlannedStep) []string {
	set := map[string]string{}
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
		PinsFileEnv:             r.snapshotPath(PinsSnapshot),
		ToolboxEnvFile:          r.snapshotPath(ToolboxSnapshot),
		ResultEnv:               r.resultPath(s.ID),
		"HALOFORGE_DRY_RUN":     "",
		"HALOFORGE_RESUME":      "",
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
