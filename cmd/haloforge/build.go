package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/tui"
	"github.com/haloforge/haloforge/tui/linemode"
)

type buildOpts struct {
	track, from, report, scripts, stateDir string
	only                                   []string
	plain, dryRun, resume, ignoreChecks    bool
	pins                                   pinFlags
}

func newBuildCmd() *cobra.Command {
	var o buildOpts
	cmd := &cobra.Command{
		Use:   "build --track ID",
		Short: "Run a track's steps, each in its own pty, with full logs, resume and diagnosis",
		Long: "build runs the doctor checks the track marks as blocking, then the steps of the track's plan " +
			"in order, each in a pty of its own with the pins in its environment. Steps whose inputs have not " +
			"changed since their last success are skipped. Every byte of output goes to " +
			"<state-dir>/runs/<run-id>/<step>.log; the screen gets a cleaned copy, and a failure shows its last " +
			"lines, the diagnosis and the log. Ctrl-C stops the step and everything it started; --resume continues.",
		Example: "  haloforge build --track therock-toolbox\n" +
			"  haloforge build --track therock-toolbox --resume\n" +
			"  haloforge build --track therock-toolbox --only vllm,verify --set VLLM_REF=<sha>\n" +
			"  haloforge build --track vllm-image --dry-run --plain\n" +
			"  haloforge build --track source-stable --plain --report junit.xml   # in CI",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBuild(cmd, o) },
	}
	f := cmd.Flags()
	trackFlag(cmd, &o.track)
	f.BoolVar(&o.plain, "plain", false, "line mode: prefixed lines and status lines, no full-screen UI")
	f.BoolVar(&o.dryRun, "dry-run", false, "run every step with HALOFORGE_DRY_RUN=1: print the commands, change nothing")
	f.BoolVar(&o.resume, "resume", false, "continue the last failed or interrupted run of the track")
	f.StringVar(&o.from, "from", "", "run from this step on, even if up to date")
	f.StringSliceVar(&o.only, "only", nil, "run only these steps (comma-separated), even if up to date")
	f.BoolVar(&o.ignoreChecks, "ignore-checks", false, "build even when a blocking doctor check fails")
	f.StringVar(&o.report, "report", "", "also write a JUnit XML report to FILE (for CI)")
	scriptsFlag(cmd, &o.scripts)
	stateDirFlag(cmd, &o.stateDir)
	o.pins.bind(cmd)
	cmd.MarkFlagsMutuallyExclusive("from", "only")
	return cmd
}

func runBuild(cmd *cobra.Command, o buildOpts) error {
	if err := requireTrack(o.track); err != nil {
		return err
	}
	o.stateDir = stateDirOrDefault(o.stateDir)
	if err := runner.CheckStateDir(o.stateDir); err != nil {
		return usageErr(err)
	}
	plan, pf, err := planFor(o.track, o.pins.pins, o.pins.sets, o.scripts, o.stateDir)
	if err != nil {
		var missing *steps.MissingScriptError
		if errors.As(err, &missing) {
			return usageErr(err)
		}
		return err
	}
	out := cmd.OutOrStdout()
	// A dry run changes nothing, so a failed check only warns there.
	if err := blockingChecks(cmdContext(cmd), out, plan.Track, o.stateDir, o.ignoreChecks || o.dryRun); err != nil {
		return err
	}
	if !o.plain && o.report == "" && stdoutIsTerminal(cmd) {
		return runBuildTUI(cmd, o, pf)
	}
	r, err := newBuildRunner(plan, pinsFileOnDisk(pf), o, colorOut(cmd))
	if err != nil {
		return usageErr(err)
	}
	return runAndPrint(cmdContext(cmd), cmd.InOrStdin(), out, r, o, colorOut(cmd))
}

// runBuildTUI shows the build in the wizard's run screen: the same runner,
// with the step list, the log pane and the hint panel. It ends by itself
// when the run succeeds; --report needs line mode (CI has no terminal).
func runBuildTUI(cmd *cobra.Command, o buildOpts, pf *pins.File) error {
	e, err := newEngine(pf, o.scripts, o.stateDir, true)
	if err != nil {
		return usageErr(err)
	}
	e.Tune = func(ro *runner.Options) { ro.From, ro.Only, ro.DryRun, ro.Resume = o.from, o.only, o.dryRun, o.resume }
	p, err := e.Plan(o.track)
	if err != nil {
		return usageErr(err)
	}
	ctx, stop := signal.NotifyContext(cmdContext(cmd), stopSignals...)
	defer stop()
	res, err := tui.Run(ctx, e, tui.Options{Plan: p, Input: cmd.InOrStdin(), Output: cmd.OutOrStdout()})
	printBuildEnd(cmd.OutOrStdout(), o, res)
	return outcomeErr(ctx, res.Status, res.Interrupted, err)
}

// printBuildEnd leaves a line on the normal screen once the full-screen
// view is gone, so the outcome and the logs stay findable.
func printBuildEnd(w io.Writer, o buildOpts, res tui.Result) {
	if res.Status == "" {
		return
	}
	st, err := steps.LoadState(o.stateDir)
	if err != nil || st.Tracks[o.track] == nil {
		fmt.Fprintf(w, "%s: %s\n", o.track, res.Status)
		return
	}
	run := filepath.Join(o.stateDir, "runs", st.Tracks[o.track].LastRun)
	fmt.Fprintf(w, "%s: %s · logs and report.json in %s\n", o.track, res.Status, run)
	if res.Status == steps.OutcomeFailed || res.Status == steps.OutcomeInterrupted {
		fmt.Fprintf(w, "diagnose: haloforge diagnose %s · resume: %s\n", run, resumeCommand(o))
	}
}

