package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/tui/linemode"
)

// runsJSONSchema names the shape of runs --json.
const runsJSONSchema = "haloforge/runs/v1"

// runJSON is one run of `runs --json`; what a broken run directory cannot
// say is null.
type runJSON struct {
	ID         string     `json:"id"`
	Track      *string    `json:"track"`
	Kind       *string    `json:"kind"`   // build, serve, bench
	Status     string     `json:"status"` // steps.Outcome*, running, or broken
	DryRun     bool       `json:"dry_run"`
	Started    *time.Time `json:"started"`
	DurationNS *int64     `json:"duration_ns"`
	FailedStep *string    `json:"failed_step"` // the first step that failed or was stopped
	Dir        string     `json:"dir"`
	Error      *string    `json:"error"` // why the run's report cannot be read; null when it can
}

// statusBroken is a run directory whose report cannot be read.
const statusBroken = "broken"

type runsOptions struct {
	*globalOptions
	json  bool
	track string
	limit int
}

func newRunsCmd(g *globalOptions) *cobra.Command {
	o := runsOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List the runs of the state dir, newest first: track, outcome, start, duration",
		Long: "runs lists the runs kept in <state-dir>/runs, newest first: builds, servers and benchmarks, " +
			"with their track, outcome, start and duration. A run directory whose report cannot be read " +
			"is listed as broken, with the reason. `runs show ID` prints one run, or a step's log.",
		Example: "  haloforge runs\n" +
			"  haloforge runs --track llamacpp-distro --limit 5\n" +
			"  haloforge runs show last\n" +
			"  haloforge runs show 20261129-093012-a1b2c3 --failed",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRuns(cmd, o) },
	}
	jsonFlag(cmd, &o.json, "print JSON")
	trackFlag(cmd, &o.track)
	cmd.Flags().Lookup("track").Usage = "only the runs of this track"
	cmd.Flags().IntVar(&o.limit, "limit", 20, "list at most N runs (0: all)")
	cmd.AddCommand(newRunsShowCmd(g))
	return cmd
}

// runEntry is one run directory and what its report says.
type runEntry struct {
	id  string
	rep *runner.Report
	err error
}

