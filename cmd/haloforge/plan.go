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
)

type planOpts struct {
	track, scripts, stateDir string
	json                     bool
	pins                     pinFlags
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
	Track        string         `json:"track"`
	Steps        []planStepJSON `json:"steps"`
	FloatingPins []string       `json:"floating_pins"`
	Pins         string         `json:"pins_file"`
	Missing      []string       `json:"missing_scripts,omitempty"`
}

func newPlanCmd() *cobra.Command {
	var o planOpts
	cmd := &cobra.Command{
		Use:   "plan --track ID",
		Short: "Show a track's steps, the pins each uses, and what will run since last time",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runPlan(cmd, o) },
	}
	trackFlag(cmd, &o.track)
	jsonFlag(cmd, &o.json, "print JSON")
	scriptsFlag(cmd, &o.scripts)
	stateDirFlag(cmd, &o.stateDir)
	o.pins.bind(cmd)
	return cmd
}

func runPlan(cmd *cobra.Command, o planOpts) error {
	if err := requireTrack(o.track); err != nil {
		return err
	}
	stateDir := stateDirOrDefault(o.stateDir)
	p, pinsFile, err := planFor(o.track, o.pins.pins, o.pins.sets, o.scripts, stateDir)
	var missing *steps.MissingScriptError
	if err != nil && !errors.As(err, &missing) {
		return err
	}
	warnStalePins(cmd.ErrOrStderr(), stateDir, pinsFile, p.Track.PinNames())
	pj := toPlanJSON(p, pinsFile.Path)
	if missing != nil {
		pj.Missing = missing.Paths
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v (build will refuse to start)\n", missing)
	}
	if o.json {
		return writeJSON(cmd.OutOrStdout(), pj)
	}
	printPlan(cmd.OutOrStdout(), p, pj)
	return nil
}

func toPlanJSON(p *steps.Plan, pinsPath string) planJSON {
	pj := planJSON{Track: p.Track.ID, FloatingPins: nonNil(p.Floating), Pins: pinsPath}
	for _, s := range p.Steps {
		pj.Steps = append(pj.Steps, planStepJSON{ID: s.ID, Title: s.Title, Script: "scripts/" + s.ScriptPath,
			Pins: s.PinValues, DependsOn: nonNil(s.DependsOn), Optional: s.Optional,
			CacheKey: s.CacheKey, WillRun: s.WillRun, Reason: s.Reason})
	}
	return pj
}

func printPlan(w io.Writer, p *steps.Plan, pj planJSON) {
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
		fmt.Fprintf(w, "      script  scripts/%s\n", s.ScriptPath)
		if len(s.DependsOn) > 0 {
			fmt.Fprintf(w, "      after   %s\n", strings.Join(s.DependsOn, ", "))
		}
		for _, n := range slices.Sorted(maps.Keys(s.PinValues)) {
			fmt.Fprintf(w, "      pin     %s=%s%s\n", n, s.PinValues[n], floatingMark(p, n))
		}
		fmt.Fprintf(w, "      why     %s\n      key     %s\n", s.Reason, s.CacheKey[:16])
	}
	fmt.Fprintf(w, "\n%d steps: %d will run, %d up to date\n", len(p.Steps), run, len(p.Steps)-run)
	if len(p.Floating) > 0 {
		fmt.Fprintf(w, "floating pins (not reproducible; pin a digest or commit): %s\n", strings.Join(p.Floating, ", "))
	}
}

func floatingMark(p *steps.Plan, name string) string {
	if slices.Contains(p.Floating, name) {
		return "  ⚠ floating"
	}
	return ""
}
