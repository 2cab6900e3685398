package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
)

func newPinsCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pins",
		Short: "Check versions.env and see what a pin bump rebuilds",
	}
	cmd.AddCommand(newPinsCheckCmd(), newPinsDiffCmd(), newPinsStatusCmd(g), newPinsSetsCmd(g), newPinsUseCmd(g), newPinsLockCmd(g))
	return cmd
}

type pinsCheckOptions struct {
	file string // "" means ./versions.env, else the built-in copy
	json bool
}

func newPinsCheckCmd() *cobra.Command {
	var o pinsCheckOptions
	cmd := &cobra.Command{
		Use:   "check [FILE]",
		Short: "Parse and validate a pins file strictly (default ./versions.env, else the built-in copy)",
		Long: "Parse and validate a pins file without running anything in it. Only NAME=value lines of " +
			"known names are accepted; ${NAME} may refer to an earlier name. Known names:\n\n" + knownNames(),
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.file = args[0]
			}
			return runPinsCheck(cmd, o)
		},
	}
	jsonFlag(cmd, &o.json, `print {"file", "pins", "floating": [...]} as JSON`)
	return cmd
}

func runPinsCheck(cmd *cobra.Command, o pinsCheckOptions) error {
	pf, err := loadPinsFlags(o.file, nil)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	values := pf.Values()
	var complete, incomplete []string
	missingFor := map[string][]string{}
	for _, t := range steps.Catalogue() {
		if missing := t.MissingPins(values); len(missing) > 0 {
			incomplete = append(incomplete, fmt.Sprintf("  ⚠ not enough for %s: missing %s", t.ID, strings.Join(missing, ", ")))
			missingFor[t.ID] = missing
		} else {
			complete = append(complete, t.ID)
		}
	}
	if o.json {
		return writeJSON(w, map[string]any{"schema": "haloforge/pins-check/v1", "file": pf.Path, "pins": len(pf.Pins),
			"floating": nonNil(pf.Floating()), "complete_for": nonNil(complete), "missing": missingFor})
	}
	fmt.Fprintf(w, "%s: %d pins, all valid; complete for %d of %d tracks\n", pf.Path, len(pf.Pins), len(complete), len(steps.Catalogue()))
	for _, name := range pf.Floating() {
		p, _ := pf.Get(name)
		fmt.Fprintf(w, "  ⚠ %s=%s floats (not reproducible: pin a digest or commit)\n", name, p.Value)
	}
	// Valid but partial is fine for a file meant for some tracks; saying
	// which tracks it cannot build keeps "all valid" from promising more
	// than build will accept.
	for _, l := range incomplete {
		fmt.Fprintln(w, l)
	}
	return nil
}

func knownNames() string {
	var sb strings.Builder
	for _, s := range pins.Specs() {
		fmt.Fprintf(&sb, "  %-28s %-8s %s\n", s.Name, s.Kind, s.Help)
	}
	return sb.String()
}

// pinsDiffSchema names the shape of `pins diff --json` (and `pins use --json`).
const pinsDiffSchema = "haloforge/pins-diff/v1"

type diffJSON struct {
	Schema  string                 `json:"schema"` // pinsDiffSchema
	Changed map[string]pins.Change `json:"changed"`
	Rerun   map[string][]string    `json:"rerun"`
}

type pinsDiffOptions struct {
	oldFile, newFile string
	track            string // only this track; "" means all
	json             bool
}

func newPinsDiffCmd() *cobra.Command {
	var o pinsDiffOptions
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "Show the changed pins and, per track, exactly the steps a rebuild re-runs",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErr(fmt.Errorf("pins diff compares two pins files, OLD and NEW; got %d (e.g. haloforge pins diff old.env versions.env)", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.oldFile, o.newFile = args[0], args[1]
			return runPinsDiff(cmd, o)
		},
	}
	cmd.Flags().StringVar(&o.track, "track", "", "only the track ID")
	_ = cmd.RegisterFlagCompletionFunc("track", completeTracks)
	jsonFlag(cmd, &o.json, "print JSON")
	return cmd
}

func runPinsDiff(cmd *cobra.Command, o pinsDiffOptions) error {
	tracks := steps.Catalogue()
	if o.track != "" {
		t, err := steps.Lookup(o.track)
		if err != nil {
			return usageErr(err)
		}
		tracks = []steps.Track{t}
	}
	oldF, err := loadPinsFlags(o.oldFile, nil)
	if err != nil {
		return err
	}
	newF, err := loadPinsFlags(o.newFile, nil)
	if err != nil {
		return err
	}
	changed := pins.Diff(oldF, newF)
	d := diffJSON{Schema: pinsDiffSchema, Changed: changed, Rerun: rerun(tracks, changed)}
	if o.json {
		return writeJSON(cmd.OutOrStdout(), d)
	}
	printDiff(cmd.OutOrStdout(), d, tracks)
	return nil
}

// rerun maps each track touched by the change to the steps a rebuild re-runs.
func rerun(tracks []steps.Track, changed map[string]pins.Change) map[string][]string {
	return steps.Rebuilds(tracks, changed)
}

func printDiff(w io.Writer, d diffJSON, tracks []steps.Track) {
	if len(d.Changed) == 0 {
		fmt.Fprintln(w, "no pin changed: nothing to rebuild")
		return
	}
	fmt.Fprintln(w, "changed pins:")
	for _, name := range pins.ChangedNames(d.Changed) {
		c, was, now := d.Changed[name], "", "" // absent or empty, a pin shows as (none)
		if c.Old != nil {
			was = *c.Old
		}
		if c.New != nil {
			now = *c.New
		}
		fmt.Fprintf(w, "  %s: %s → %s\n", name, text.OrNone(was), text.OrNone(now))
	}
	fmt.Fprintln(w, "\nsteps to re-run:")
	rebuilds := false
	for _, t := range tracks {
		if ids, ok := d.Rerun[t.ID]; ok {
			rebuilds = true
			fmt.Fprintf(w, "  %-18s %s\n", t.ID, strings.Join(ids, ", "))
		}
	}
	if !rebuilds {
		fmt.Fprintln(w, "  none: no track reads these pins")
	}
}
