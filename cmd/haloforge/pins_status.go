package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/haloforge/haloforge"
	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/pins/sets"
	"github.com/haloforge/haloforge/pins/upstream"
	"github.com/haloforge/haloforge/steps"
)

// ---- pins status ------------------------------------------------------------

type pinsStatusOptions struct {
	*globalOptions // --state-dir: where the last status is kept
	file           string
	json           bool
	offline        bool
	timeout        time.Duration
}

func newPinsStatusCmd(g *globalOptions) *cobra.Command {
	o := pinsStatusOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "status [FILE]",
		Short: "Does each pin still resolve upstream? (read-only: nothing is installed or pulled)",
		Long: "Resolve every pin against where it comes from: wheel pins on their simple index (the exact " +
			"name==version and its gfx device wheel), image pins on their registry (tag → digest, digest " +
			"still there), git pins with git ls-remote. Each pin is ok, moved (a tag or branch points " +
			"elsewhere than at the last status), retired (gone upstream), unreachable (no answer) or " +
			"unchecked (--offline, or a local setting). The result is kept in the state dir: `moved` " +
			"compares against it and `haloforge plan` warns from it.\n\n" +
			"Exit codes: 0 nothing retired or moved, 1 something retired or moved, 2 bad input.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.file = args[0]
			}
			return runPinsStatus(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	cmd.Flags().BoolVar(&o.offline, "offline", false, "touch no network: every pin is unchecked")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 30*time.Second, "deadline for the whole check (one request gets at most 10s)")
	return cmd
}

type pinsStatusJSON struct {
	Pins      []upstream.Result      `json:"pins"`
	PinsFile  string                 `json:"pins_file"`
	CheckedAt time.Time              `json:"checked_at"`
	Offline   bool                   `json:"offline"`
	NoNetwork string                 `json:"no_network,omitempty"`
	Counts    map[upstream.State]int `json:"counts"`
}

func runPinsStatus(ctx context.Context, o pinsStatusOptions, stdout, stderr io.Writer) error {
	if o.timeout <= 0 {
		return usageErr(fmt.Errorf("--timeout %s: want a positive duration", o.timeout))
	}
	// FILE, else the global --pins, as every command that reads pins
	// (and --set on top, as plan and build see them)
	file := o.file
	if file == "" {
		file = o.pins.pins
	}
	pf, err := loadPinsFlags(file, o.pins.sets)
	if err != nil {
		return err
	}
	stateDir := o.stateDirOr()
	prev, err := upstream.LoadCache(stateDir)
	if err != nil {
		fmt.Fprintf(stderr, "warning: the last status is unreadable and is ignored: %v\n", err)
		prev = nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep := upstream.Check(ctx, pf, upstream.Options{
		Offline:  o.offline,
		Deadline: o.timeout,
		Previous: prev,
	})
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "interrupted: the status was not saved")
		return silentExit(exitInterrupted)
	}
	if !o.offline {
		c := upstream.NewCache(rep, pf.Path, prev)
		if data, err := c.Marshal(); err == nil {
			if err := safefile.Tree(stateDir).WriteFile(upstream.CacheFile, data, 0o644); err != nil {
				fmt.Fprintf(stderr, "warning: could not keep this status for `moved` and `plan`: %v\n", err)
			}
		}
	}
	counts := rep.Count()
	if o.json {
		err = writeJSON(stdout, pinsStatusJSON{Pins: rep.Pins, PinsFile: pf.Path, CheckedAt: rep.CheckedAt,
			Offline: rep.Offline, NoNetwork: rep.NoNetwork, Counts: counts})
		if err != nil {
			return err
		}
	} else {
		printPinsStatus(stdout, pf, rep)
	}
	if counts[upstream.Retired]+counts[upstream.Moved] > 0 {
		return silentExit(exitFailed)
	}
	return nil
}

var stateMarks = map[upstream.State]string{
	upstream.Retired: "✗", upstream.Moved: "↻", upstream.Unreachable: "?", upstream.OK: "✓", upstream.Unchecked: "·",
}

