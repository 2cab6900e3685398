package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/installed"
	"github.com/haloforge/haloforge/steps/runner"
)

type cleanOptions struct {
	*globalOptions
	track            string
	dryRun, all, yes bool
}

func newCleanCmd(g *globalOptions) *cobra.Command {
	o := cleanOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "clean --track ID",
		Short: "Remove what haloforge created for a track (box, images, caches, files), and only that",
		Long: "clean removes what haloforge recorded creating for the track: its distrobox, the images it built " +
			"or pulled, its venvs, caches and files. It lists every item first with its size and the exact " +
			"command, then asks you to type the track's ID (or takes --yes). Each item is checked again before " +
			"it goes: a box or an image must still carry haloforge's owner label, a directory its marker, a file " +
			"what it was when its step ended, a pulled image the ID it was pulled as; what no longer matches, and " +
			"what another built track uses too, is kept. The track's steps then count as not built, so the next " +
			"build runs them all. --all also removes the track's runs (logs, reports) and its history.",
		Example: "  haloforge clean --track llamacpp-distro --dry-run\n" +
			"  haloforge clean --track llamacpp-distro\n" +
			"  haloforge clean --track vllm-image --all --yes   # in a script",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runClean(cmd, o) },
	}
	trackFlag(cmd, &o.track)
	f := cmd.Flags()
	f.BoolVar(&o.dryRun, "dry-run", false, "list what would be removed and kept, remove nothing")
	f.BoolVar(&o.all, "all", false, "also remove the track's runs (logs, reports) and its history in the state dir")
	f.BoolVar(&o.yes, "yes", false, "remove without asking (for scripts; the list is printed all the same)")
	return cmd
}

// cleanPlan is what clean will do: each item's verdict, and with --all
// the track's runs.
type cleanPlan struct {
	verdicts []installed.Verdict
	runs     []string // run IDs of the track (--all)
	history  bool     // state.json knows the track
}

func (p cleanPlan) removes() int {
	n := 0
	for _, v := range p.verdicts {
		if v.State == installed.Remove {
			n++
		}
	}
	return n + len(p.runs)
}

func runClean(cmd *cobra.Command, o cleanOptions) error {
	if err := requireTrack(o.track); err != nil {
		return err
	}
	if _, err := steps.Lookup(o.track); err != nil {
		return usageErr(err)
	}
	dir := o.stateDirOr()
	out := cmd.OutOrStdout()
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		fmt.Fprintf(out, "haloforge created nothing for %s: the state dir %s does not exist\n", o.track, dir)
		return nil
	}
	// A build of any track may be writing installed.json and state.json,
	// and a build or a server of this one uses what clean removes: clean
	// holds both locks as a build does. A dry run removes nothing and
	// takes neither, but says what the real one would wait for.
	if o.dryRun {
		if err := errors.Join(runner.Busy(dir), runner.TrackBusy(dir, o.track, true)); err != nil {
			fmt.Fprintf(out, "note: %s\n", text.Printable(cleanBusy(o.track, err).Error(), 400))
		}
	} else {
		// A lock file haloforge could not have made (a link, a FIFO) is
		// bad input, as it is to a build.
		unlock, err := runner.LockTrack(dir, o.track)
		if err != nil {
			return usageErr(cleanBusy(o.track, err))
		}
		defer unlock()
	}
	ctx, stop := signal.NotifyContext(cmdContext(cmd), stopSignals...)
	defer stop()
	rec, err := installed.Load(dir)
	if err != nil {
		return failedErr(err)
	}
	st, err := steps.LoadState(dir)
	if err != nil {
		return failedErr(err)
	}
	c := installed.Cleaner{StateDir: dir}
	plan := cleanPlan{history: st.Tracks[o.track] != nil}
	users := sharedWith(dir, o.track, st)
	boxes := map[string]installed.Verdict{}
	for _, it := range rec.Items(o.track) {
		var v installed.Verdict
		switch {
		case it.Kind == installed.KindInBox:
			continue // after its box
		case len(users(it)) > 0:
			v = installed.Verdict{Item: it, State: installed.Kept,
				Why: "track " + strings.Join(users(it), ", track ") + " uses it too (clean that one first, or keep this)"}
		default:
			v = c.Check(ctx, it)
		}
		if it.Kind == installed.KindBox {
			boxes[it.Name] = v
		}
		plan.verdicts = append(plan.verdicts, v)
	}
	for _, it := range rec.Items(o.track) {
		if it.Kind != installed.KindInBox {
			continue
		}
		v := installed.Verdict{Item: it, State: installed.Kept, Why: "inside box " + it.Box + ", which stays"}
		if b, ok := boxes[it.Box]; ok && b.State == installed.Remove {
			v.State, v.Why = installed.Remove, "goes with box "+it.Box
		}
		plan.verdicts = append(plan.verdicts, v)
	}
	if o.all {
		for _, e := range listRuns(dir, o.track, 0) {
			if e.err == nil {
				plan.runs = append(plan.runs, e.id)
			}
		}
	}
	printCleanPlan(out, o, dir, plan)
	if ctx.Err() != nil {
		return silentExit(exitInterrupted)
	}
	if o.dryRun {
		fmt.Fprintf(out, "\ndry run: nothing was removed. To remove it: haloforge clean --track %s%s%s\n", o.track, allArg(o.all), o.stateDirArg())
		return nil
	}
	if plan.removes() == 0 && !plan.history {
		return saveCleanRecord(rec, dir, o.track, plan)
	}
	if err := confirmClean(cmd, o); err != nil {
		return err
	}
	return doClean(ctx, out, o, dir, c, rec, st, plan)
}

