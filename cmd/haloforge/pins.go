package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
)

func newPinsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pins",
		Short: "Check versions.env and see what a pin bump rebuilds",
	}
	cmd.AddCommand(newPinsCheckCmd(), newPinsDiffCmd(), newPinsStatusCmd(), newPinsSetsCmd(), newPinsUseCmd(), newPinsLockCmd())
	return cmd
}

type pinsCheckOpts struct {
	file string // "" means ./versions.env, else the built-in copy
}

func newPinsCheckCmd() *cobra.Command {
	var o pinsCheckOpts
	return &cobra.Command{
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
}

func runPinsCheck(cmd *cobra.Command, o pinsCheckOpts) error {
	pf, err := loadPinsFlags(o.file, nil)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "%s: %d pins, all valid\n", pf.Path, len(pf.Pins))
	for _, name := range pf.Floating() {
		p, _ := pf.Get(name)
		fmt.Fprintf(w, "  ⚠ %s=%s floats (not reproducible: pin a digest or commit)\n", name, p.Value)
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

type diffJSON struct {
	Changed map[string]pins.Change `json:"changed"`
	Rerun   map[string][]string    `json:"rerun"`
}

type pinsDiffOpts struct {
	oldFile, newFile string
	track            string // only this track; "" means all
	json             bool
}

func newPinsDiffCmd() *cobra.Command {
	var o pinsDiffOpts
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "Show the changed pins and, per track, exactly the steps a rebuild re-runs",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.oldFile, o.newFile = args[0], args[1]
			return runPinsDiff(cmd, o)
		},
	}
	cmd.Flags().StringVar(&o.track, "track", "", "only this track")
	jsonFlag(cmd, &o.json, "print JSON")
	return cmd
}

func runPinsDiff(cmd *cobra.Command, o pinsDiffOpts) error {
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
	d := diffJSON{Changed: changed, Rerun: rerun(tracks, changed)}
	if o.json {
		return writeJSON(cmd.OutOrStdout(), d)
	}
	printDiff(cmd.OutOrStdout(), d, tracks)
	return nil
}

// rerun maps each track touched by the change to the downstream closure of
// the steps that read a changed pin.
func rerun(tracks []steps.Track, changed map[string]pins.Change) map[string][]string {
	out := map[string][]string{}
	for _, t := range tracks {
		var direct []string
		for _, s := range t.Steps {
			for _, p := range s.Pins {
				if _, ok := changed[p]; ok {
					direct = append(direct, s.ID)
					break
				}
			}
		}
		if len(direct) > 0 {
			out[t.ID] = t.Downstream(direct)
		}
	}
	return out
}

func printDiff(w io.Writer, d diffJSON, tracks []steps.Track) {
	if len(d.Changed) == 0 {
		fmt.Fprintln(w, "no pin changed: nothing to rebuild")
		return
	}
	fmt.Fprintln(w, "changed pins:")
	for _, name := range pins.ChangedNames(d.Changed) {
		c := d.Changed[name]
		fmt.Fprintf(w, "  %s: %s → %s\n", name, orNone(c.Old), orNone(c.New))
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

func orNone(s *string) string {
	if s == nil {
		return "(none)"
	}
	return *s
}