// listRuns reads the reports of the state dir's runs, newest first (by
// start: run IDs sort by the second only), each bounded and never through a
// link; a report that cannot be read is kept with its error, in ID order.
// track, when set, keeps that track's runs and the broken ones (which
// cannot say their track).
func listRuns(stateDir, track string, limit int) []runEntry {
	var out []runEntry
	for _, id := range runner.RunIDs(stateDir) {
		rep, err := runner.ReadReport(stateDir, id)
		if err == nil && track != "" && rep.Track != track {
			continue
		}
		out = append(out, runEntry{id: id, rep: rep, err: err})
	}
	slices.SortStableFunc(out, func(a, b runEntry) int {
		if a.rep != nil && b.rep != nil && a.id[:15] == b.id[:15] {
			return b.rep.Started.Compare(a.rep.Started)
		}
		return strings.Compare(b.id, a.id)
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// failedStep is the first step of rep that failed (not an optional one)
// or was stopped; "" for none.
func failedStep(rep *runner.Report) string {
	for _, s := range rep.Steps {
		if (s.Status == steps.OutcomeFailed && !s.Optional) || s.Status == steps.OutcomeInterrupted {
			return s.ID
		}
	}
	return ""
}

// runKind is a report's kind; a report from before kinds were recorded is
// a build, or a server if its one step is the serve step.
func runKind(rep *runner.Report) string {
	switch {
	case rep.Kind != "":
		return text.Printable(rep.Kind, 16)
	case len(rep.Steps) == 1 && rep.Steps[0].ID == "serve":
		return runner.RunServe
	case len(rep.Steps) == 1 && rep.Steps[0].ID == "bench":
		return runner.RunBench
	}
	return runner.RunBuild
}

func runRuns(cmd *cobra.Command, o runsOptions) error {
	if o.track != "" {
		if _, err := steps.Lookup(o.track); err != nil {
			return usageErr(err)
		}
	}
	if o.limit < 0 {
		return usageErr(errors.New("--limit takes 0 (all) or more"))
	}
	dir := o.stateDirOr()
	entries := listRuns(dir, o.track, o.limit)
	if o.json {
		out := make([]runJSON, 0, len(entries))
		for _, e := range entries {
			out = append(out, runEntryJSON(dir, e))
		}
		return writeJSON(cmd.OutOrStdout(), map[string]any{"schema": runsJSONSchema, "state_dir": dir, "runs": out})
	}
	w := cmd.OutOrStdout()
	if len(entries) == 0 {
		what := "no runs"
		if o.track != "" {
			what = "no runs of " + o.track
		}
		fmt.Fprintf(w, "%s in %s yet\n", what, filepath.Join(dir, "runs"))
		return nil
	}
	rows := [][]string{{"RUN", "TRACK", "KIND", "OUTCOME", "STARTED", "DURATION"}}
	for _, e := range entries {
		rows = append(rows, runRow(e))
	}
	printColumns(w, rows)
	fmt.Fprintf(w, "\nhaloforge runs show RUN%s: a run's summary (last: the newest); --step STEP its log, --failed the failed steps' logs\n",
		o.stateDirArg())
	return nil
}

// runRow is a run's line of the list.
func runRow(e runEntry) []string {
	if e.err != nil {
		// Its reason is its last cell: no column is widened by it.
		return []string{e.id, "?", "?", statusBroken + ": " + brokenWhy(e.err)}
	}
	rep := e.rep
	outcome := text.Printable(rep.Status, 24)
	if s := failedStep(rep); s != "" && rep.Status != steps.OutcomeSucceeded {
		outcome += " at " + text.Printable(s, 40)
	}
	if rep.DryRun {
		outcome += " (dry run)"
	}
	return []string{e.id, text.Printable(rep.Track, 40), runKind(rep), outcome,
		rep.Started.Local().Format("2006-01-02 15:04"), text.Duration(rep.Duration)}
}

// brokenWhy is why a report cannot be read, in one short line.
func brokenWhy(err error) string {
	var nr *safefile.NotRegularError
	var tl *safefile.TooLargeError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "no report.json"
	case errors.As(err, &nr):
		return "report.json is " + safefile.Kind(nr.Mode) + ", not a file"
	case errors.As(err, &tl):
		return "report.json is over " + text.Bytes(tl.Limit)
	}
	msg := err.Error()
	if _, after, ok := strings.Cut(msg, runner.ReportFile+": "); ok {
		msg = "report.json: " + after // the path is the run's, already named
	}
	return text.Printable(msg, 160)
}

func runEntryJSON(stateDir string, e runEntry) runJSON {
	j := runJSON{ID: e.id, Dir: filepath.Join(stateDir, "runs", e.id)}
	if e.err != nil {
		why := brokenWhy(e.err)
		j.Status, j.Error = statusBroken, &why
		return j
	}
	rep := e.rep
	track, kind := text.Printable(rep.Track, 64), runKind(rep)
	started, d := rep.Started, int64(rep.Duration)
	j.Track, j.Kind, j.Status, j.DryRun, j.Started, j.DurationNS = &track, &kind, text.Printable(rep.Status, 32), rep.DryRun, &started, &d
	if s := failedStep(rep); s != "" {
		s = text.Printable(s, 64)
		j.FailedStep = &s
	}
	return j
}

// printColumns writes rows as columns two spaces apart; a row's last cell
// is written as it is and widens no column (a row may be shorter).
func printColumns(w io.Writer, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r[:len(r)-1] {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-len([]rune(c))+2))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

type runsShowOptions struct {
	*globalOptions
	step   string
	failed bool
}

func newRunsShowCmd(g *globalOptions) *cobra.Command {
	o := runsShowOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "Print a run's summary, or a step's log (RUN: a run ID, or last)",
		Long: "show prints a run of the state dir: its track, outcome and steps, what a failed step printed " +
			"last and the diagnosis, what the run installed, and where its files are. --step prints a step's " +
			"whole log, --failed the logs of the steps that failed, each cleaned of terminal controls as the " +
			"screen shows them. RUN is a run ID as `haloforge runs` lists it, or last for the newest.",
		Example: "  haloforge runs show last\n" +
			"  haloforge runs show 20261129-093012-a1b2c3 --step packages\n" +
			"  haloforge runs show last --failed | less -R",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeRuns,
		RunE:              func(cmd *cobra.Command, args []string) error { return runRunsShow(cmd, o, args[0]) },
	}
	cmd.Flags().StringVar(&o.step, "step", "", "print the log of step STEP")
	cmd.Flags().BoolVar(&o.failed, "failed", false, "print the logs of the steps that failed or were stopped")
	return cmd
}

// runArg is the run a command names: a run ID, or last (the newest).
func runArg(stateDir, arg string) (string, error) {
	switch {
	case arg == "last":
		runs := listRuns(stateDir, "", 1)
		if len(runs) == 0 {
			return "", usageErr(fmt.Errorf("no runs in %s yet", filepath.Join(stateDir, "runs")))
		}
		return runs[0].id, nil
	case !runner.ValidRunID(arg):
		return "", usageErr(fmt.Errorf("%q is not a run: give a run ID as haloforge runs lists it (20261129-093012-a1b2c3), or last", text.Printable(arg, 80)))
	}
	return arg, nil
}

func runRunsShow(cmd *cobra.Command, o runsShowOptions, arg string) error {
	if o.step != "" && o.failed {
		return usageErr(errors.New("--step and --failed do not go together"))
	}
	dir := o.stateDirOr()
	id, err := runArg(dir, arg)
	if err != nil {
		return err
	}
	rep, err := runner.ReadReport(dir, id)
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := safefile.Tree(dir).Lstat(runner.RunName(id)); serr != nil {
			return usageErr(fmt.Errorf("no run %s in %s (haloforge runs lists them)", id, filepath.Join(dir, "runs")))
		}
	}
	if err != nil {
		return failedErr(fmt.Errorf("run %s is broken: %s", id, brokenWhy(err)))
	}
	w := cmd.OutOrStdout()
	switch {
	case o.step != "":
		s := slices.IndexFunc(rep.Steps, func(s runner.StepReport) bool { return s.ID == o.step })
		if s < 0 {
			var ids []string
			for _, s := range rep.Steps {
				ids = append(ids, s.ID)
			}
			return usageErr(fmt.Errorf("run %s has no step %q (steps: %s)", id, text.Printable(o.step, 40), strings.Join(ids, ", ")))
		}
		return printStepLog(w, dir, id, rep.Steps[s], colorOut(cmd))
	case o.failed:
		n := 0
		for _, s := range rep.Steps {
			if !s.Failed() {
				continue
			}
			if n > 0 {
				fmt.Fprintln(w)
			}
			n++
			fmt.Fprintf(w, "== %s: %s\n", s.ID, stepOutcome(s))
			if err := printStepLog(w, dir, id, s, colorOut(cmd)); err != nil {
				return err
			}
		}
		if n == 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "no step of run %s failed or was stopped (%s)\n", id, text.Printable(rep.Status, 24))
		}
		return nil
	}
	printRunSummary(w, rep, id, dir, o.stateDirArg())
	return nil
}