// cleanBusy says who holds the state dir or the track, and that clean
// removes nothing until they end (the runner's own words advise a build).
func cleanBusy(track string, err error) error {
	var be *runner.BusyError
	var tb *runner.TrackBusyError
	who := func(pids []int) string {
		var ps []string
		for _, p := range pids {
			if p > 0 {
				ps = append(ps, strconv.Itoa(p))
			}
		}
		if len(ps) == 0 {
			return ""
		}
		return " (pid " + strings.Join(ps, ", ") + ")"
	}
	switch {
	case errors.As(err, &be):
		doing := ""
		if be.Doing != "" {
			doing = ", " + be.Doing
		}
		return fmt.Errorf("a haloforge build%s%s holds the state dir %s: clean removes nothing while a build runs; run it again once the build has ended", who([]int{be.PID}), doing, be.Dir)
	case errors.As(err, &tb) && tb.Serving:
		return fmt.Errorf("haloforge serves track %s%s: clean removes nothing the server uses; stop it (Ctrl-C in its terminal), then run clean again", track, who(tb.PIDs))
	case errors.As(err, &tb):
		return fmt.Errorf("track %s is being built%s: clean removes nothing while it builds; run it again once the build has ended", track, who(tb.PIDs))
	}
	return err
}

func allArg(all bool) string {
	if all {
		return " --all"
	}
	return ""
}

// sharedWith returns, for an item, the other tracks whose last build uses
// it: a pin of theirs names it (a shared box), or their build consumed
// the image. Those builds would break without it.
func sharedWith(dir, track string, st *steps.State) func(installed.Item) []string {
	type use struct{ pins, images map[string]bool }
	uses := map[string]use{}
	for id, ts := range st.Tracks {
		if id == track || ts == nil || ts.LastRun == "" {
			continue
		}
		rep, err := runner.ReadReport(dir, ts.LastRun)
		if err != nil {
			continue
		}
		u := use{pins: map[string]bool{}, images: map[string]bool{}}
		for _, s := range rep.Steps {
			if s.Status != steps.OutcomeSucceeded && s.Status != steps.OutcomeNotVerified && s.Status != steps.OutcomeSkipped {
				continue
			}
			for _, v := range s.Pins {
				u.pins[v] = true
			}
		}
		for _, img := range rep.Resolved.Images {
			u.images[img.Ref] = true
		}
		uses[id] = u
	}
	return func(it installed.Item) []string {
		var out []string
		for id, u := range uses {
			switch it.Kind {
			case installed.KindBox:
				if u.pins[it.Name] {
					out = append(out, id)
				}
			case installed.KindImage:
				if u.pins[it.Name] || u.images[it.Name] {
					out = append(out, id)
				}
			}
		}
		slices.Sort(out)
		return out
	}
}