// printPinsStatus lists what needs attention first: retired, moved, then
// what could not be asked, then what is fine; local settings on one line.
func printPinsStatus(w io.Writer, pf *pins.File, rep *upstream.Report) {
	fmt.Fprintf(w, "pins status of %s: %d pins, checked %s in %.1fs\n", pf.Path, len(rep.Pins),
		rep.CheckedAt.UTC().Format("2006-01-02 15:04 MST"), rep.Duration.Seconds())
	if rep.Offline {
		fmt.Fprintln(w, "· --offline: nothing was asked; every pin is unchecked")
		return
	}
	if rep.NoNetwork != "" {
		fmt.Fprintln(w, "? "+rep.NoNetwork)
	}
	by := map[upstream.State][]upstream.Result{}
	for _, r := range rep.Pins {
		by[r.State] = append(by[r.State], r)
	}
	for _, s := range []upstream.State{upstream.Retired, upstream.Moved, upstream.Unreachable, upstream.OK} {
		if s == upstream.Unreachable && rep.NoNetwork != "" {
			fmt.Fprintf(w, "? unreachable  %s\n", strings.Join(resultNames(by[s]), ", "))
			continue
		}
		for _, r := range by[s] {
			fmt.Fprintf(w, "%s %-12s %s=%s\n", stateMarks[s], s, r.Name, r.Value)
			fmt.Fprintf(w, "               %s\n", r.Detail)
		}
	}
	var local, other []upstream.Result
	for _, r := range by[upstream.Unchecked] {
		if r.Method == "none" {
			local = append(local, r)
		} else {
			other = append(other, r)
		}
	}
	for _, r := range other {
		fmt.Fprintf(w, "· %-12s %s=%s\n               %s\n", upstream.Unchecked, r.Name, r.Value, r.Detail)
	}
	if len(local) > 0 {
		fmt.Fprintf(w, "· unchecked    %d local settings, nothing upstream: %s\n", len(local), strings.Join(resultNames(local), ", "))
	}
	c := rep.Count()
	fmt.Fprintf(w, "\n%d ok, %d moved, %d retired, %d unreachable, %d unchecked\n",
		c[upstream.OK], c[upstream.Moved], c[upstream.Retired], c[upstream.Unreachable], c[upstream.Unchecked])
	if c[upstream.Retired]+c[upstream.Moved] > 0 {
		fmt.Fprintln(w, "known-good sets with their evidence: haloforge pins sets; haloforge pins use SET writes one and shows what rebuilds")
	}
}

func resultNames(rs []upstream.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name
	}
	return out
}

// ---- pins sets ----------------------------------------------------------------

type pinsSetsOptions struct {
	*globalOptions // --pins: the file to compare with
	json           bool
}

func newPinsSetsCmd(g *globalOptions) *cobra.Command {
	o := pinsSetsOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "sets",
		Short: "The known-good pin sets, with their evidence, and how your versions.env differs",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runPinsSets(o, cmd.OutOrStdout()) },
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

type setJSON struct {
	ID       string            `json:"id"`
	Title    string            `json:"title"`
	Status   sets.Status       `json:"status"`
	Evidence []string          `json:"evidence"`
	Pins     map[string]string `json:"pins"`
	Note     string            `json:"note,omitempty"`
	// Differs lists the set's pins whose value the compared pins file does
	// not have: empty when the file already is this set.
	Differs []string `json:"differs"`
}

func runPinsSets(o pinsSetsOptions, w io.Writer) error {
	all, err := sets.All()
	if err != nil {
		return err
	}
	pf, err := loadPinsFlags(o.pins.pins, nil)
	if err != nil {
		return err
	}
	out := struct {
		Sets     []setJSON `json:"sets"`
		PinsFile string    `json:"pins_file"`
	}{PinsFile: pf.Path}
	for _, s := range all {
		out.Sets = append(out.Sets, setJSON{ID: s.ID, Title: s.Title, Status: s.Status, Evidence: s.Evidence,
			Pins: s.Values(), Note: s.Note, Differs: nonNil(s.Differences(pf))})
	}
	if o.json {
		return writeJSON(w, out)
	}
	fmt.Fprintf(w, "known-good pin sets (compared with %s; `%s` writes one):\n", pf.Path, strings.Join(append([]string{"haloforge", "pins", "use", "SET"}, o.args()...), " "))
	for i, s := range all {
		sj := out.Sets[i]
		match := "your pins match this set"
		if n := len(sj.Differs); n > 0 {
			match = fmt.Sprintf("%d of its %d pins differ from yours", n, len(s.File.Pins))
		}
		fmt.Fprintf(w, "\n%s  [%s]  %s\n  %s\n", s.ID, s.Status, match, s.Title)
		for _, p := range s.File.Pins {
			mark := " "
			if slices.Contains(sj.Differs, p.Name) {
				mark = "≠"
			}
			fmt.Fprintf(w, "  %s %s=%s\n", mark, p.Name, p.Value)
		}
		for j, e := range s.Evidence {
			label := "evidence"
			if j > 0 {
				label = "        "
			}
			fmt.Fprintf(w, "  %s %s\n", label, e)
		}
		if s.Note != "" {
			fmt.Fprintf(w, "  note     %s\n", s.Note)
		}
	}
	return nil
}

// ---- pins use -------------------------------------------------------------------

type pinsUseOptions struct {
	*globalOptions // --pins: the file to rewrite
	set            string
	dryRun         bool
	yes            bool
	json           bool
	now            func() time.Time
}

