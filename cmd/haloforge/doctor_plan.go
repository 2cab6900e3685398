package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/detect/hostfix"
	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/steps/runner"
)

// hostfixOptions are doctor's host-fix modes: --plan, --apply, --verify and
// --rollback, and what they share.
type hostfixOptions struct {
	plan     bool
	apply    string
	verify   bool
	rollback bool
	gttGiB   int64
	user     string
	root     string
	confirm  string
	dmesg    string
}

func (h *hostfixOptions) active() bool { return h.plan || h.apply != "" || h.verify || h.rollback }

func addHostfixFlags(cmd *cobra.Command, h *hostfixOptions) {
	f := cmd.Flags()
	f.BoolVar(&h.plan, "plan", false, "print the host changes that fix the warnings (kernel arguments, modprobe.d, groups, advice) for this machine's bootloader")
	f.StringVar(&h.apply, "apply", "", "apply a plan written by --plan --json: shows every change, asks you to type APPLY, backs up each file, never reboots")
	f.BoolVar(&h.verify, "verify", false, "after the reboot: do the live values match the plan (PLAN.json, default the last applied), and is the boot's dmesg clean?")
	f.BoolVar(&h.rollback, "rollback", false, "restore a backup made by --apply (BACKUP_DIR, default the latest) and regenerate the boot entries")
	f.Int64Var(&h.gttGiB, "gtt-gib", 0, "with --plan: the GTT to give the GPU in GiB (default: RAM minus 4-8 GiB for the OS)")
	f.StringVar(&h.user, "user", "", "with --plan: the user to add to render and video (default: you)")
	f.StringVar(&h.root, "root", "", "act on the system installed under DIR (an image or chroot; its tools run with chroot)")
	f.StringVar(&h.confirm, "confirm", "", "confirm without a prompt, for automation and tests: APPLY for --apply, ROLLBACK for --rollback")
	f.StringVar(&h.dmesg, "dmesg", "", "with --verify: read the kernel log from FILE (sudo dmesg > FILE) when dmesg needs root here")
	cmd.MarkFlagsMutuallyExclusive("plan", "apply", "verify", "rollback", "collect")
}

// hostfixArgs accepts one argument only after --verify (PLAN.json) or
// --rollback (BACKUP_DIR); plain doctor takes none.
func hostfixArgs(h *hostfixOptions) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return nil
		case len(args) == 1 && (h.verify || h.rollback):
			return nil
		case len(args) == 1:
			return usageErr(fmt.Errorf("unexpected argument %q (only --verify PLAN.json and --rollback BACKUP_DIR take one)", args[0]))
		}
		return usageErr(fmt.Errorf("too many arguments"))
	}
}

func runHostfix(cmd *cobra.Command, o doctorOptions, args []string) error {
	h := o.host
	if h.bundleless() && o.bundle != "" {
		return usageErr(errors.New("--bundle goes with --plan and --verify: --apply and --rollback change this machine (or --root DIR)"))
	}
	if h.root != "" {
		abs, err := filepath.Abs(h.root)
		if err != nil {
			return usageErr(err)
		}
		h.root = abs
	}
	o.host = h
	switch {
	case h.plan:
		return runHostPlan(cmd, o)
	case h.apply != "":
		return runApply(cmd, o)
	case h.verify:
		return runVerify(cmd, o, args)
	}
	return runRollback(cmd, o, args)
}

func (h *hostfixOptions) bundleless() bool { return h.apply != "" || h.rollback }

// hostFacts analyses this machine (or the bundle) and reads how it boots:
// from --root when given, else from the bundle, else from /.
func hostFacts(cmd *cobra.Command, o doctorOptions) (*detect.Report, *hostfix.Evidence, string, error) {
	b, err := doctorBundle(cmdContext(cmd), o)
	if err != nil {
		return nil, nil, "", err
	}
	r := detect.Analyse(b)
	var ev *hostfix.Evidence
	source := "this machine"
	switch {
	case o.host.root != "":
		ev, err = hostfix.FromRoot(o.host.root)
		if err != nil {
			return nil, nil, "", usageErr(err)
		}
		source = "the system under " + o.host.root + " (its boot files; the hardware facts are this machine's: --bundle FILE gives another's)"
		if o.bundle != "" {
			source = o.bundle + " (booting like the system under " + o.host.root + ")"
		}
	case o.bundle != "":
		ev, _ = hostfix.FromBundle(b)
		source = o.bundle
	default:
		ev, err = hostfix.FromRoot("/")
		if err != nil {
			return nil, nil, "", failedErr(err)
		}
	}
	return r, ev, source, nil
}

