package main

import (
	"context"
	"fmt"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/tui"
	"github.com/haloforge/haloforge/tui/demo"
	"github.com/haloforge/haloforge/tui/session"
)

type demoOptions struct {
	*globalOptions // the demo writes only in <state-dir>/demo-XXXXXXXX, removed when it ends
	plain          bool
}

func newDemoCmd(g *globalOptions) *cobra.Command {
	o := demoOptions{globalOptions: g}
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
	return cmd
}

// runDemo starts the demo from scratch in a directory of its own under the
// state dir (demo.NewWorkDir), so that the story begins with the failure
// every time, and removes that directory, and only it, when it ends.
func runDemo(cmd *cobra.Command, o demoOptions) (err error) {
	lineMode := o.plain || !fullScreen(cmd)
	wd, err := demo.NewWorkDir(o.stateDirOr())
	if err != nil {
		return usageErr(err)
	}
	defer func() {
		if rerr := wd.Remove(); rerr != nil && err == nil {
			err = failedErr(rerr)
		}
	}()
	e, err := session.NewDemo(wd.Path())
	if err != nil {
		return failedErr(err)
	}
	ctx, stop := signal.NotifyContext(cmdContext(cmd), stopSignals...)
	defer stop()
	if lineMode {
		out := cmd.OutOrStdout()
		fmt.Fprintln(out, "haloforge demo: sample data from a real Strix Halo box; nothing is installed.")
		res, err := session.Story(ctx, e, out, session.StoryOptions{Run: true, Retries: 1, Demo: true, Width: liveWidth(cmd)})
		fmt.Fprintf(out, "== the demo's files (%s) are removed now\n", wd.Path())
		return outcomeErr(ctx, res.Status, res.Interrupted, err)
	}
	res, err := tui.Run(ctx, e, tui.Options{Demo: true, Input: cmd.InOrStdin(), Output: cmd.OutOrStdout()})
	printRecap(cmd.OutOrStdout(), res)
	return outcomeErr(ctx, res.Status, res.Interrupted, err)
}

// outcomeErr maps how a wizard session ended to docs/cli.md's exit codes.
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
