package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/bench"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/steps/serve"
	"github.com/haloforge/haloforge/tui/linemode"
)

// runBenchTrack runs the track's benchmark in its environment, then
// compares its results as bench --from does.
func runBenchTrack(cmd *cobra.Command, o benchOptions) error {
	s, err := setupServe(cmd, o.globalOptions, o.track)
	if err != nil {
		return err
	}
	url := o.url
	if _, needsServer := serve.CanBench(o.track); url == "" && needsServer {
		url = serve.DefaultURL(o.track, s.plan.Env) // the server `haloforge serve --track` starts
	}
	req := serve.BenchRequest{Track: o.track, Pins: s.plan.Env, Model: o.model, URL: url, Depths: o.depths,
		Tiny: serve.TinyModel(s.ws.StateDir, o.track), Root: os.Getenv("HALOFORGE_DISTROBOX_ROOT") == "1", NoGPU: s.noGPU}
	var built serve.Built
	if !o.dryRun {
		// Not built is said before a missing model is.
		if built, err = checkBuilt(s, o.globalOptions, req.Root); err != nil {
			return err
		}
	}
	b, err := serve.PlanBench(req)
	if err != nil {
		return usageErr(err)
	}
	out := cmd.OutOrStdout()
	if o.dryRun {
		if o.asJSON {
			return writeJSON(out, b)
		}
		printBenchLaunch(out, b)
		return nil
	}
	if built.Note != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: %s\n", built.Note)
	}
	if err := runner.CheckStateDir(s.ws.StateDir); err != nil {
		return usageErr(err)
	}
	ro, err := runOptions(cmd, o.globalOptions, s)
	if err != nil {
		return err
	}
	ro.KeepColor = ro.KeepColor && !o.asJSON
	// With --json, standard output is the JSON alone; the run goes to stderr.
	log := out
	if o.asJSON {
		log = cmd.ErrOrStderr()
	}
	printBenchLaunch(log, b)
	r, err := serve.NewBenchRunner(b, ro)
	if err != nil {
		return usageErr(err)
	}
	started := time.Now()
	engine, res, err := runAndTime(cmd, log, r)
	if err != nil {
		return err
	}
	total := time.Since(started)
	switch res.Status {
	case steps.OutcomeInterrupted:
		return silentExit(exitInterrupted)
	case steps.OutcomeFailed:
		return silentExit(exitFailed)
	}
	file := filepath.Join(r.RunDir(), b.Result)
	raw, err := readBenchInput(file, nil)
	if err != nil {
		return failedErr(fmt.Errorf("the benchmark left no results: %w", err))
	}
	run, err := bench.Parse(raw)
	if err != nil {
		return failedErr(fmt.Errorf("%s: %w", file, err))
	}
	// The model's own file, where the engine reads one (a GGUF), says what
	// a token reads better than llama-bench's fields can.
	if e, ok := serve.EngineNamed(b.Engine); ok {
		if shape, note := e.Shape(b.Model); note == "" && shape.Weights != nil {
			run.Model = shape.Weights
		}
	}
	if engine > 0 {
		fmt.Fprintf(log, "time: the benchmark itself took %s; haloforge and the %s around it added %s\n",
			text.Seconds(engine), b.Mode, text.Seconds(total-engine))
	}
	if b.Tiny {
		fmt.Fprintln(log, "note: the tiny random-weight model of the verify step: proof that kernels run, no speed claim")
	}
	fmt.Fprintf(log, "results: %s\n", file)
	if o.command == "" {
		o.command = b.Shell
	}
	return compareAndPrint(cmdContext(cmd), cmd, o, run, raw, hostOrigin{ranHere: true})
}

// runAndTime runs the bench runner in line mode and returns the engine's
// own time, as the bench step recorded it (serve.EngineTime).
func runAndTime(cmd *cobra.Command, log io.Writer, r *runner.Runner) (time.Duration, linemode.Result, error) {
	ctx, cancel := context.WithCancel(cmdContext(cmd))
	defer cancel()
	stopSignals := onInterrupt(log, "the step", runner.DefaultGrace, cancel, r.Kill)
	defer stopSignals()
	relay := make(chan runner.Event, 64)
	var engine time.Duration
	go func() {
		defer close(relay)
		for e := range r.Events() {
			if f, ok := e.(runner.StepFinished); ok {
				engine = f.Times[serve.EngineTime]
			}
			relay <- e
		}
	}()
	printed := make(chan linemode.Result, 1)
	go func() { printed <- linemode.Print(log, relay, linemode.Options{Color: colorOut(cmd)}) }()
	rep, err := r.Run(ctx)
	res := <-printed
	switch {
	case errors.Is(err, runner.ErrBusy):
		return 0, res, usageErr(err)
	case rep == nil:
		return 0, res, failedErr(err)
	}
	return engine, res, nil
}

// printBenchLaunch shows the benchmark command before it runs.
func printBenchLaunch(w io.Writer, b serve.BenchLaunch) {
	fmt.Fprintf(w, "bench: %s on %s (track %s, %s %s)\n", b.Command[0], filepath.Base(b.Model), b.Track, b.Mode, b.In)
	fmt.Fprintf(w, "command: %s\n", serve.QuoteCommand(b.Command))
	for k, v := range b.Env {
		fmt.Fprintf(w, "env: %s=%s\n", k, v)
	}
	fmt.Fprintf(w, "runs as: %s\n", b.Shell)
	if b.Note != "" {
		fmt.Fprintf(w, "  (%s)\n", b.Note)
	}
}