func runHostPlan(cmd *cobra.Command, o doctorOptions) error {
	r, ev, source, err := hostFacts(cmd, o)
	if err != nil {
		return err
	}
	p, err := hostfix.Build(r, ev, hostfix.Options{GTTGiB: o.host.gttGiB, User: o.host.user, Source: source, Version: version,
		BundleFacts: o.bundle != "", Bundle: o.bundle, StateDir: o.stateDir})
	if err != nil {
		return usageErr(err)
	}
	return writeJSONOrText(cmd.OutOrStdout(), o.json, p, p.WriteText)
}

// writeJSONOrText prints v as indented JSON, or as text with its writer.
func writeJSONOrText(out io.Writer, asJSON bool, v any, text func(io.Writer) error) error {
	var err error
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(v)
	} else {
		err = text(out)
	}
	if err != nil {
		return failedErr(err)
	}
	return nil
}

// isTerminal is true when stdin is a terminal someone can type into.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// hostOf is the system to change: --root DIR, else this machine.
func hostOf(cmd *cobra.Command, h hostfixOptions) *hostfix.Host {
	root := h.root
	if root == "" {
		root = "/"
	}
	return &hostfix.Host{Root: root, Out: cmd.OutOrStdout(), Runner: hostfix.NewExecRunner()}
}

// confirmer asks for the typed word on the terminal, or takes --confirm.
// A signal while it waits ends the prompt: nothing was changed (exit 130).
func confirmer(ctx context.Context, cmd *cobra.Command, h hostfixOptions) func(word string) error {
	return func(word string) error {
		out := cmd.OutOrStdout()
		if h.confirm != "" {
			if h.confirm != word {
				return usageErr(fmt.Errorf("--confirm must be %s here", word))
			}
			fmt.Fprintf(out, "Confirmed with --confirm %s.\n", word)
			return nil
		}
		if !isTerminal(cmd.InOrStdin()) {
			return fmt.Errorf("%w: type %s in a terminal, or pass --confirm %s (for automation)", hostfix.ErrNoTerminal, word, word)
		}
		fmt.Fprintf(out, "Type %s to go ahead (anything else cancels): ", word)
		type answer struct {
			line string
			err  error
		}
		got := make(chan answer, 1)
		go func() {
			line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
			got <- answer{line, err}
		}()
		var a answer
		select {
		case a = <-got:
		case <-ctx.Done():
			fmt.Fprintln(out)
			return fmt.Errorf("stopped at the prompt, so nothing was changed: %w", hostfix.ErrInterrupted)
		}
		if a.err != nil && !errors.Is(a.err, io.EOF) {
			return a.err
		}
		if strings.TrimSpace(a.line) != word {
			return hostfix.ErrDeclined
		}
		return nil
	}
}

// hostfixErr maps host-fix errors to docs/cli.md's exit codes.
func hostfixErr(err error) error {
	var ee *exitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		return err
	case errors.Is(err, hostfix.ErrInterrupted):
		return &exitError{code: exitInterrupted, err: err}
	case hostfix.IsUsage(err):
		return usageErr(err)
	}
	return failedErr(err)
}

// hostfixContext is the command's context, ended by the first of
// stopSignals: --apply and --rollback then stop the tool they run with
// everything it started, record the backup as interrupted and say how to
// undo (exit 130), instead of dying with the tool running on.
func hostfixContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(cmdContext(cmd), stopSignals...)
}

// printedFlags are the flags a command printed by --apply or --rollback
// needs to act on the same system and backups, as the user gave them.
func printedFlags(o doctorOptions) []string {
	var out []string
	if o.host.root != "" {
		out = append(out, "--root", o.host.root)
	}
	if o.stateDir != "" {
		out = append(out, "--state-dir", o.stateDir)
	}
	return out
}

func runApply(cmd *cobra.Command, o doctorOptions) error {
	stateDir := o.stateDirOr() // backups live in <state-dir>/host-backups
	if err := runner.CheckStateDir(stateDir); err != nil {
		return usageErr(err)
	}
	// A regular file only: a FIFO named as the plan hung --apply.
	f, _, err := safefile.OpenRegular(o.host.apply, safefile.Follow)
	if err != nil {
		return usageErr(err)
	}
	p, err := hostfix.ParsePlan(f)
	f.Close()
	if err != nil {
		return usageErr(fmt.Errorf("%s: %w", o.host.apply, err))
	}
	root := o.host.root
	if root == "" {
		root = "/"
	}
	// Before anything is shown or asked: a plan for another machine is
	// refused (exit 2), and so is one made before its facts changed,
	// unless there is nothing left to change.
	var stale error
	if err := hostfix.CheckMachine(p, root); errors.Is(err, hostfix.ErrStalePlan) {
		stale = usageErr(fmt.Errorf("%s: %w", o.host.apply, err))
	} else if err != nil {
		return usageErr(fmt.Errorf("%s: %w", o.host.apply, err))
	}
	ctx, stop := hostfixContext(cmd)
	defer stop()
	_, err = hostfix.Apply(ctx, p, hostOf(cmd, o.host), hostfix.ApplyOptions{
		StateDir: stateDir, Version: version, Confirm: confirmer(ctx, cmd, o.host), Stale: stale, Flags: printedFlags(o)})
	return hostfixErr(err)
}