// reStepID is what a step ID looks like (the catalogue's): a log's name.
var reStepID = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// printStepLog writes a step's log as the screen shows it (cleaned of
// terminal controls), line by line: any size in bounded memory. The log is
// the run directory's, opened without following a link.
func printStepLog(w io.Writer, stateDir, id string, s runner.StepReport, color bool) error {
	if !reStepID.MatchString(s.ID) {
		return failedErr(fmt.Errorf("run %s: %q is not a step ID", id, text.Printable(s.ID, 40)))
	}
	f, _, err := safefile.Tree(stateDir).Open(runner.RunName(id) + "/" + s.ID + ".log")
	if errors.Is(err, os.ErrNotExist) {
		why := text.Printable(s.Status, 24)
		if s.Reason != "" {
			why += ": " + text.Printable(s.Reason, 120)
		}
		return failedErr(fmt.Errorf("step %s of run %s has no log (%s)", s.ID, id, why))
	}
	if err != nil {
		return failedErr(err)
	}
	defer f.Close()
	if err := text.WriteScreen(w, f, color); err != nil {
		return failedErr(err)
	}
	return nil
}

// stepOutcome is a step's outcome in a few words.
func stepOutcome(s runner.StepReport) string {
	switch s.Status {
	case steps.OutcomeSucceeded:
		return "succeeded in " + text.Duration(s.Duration)
	case steps.OutcomeNotVerified:
		return "not verified: " + text.Printable(strings.Join(s.NotVerified, "; "), 200)
	case steps.OutcomeFailed:
		opt := ""
		if s.Optional {
			opt = " (optional)"
		}
		return fmt.Sprintf("failed (exit %d) after %s%s", s.ExitCode, text.Duration(s.Duration), opt)
	case steps.OutcomeInterrupted:
		return "interrupted after " + text.Duration(s.Duration)
	case steps.OutcomeSkipped, runner.StatusNotRun:
		return text.Printable(s.Status, 24) + ": " + text.Printable(s.Reason, 160)
	}
	return text.Printable(s.Status, 24)
}

