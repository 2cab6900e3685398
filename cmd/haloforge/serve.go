package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/steps/serve"
	"github.com/haloforge/haloforge/tui/linemode"
)

// serveOptions are the flags of `haloforge serve`.
type serveOptions struct {
	track, model, host string
	context            uint64
	util               float64
	port               int
	dryRun, asJSON     bool
	expose, force      bool
	noSmoke            bool
	*globalOptions     // the pins, scripts and state dir the track was built with
}

func newServeCmd(g *globalOptions) *cobra.Command {
	o := serveOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "serve --track ID [--model M]",
		Short: "Serve a model with the track's engine, prove it answers, and time its first tokens",
		Long: "serve starts the engine a built track provides (llama.cpp's llama-server, vLLM or Ollama) in " +
			"the track's box or image, through the same pty runner as build, with the full log in the state " +
			"dir. Before it starts, it checks that the model fits: weights plus the KV cache of the context plus " +
			"overhead, against the GPU memory this machine has (GTT on the APU, at most 0.90 of it on unified " +
			"memory); a model that does not fit is refused with the context or utilisation that would (--force " +
			"starts it anyway). It prints the exact command and environment, follows the engine's start-up " +
			"phase by phase from its own log lines, names the phase it is stuck in if it stalls, probes /health " +
			"and the model list, then streams one short completion and reports the time to the first token and " +
			"the tokens per second. The server listens on 127.0.0.1 unless --host says otherwise; every " +
			"interface (0.0.0.0) needs --expose. Ctrl-C (or q on a terminal) stops it and every process it " +
			"started. Exit 0 when it served and was stopped, 1 when it failed or stalled, 2 for bad input " +
			"(a model that does not fit included: nothing ran), 130 when stopped before it was ready.",
		Example: "  haloforge serve --track llamacpp-distro --model ~/models/qwen3-30b-a3b-q4_k_m.gguf\n" +
			"  haloforge serve --track therock-toolbox --model Qwen/Qwen3-0.6B --ctx 32768 --util 0.85\n" +
			"  haloforge serve --track vllm-image --model Qwen/Qwen3-0.6B --dry-run --json\n" +
			"  haloforge serve --track ollama --model qwen3:8b --port 11434",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, o) },
	}
	f := cmd.Flags()
	trackFlag(cmd, &o.track)
	f.StringVar(&o.model, "model", "", "the model: a GGUF file (llama.cpp), a Hugging Face ID or directory (vLLM), an Ollama name")
	f.Uint64Var(&o.context, "ctx", 0, "context length in tokens (default: the model's, else 4096)")
	f.Float64Var(&o.util, "util", 0, "share of the GPU memory the engine may use, 0-1 (default and cap on the APU: 0.90)")
	f.IntVar(&o.port, "port", 0, "port to listen on (default: the engine's, or the track's pin)")
	f.StringVar(&o.host, "host", "", "address to listen on (default 127.0.0.1)")
	f.BoolVar(&o.expose, "expose", false, "allow --host 0.0.0.0 or ::, every interface (no API key: keep it behind a firewall)")
	f.BoolVar(&o.force, "force", false, "start even when the fit estimate says the model does not fit")
	f.BoolVar(&o.noSmoke, "no-smoke", false, "do not send the first completion once the server is ready")
	f.BoolVar(&o.dryRun, "dry-run", false, "print what would run (command, environment, URL, fit) and start nothing")
	jsonFlag(cmd, &o.asJSON, `print {"engine", "command", "env", "url", "fit"} (with --dry-run), or the outcome, as JSON`)
	return cmd
}

// serveSetup is what serve and bench learn before anything runs.
type serveSetup struct {
	ws      steps.Workspace // what the global flags name
	plan    *steps.Plan
	report  *detect.Report
	ceiling serve.Ceiling
	noGPU   bool
}

// setupServe reads the track's pins and this machine's GPU memory.
func setupServe(cmd *cobra.Command, g *globalOptions, track string) (serveSetup, error) {
	if err := requireTrack(track); err != nil {
		return serveSetup{}, err
	}
	w, err := g.workspace()
	if err != nil {
		return serveSetup{}, err
	}
	plan, err := planFor(w, track)
	var missing *steps.MissingScriptError
	if err != nil && !errors.As(err, &missing) {
		return serveSetup{}, err
	}
	s := serveSetup{ws: w, plan: plan}
	b, err := detect.Collect(cmdContext(cmd), collectOptions(w.StateDir))
	if err == nil {
		s.report = detect.Analyse(b)
	}
	s.ceiling = serve.CeilingOf(s.report)
	// Tests and GPU-less machines: a CPU Vulkan device stands in for the GPU.
	s.noGPU = os.Getenv("HALOFORGE_ALLOW_NO_GPU") == "1" && (s.report == nil || s.report.Primary() == nil)
	return s, nil
}

