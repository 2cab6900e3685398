package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
)

// Shell completion of flag values (cobra's __complete protocol, which
// `haloforge completion bash|zsh|fish` scripts call): track IDs, the
// chosen track's step IDs, pin names, and files of the right kind.

// completeTracks offers every track ID, with its title as the description.
func completeTracks(_ *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	var out []string
	for _, t := range steps.Catalogue() {
		out = append(out, t.ID+"\t"+t.Title)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeSteps offers the step IDs of the track given with --track; for
// --only it completes the last of a comma-separated list.
func completeSteps(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	id, _ := cmd.Flags().GetString("track")
	t, err := steps.Lookup(id)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	done := ""
	if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
		done = toComplete[:i+1]
	}
	var out []string
	for _, s := range t.Steps {
		if !strings.Contains(","+done, ","+s.ID+",") {
			out = append(out, done+s.ID+"\t"+s.Title)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// completePinNames offers NAME= for every known pin; the value is typed.
func completePinNames(_ *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	var out []string
	for _, s := range pins.Specs() {
		out = append(out, s.Name+"=\t"+s.Help)
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// completeDirs completes directories only.
func completeDirs(_ *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveFilterDirs
}

// completeEnvFiles completes .env files (pins files).
func completeEnvFiles(_ *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	return []string{"env"}, cobra.ShellCompDirectiveFilterFileExt
}

// completeXMLFiles completes .xml files (JUnit reports).
func completeXMLFiles(_ *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	return []string{"xml"}, cobra.ShellCompDirectiveFilterFileExt
}

// completeJSONFiles completes .json files (verify references).
func completeJSONFiles(_ *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	return []string{"json"}, cobra.ShellCompDirectiveFilterFileExt
}

// completeRuns offers last and the run IDs of the state dir (--state-dir
// as given so far), newest first.
func completeRuns(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	dir, _ := cmd.Flags().GetString("state-dir")
	out := []string{"last\tthe newest run"}
	for i, id := range runner.RunIDs(stateDirOrDefault(dir)) {
		if i == 50 {
			break
		}
		out = append(out, id)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