func newPinsUseCmd(g *globalOptions) *cobra.Command {
	o := pinsUseOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "use SET",
		Short: "Write a known-good set into versions.env, after showing what it changes and what rebuilds",
		Long: "Rewrite versions.env with a set's values (see `haloforge pins sets`): only the values of " +
			"changed pins change, comments and layout stay, names the file lacks are appended in one " +
			"marked block. It first prints what `haloforge pins diff` would print for the change, then " +
			"asks (y/N) on a terminal; --yes writes without asking, and without a terminal nothing is " +
			"written unless --yes is given. The old file is kept next to it as FILE.bak-<time>; the " +
			"write is atomic. When the file does not exist yet (./versions.env, or --pins FILE), it is created " +
			"from the built-in pins with the set's values, after the same question.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.set = args[0]
			return runPinsUse(o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "show the change and what rebuilds; write nothing")
	cmd.Flags().BoolVarP(&o.yes, "yes", "y", false, "write without asking")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the change as `pins diff --json` does (questions go to stderr)")
	return cmd
}

func runPinsUse(o pinsUseOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	if o.now == nil {
		o.now = time.Now
	}
	set, err := sets.Lookup(o.set)
	if err != nil {
		return usageErr(err)
	}
	path := o.pins.pins
	if path == "" {
		path = "versions.env"
	}
	tracks := steps.Catalogue()
	var use *steps.PinsUse
	if _, statErr := os.Lstat(path); errors.Is(statErr, fs.ErrNotExist) {
		// No pins file yet (haloforge ran on its built-in copy): the set
		// goes into a new one made from the built-in copy.
		if dir := filepath.Dir(path); !dirExists(dir) {
			return usageErr(fmt.Errorf("%s: the directory %s does not exist: create it, or name another file with --pins", path, dir))
		}
		use, err = steps.PreparePinsCreate(path, embeddedPinsName, haloforge.VersionsEnv, set, tracks, o.now())
	} else {
		if _, err := loadPinsFlags(path, nil); err != nil {
			return err
		}
		use, err = steps.PreparePinsUse(path, set, tracks, o.now())
	}
	if err != nil {
		return usageErr(err)
	}
	changed := use.Changed
	d := diffJSON{Schema: pinsDiffSchema, Changed: changed, Rerun: use.Rebuild}
	info := stdout
	if o.json {
		if err := writeJSON(stdout, d); err != nil {
			return err
		}
		info = stderr
	} else {
		fmt.Fprintf(stdout, "pins use %s  [%s]  %s\nin %s:\n", set.ID, set.Status, set.Title, path)
		if use.Created {
			fmt.Fprintf(stdout, "(%s does not exist yet: it is created from the built-in pins, with the set's values; compared with the built-in pins)\n", path)
		}
		fmt.Fprintln(stdout)
		printDiff(stdout, d, tracks)
	}
	if len(changed) == 0 && !use.Created {
		fmt.Fprintf(info, "%s already has every pin of %s: nothing to write\n", path, set.ID)
		return nil
	}
	if o.dryRun {
		fmt.Fprintf(info, "\n--dry-run: %s not written\n", path)
		return nil
	}
	if !o.yes {
		in, isFile := stdin.(*os.File)
		if !isFile || !term.IsTerminal(int(in.Fd())) {
			return usageErr(fmt.Errorf("%s not written: no terminal to ask on; pass --yes to write, or --dry-run to only look", path))
		}
		if use.Created {
			fmt.Fprintf(stderr, "\ncreate %s (the built-in pins with %s changed by %s)? [y/N] ", path, text.Plural(len(changed), "pin"), set.ID)
		} else {
			fmt.Fprintf(stderr, "\nwrite %s into %s (the old file is kept as a backup)? [y/N] ", text.Plural(len(changed), "changed pin"), path)
		}
		answer, _ := bufio.NewReader(io.LimitReader(stdin, 1024)).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintf(stderr, "%s not written\n", path)
			return nil
		}
	}
	backup, err := use.Write(o.now())
	switch {
	case errors.Is(err, steps.ErrModeNotKept):
		fmt.Fprintf(stderr, "warning: %v\n", err)
	case err != nil:
		return failedErr(err)
	}
	if use.Created {
		fmt.Fprintf(info, "\ncreated %s: haloforge reads it from now on when run in this directory (or with --pins %s)\n", path, path)
	} else {
		fmt.Fprintf(info, "\nwrote %s (backup: %s)\n", path, backup)
	}
	var touched []string
	for id := range d.Rerun {
		touched = append(touched, id)
	}
	sort.Strings(touched)
	for _, id := range touched {
		fmt.Fprintf(info, "  rebuild: %s\n", buildCommand(id, o.globalOptions))
	}
	return nil
}