// printCleanPlan lists every item exactly, with what clean does to it and
// why, then what else changes.
func printCleanPlan(w io.Writer, o cleanOptions, dir string, p cleanPlan) {
	fmt.Fprintf(w, "haloforge clean --track %s (state dir %s)\n", o.track, dir)
	if len(p.verdicts) == 0 {
		fmt.Fprintf(w, "  haloforge recorded creating nothing for %s\n", o.track)
	}
	var free int64
	for _, v := range p.verdicts {
		size := v.Item.Size()
		if v.Size != nil {
			size = text.Bytes(*v.Size)
		}
		if v.Item.Kind == installed.KindInBox {
			size = "in the box"
		}
		word := map[string]string{installed.Remove: "remove", installed.Gone: "forget", installed.Kept: "keep"}[v.State]
		fmt.Fprintf(w, "  %-6s  %s · %s\n", word, text.Printable(v.Item.Describe(), 200), size)
		switch {
		case v.State == installed.Remove && len(v.Command) > 0:
			fmt.Fprintf(w, "          %s\n", strings.Join(v.Command, " "))
		case v.State == installed.Remove && (v.Item.Kind == installed.KindDir || v.Item.Kind == installed.KindFile):
			fmt.Fprintf(w, "          (haloforge removes it itself, following no link)\n")
		}
		if v.Why != "" {
			fmt.Fprintf(w, "          %s\n", text.Printable(v.Why, 300))
		}
		if v.State == installed.Remove && v.Size != nil {
			free += *v.Size
		}
	}
	if len(p.runs) > 0 {
		fmt.Fprintf(w, "  remove  %s of %s (logs, reports) under %s\n", text.Plural(len(p.runs), "run"), o.track, filepath.Join(dir, "runs"))
	}
	switch {
	case o.all && p.history:
		fmt.Fprintf(w, "  forget  the history of %s in state.json: the next build runs every step\n", o.track)
	case p.history && p.removes() > 0:
		fmt.Fprintf(w, "  forget  which steps of %s are built (state.json): the next build runs every step\n", o.track)
	}
	if free > 0 {
		fmt.Fprintf(w, "frees %s\n", text.Bytes(free))
	}
}

// confirmClean asks for the track's ID on the terminal, or takes --yes.
func confirmClean(cmd *cobra.Command, o cleanOptions) error {
	out := cmd.OutOrStdout()
	if o.yes {
		fmt.Fprintln(out, "Confirmed with --yes.")
		return nil
	}
	if !isTerminal(cmd.InOrStdin()) {
		return usageErr(fmt.Errorf("clean asks before it removes anything, and there is no terminal to ask on: check the list (--dry-run), then run it with --yes"))
	}
	fmt.Fprintf(out, "\nType %s to remove this (anything else keeps it): ", o.track)
	line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return failedErr(err)
	}
	if strings.TrimSpace(line) != o.track {
		fmt.Fprintln(out, "Not confirmed: nothing was removed.")
		return silentExit(exitFailed)
	}
	return nil
}