func runRollback(cmd *cobra.Command, o doctorOptions, args []string) error {
	stateDir := o.stateDirOr() // backups live in <state-dir>/host-backups
	if err := runner.CheckStateDir(stateDir); err != nil {
		return usageErr(err)
	}
	dir := ""
	if len(args) == 1 {
		dir = args[0]
	} else {
		var err error
		if dir, err = hostfix.LastApplied(stateDir); err != nil {
			return usageErr(err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Rolling back %s\n", dir)
	}
	ctx, stop := hostfixContext(cmd)
	defer stop()
	_, err := hostfix.Rollback(ctx, dir, hostOf(cmd, o.host), hostfix.ApplyOptions{
		StateDir: stateDir, Version: version, Confirm: confirmer(ctx, cmd, o.host), Flags: printedFlags(o)})
	return hostfixErr(err)
}

func runVerify(cmd *cobra.Command, o doctorOptions, args []string) error {
	stateDir := o.stateDirOr() // backups live in <state-dir>/host-backups
	var p *hostfix.Plan
	var err error
	if len(args) == 1 {
		f, _, ferr := safefile.OpenRegular(args[0], safefile.Follow)
		if ferr != nil {
			return usageErr(ferr)
		}
		p, err = hostfix.ParsePlan(f)
		f.Close()
	} else {
		dir, derr := hostfix.LastApplied(stateDir)
		if derr != nil {
			return usageErr(fmt.Errorf("%v: name the plan (haloforge doctor --verify PLAN.json)", derr))
		}
		p, err = hostfix.LoadAppliedPlan(dir)
	}
	if err != nil {
		return usageErr(err)
	}
	b, err := doctorBundle(cmdContext(cmd), o)
	if err != nil {
		return err
	}
	if o.host.dmesg != "" {
		// A regular file, read to a bound: a FIFO (<(sudo dmesg)) would
		// wait for its writer, so it is refused at once.
		data, err := safefile.ReadRegular(o.host.dmesg, maxDmesgFile, safefile.Follow)
		if err != nil {
			return usageErr(fmt.Errorf("--dmesg: %w (save the log first: sudo dmesg > FILE)", err))
		}
		_ = b.Set("dmesg.txt", data)
	} else if o.bundle == "" {
		kernelLog(cmdContext(cmd), b)
	}
	again := []string{"--verify"}
	if len(args) == 1 {
		again = append(again, shellWord(args[0]))
	}
	in := hostfix.VerifyInput{Report: detect.Analyse(b), Bundle: b, Undo: doctorCommand(o, "--rollback"), Again: doctorCommand(o, again...)}
	switch {
	case o.host.root != "":
		if ev, err := hostfix.FromRoot(o.host.root); err == nil {
			in.Groups = ev.Groups
		}
	case o.bundle != "":
		if ev, ok := hostfix.FromBundle(b); ok && len(ev.Groups) > 0 {
			in.Groups = ev.Groups
		}
	default:
		if ev, err := hostfix.FromRoot("/"); err == nil {
			in.Groups = ev.Groups
		}
	}
	v := hostfix.Verify(p, in)
	if err := writeJSONOrText(cmd.OutOrStdout(), o.json, v, v.WriteText); err != nil {
		return err
	}
	if !v.OK {
		return silentExit(exitFailed)
	}
	return nil
}

// doctorCommand is a doctor command to print, with the --root and
// --state-dir the user gave (printedFlags): pasted, it acts on the same
// system and backups.
func doctorCommand(o doctorOptions, args ...string) string {
	parts := append([]string{"haloforge", "doctor"}, args...)
	for _, f := range printedFlags(o) {
		parts = append(parts, shellWord(f))
	}
	return strings.Join(parts, " ")
}

// maxDmesgFile bounds a kernel log read for --verify: a boot's is a few
// MiB at most.
const maxDmesgFile = 32 << 20

// kernelLog reads this boot's kernel log from the journal when dmesg was
// not readable (kernel.dmesg_restrict); members of adm or systemd-journal
// may read it without root.
func kernelLog(ctx context.Context, b *detect.Bundle) {
	if s, ok := b.Get("dmesg.txt"); ok && !detect.ParseDmesg(s).Restricted {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, "journalctl", "-k", "-b", "0", "--no-pager", "-q").Output()
	if err == nil && len(out) > 0 && len(out) < maxDmesgFile {
		_ = b.Set("dmesg.txt", out)
	}
}

// addBootEvidence puts how this machine boots into its bundle, so that a
// shared bundle plans for the right bootloader.
func addBootEvidence(b *detect.Bundle) {
	if ev, err := hostfix.FromRoot("/"); err == nil {
		_ = ev.AddToBundle(b)
	}
}
