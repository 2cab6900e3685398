package runner

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/steps"
)

// ReportFile is the name of a run's report inside its run dir.
const ReportFile = "report.json"

// Statuses of report.json beyond steps.Outcome*.
const (
	StatusNotRun  = "not-run" // a failure or a stop ended the run before it
	StatusPending = "pending" // not reached yet; seen only while the run goes on
)

// ReportVersion is the report.json format this haloforge writes and the
// newest it reads (a report without one is from before it was recorded,
// and reads as this one).
const ReportVersion = 1

// Report is report.json: what a run did, step by step.
type Report struct {
	Version  int           `json:"version"`
	RunID    string        `json:"run_id"`
	Track    string        `json:"track"`
	Status   string        `json:"status"` // running, succeeded, not-verified, failed, interrupted
	DryRun   bool          `json:"dry_run,omitempty"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	RunDir   string        `json:"run_dir"`
	PinsFile string        `json:"pins_file,omitempty"`
	Notices  []string      `json:"notices,omitempty"`
	Steps    []StepReport  `json:"steps"`
	// Resolved is what the steps that ran recorded they consumed
	// (FactsEnv): image digests, wheel files, commits, each with its step.
	Resolved Resolved `json:"resolved"`
}

// StepReport is one step in report.json.
type StepReport struct {
	ID       string             `json:"id"`
	Title    string             `json:"title"`
	Optional bool               `json:"optional,omitempty"`
	Status   string             `json:"status"`
	Reason   string             `json:"reason,omitempty"` // why it was skipped or not run
	ExitCode int                `json:"exit_code"`
	Started  time.Time          `json:"started,omitzero"`
	Duration time.Duration      `json:"duration_ns"`
	Log      string             `json:"log,omitempty"`
	Bytes    int64              `json:"bytes"`
	Lines    int                `json:"lines"`
	CacheKey string             `json:"cache_key"`
	Pins     map[string]string  `json:"pins"`
	Findings []diagnose.Finding `json:"findings"`
	// Verified and NotVerified are what the step proved and what it could
	// not check, from its result file (ResultEnv).
	Verified    []string `json:"verified"`
	NotVerified []string `json:"not_verified"`
	Tail        []string `json:"tail,omitempty"`
	Error       string   `json:"error,omitempty"`
	// Why is the verdict of the consumer that judged the step (Settle):
	// a server's readiness or stall; "" when the step ended by itself.
	Why string `json:"why,omitempty"`
	// Leftovers are the processes the step left running, with their fates.
	Leftovers []Leftover `json:"leftovers,omitempty"`
	// Resolved is what the step recorded it consumed (FactsEnv), and
	// FactErrors the lines of its facts file that were not facts.
	Resolved   *Resolved `json:"resolved,omitempty"`
	FactErrors []string  `json:"fact_errors,omitempty"`
	// Times are what the step timed of its own work, by name (its facts
	// file's time lines: a bench step's "engine").
	Times map[string]time.Duration `json:"times_ns,omitempty"`
}

// Failed says whether the step failed or was interrupted.
func (s StepReport) Failed() bool {
	return s.Status == steps.OutcomeFailed || s.Status == steps.OutcomeInterrupted
}

func (r *Runner) newReport() *Report {
	rep := &Report{Version: ReportVersion, RunID: r.runID, Track: r.plan.Track.ID, Status: steps.OutcomeRunning, DryRun: r.o.DryRun,
		Started: r.started, RunDir: r.runDir, PinsFile: r.o.PinsFile, Notices: r.notices,
		Resolved: Resolved{Images: []ResolvedImage{}, Wheels: []ResolvedWheel{}, Git: []ResolvedGit{}}}
	for _, s := range r.plan.Steps {
		rep.Steps = append(rep.Steps, StepReport{ID: s.ID, Title: s.Title, Optional: s.Optional,
			Status: StatusPending, CacheKey: s.CacheKey, Pins: s.PinValues, Findings: []diagnose.Finding{},
			Verified: []string{}, NotVerified: []string{}})
	}
	return rep
}

// writeReport replaces report.json atomically, so that it is whole even
// if haloforge is killed.
func (r *Runner) writeReport() error {
	b, err := json.MarshalIndent(r.report, "", "  ")
	if err != nil {
		return err
	}
	if err := safefile.Tree(r.o.StateDir).WriteFile(RunName(r.runID)+"/"+ReportFile, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// JUnit XML, the subset CI systems read (Jenkins, GitLab, GitHub actions).
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Stamp    string      `xml:"timestamp,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes the report as JUnit XML: one test case per step; a
// failure carries the last lines, the diagnosis and the log path.
func (rep *Report) WriteJUnit(w io.Writer) error {
	suite := junitSuite{Name: "haloforge." + rep.Track, Time: seconds(rep.Duration), Stamp: rep.Started.UTC().Format(time.RFC3339)}
	for _, s := range rep.Steps {
		c := junitCase{Name: s.ID, Classname: "haloforge." + rep.Track, Time: seconds(s.Duration), SystemOut: systemOut(s)}
		switch {
		case s.Status == steps.OutcomeNotVerified:
			c.Skipped = &junitSkipped{Message: "not verified: " + strings.Join(s.NotVerified, "; ")}
			suite.Skipped++
		case s.Status == steps.OutcomeFailed && s.Optional:
			c.Skipped = &junitSkipped{Message: fmt.Sprintf("optional step failed (exit %d); the build went on", s.ExitCode)}
			suite.Skipped++
		case s.Status == steps.OutcomeFailed:
			c.Failure = &junitProblem{Message: failureMessage(s), Type: failureType(s), Body: failureBody(s)}
			suite.Failures++
		case s.Status == steps.OutcomeInterrupted:
			c.Error = &junitProblem{Message: "interrupted", Type: "interrupted", Body: failureBody(s)}
			suite.Errors++
		case s.Status != steps.OutcomeSucceeded:
			c.Skipped = &junitSkipped{Message: strings.TrimSpace(s.Status + ": " + s.Reason)}
			suite.Skipped++
		}
		suite.Tests++
		suite.Cases = append(suite.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{suite}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// systemOut is what a test case says besides its status: what the step
// verified, and its log.
func systemOut(s StepReport) string {
	var lines []string
	for _, v := range s.Verified {
		lines = append(lines, "verified: "+v)
	}
	if s.Log != "" {
		lines = append(lines, "log: "+s.Log)
	}
	return strings.Join(lines, "\n")
}

func failureMessage(s StepReport) string {
	msg := fmt.Sprintf("%s failed (exit %d)", s.ID, s.ExitCode)
	if len(s.Findings) > 0 {
		msg += ": " + s.Findings[0].Family + ": " + s.Findings[0].Summary
	}
	return msg
}

func failureType(s StepReport) string {
	if len(s.Findings) > 0 {
		return s.Findings[0].Family
	}
	return "exit"
}

func failureBody(s StepReport) string {
	var b strings.Builder
	if s.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", s.Error)
	}
	if len(s.Tail) > 0 {
		b.WriteString("last lines:\n")
		for _, l := range s.Tail {
			b.WriteString("  " + l + "\n")
		}
	}
	for _, f := range s.Findings {
		fmt.Fprintf(&b, "diagnosis %s (line %d): %s\n  fix: %s\n", f.Family, f.Line, f.Summary, f.Fix)
	}
	if s.Log != "" {
		fmt.Fprintf(&b, "log: %s\n", s.Log)
	}
	return b.String()
}
