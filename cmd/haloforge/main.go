// Command haloforge takes a Strix Halo box from bare Linux to working
// PyTorch and vLLM on ROCm: a wizard, a doctor, a build runner and a
// failure diagnosis, all in one binary.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge/steps/runner"
)

// Exit codes (docs/cli.md).
const (
	exitOK          = 0
	exitFailed      = 1   // a step failed, a check is fail, diagnose found something
	exitUsage       = 2   // bad usage or bad input: nothing was run
	exitInterrupted = 130 // interrupted by the user
)

// exitError carries an exit code through cobra's error path.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageErr marks bad usage or bad input (exit 2).
func usageErr(err error) error { return &exitError{code: exitUsage, err: err} }

// failedErr marks a failure the command found (exit 1).
func failedErr(err error) error { return &exitError{code: exitFailed, err: err} }

// silentExit ends with a code after the command already said everything.
func silentExit(code int) error { return &exitError{code: code} }

func main() {
	// This binary is also every step's supervisor: the runner starts
	// /proc/self/exe __supervise GRACE SCRIPT in the step's pty (see
	// runner.Supervise). It takes over before cobra starts, which
	// would probe the step's terminal.
	if runner.IsSupervise(os.Args) {
		os.Exit(runner.Supervise(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:]))
}

// newRoot is the whole CLI in one place: the bare command is the wizard,
// and every subcommand is listed here.
func newRoot() *cobra.Command {
	g := &globalOptions{}
	root := newWizardCmd(g)
	root.SilenceUsage, root.SilenceErrors = true, true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(err) })
	g.bind(root)
	root.AddCommand(
		newDoctorCmd(g),   // check the machine and print the fixes
		newTracksCmd(g),   // every track, its status and steps
		newPlanCmd(g),     // a track's steps, pins and what re-runs
		newBuildCmd(g),    // run a track's steps in ptys
		newDiagnoseCmd(g), // name known failures in logs
		newPinsCmd(g),     // check versions.env, diff two of them
		newDemoCmd(g),     // the wizard on built-in data
		newBenchCmd(g),    // compare benchmark results with reference numbers
		newServeCmd(g),    // serve a model with a track's engine, prove it answers
		newVerifyCmd(g),   // check a running server's answers are right
		newClusterCmd(g),  // check, start and stop 2–4 boxes (llama.cpp RPC, vLLM on Ray)
		newRunsCmd(g),     // list the runs, show one or a step's log
		newCleanCmd(g),    // remove what haloforge created for a track
	)
	root.SetHelpFunc(printHelp)
	root.SetHelpCommand(helpCommand(root))
	root.Version = buildStamp(linked(), buildInfo()).String()
	// --version has no -v: doctor's -v is --verbose, and a short flag
	// means one thing at every level.
	root.Flags().Bool("version", false, "print the version, the commit and the build date")
	return root
}

// run executes the CLI and maps errors to docs/cli.md's exit codes.
func run(args []string) int {
	// Libraries report to the standard logger what haloforge reports
	// itself, or nothing a user can act on: net/http's "Unsolicited
	// response received on idle HTTP channel" from a misbehaving server
	// (pins status) came out on stderr with a date, quoting the server's
	// bytes. haloforge never logs through it.
	log.SetOutput(io.Discard)
	root := newRoot()
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err != nil {
		printError(root.ErrOrStderr(), err)
	}
	return exitCode(err)
}

func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	// cobra's own argument errors (unknown command, wrong arg count) are usage.
	return exitUsage
}

// printError is the one line an error gets on stderr.
func printError(w io.Writer, err error) {
	var ee *exitError
	if errors.As(err, &ee) && ee.err == nil {
		return
	}
	fmt.Fprintf(w, "haloforge: %s\n", cleanUsage(err))
}

// cleanUsage words cobra's own usage errors as one clear line with a next
// step; haloforge's errors pass as they are.
func cleanUsage(err error) string {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "unknown flag: "), strings.HasPrefix(msg, "unknown shorthand flag: "):
		return msg + " (haloforge COMMAND --help lists the flags)"
	case strings.Contains(msg, "flag needs an argument"):
		return msg + " (haloforge COMMAND --help says what it takes)"
	}
	return msg
}
