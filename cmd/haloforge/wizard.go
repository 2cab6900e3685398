package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/haloforge/haloforge"
	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/preflight"
	"github.com/haloforge/haloforge/tui"
	"github.com/haloforge/haloforge/tui/session"
)

// wizardOptions are the bare command's flags.
type wizardOptions struct {
	*globalOptions
	plain bool
	track string
}

// newWizardCmd is the bare `haloforge`: the wizard, and the root of every
// other command.
func newWizardCmd(g *globalOptions) *cobra.Command {
	o := wizardOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "haloforge",
		Short: "From a bare Linux box to PyTorch and vLLM on ROCm, for AMD Strix Halo (gfx1151)",
		Long: "haloforge detects your GPU and kernel settings, lets you pick a track, runs each build " +
			"step in a pty while streaming the log, and pins a diagnosis on screen the moment the log " +
			"shows a known failure. Leaving it prints what to type next.",
		Args: unknownCommand,
		RunE: func(cmd *cobra.Command, _ []string) error { return runWizard(cmd, o) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.plain, "plain", false, "line mode: print what the wizard sees and the plan, no full-screen UI")
	f.StringVar(&o.track, "track", "", "preselect the track ID instead of the recommended one")
	_ = cmd.RegisterFlagCompletionFunc("track", completeTracks)
	return cmd
}

// unknownCommand answers a word that is no command with the commands it
// may have meant (cobra's suggestions).
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	cmd.SuggestionsMinimumDistance = 2
	msg := fmt.Sprintf("unknown command %q", args[0])
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usageErr(errors.New(msg + " (haloforge --help lists the commands)"))
}

func runWizard(cmd *cobra.Command, o wizardOptions) error {
	if o.track != "" && !slices.Contains(steps.TrackIDs(), o.track) {
		return usageErr(fmt.Errorf("unknown track %q (known: %s)", o.track, strings.Join(steps.TrackIDs(), ", ")))
	}
	g := o.globalOptions
	stateDir := g.stateDirOr()
	lineMode := o.plain || !fullScreen(cmd)
	notes := append(localNotes(g, !lineMode), pathNotes()...)
	printNotes(cmd.ErrOrStderr(), notes)
	e, err := wizardEngine(g, !lineMode)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmdContext(cmd), stopSignals...)
	defer stop()
	commands := wizardCommands(g)
	if lineMode {
		// Line mode tells what the wizard would show and stops before
		// building: haloforge never starts a build nobody asked for.
		so := session.StoryOptions{Track: o.track, Flags: g.args(),
			Build: func(track string) string { return commands(tui.Command{Track: track}) }}
		if _, err := session.Story(ctx, e, cmd.OutOrStdout(), so); err != nil {
			return failedErr(err)
		}
		return nil
	}
	e.Notes = notes
	e.Busy = func() string { return busyText(stateDir) }
	res, err := tui.Run(ctx, e, tui.Options{
		Track: o.track, Input: cmd.InOrStdin(), Output: cmd.OutOrStdout(),
		Commands: commands, DemoCmd: demoCommand(g),
	})
	printRecap(cmd.OutOrStdout(), res)
	return outcomeErr(ctx, res.Status, res.Interrupted, err)
}

// wizardCommands writes the commands the wizard suggests (build, resume)
// with the flags the user gave and the pins set in the session.
func wizardCommands(g *globalOptions) func(tui.Command) string {
	return func(c tui.Command) string {
		if c.Clean {
			return "haloforge clean --track " + c.Track + g.stateDirArg()
		}
		parts := []string{"haloforge", "build", "--track", c.Track}
		if c.Resume {
			parts = append(parts, "--resume")
		}
		if c.IgnoreChecks {
			parts = append(parts, "--ignore-checks")
		}
		for _, s := range c.Sets {
			parts = append(parts, "--set", shellWord(s))
		}
		return strings.Join(append(parts, g.args()...), " ")
	}
}

// demoCommand runs `haloforge demo` with the same state dir, for the
// detection screen of a machine without an AMD GPU.
func demoCommand(g *globalOptions) func() *exec.Cmd {
	return func() *exec.Cmd {
		self, err := os.Executable()
		if err != nil {
			self = os.Args[0]
		}
		args := []string{"demo"}
		if g.stateDir != "" {
			args = append(args, "--state-dir", g.stateDir)
		}
		return exec.Command(self, args...)
	}
}

// wizardEngine wires the real packages; the scripts and container
// definitions go on disk only when a run can start (the TUI).
func wizardEngine(g *globalOptions, runs bool) (*session.Engine, error) {
	w, err := g.workspace()
	if err != nil {
		return nil, err
	}
	if runs {
		if err := g.onDisk(&w); err != nil {
			return nil, failedErr(err) // the state dir would not take the scripts
		}
	}
	stateDir := w.StateDir
	e := &session.Engine{Workspace: w}
	// The plan screen asks upstream about the track's pins, as plan and build do.
	e.Preflight = func(ctx context.Context, t steps.Track, f *pins.File) *preflight.Result {
		return checkPinsUpstream(ctx, t, f, stateDir)
	}
	e.Detector = func(ctx context.Context) (*detect.Report, error) {
		b, err := detect.Collect(ctx, collectOptions(stateDir))
		if err != nil {
			return nil, err
		}
		return detect.Analyse(b), nil
	}
	e.Source = "this machine"
	e.Flags = g.args()
	e.Version = version // recorded in host-fix plans and backups
	// After the wizard writes a pin set, the pins are read again as here.
	e.ReloadPins = func() (*pins.File, error) { return loadPinsFlags(g.pins.pins, g.pins.sets) }
	if e.PinsFile == "" && g.pins.pins == "" {
		// The built-in copy: u on the pin sets creates ./versions.env, as
		// `haloforge pins use SET` does, after its y/N question.
		if abs, err := filepath.Abs("versions.env"); err == nil {
			e.CreatePins = &session.PinsCreate{Path: abs, BaseName: embeddedPinsName, Base: haloforge.VersionsEnv}
		}
	}
	return e, nil
}

// fullScreen reports whether the command may take the terminal over: it
// writes to a terminal that can place its cursor. TERM=dumb says it cannot
// (Emacs's M-x shell, CI consoles with a tty), so that gets line mode, as a
// pipe does, and no colour (colorOut).
func fullScreen(cmd *cobra.Command) bool {
	return stdoutIsTerminal(cmd) && os.Getenv("TERM") != "dumb"
}

// stdoutIsTerminal reports whether the command writes to a terminal; line
// mode is used otherwise (pipes, CI, testscript).
func stdoutIsTerminal(cmd *cobra.Command) bool {
	f, ok := cmd.OutOrStdout().(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