// doClean removes what the plan says, each item checked once more, then
// saves the record and the state: boxes first (their images are then
// free), an interruption stops between items.
func doClean(ctx context.Context, out io.Writer, o cleanOptions, dir string, c installed.Cleaner, rec *installed.Record, st *steps.State, p cleanPlan) error {
	order := map[string]int{installed.KindBox: 0, installed.KindInBox: 1, installed.KindImage: 2, installed.KindDir: 3, installed.KindFile: 4}
	slices.SortStableFunc(p.verdicts, func(a, b installed.Verdict) int { return order[a.Item.Kind] - order[b.Item.Kind] })
	var failed []string
	var freed int64
	interrupted := false
	for i, v := range p.verdicts {
		if v.State != installed.Remove {
			continue
		}
		if ctx.Err() != nil {
			interrupted = true
			break
		}
		if v.Item.Kind == installed.KindInBox {
			continue // its box's removal took it
		}
		got, err := c.Remove(ctx, v)
		p.verdicts[i] = got
		desc := text.Printable(v.Item.Describe(), 200)
		switch {
		case err != nil:
			failed = append(failed, desc)
			p.verdicts[i].State = installed.Kept
			fmt.Fprintf(out, "✗ %s: %s\n", desc, text.Printable(err.Error(), 300))
		case got.State == installed.Remove:
			if got.Size != nil {
				freed += *got.Size
			}
			fmt.Fprintf(out, "✓ removed %s\n", desc)
		default:
			fmt.Fprintf(out, "- kept %s: %s\n", desc, text.Printable(got.Why, 300))
		}
	}
	for i, v := range p.verdicts {
		if v.Item.Kind == installed.KindInBox && v.State == installed.Remove {
			if b := slices.IndexFunc(p.verdicts, func(b installed.Verdict) bool {
				return b.Item.Kind == installed.KindBox && b.Item.Name == v.Item.Box && b.State == installed.Remove
			}); b < 0 {
				p.verdicts[i].State = installed.Kept
			}
		}
	}
	removedRuns := 0
	if !interrupted && len(failed) == 0 {
		for _, id := range p.runs {
			if err := removeRun(dir, id); err != nil {
				failed = append(failed, "run "+id)
				fmt.Fprintf(out, "✗ run %s: %s\n", id, text.Printable(err.Error(), 300))
				continue
			}
			removedRuns++
		}
		if removedRuns > 0 {
			fmt.Fprintf(out, "✓ removed %s of %s\n", text.Plural(removedRuns, "run"), o.track)
		}
	}
	if err := saveCleanRecord(rec, dir, o.track, p); err != nil {
		return err
	}
	// What the steps built is gone (or partly): they count as not built.
	switch {
	case o.all && removedRuns == len(p.runs) && len(failed) == 0 && !interrupted:
		delete(st.Tracks, o.track)
	default:
		st.ForgetSuccesses(o.track)
	}
	if err := st.Save(dir); err != nil {
		return failedErr(fmt.Errorf("state: %w", err))
	}
	fmt.Fprintf(out, "freed %s; the next haloforge build --track %s runs every step\n", text.Bytes(freed), o.track)
	switch {
	case interrupted:
		fmt.Fprintf(out, "interrupted: the rest is kept; haloforge clean --track %s%s%s goes on\n", o.track, allArg(o.all), o.stateDirArg())
		return silentExit(exitInterrupted)
	case len(failed) > 0:
		return failedErr(fmt.Errorf("%s could not be removed: %s", text.Plural(len(failed), "item"), strings.Join(failed, "; ")))
	}
	return nil
}

// saveCleanRecord forgets what was removed, what is gone and what is not
// haloforge's any more; what was kept for a reason (another track uses
// it, its engine did not answer) stays recorded.
func saveCleanRecord(rec *installed.Record, dir, track string, p cleanPlan) error {
	var drop []string
	for _, v := range p.verdicts {
		if v.State == installed.Remove || v.State == installed.Gone || v.Foreign {
			drop = append(drop, v.Item.Key())
		}
	}
	if len(drop) == 0 {
		return nil
	}
	rec.Drop(track, drop...)
	if err := rec.Save(dir); err != nil {
		return failedErr(err)
	}
	return nil
}

// removeRun removes a run's directory: a directory of the state dir
// holding the report of the track's run, reached and emptied through no
// link (safefile.Tree).
func removeRun(dir, id string) error {
	if !runner.ValidRunID(id) {
		return fmt.Errorf("%q is not a run ID", id)
	}
	t := safefile.Tree(dir)
	fi, err := t.Lstat(runner.RunName(id))
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is %s, not a run's directory", t.Path(runner.RunName(id)), safefile.Kind(fi.Mode()))
	}
	return t.RemoveAll(runner.RunName(id))
}
