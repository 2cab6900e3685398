package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/steps/runner"
)

type diagnoseOptions struct {
	*globalOptions // --state-dir: where the last run is
	json           bool
	last           bool
	inputs         []string // files, run dirs, bundles, or - for standard input
}

// tutorialURL is TUTORIAL.md where the code is published: its troubleshooting
// reference has one section per failure family, anchored by the family ID.
// A relative TUTORIAL.md means nothing to someone who has only the binary.
const tutorialURL = "https://github.com/haloforge/haloforge/blob/main/TUTORIAL.md"

// diagnoseJSONSchema names the shape of diagnose --json.
const diagnoseJSONSchema = "haloforge/diagnose/v1"

func newDiagnoseCmd(g *globalOptions) *cobra.Command {
	o := diagnoseOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "diagnose [--json] [FILE|-|RUN-DIR|BUNDLE ...]",
		Short: "Recognise known failures in build logs, runs and bundles",
		Long: "diagnose reads logs offline and names every known failure family it finds, with the line, " +
			"what it means and the exact fix. FILE may be a log, - for standard input, a run directory " +
			"(<state-dir>/runs/<run-id>/: every step log), or a diagnostics bundle (a directory or a " +
			".tar.gz from doctor --collect: its .txt and .log files). With no FILE it reads standard input " +
			"when that is a pipe or a file, else the last run of the state dir (as --last does). Colours and " +
			"carriage-return redraws are ignored. Exit 0 when nothing is found, 1 when something is, 2 when " +
			"an input cannot be read.",
		Example: "  haloforge diagnose              # the last run\n" +
			"  haloforge diagnose build.log\n  some-build 2>&1 | haloforge diagnose\n" +
			"  haloforge diagnose ~/.local/state/haloforge/runs/<run-id>/\n" +
			"  haloforge diagnose --json bundle.tar.gz",
		RunE: func(cmd *cobra.Command, args []string) error {
			o.inputs = args
			return runDiagnose(cmd, o)
		},
	}
	jsonFlag(cmd, &o.json, `print {"findings": [...], "suspects": [...]} as JSON`)
	cmd.Flags().BoolVar(&o.last, "last", false, "diagnose the last run of the state dir")
	return cmd
}

// defaultInputs is what diagnose reads when no input is named: standard
// input when it is a pipe or a file (as grep reads it), else the last run.
func defaultInputs(cmd *cobra.Command, o diagnoseOptions) ([]string, error) {
	if len(o.inputs) > 0 {
		if o.last {
			return nil, usageErr(errors.New("--last names the input itself: give it without files"))
		}
		return o.inputs, nil
	}
	if !o.last && stdinIsData(cmd) {
		return []string{"-"}, nil
	}
	dir := o.stateDirOr()
	runs := runDirsNewestFirst(dir)
	if len(runs) == 0 {
		return nil, usageErr(fmt.Errorf("no log given, and no run under %s: give a log, a run directory or a bundle, or - for standard input (some-build 2>&1 | haloforge diagnose -)",
			filepath.Join(dir, "runs")))
	}
	// A run in which every step was up to date has no log: the last run
	// with something to read is the newest one that ran a step.
	for i, run := range runs {
		if !hasStepLog(run) {
			continue
		}
		if i == 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "diagnosing the last run: %s\n", run)
		} else {
			fmt.Fprintf(cmd.ErrOrStderr(), "the last run (%s) ran no step (all up to date); diagnosing the last run that did: %s\n", filepath.Base(runs[0]), run)
		}
		return []string{run}, nil
	}
	return nil, nothingToDiagnose{run: runs[0]}
}

// nothingToDiagnose is the last run's answer when no run of the state dir
// ran a step: every step was up to date, so there is no log to read. It is
// not an error (exit 0).
type nothingToDiagnose struct{ run string }

func (e nothingToDiagnose) Error() string {
	return "the last run (" + filepath.Base(e.run) + ") ran no step (all up to date): there is no log to diagnose"
}

// stdinIsData reports whether standard input is a pipe or a file, not a
// terminal or /dev/null.
func stdinIsData(cmd *cobra.Command) bool {
	f, ok := cmd.InOrStdin().(*os.File)
	if !ok {
		return true // a reader handed in (tests): read it
	}
	st, err := f.Stat()
	return err == nil && (st.Mode()&os.ModeNamedPipe != 0 || st.Mode().IsRegular())
}

