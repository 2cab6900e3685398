package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/tui"
	"github.com/haloforge/haloforge/tui/linemode"
	"github.com/haloforge/haloforge/tui/session"
)

type buildOptions struct {
	*globalOptions
	track, from, report                 string
	only                                []string
	plain, dryRun, resume, ignoreChecks bool
}

func newBuildCmd(g *globalOptions) *cobra.Command {
	o := buildOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "build --track ID",
		Short: "Run a track's steps, each in its own pty, with full logs, resume and diagnosis",
		Long: "build runs the doctor checks the track marks as blocking, then the steps of the track's plan " +
			"in order, each in a pty of its own with the pins in its environment. Steps whose inputs have not " +
			"changed since their last success are skipped. Every byte of output goes to " +
			"<state-dir>/runs/<run-id>/<step>.log; the screen gets a cleaned copy, and a failure shows its last " +
			"lines, the diagnosis and the log. Ctrl-C stops the step and everything it started; --resume continues. " +
			"On a terminal the run is shown full-screen and ends on its summary; --plain, --dry-run, --report " +
			"and a pipe print line mode.",
		Example: "  haloforge build --track therock-toolbox\n" +
			"  haloforge build --track therock-toolbox --resume\n" +
			"  haloforge build --track therock-toolbox --only vllm,verify --set VLLM_REF=<sha>\n" +
			"  haloforge build --track vllm-image --dry-run\n" +
			"  haloforge build --track source-stable --plain --report junit.xml   # in CI",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBuild(cmd, o) },
	}
	f := cmd.Flags()
	trackFlag(cmd, &o.track)
	f.BoolVar(&o.plain, "plain", false, "line mode: prefixed lines and status lines, no full-screen UI")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the real commands of every step (HALOFORGE_DRY_RUN=1), change nothing; always line mode")
	f.BoolVar(&o.resume, "resume", false, "continue the last failed or interrupted run of the track")
	f.StringVar(&o.from, "from", "", "run STEP and every step after it, even if up to date")
	f.StringSliceVar(&o.only, "only", nil, "run only STEP,STEP,… even if up to date")
	f.BoolVar(&o.ignoreChecks, "ignore-checks", false, "build even when a blocking doctor check fails")
	f.StringVar(&o.report, "report", "", "also write a JUnit XML report to FILE (for CI; checked before anything runs)")
	_ = cmd.RegisterFlagCompletionFunc("from", completeSteps)
	_ = cmd.RegisterFlagCompletionFunc("only", completeSteps)
	_ = cmd.RegisterFlagCompletionFunc("report", completeXMLFiles)
	return cmd
}

func runBuild(cmd *cobra.Command, o buildOptions) error {
	if err := checkBuildFlags(o); err != nil {
		return err
	}
	g := o.globalOptions
	stateDir := g.stateDirOr()
	if err := runner.CheckStateDir(stateDir); err != nil {
		return usageErr(err)
	}
	if !o.dryRun {
		if err := stateDirBusy(stateDir); err != nil {
			return err
		}
		if err := trackBusy(o.stateDir, o.track, true); err != nil {
			return err
		}
	}
	printNotes(cmd.ErrOrStderr(), localNotes(g, true))
	w, err := g.workspace()
	if err != nil {
		return err
	}
	plan, err := planFor(w, o.track)
	if err != nil {
		var missing *steps.MissingScriptError
		if errors.As(err, &missing) {
			return usageErr(err)
		}
		return err
	}
	out := cmd.OutOrStdout()
	if err := missingInputs(out, plan.Track, w.Pins, o.dryRun); err != nil {
		return err
	}
	// A dry run changes nothing, so a failed check only warns there.
	if err := blockingChecks(cmdContext(cmd), out, plan.Track, stateDir, o.ignoreChecks || o.dryRun); err != nil {
		return err
	}
	// Before hours of building: do the pins the track needs still resolve?
	up := checkPinsUpstream(cmdContext(cmd), plan.Track, w.Pins, stateDir)
	if up.Blocks() && !o.dryRun {
		return pinsGoneErr(out, up, buildAgain(o, false, ""))
	}
	printPinsUpstream(out, up)
	// The full screen is for watching a build; a dry run's output is the
	// commands themselves, which must stay on the terminal to be read and
	// copied, so it prints in line mode like --plain.
	if !o.plain && !o.dryRun && o.report == "" && fullScreen(cmd) {
		return runBuildTUI(cmd, o, w)
	}
	r, err := newBuildRunner(plan, w, o, colorOut(cmd))
	if err != nil {
		return usageErr(err)
	}
	next := session.NextCommands(plan, stateDir, g.args()...)
	return runAndPrint(cmdContext(cmd), cmd.InOrStdin(), out, r, o, next, colorOut(cmd), liveWidth(cmd))
}

