package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge/diagnose"
)

type diagnoseOpts struct {
	json   bool
	inputs []string // files, run dirs, bundles, or - for standard input
}

func newDiagnoseCmd() *cobra.Command {
	var o diagnoseOpts
	cmd := &cobra.Command{
		Use:   "diagnose [--json] FILE|- ...",
		Short: "Recognise known failures in build logs, runs and bundles",
		Long: "diagnose reads logs offline and names every known failure family it finds, with the line, " +
			"what it means and the exact fix. FILE may be a log, - for standard input, a run directory " +
			"(<state-dir>/runs/<run-id>/: every step log), or a diagnostics bundle (a directory or a " +
			".tar.gz from doctor --collect: its .txt and .log files). Colours and carriage-return redraws " +
			"are ignored. Exit 0 when nothing is found, 1 when something is, 2 when an input cannot be read.",
		Example: "  haloforge diagnose ~/.local/state/haloforge/runs/<run-id>/\n" +
			"  haloforge diagnose build.log\n  some-build 2>&1 | haloforge diagnose -\n" +
			"  haloforge diagnose --json bundle.tar.gz",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.inputs = args
			return runDiagnose(cmd, o)
		},
	}
	jsonFlag(cmd, &o.json, `print {"findings": [...]} as JSON`)
	return cmd
}

// runDiagnose reads every input before printing anything: an unreadable
// input is exit 2 with no partial findings claimed.
func runDiagnose(cmd *cobra.Command, o diagnoseOpts) error {
	args := o.inputs
	if err := oneStdin(args); err != nil {
		return usageErr(err)
	}
	inputs := make([]diagnose.Input, 0, len(args))
	for _, a := range args {
		in, err := diagnose.OpenInput(a, cmd.InOrStdin())
		if err != nil {
			return usageErr(err)
		}
		inputs = append(inputs, in)
	}
	findings := []diagnose.Finding{}
	for _, in := range inputs {
		fs, err := in.Scan()
		for _, s := range in.Skipped() {
			fmt.Fprintf(cmd.ErrOrStderr(), "haloforge: diagnose: skipped %s\n", s)
		}
		if err != nil {
			return usageErr(err)
		}
		findings = append(findings, fs...)
	}
	out := cmd.OutOrStdout()
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // keep "<" and ">" of compiler messages readable
		if err := enc.Encode(map[string][]diagnose.Finding{"findings": findings}); err != nil {
			return failedErr(err)
		}
	} else {
		writeFindings(out, findings, args)
	}
	if len(findings) > 0 {
		return silentExit(exitFailed)
	}
	return nil
}

// writeSuspects points, in each plain log among args, at the lines that
// look like an error no rule knows: where to start reading.
func writeSuspects(w io.Writer, args []string) {
	for _, a := range args {
		if a == "-" {
			continue // standard input is read already
		}
		ss, err := diagnose.Suspects(a, 3)
		if err != nil || len(ss) == 0 {
			continue
		}
		fmt.Fprintf(w, "Lines of %s that look like an error:\n", a)
		for _, s := range ss {
			fmt.Fprintf(w, "  line %d: %s\n", s.Line, s.Text)
		}
	}
}

func oneStdin(args []string) error {
	n := 0
	for _, a := range args {
		if a == "-" {
			n++
		}
	}
	if n > 1 {
		return errors.New("standard input (-) can be read only once")
	}
	return nil
}

// writeFindings prints each finding as: code and place, the line, what it
// means, the fix, and where it was reported.
func writeFindings(w io.Writer, fs []diagnose.Finding, args []string) {
	if len(fs) == 0 {
		fmt.Fprintf(w, "No known failure found in %s.\n", strings.Join(args, ", "))
		writeSuspects(w, args)
		return
	}
	for i, f := range fs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s  %s\n", f.Family, findingPlace(f))
		if f.Stall {
			fmt.Fprintf(w, "  output stopped after: %s\n", f.Text)
		} else {
			fmt.Fprintf(w, "  > %s\n", f.Text)
		}
		fmt.Fprintf(w, "  %s\n", f.Summary)
		fmt.Fprintln(w, "  Fix:")
		for _, l := range strings.Split(f.Fix, "\n") {
			fmt.Fprintf(w, "    %s\n", l)
		}
		if ladder := diagnose.LadderLines(f.Family); len(ladder) > 0 {
			fmt.Fprintf(w, "  %s:\n", diagnose.LadderTitle)
			for _, l := range ladder {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
		for _, l := range f.Links {
			fmt.Fprintf(w, "  See %s\n", l)
		}
		fmt.Fprintf(w, "  More: TUTORIAL.md#%s\n", f.Family)
	}
	noun := "failures"
	if len(fs) == 1 {
		noun = "failure"
	}
	fmt.Fprintf(w, "\n%d known %s found.\n", len(fs), noun)
}

func findingPlace(f diagnose.Finding) string {
	s := fmt.Sprintf("%s:%d", f.File, f.Line)
	if f.Step != "" {
		s += "  step " + f.Step
	}
	if f.Count > 1 {
		s += fmt.Sprintf("  (%d matching lines)", f.Count)
	}
	return s
}