// runDirsNewestFirst lists the run directories of the state dir, newest
// first: run IDs start with their UTC time, so names sort by age.
// A run directory planted as a link is not one (safefile.Tree).
func runDirsNewestFirst(stateDir string) []string {
	state := safefile.Tree(stateDir)
	entries, err := state.ReadDir("runs")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && runner.ValidRunID(e.Name()) {
			out = append(out, state.Path(runner.RunName(e.Name())))
		}
	}
	slices.Reverse(out) // ReadDir sorts by name
	return out
}

// hasStepLog reports whether a run directory holds a step's log: the run
// ran a step.
func hasStepLog(dir string) bool {
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	return len(logs) > 0
}

// runDiagnose reads every input before printing anything: an unreadable
// input is exit 2 with no partial findings claimed.
func runDiagnose(cmd *cobra.Command, o diagnoseOptions) error {
	args, err := defaultInputs(cmd, o)
	var none nothingToDiagnose
	if errors.As(err, &none) {
		if o.json {
			return writeJSON(cmd.OutOrStdout(), diagnoseJSON{Schema: diagnoseJSONSchema, Findings: []diagnose.Finding{}, Suspects: []suspectJSON{}, Note: none.Error()})
		}
		fmt.Fprintln(cmd.OutOrStdout(), "The l"+strings.TrimPrefix(none.Error(), "the l")+".")
		return nil
	}
	if err != nil {
		return err
	}
	if err := oneStdin(args); err != nil {
		return usageErr(err)
	}
	inputs := make([]diagnose.Input, 0, len(args))
	for _, a := range args {
		in, err := diagnose.OpenInput(a, cmd.InOrStdin())
		if err != nil {
			return usageErr(inputErr(a, err))
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
		doc := diagnoseJSON{Schema: diagnoseJSONSchema, Findings: findings, Suspects: []suspectJSON{}}
		if len(findings) == 0 {
			doc.Suspects = suspectsOf(inputs)
		}
		if err := enc.Encode(doc); err != nil {
			return failedErr(err)
		}
	} else {
		writeFindings(out, findings, inputs)
	}
	if len(findings) > 0 {
		return silentExit(exitFailed)
	}
	return nil
}

// diagnoseJSON is diagnose --json: the findings, and when there are none,
// the lines of each plain log that look like an error (as text mode says).
type diagnoseJSON struct {
	Schema   string             `json:"schema"`
	Findings []diagnose.Finding `json:"findings"`
	Suspects []suspectJSON      `json:"suspects"`
	Note     string             `json:"note,omitempty"` // why nothing was read
}

type suspectJSON struct {
	File string `json:"file"`
	diagnose.Suspect
}

func suspectsOf(inputs []diagnose.Input) []suspectJSON {
	out := []suspectJSON{}
	for _, in := range inputs {
		for _, s := range in.Suspects(3) {
			out = append(out, suspectJSON{File: in.Name, Suspect: s})
		}
	}
	return out
}

// inputErr words an input that cannot be opened for people.
func inputErr(arg string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist: give a log, a run directory (<state-dir>/runs/<run-id>), a bundle, or - for standard input", arg)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s cannot be read: permission denied", arg)
	}
	return err
}

// writeSuspects points, in each plain log among the inputs (a file, or
// standard input's kept end), at the lines that look like an error no rule
// knows: where to start reading.
func writeSuspects(w io.Writer, inputs []diagnose.Input) {
	for _, in := range inputs {
		ss := in.Suspects(3)
		if len(ss) == 0 {
			continue
		}
		fmt.Fprintf(w, "Lines of %s that look like an error:\n", in.DisplayName())
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
func writeFindings(w io.Writer, fs []diagnose.Finding, inputs []diagnose.Input) {
	if len(fs) == 0 {
		names := make([]string, len(inputs))
		for i, in := range inputs {
			names[i] = in.DisplayName()
		}
		fmt.Fprintf(w, "No known failure found in %s.\n", strings.Join(names, ", "))
		writeSuspects(w, inputs)
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
		fmt.Fprintf(w, "  More: %s#%s\n", tutorialURL, f.Family)
	}
	noun := "failures"
	if len(fs) == 1 {
		noun = "failure"
	}
	fmt.Fprintf(w, "\n%d known %s found.\n", len(fs), noun)
}

func findingPlace(f diagnose.Finding) string {
	s := fmt.Sprintf("%s:%d", f.File, f.Line)
	if f.File == "-" {
		s = fmt.Sprintf("%s, line %d", diagnose.StdinName, f.Line)
	}
	if f.Step != "" {
		s += "  step " + f.Step
	}
	if f.Count > 1 {
		s += fmt.Sprintf("  (%d matching lines)", f.Count)
	}
	return s
}