// checkBuildFlags answers bad usage before anything is collected or
// planned: a track, steps that exist, flags that go together, a report
// file that can be written.
func checkBuildFlags(o buildOptions) error {
	if err := requireTrack(o.track); err != nil {
		return err
	}
	t, err := steps.Lookup(o.track)
	if err != nil {
		return usageErr(err)
	}
	if o.from != "" && len(o.only) > 0 {
		return usageErr(errors.New("--from and --only do not go together: --from STEP runs STEP and every step after it, --only STEP,... runs just the steps it lists"))
	}
	for _, id := range append(slices.Clone(o.only), o.from) {
		if _, ok := t.Step(id); id != "" && !ok {
			return usageErr(fmt.Errorf("track %s has no step %q (steps: %s)", t.ID, id, strings.Join(t.StepIDs(), ", ")))
		}
	}
	return checkReportPath(o.report)
}

// missingInputs refuses a build whose track needs a pin that is empty (a
// model to load): found now, not after step 1 pulled gigabytes. A dry run
// only warns; its commands show where the value would go.
func missingInputs(w io.Writer, t steps.Track, pf *pins.File, dryRun bool) error {
	missing := t.MissingInputs(pf.Values())
	if len(missing) == 0 {
		return nil
	}
	sets := make([]string, len(missing))
	for i, n := range missing {
		sets[i] = "--set " + n + "=" + steps.InputExample(n)
	}
	msg := fmt.Sprintf("%s needs %s, which is empty: run again with %s", t.ID, strings.Join(missing, " and "), strings.Join(sets, " "))
	if dryRun {
		fmt.Fprintf(w, "! %s (the dry run goes on)\n", msg)
		return nil
	}
	return usageErr(errors.New(msg + " (nothing was run)"))
}

// runBuildTUI shows the build in the wizard's run screen: the same runner,
// with the step list, the log pane and the hint panel. It ends on the
// summary; leaving it prints the recap (the outcome, the logs, the next or
// the resume command) on the normal screen.
func runBuildTUI(cmd *cobra.Command, o buildOptions, w steps.Workspace) error {
	if err := o.onDisk(&w); err != nil {
		return usageErr(err)
	}
	e := &session.Engine{Workspace: w}
	e.Flags = o.args()
	e.Run = runner.Options{From: o.from, Only: o.only, DryRun: o.dryRun, Resume: o.resume}
	p, err := e.Plan(o.track)
	if err != nil {
		return usageErr(err)
	}
	ctx, stop := signal.NotifyContext(cmdContext(cmd), stopSignals...)
	defer stop()
	res, err := tui.Run(ctx, e, tui.Options{
		Plan: p, Input: cmd.InOrStdin(), Output: cmd.OutOrStdout(),
		Commands: func(c tui.Command) string {
			if c.Clean {
				return "haloforge clean --track " + c.Track + o.stateDirArg()
			}
			if c.Resume {
				return resumeCommand(o, c.Step)
			}
			return buildCommand(o.track, o.globalOptions)
		},
	})
	printRecap(cmd.OutOrStdout(), res)
	return outcomeErr(ctx, res.Status, res.Interrupted, err)
}

// newBuildRunner puts the scripts and toolbox trees on disk and checks the
// run before anything starts.
func newBuildRunner(plan *steps.Plan, w steps.Workspace, o buildOptions, color bool) (*runner.Runner, error) {
	if err := o.onDisk(&w); err != nil {
		return nil, err
	}
	return runner.New(runner.Options{
		Plan: plan, Workspace: w,
		DryRun: o.dryRun, From: o.from, Only: o.only, Resume: o.resume, KeepColor: color, Analyzer: runner.Diagnosis,
	})
}

