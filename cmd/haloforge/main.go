// Command haloforge takes a Strix Halo box from bare Linux to working
// PyTorch and vLLM on ROCm: a wizard, a doctor, a build runner and a
// failure diagnosis, all in one binary.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"charm.land/fang/v2"
	"github.com/spf13/cobra"
)

// Exit codes of DESIGN.md.
const (
	exitOK          = 0
	exitFailed      = 1   // a step failed, a check is fail, diagnose found something
	exitUsage       = 2   // bad usage or bad input: nothing was run
	exitInterrupted = 130 // interrupted by the user
)

// version is set by the linker for releases.
var version = "dev"

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

// commands are registered by each command's file, so that adding a command
// touches only its own file.
var commands []func() *cobra.Command

func register(c func() *cobra.Command) { commands = append(commands, c) }

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "haloforge",
		Short: "From a bare Linux box to PyTorch and vLLM on ROCm, for AMD Strix Halo (gfx1151)",
		Long: "haloforge detects your GPU and kernel settings, lets you pick a track, runs each build " +
			"step in a pty while streaming the log, and pins a diagnosis on screen the moment the log " +
			"shows a known failure.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(err) })
	for _, c := range commands {
		root.AddCommand(c())
	}
	if rootRun != nil {
		rootRun(root)
	}
	return root
}

// rootRun lets the wizard's file give the bare `haloforge` its behaviour.
var rootRun func(*cobra.Command)

func main() { os.Exit(run(os.Args[1:])) }

// run executes the CLI and maps errors to DESIGN.md's exit codes.
func run(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	err := fang.Execute(context.Background(), root,
		fang.WithVersion(version),
		fang.WithErrorHandler(printError),
	)
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

func printError(w io.Writer, _ fang.Styles, err error) {
	var ee *exitError
	if errors.As(err, &ee) && ee.err == nil {
		return
	}
	fmt.Fprintf(w, "haloforge: %v\n", err)
}
