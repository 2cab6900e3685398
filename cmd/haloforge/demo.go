package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/tui"
	"github.com/haloforge/haloforge/tui/session"
)

type demoOpts struct {
	plain    bool
	stateDir string // the demo writes only under <state-dir>/demo
}

func newDemoCmd() *cobra.Command {
	var o demoOpts
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "The wizard on built-in sample data: no GPU needed, nothing installed",
		Long: "Runs the whole wizard on a real Strix Halo machine's snapshots and replays real build " +
			"logs through the real runner: step rocm fails with therock-amdsmi-double-free, the hint " +
			"panel shows the fix, r applies it and retries, and the run goes on to the end. Without a " +
			"terminal (or with --plain) it tells the same story in line mode.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(cmd, o) },
	}
	cmd.Flags().BoolVar(&o.plain, "plain", false, "line mode even on a terminal")
	cmd.Flags().StringVar(&o.stateDir, "state-dir", "", "state directory; the demo writes only under <state-dir>/demo (default $XDG_STATE_HOME/haloforge)")
	return cmd
}

// runDemo starts the demo from scratch in <state-dir>/demo, so that the
// story begins with the failure every time.
func runDemo(cmd *cobra.Command, o demoOpts) error {
	dir := filepath.Join(stateDirOrDefault(o.stateDir), "demo")
	lineMode := o.plain || !stdoutIsTerminal(cmd)
	if err := os.RemoveAll(dir); err != nil {
		return failedErr(fmt.Errorf("demo: clear %s: %w", dir, err))
	}
	e, err := session.NewDemo(dir)
	if err != nil {
		return failedErr(err)
	}
	ctx, stop := signal.NotifyContext(cmdContext(cmd), stopSignals...)
	defer stop()
	if lineMode {
		out := cmd.OutOrStdout()
		fmt.Fprintln(out, "haloforge demo: sample data from a real Strix Halo box; nothing is installed.")
		res, err := e.Story(ctx, out, session.StoryOptions{Run: true, Retries: 1, Demo: true})
		return outcomeErr(ctx, res.Status, res.Interrupted, err)
	}
	res, err := tui.Run(ctx, e, tui.Options{Demo: true, Input: cmd.InOrStdin(), Output: cmd.OutOrStdout()})
	return outcomeErr(ctx, res.Status, res.Interrupted, err)
}

// outcomeErr maps how a wizard session ended to DESIGN.md's exit codes.
func outcomeErr(ctx context.Context, status string, interrupted bool, err error) error {
	switch {
	case err != nil:
		return failedErr(err)
	case interrupted || ctx.Err() != nil || status == steps.OutcomeInterrupted:
		return silentExit(exitInterrupted)
	case status == "" || status == steps.OutcomeSucceeded || status == steps.OutcomeNotVerified:
		return nil // not verified is said on screen, and is not a failure
	default:
		return silentExit(exitFailed)
	}
}