// runAndPrint runs the build in line mode (the TUI takes over when it
// exists) and maps its outcome to docs/cli.md's exit codes.
func runAndPrint(parent context.Context, in io.Reader, out io.Writer, r *runner.Runner, o buildOptions, next []string, color bool, width func() int) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	stopSignals := onInterrupt(out, "the step", runner.DefaultGrace, cancel, r.Kill)
	defer stopSignals()
	answering, stopForward := forwardInput(in, r)
	defer stopForward()

	printed := make(chan linemode.Result, 1)
	lo := linemode.Options{Color: color, DryRun: o.dryRun, Next: next, Resume: func(step string) string { return resumeCommand(o, step) }, Answering: answering,
		Live: width != nil, Width: width, Clean: "haloforge clean --track " + o.track + o.stateDirArg()}
	go func() { printed <- linemode.Print(out, r.Events(), lo) }()
	rep, runErr := r.Run(ctx)
	<-printed
	if rep != nil && o.report != "" {
		if err := writeJUnit(o.report, rep); err != nil {
			return failedErr(err)
		}
	}
	switch {
	case errors.Is(runErr, runner.ErrBusy):
		return silentExit(exitUsage) // line mode said it, in one line
	case rep == nil:
		return silentExit(exitFailed) // the run could not start; line mode said why
	case rep.Status == steps.OutcomeInterrupted:
		return silentExit(exitInterrupted)
	case rep.Status == steps.OutcomeFailed:
		return silentExit(exitFailed)
	case runErr != nil:
		return failedErr(runErr) // the steps worked but state or report could not be saved
	}
	return nil
}

// failedBlockingChecks are the track's blocking doctor checks that fail on
// this machine (none when the track has none).
func failedBlockingChecks(ctx context.Context, t steps.Track, stateDir string) ([]detect.Check, error) {
	if len(t.BlockingChecks) == 0 {
		return nil, nil
	}
	b, err := detect.Collect(ctx, collectOptions(stateDir))
	if err != nil {
		return nil, fmt.Errorf("doctor checks: %w", err)
	}
	return steps.FailingChecks(t, detect.Analyse(b)), nil
}

// warnBlockingChecks says, as the wizard's plan screen does, which of the
// track's blocking checks fail here: build will refuse to start until they
// are fixed (or told --ignore-checks). The plan itself is still printed.
func warnBlockingChecks(ctx context.Context, w io.Writer, t steps.Track, stateDir string) {
	failed, err := failedBlockingChecks(ctx, t, stateDir)
	if err != nil {
		fmt.Fprintf(w, "warning: the blocking checks could not run: %v\n", err)
		return
	}
	for _, c := range failed {
		fmt.Fprintf(w, "warning: check %s fails here: %s\n", c.ID.Label(), c.Summary)
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "warning: build will refuse to start until these are fixed (or run with --ignore-checks); `haloforge doctor` shows the fixes\n")
	}
}

// resumeCommand is the command line that resumes this build after step
// failed or stopped: the flags the user gave (pins, scripts, state dir,
// --ignore-checks), and a --from or --only narrowed to what is left, so
// that the steps that succeeded before the failure do not run again.
func resumeCommand(o buildOptions, step string) string {
	return buildAgain(o, true, step)
}

// buildAgain is this build's command line with the flags the user gave;
// resume adds --resume and narrows --from or --only to step and after.
func buildAgain(o buildOptions, resume bool, step string) string {
	parts := []string{"haloforge", "build", "--track", o.track}
	if resume {
		parts = append(parts, "--resume")
	} else {
		step = ""
	}
	switch {
	case o.from != "" && step != "":
		parts = append(parts, "--from", step)
	case o.from != "":
		parts = append(parts, "--from", o.from)
	case len(o.only) > 0:
		only := o.only
		if i := slices.Index(only, step); i >= 0 {
			only = only[i:]
		}
		parts = append(parts, "--only", strings.Join(only, ","))
	}
	if o.ignoreChecks {
		parts = append(parts, "--ignore-checks")
	}
	return strings.Join(append(parts, o.args()...), " ")
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

// liveWidth is the terminal's width, asked at each redraw, when line mode
// may redraw its last line in place (a terminal that is not dumb: a dumb
// one cannot erase a line); nil otherwise.
func liveWidth(cmd *cobra.Command) func() int {
	f, ok := cmd.OutOrStdout().(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || os.Getenv("TERM") == "dumb" {
		return nil
	}
	fd := int(f.Fd())
	return func() int {
		w, _, err := term.GetSize(fd)
		if err != nil {
			return 0
		}
		return w
	}
}

// blockingChecks runs the doctor checks the track marks as blocking; a
// `fail` stops the build (exit 1) unless ignore is set, and then it is only
// reported.
func blockingChecks(ctx context.Context, out io.Writer, t steps.Track, stateDir string, ignore bool) error {
	failed, err := failedBlockingChecks(ctx, t, stateDir)
	if err != nil {
		return failedErr(err)
	}
	if len(failed) == 0 {
		return nil
	}
	verb := "blocks the build"
	if ignore {
		verb = "not blocking (--ignore-checks or --dry-run)"
	}
	for _, c := range failed {
		fmt.Fprintf(out, "✗ check %s: %s — %s\n", c.ID.Label(), c.Summary, verb)
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
