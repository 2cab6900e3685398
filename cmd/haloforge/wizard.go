package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/tui"
	"github.com/haloforge/haloforge/tui/session"
)

// wizardOpts are the bare command's flags.
type wizardOpts struct {
	plain    bool
	track    string
	scripts  string
	stateDir string
	pins     pinFlags
}

// newWizardCmd is the bare `haloforge`: the wizard, and the root of every
// other command.
func newWizardCmd() *cobra.Command {
	var o wizardOpts
	cmd := &cobra.Command{
		Use:   "haloforge",
		Short: "From a bare Linux box to PyTorch and vLLM on ROCm, for AMD Strix Halo (gfx1151)",
		Long: "haloforge detects your GPU and kernel settings, lets you pick a track, runs each build " +
			"step in a pty while streaming the log, and pins a diagnosis on screen the moment the log " +
			"shows a known failure.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runWizard(cmd, o) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.plain, "plain", false, "line mode: print what the wizard sees and the plan, no full-screen UI")
	f.StringVar(&o.track, "track", "", "preselect this track instead of the recommended one")
	scriptsFlag(cmd, &o.scripts)
	stateDirFlag(cmd, &o.stateDir)
	o.pins.bind(cmd)
	return cmd
}

func runWizard(cmd *cobra.Command, o wizardOpts) error {
	if o.track != "" && !slices.Contains(steps.TrackIDs(), o.track) {
		return usageErr(fmt.Errorf("unknown track %q (known: %s)", o.track, strings.Join(steps.TrackIDs(), ", ")))
	}
	o.stateDir = stateDirOrDefault(o.stateDir)
	lineMode := o.plain || !stdoutIsTerminal(cmd)
	e, err := wizardEngine(o, !lineMode)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmdContext(cmd), stopSignals...)
	defer stop()
	if lineMode {
		// Line mode tells what the wizard would show and stops before
		// building: haloforge never starts a build nobody asked for.
		if _, err := e.Story(ctx, cmd.OutOrStdout(), session.StoryOptions{Track: o.track}); err != nil {
			return failedErr(err)
		}
		return nil
	}
	res, err := tui.Run(ctx, e, tui.Options{Track: o.track, Input: cmd.InOrStdin(), Output: cmd.OutOrStdout()})
	return outcomeErr(ctx, res.Status, res.Interrupted, err)
}

// wizardEngine wires the real packages; the scripts and container
// definitions go on disk only when a run can start (the TUI).
func wizardEngine(o wizardOpts, runs bool) (*session.Engine, error) {
	pf, err := loadPinsFlags(o.pins.pins, o.pins.sets)
	if err != nil {
		return nil, err
	}
	e, err := newEngine(pf, o.scripts, o.stateDir, runs)
	var bad *exitError
	if errors.As(err, &bad) {
		return nil, err // a bad --scripts is usage (exit 2)
	}
	if err != nil {
		return nil, failedErr(err) // the state dir would not take the scripts
	}
	e.Detector = func(ctx context.Context) (*detect.Report, error) {
		b, err := detect.Collect(ctx, collectOptions(o.stateDir))
		if err != nil {
			return nil, err
		}
		return detect.Analyse(b), nil
	}
	e.Source = "this machine"
	return e, nil
}

// newEngine is the session backend over the real runner, shared by the
// wizard and `build` on a terminal. With runs, the scripts and container
// definitions are put on disk for the runner.
func newEngine(pf *pins.File, scriptsFlag, stateDir string, runs bool) (*session.Engine, error) {
	sfs, _, err := scriptsFS(scriptsFlag)
	if err != nil {
		return nil, err
	}
	e := &session.Engine{StateDir: stateDir, Scripts: sfs, Pins: pf, PinsFile: pinsFileOnDisk(pf)}
	if !runs {
		return e, nil
	}
	if e.ScriptsDir, err = scriptsRoot(scriptsFlag, stateDir); err != nil {
		return nil, err
	}
	if e.ToolboxDir, err = toolboxRoot(stateDir); err != nil {
		return nil, err
	}
	return e, nil
}

// stdoutIsTerminal reports whether the command writes to a terminal; line
// mode is used otherwise (pipes, CI, testscript).
func stdoutIsTerminal(cmd *cobra.Command) bool {
	f, ok := cmd.OutOrStdout().(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