func runServe(cmd *cobra.Command, o serveOptions) error {
	if o.util < 0 || o.util > 1 {
		return usageErr(fmt.Errorf("--util %g: a share of the GPU memory, between 0 and 1", o.util))
	}
	s, err := setupServe(cmd, o.globalOptions, o.track)
	if err != nil {
		return err
	}
	req := serve.Request{Track: o.track, Pins: s.plan.Env, Model: o.model, Context: o.context, Util: o.util, Port: o.port,
		Host: o.host, Expose: o.expose, Root: os.Getenv("HALOFORGE_DISTROBOX_ROOT") == "1", NoGPU: s.noGPU, Unified: s.ceiling.Unified}
	var built serve.Built
	if !o.dryRun {
		// A track that is not built is said first: asking for a model it
		// cannot serve yet would send the user the wrong way.
		if built, err = checkBuilt(s, o.globalOptions, req.Root); err != nil {
			return err
		}
	}
	l, err := serve.Plan(req)
	if err != nil {
		return usageErr(err)
	}
	l.Estimate(req, s.ceiling)
	out := cmd.OutOrStdout()
	if o.dryRun {
		if o.asJSON {
			return writeJSON(out, l)
		}
		printLaunch(out, l)
		return nil
	}
	if !o.asJSON {
		printLaunch(out, l)
	}
	if built.Note != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: %s\n", built.Note)
	}
	if l.Fit != nil && !l.Fit.Fits && !o.force {
		fmt.Fprintf(out, "not started: %s\n", l.Fit.Advice)
		fmt.Fprintln(out, "  (--force starts it anyway, at the risk of swapping the whole machine)")
		return silentExit(exitUsage)
	}
	if err := portFree(l.Host, l.Port); err != nil {
		return usageErr(err)
	}
	if err := runner.CheckStateDir(s.ws.StateDir); err != nil {
		return usageErr(err)
	}
	return serveRun(cmd, o, s, l)
}

// probeBuilt finds a track's box or image (tests replace it).
var probeBuilt serve.Probe = serve.ProbeContainers

// checkBuilt refuses to start the engine of a track that is not built
// (exit 2: nothing ran), unless its box or image exists anyway: then the
// returned note says so.
func checkBuilt(s serveSetup, g *globalOptions, root bool) (serve.Built, error) {
	stateDir := g.stateDirOr()
	// A track being built now is not served half-built.
	if err := trackBusy(stateDir, s.plan.Track.ID, false); err != nil {
		return serve.Built{}, err
	}
	st, err := steps.LoadState(stateDir)
	if err != nil {
		return serve.Built{}, usageErr(err)
	}
	b, err := serve.CheckBuilt(s.plan.Track, st, serve.Where{StateDir: stateDir, Flags: g.args()}, s.plan.Env, root, probeBuilt)
	if err != nil {
		return b, usageErr(err)
	}
	return b, nil
}

// runOptions are the runner's inputs of a serve or bench run: the
// workspace with its scripts and container definitions on disk, the
// track's plan.
func runOptions(cmd *cobra.Command, g *globalOptions, s serveSetup) (serve.RunOptions, error) {
	w := s.ws
	if err := g.onDisk(&w); err != nil {
		return serve.RunOptions{}, err
	}
	return serve.RunOptions{Plan: s.plan, Workspace: w, KeepColor: colorOut(cmd)}, nil
}

// serveRun starts the server and follows it until it is stopped or fails.
func serveRun(cmd *cobra.Command, o serveOptions, s serveSetup, l serve.Launch) error {
	ro, err := runOptions(cmd, o.globalOptions, s)
	if err != nil {
		return err
	}
	w, err := serve.Start(cmdContext(cmd), l, ro, serve.WatchOptions{Smoke: !o.noSmoke})
	if err != nil {
		return usageErr(err)
	}
	out := cmd.OutOrStdout()
	notes := out // with --json, standard output is the JSON alone
	if o.asJSON {
		notes = cmd.ErrOrStderr()
	}
	stopSignals := onInterrupt(notes, "the server", serve.DefaultGrace, w.Stop, w.Stop)
	defer stopSignals()
	stopKeys := stopOnKey(cmd.InOrStdin(), w.Stop)
	defer stopKeys()
	var print io.Writer = out
	if o.asJSON {
		print = io.Discard
	}
	linemode.Print(print, w.Events(), linemode.Options{Color: colorOut(cmd) && !o.asJSON,
		ReadyHint: "serving: stop it with Ctrl-C" + keyHint(cmd.InOrStdin())})
	res := w.Result()
	if o.asJSON {
		if err := writeJSON(out, serveOutcome{Launch: l, Result: res}); err != nil {
			return err
		}
	} else if res.SuggestContext > 0 {
		fmt.Fprintf(out, "next: haloforge serve --track %s --model %s --ctx %d   (the engine's own estimate)\n", o.track, l.Model, res.SuggestContext)
	}
	return serveExit(res)
}

