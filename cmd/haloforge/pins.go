package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
	"github.com/spf13/cobra"
)

func init() { register(newPinsCmd) }

func newPinsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pins",
		Short: "Check versions.env and see what a pin bump rebuilds",
	}
	cmd.AddCommand(newPinsCheckCmd(), newPinsDiffCmd(), newPinsStatusCmd(), newPinsSetsCmd(), newPinsUseCmd())
	return cmd
}

func newPinsCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check [FILE]",
		Short: "Parse and validate a pins file strictly (default ./versions.env, else the built-in copy)",
		Long: "Parse and validate a pins file without running anything in it. Only NAME=value lines of " +
			"known names are accepted; ${NAME} may refer to an earlier name. Known names:\n\n" + knownNames(),
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := ""
			if len(args) == 1 {
				path = args[0]
			}
			pf, err := loadPinsFlags(path, nil)
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
		},
	}
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

func newPinsDiffCmd() *cobra.Command {
	var (
		track  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "Show the changed pins and, per track, exactly the steps a rebuild re-runs",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			tracks := steps.Catalogue()
			if track != "" {
				t, err := steps.Lookup(track)
				if err != nil {
					return usageErr(err)
				}
				tracks = []steps.Track{t}
			}
			oldF, err := loadPinsFlags(args[0], nil)
			if err != nil {
				return err
			}
			newF, err := loadPinsFlags(args[1], nil)
			if err != nil {
				return err
			}
			d := diffJSON{Changed: pins.Diff(oldF, newF), Rerun: rerun(tracks, pins.Diff(oldF, newF))}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), d)
			}
			printDiff(cmd.OutOrStdout(), d, tracks)
			return nil
		},
	}
	cmd.Flags().StringVar(&track, "track", "", "only this track")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
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
	any := false
	for _, t := range tracks {
		if ids, ok := d.Rerun[t.ID]; ok {
			any = true
			fmt.Fprintf(w, "  %-18s %s\n", t.ID, strings.Join(ids, ", "))
		}
	}
	if !any {
		fmt.Fprintln(w, "  none: no track reads these pins")
	}
}

func orNone(s *string) string {
	if s == nil {
		return "(none)"
	}
	return *s
}