// newBuildRunner materialises the scripts and toolbox trees and checks the
// run before anything starts.
func newBuildRunner(plan *steps.Plan, pinsFile string, o buildOpts, color bool) (*runner.Runner, error) {
	scripts, err := scriptsRoot(o.scripts, o.stateDir)
	if err != nil {
		return nil, err
	}
	toolbox, err := toolboxRoot(o.stateDir)
	if err != nil {
		return nil, err
	}
	return runner.New(runner.Options{
		Plan: plan, StateDir: o.stateDir, ScriptsDir: scripts, ToolboxDir: toolbox, PinsFile: pinsFile,
		DryRun: o.dryRun, From: o.from, Only: o.only, Resume: o.resume, KeepColor: color, Analyzer: runner.Diagnosis,
	})
}

// runAndPrint runs the build in line mode (the TUI takes over when it
// exists) and maps its outcome to DESIGN.md's exit codes.
func runAndPrint(parent context.Context, in io.Reader, out io.Writer, r *runner.Runner, o buildOpts, color bool) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	stopSignals := onInterrupt(out, cancel, r.Kill)
	defer stopSignals()
	answering, stopForward := forwardInput(in, r)
	defer stopForward()

	printed := make(chan linemode.Result, 1)
	go func() {
		printed <- linemode.Print(out, r.Events(), linemode.Options{Color: color, Resume: resumeCommand(o), Answering: answering})
	}()
	rep, runErr := r.Run(ctx)
	<-printed
	if rep != nil && o.report != "" {
		if err := writeJUnit(o.report, rep); err != nil {
			return failedErr(err)
		}
	}
	switch {
	case errors.Is(runErr, runner.ErrBusy):
		return silentExit(exitUsage) // line mode said it already
	case rep == nil:
		return failedErr(runErr)
	case rep.Status == steps.OutcomeInterrupted:
		return silentExit(exitInterrupted)
	case rep.Status == steps.OutcomeFailed:
		return silentExit(exitFailed)
	case runErr != nil:
		return failedErr(runErr) // the steps worked but state or report could not be saved
	}
	return nil
}

// onInterrupt turns the first SIGINT, SIGTERM or SIGHUP (stopSignals) into a
// clean stop (SIGTERM, grace, SIGKILL) and a second one into an immediate kill.
func onInterrupt(out io.Writer, stop func(), kill func()) func() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, stopSignals...)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-done:
				return
			case <-sigs:
				n++
				if n == 1 {
					fmt.Fprintf(out, "\nstopping the step (SIGTERM, then SIGKILL after %s); press Ctrl-C again to kill it now\n", linemode.FormatDuration(runner.DefaultGrace))
					stop()
				} else {
					kill()
				}
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// resumeCommand is the command line that resumes this build.
func resumeCommand(o buildOpts) string {
	parts := []string{"haloforge", "build", "--track", o.track, "--resume"}
	if o.pins.pins != "" {
		parts = append(parts, "--pins", o.pins.pins)
	}
	for _, s := range o.pins.sets {
		parts = append(parts, "--set", s)
	}
	if o.scripts != "" {
		parts = append(parts, "--scripts", o.scripts)
	}
	if o.stateDir != defaultStateDir() {
		parts = append(parts, "--state-dir", o.stateDir)
	}
	return strings.Join(parts, " ")
}

func writeJUnit(path string, rep *runner.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	if err := rep.WriteJUnit(f); err != nil {
		f.Close()
		return fmt.Errorf("--report: %w", err)
	}
	return f.Close()
}

// colorOut says whether line mode may colour its output.
func colorOut(cmd *cobra.Command) bool {
	return stdoutIsTerminal(cmd) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// blockingChecks runs the doctor checks the track marks as blocking; a
// `fail` stops the build (exit 1) unless ignore is set, and then it is only
// reported.
func blockingChecks(ctx context.Context, out io.Writer, t steps.Track, stateDir string, ignore bool) error {
	if len(t.BlockingChecks) == 0 {
		return nil
	}
	b, err := detect.Collect(ctx, collectOptions(stateDir))
	if err != nil {
		return failedErr(fmt.Errorf("doctor checks: %w", err))
	}
	rep := detect.Analyse(b)
	var failed []detect.Check
	for _, id := range t.BlockingChecks {
		if c, ok := rep.Check(id); ok && c.Status == detect.StatusFail {
			failed = append(failed, c)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	verb := "blocks the build"
	if ignore {
		verb = "not blocking (--ignore-checks or --dry-run)"
	}
	for _, c := range failed {
		fmt.Fprintf(out, "✗ check %s: %s — %s\n", c.ID, c.Summary, verb)
		if c.Fix != "" {
			fmt.Fprintf(out, "  fix: %s\n", strings.ReplaceAll(strings.TrimSpace(c.Fix), "\n", "\n       "))
		}
	}
	if ignore {
		return nil
	}
	fmt.Fprintf(out, "fix the above, or run again with --ignore-checks to build anyway; `haloforge doctor -v` shows the details\n")
	return silentExit(exitFailed)
}