// serveOutcome is `serve --json` after a run: the launch and how it went.
type serveOutcome struct {
	serve.Launch
	Result serve.Result `json:"result"`
}

// serveExit maps a serve's outcome to docs/cli.md's exit codes: served and
// stopped 0, stopped before ready 130, failed or stalled 1.
func serveExit(res serve.Result) error {
	switch {
	case res.Ready && res.RunStatus != steps.OutcomeFailed && res.RunStatus != steps.OutcomeInterrupted:
		return nil
	case res.Failed != "" || res.RunStatus == steps.OutcomeFailed:
		return silentExit(exitFailed)
	case res.StoppedByUser || res.RunStatus == steps.OutcomeInterrupted:
		return silentExit(exitInterrupted)
	case res.RunStatus == "":
		return failedErr(errors.New("the run ended without an outcome"))
	}
	return silentExit(exitFailed)
}

// printLaunch shows everything decided before the engine starts.
func printLaunch(w io.Writer, l serve.Launch) {
	where := "box " + l.In
	if l.Mode == steps.ServeInContainer {
		where = "container " + l.Container + " of " + l.In
	}
	fmt.Fprintf(w, "serve: %s on %s (track %s, %s)\n", l.Engine, l.URL, l.Track, where)
	if l.Model != "" {
		fmt.Fprintf(w, "model: %s\n", l.Model)
	}
	switch {
	case l.Fit != nil:
		fmt.Fprintf(w, "fit: %s\n", l.Fit.Summary())
		fmt.Fprintf(w, "  %s\n", l.FitNote)
		for _, n := range l.Fit.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		if !l.Fit.Fits {
			fmt.Fprintf(w, "  %s\n", l.Fit.Advice)
		}
	case l.FitNote != "":
		fmt.Fprintf(w, "fit: unknown: %s\n", l.FitNote)
	}
	fmt.Fprintf(w, "command: %s\n", serve.QuoteCommand(l.Command))
	if len(l.Env) > 0 {
		keys := make([]string, 0, len(l.Env))
		for k := range l.Env {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "env: %s=%s\n", k, l.Env[k])
		}
	} else {
		fmt.Fprintln(w, "env: (nothing set beyond the track's)")
	}
	fmt.Fprintf(w, "runs as: %s\n", l.Shell)
	for _, warn := range l.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
}

// portFree says whether host:port can be listened on right now.
func portFree(host string, port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("port %d on %s is in use (another server? `ss -ltnp 'sport = :%d'` names it): choose another with --port", port, host, port)
		}
		if errors.Is(err, syscall.EADDRNOTAVAIL) {
			return fmt.Errorf("--host %s is not an address of this machine", host)
		}
		return fmt.Errorf("cannot listen on %s:%d: %w", host, port, err)
	}
	return ln.Close()
}

// keyHint is " or q" when q can stop the server (stdin is a terminal).
func keyHint(in io.Reader) string {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return " or q"
	}
	return ""
}

// stopOnKey calls stop when q is typed on a terminal stdin: the terminal
// goes to non-canonical mode without echo (signals stay on, so Ctrl-C
// still works) until the returned function restores it.
func stopOnKey(in io.Reader, stop func()) func() {
	f, ok := in.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return func() {}
	}
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return func() {}
	}
	raw := *old
	raw.Lflag &^= unix.ICANON | unix.ECHO
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if unix.IoctlSetTermios(fd, unix.TCSETS, &raw) != nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		b := make([]byte, 1)
		for {
			// Poll with a timeout so the reader ends with the server.
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, 200)
			select {
			case <-done:
				return
			default:
			}
			if err != nil && !errors.Is(err, unix.EINTR) {
				return
			}
			if n <= 0 {
				continue
			}
			if k, _ := unix.Read(fd, b); k == 1 && (b[0] == 'q' || b[0] == 'Q') {
				stop()
			}
		}
	}()
	return func() {
		close(done)
		_ = unix.IoctlSetTermios(fd, unix.TCSETS, old)
	}
}