// stepMarks are line mode's marks of a step's outcome.
var stepMarks = map[string]string{steps.OutcomeSucceeded: "✓", steps.OutcomeNotVerified: "⚠", steps.OutcomeFailed: "✗",
	steps.OutcomeInterrupted: "■", steps.OutcomeSkipped: "-", runner.StatusNotRun: "-"}

// printRunSummary is `runs show`: the run, its steps, a failure's last
// lines and diagnosis, what it installed, where its files are.
func printRunSummary(w io.Writer, rep *runner.Report, id, stateDir, stateArg string) {
	dry := ""
	if rep.DryRun {
		dry = ", dry run"
	}
	fmt.Fprintf(w, "run %s · %s · %s%s · %s after %s\n", id, text.Printable(rep.Track, 40), runKind(rep), dry,
		text.Printable(rep.Status, 24), text.Duration(rep.Duration))
	fmt.Fprintf(w, "started %s\n", rep.Started.Local().Format("2006-01-02 15:04:05 MST"))
	for _, n := range rep.Notices {
		fmt.Fprintf(w, "note: %s\n", text.Printable(n, 300))
	}
	width := 0
	for _, s := range rep.Steps {
		width = max(width, len([]rune(text.Printable(s.ID, 40))))
	}
	for _, s := range rep.Steps {
		mark := stepMarks[s.Status]
		if mark == "" {
			mark = "·"
		}
		sid := text.Printable(s.ID, 40)
		fmt.Fprintf(w, "%s %s%s  %s\n", mark, sid, strings.Repeat(" ", width-len([]rune(sid))), stepOutcome(s))
		for _, v := range s.Verified {
			fmt.Fprintf(w, "    verified: %s\n", text.Printable(v, 300))
		}
		if s.Why != "" {
			fmt.Fprintf(w, "    why: %s\n", text.Printable(s.Why, 300))
		}
	}
	for _, s := range rep.Steps {
		if !s.Failed() {
			continue
		}
		if len(s.Tail) > 0 {
			fmt.Fprintf(w, "\nlast lines of %s:\n", text.Printable(s.ID, 40))
			for _, l := range s.Tail {
				fmt.Fprintf(w, "  │ %s\n", text.Printable(l, 500))
			}
		}
		for _, f := range s.Findings {
			fmt.Fprintf(w, "  diagnosis %s: %s\n", text.Printable(f.Family, 80), text.Printable(f.Summary, 300))
			for i, l := range strings.Split(strings.TrimSpace(text.Sanitize(f.Fix)), "\n") {
				label := "fix:"
				if i > 0 {
					label = "    "
				}
				fmt.Fprintf(w, "    %s %s\n", label, text.Printable(l, 300))
			}
		}
		if s.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", text.Printable(s.Error, 300))
		}
		fmt.Fprintf(w, "  log: haloforge runs show %s --step %s%s\n", id, text.Printable(s.ID, 40), stateArg)
	}
	if len(rep.Installed) > 0 {
		fmt.Fprintln(w)
		for _, l := range linemode.InstalledLines(rep.Installed, "haloforge clean --track "+text.Printable(rep.Track, 40)+stateArg) {
			fmt.Fprintln(w, l)
		}
	}
	fmt.Fprintf(w, "\nreport: %s\n", filepath.Join(stateDir, "runs", id, runner.ReportFile))
}
