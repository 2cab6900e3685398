package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/tui"
)

type planOptions struct {
	*globalOptions
	track         string
	json, verbose bool
}

type planStepJSON struct {
	ID        string            `json:"id"`
	Title     string            `json:"title"`
	Script    string            `json:"script"`
	Pins      map[string]string `json:"pins"`
	DependsOn []string          `json:"depends_on"`
	Optional  bool              `json:"optional"`
	CacheKey  string            `json:"cache_key"`
	WillRun   bool              `json:"will_run"`
	Reason    string            `json:"reason"`
}

type planJSON struct {
	Schema       string         `json:"schema"` // planJSONSchema
	Track        string         `json:"track"`
	Steps        []planStepJSON `json:"steps"`
	FloatingPins []string       `json:"floating_pins"`
	Pins         string         `json:"pins_file"`
	Missing      []string       `json:"missing_scripts,omitempty"`
	// MissingInputs are the pins the track needs that are empty: build
	// refuses to start until they are set with --set NAME=VALUE.
	MissingInputs []string `json:"missing_inputs,omitempty"`
}

func newPlanCmd(g *globalOptions) *cobra.Command {
	o := planOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "plan --track ID",
		Short: "Show a track's steps, the pins each uses, and what will run since last time",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runPlan(cmd, o) },
	}
	trackFlag(cmd, &o.track)
	jsonFlag(cmd, &o.json, "print JSON")
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "also show each step's script, dependencies and cache key")
	return cmd
}

func runPlan(cmd *cobra.Command, o planOptions) error {
	if err := requireTrack(o.track); err != nil {
		return err
	}
	g := o.globalOptions
	printNotes(cmd.ErrOrStderr(), localNotes(g, false))
	w, err := g.workspace()
	if err != nil {
		return err
	}
	stateDir, pinsFile := w.StateDir, w.Pins
	p, err := planFor(w, o.track)
	var missing *steps.MissingScriptError
	if err != nil && !errors.As(err, &missing) {
		return err
	}
	warnBlockingChecks(cmdContext(cmd), cmd.ErrOrStderr(), p.Track, stateDir)
	// The pins the track needs, asked upstream (or the last status): build
	// stops before step 1 when one is gone.
	up := checkPinsUpstream(cmdContext(cmd), p.Track, pinsFile, stateDir)
	printPinsUpstream(cmd.ErrOrStderr(), up)
	if up.Blocks() {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: build will refuse to start until the pins above resolve (haloforge pins use SET)\n")
	}
	pj := toPlanJSON(p, pinsFile.Path)
	pj.MissingInputs = p.Track.MissingInputs(pinsFile.Values())
	if missing != nil {
		pj.Missing = missing.Paths
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v (build will refuse to start)\n", missing)
	}
	if o.json {
		return writeJSON(cmd.OutOrStdout(), pj)
	}
	printPlan(cmd.OutOrStdout(), p, pj, o.verbose, buildCommand(o.track, g))
	return nil
}

// planJSONSchema names the shape of plan --json.
const planJSONSchema = "haloforge/plan/v1"

func toPlanJSON(p *steps.Plan, pinsPath string) planJSON {
	pj := planJSON{Schema: planJSONSchema, Track: p.Track.ID, FloatingPins: nonNil(p.Floating), Pins: pinsPath}
	for _, s := range p.Steps {
		pj.Steps = append(pj.Steps, planStepJSON{ID: s.ID, Title: s.Title, Script: "scripts/" + s.ScriptPath,
			Pins: s.PinValues, DependsOn: nonNil(s.DependsOn), Optional: s.Optional,
			CacheKey: s.CacheKey, WillRun: s.WillRun, Reason: s.Reason})
	}
	return pj
}

// printPlan prints the plan for people; verbose adds what scripts and
// tools care about (script, dependencies, cache key). It ends with the
// command that builds it, or with what is missing first.
func printPlan(w io.Writer, p *steps.Plan, pj planJSON, verbose bool, build string) {
	t := p.Track
	fmt.Fprintf(w, "%s  [%s]  %s\n", t.ID, t.Status, t.Title)
	fmt.Fprintf(w, "pins from %s\n\n", pj.Pins)
	run := 0
	for i, s := range p.Steps {
		mark, verb := "✓", "up to date"
		if s.WillRun {
			mark, verb = "●", "will run"
			run++
		}
		opt := ""
		if s.Optional {
			opt = " (optional)"
		}
		fmt.Fprintf(w, "%s %d/%d %-16s %s%s — %s\n", mark, i+1, len(p.Steps), s.ID, s.Title, opt, verb)
		if verbose {
			fmt.Fprintf(w, "      script  scripts/%s\n", s.ScriptPath)
			if len(s.DependsOn) > 0 {
				fmt.Fprintf(w, "      after   %s\n", strings.Join(s.DependsOn, ", "))
			}
		}
		for _, n := range slices.Sorted(maps.Keys(s.PinValues)) {
			fmt.Fprintf(w, "      pin     %s=%s%s%s\n", n, s.PinValues[n], floatingMark(p, n), missingMark(pj, n))
		}
		fmt.Fprintf(w, "      why     %s\n", s.Reason)
		if verbose {
			fmt.Fprintf(w, "      key     %s\n", s.CacheKey[:16])
		}
	}
	fmt.Fprintf(w, "\n%s\n", tui.RunWords(run, len(p.Steps)))
	if len(p.Floating) > 0 {
		fmt.Fprintf(w, "floating pins (not reproducible; pin a digest or commit): %s\n", strings.Join(p.Floating, ", "))
	}
	for _, n := range pj.MissingInputs {
		fmt.Fprintf(w, "! %s is empty, and %s cannot run without it: add --set %s=%s\n", n, t.ID, n, steps.InputExample(n))
	}
	switch {
	case len(pj.Missing) > 0:
		fmt.Fprintf(w, "build refuses to start until the missing scripts are there\n")
	case len(pj.MissingInputs) > 0:
		fmt.Fprintf(w, "next: %s", build)
		for _, n := range pj.MissingInputs {
			fmt.Fprintf(w, " --set %s=%s", n, steps.InputExample(n))
		}
		fmt.Fprintln(w)
	case run == 0:
		fmt.Fprintf(w, "next: nothing to build; %s --from STEP runs steps again\n", build)
	default:
		fmt.Fprintf(w, "next: %s\n", build)
	}
}

func missingMark(pj planJSON, name string) string {
	if slices.Contains(pj.MissingInputs, name) {
		return "  ! needed: set it with --set " + name + "=" + steps.InputExample(name)
	}
	return ""
}

// buildCommand is the build command line for a track with the global flags
// the user gave, so that pasting it uses the same pins, scripts and state.
func buildCommand(track string, g *globalOptions) string {
	parts := []string{"haloforge", "build", "--track", track}
	return strings.Join(append(parts, g.args()...), " ")
}

func floatingMark(p *steps.Plan, name string) string {
	if slices.Contains(p.Floating, name) {
		return "  ⚠ floating"
	}
	return ""
}
