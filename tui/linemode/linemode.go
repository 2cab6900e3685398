// Package linemode prints a run as line mode shows it: `haloforge build
// --plain` (and any build without a terminal, such as CI), the wizard's and
// the demo's line mode. It is the one place outside the TUI where runner
// events become text, so every line mode speaks one format, the one
// README.md documents under "Line mode output" for those who parse it.
// It imports no Bubble Tea package.
package linemode

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/installed"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/steps/serve"
	"github.com/haloforge/haloforge/steps/verify"
)

// Options shape line mode.
type Options struct {
	Color bool // colour the status marks (a terminal without NO_COLOR)
	// DryRun says the run only prints its commands: its end says that
	// nothing was changed rather than that something was built.
	DryRun bool
	// Resume returns the command that resumes the run after step failed
	// or stopped, suggested at the end; nil (or "") suggests nothing.
	Resume func(step string) string
	// Next are the commands to type once the track is built (the track's
	// next commands, with the user's flags), printed as "next: CMD" lines
	// after a successful run, as the wizard's recap prints them.
	Next []string
	// ReadyHint is printed under a server's readiness (how to stop it);
	// "" prints nothing.
	ReadyHint string
	// Answering says that what the user types reaches a step that waits
	// for input (stdin is a terminal; see runner.Runner.Input).
	Answering bool
	// Live says the output is a terminal: the step's open line (a progress
	// bar redrawn with '\r', ninja's status) and its progress are shown on
	// the last line and redrawn in place, cut to Width's columns.
	Live bool
	// Width is the terminal's width now (asked at every redraw, so that a
	// resize is followed); nil means 80 columns.
	Width func() int
	// Clean is the command that removes what the track installed (clean
	// --track, with the user's flags): under a run that is not a dry run,
	// what the track holds is listed with it (RunFinished.Installed); ""
	// lists nothing.
	Clean string
	// ProgressEvery is how often, at most, a step's progress is printed as
	// a line when the output is no terminal (CI): the first one that long
	// into the step. 0 means DefaultProgressEvery; below 0, never.
	ProgressEvery time.Duration
}

// DefaultProgressEvery is how often a CI log gets a step's progress line.
const DefaultProgressEvery = 30 * time.Second

// Result is what a run's events said, for the caller's next move.
type Result struct {
	Status string // the run's steps.Outcome*; "" when the events ended without RunFinished
	RunDir string
	Err    error // RunFinished's: the run's own machinery
	// Failed is the first failed step that is not optional ("" for none),
	// and Finding its first finding (nil when no rule knew the failure).
	Failed  string
	Finding *diagnose.Finding
	// Stopped is the step an interruption stopped ("" for none).
	Stopped string
	// NotVerified lists the steps that ran to their end without proving
	// their outcome (steps.OutcomeNotVerified).
	NotVerified []string
}

// SGR colours of the status marks.
const (
	sgrGreen  = "\x1b[32m"
	sgrRed    = "\x1b[31m"
	sgrYellow = "\x1b[33m"
	sgrDim    = "\x1b[2m"
	sgrBold   = "\x1b[1m"
	sgrReset  = "\x1b[0m"
)

// printer is line mode's state between events.
type printer struct {
	w     *bufio.Writer
	o     Options
	track string
	found map[string][]diagnose.Finding // live findings by step, for Result
	res   Result

	// The running step's open line and progress, and what of them is on
	// the screen (Live) or was last printed (no terminal).
	step      string
	open      string
	prog      runner.Progress
	drawn     string    // the live line on the terminal now, "" for none
	progAt    time.Time // when the last progress line was printed, or the step began
	progShown string    // its text
}

// Print writes a run's events until the channel closes: a line when the
// run starts, a status line per step, each output line prefixed with its
// step, findings as they come, the last lines, the diagnosis and the log of
// a failure, and the run's outcome.
func Print(w io.Writer, events <-chan runner.Event, o Options) Result {
	if o.ProgressEvery == 0 {
		o.ProgressEvery = DefaultProgressEvery
	}
	p := &printer{w: bufio.NewWriterSize(w, 64<<10), o: o, found: map[string][]diagnose.Finding{}}
	// Step lines are flushed at most every flushEvery: a write per line
	// would cost a fast step more than the step itself. Status lines and
	// findings are flushed at once.
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	for {
		select {
		case e, ok := <-events:
			if !ok {
				p.clearLive()
				p.w.Flush()
				return p.res
			}
			if !p.event(e) {
				continue
			}
			// While a step pours out lines, take them in bursts: a reader
			// that waits on the channel for every chunk makes the runner
			// wake it for every chunk, and those wake-ups cost more than
			// the lines.
			if !p.drain(events) {
				p.clearLive()
				p.w.Flush()
				return p.res
			}
			time.Sleep(burstPause)
		case <-tick.C:
			p.flush()
		}
	}
}

// burstPause lets lines gather between bursts; far below what an eye sees,
// far above the cost of a wake-up.
const burstPause = time.Millisecond

// flushEvery bounds how long a printed step line may wait in the buffer.
const flushEvery = 50 * time.Millisecond

// drain handles the events already waiting; false when the channel closed.
func (p *printer) drain(events <-chan runner.Event) bool {
	for range len(events) {
		e, ok := <-events
		if !ok {
			return false
		}
		p.event(e)
	}
	return true
}

// event prints one event and reports whether it was step output; anything
// else is flushed at once.
func (p *printer) event(e runner.Event) (output bool) {
	switch e := e.(type) {
	case runner.OpenLine:
		p.open = e.Text
		return true
	case runner.Progress:
		p.progress(e)
		return true
	}
	p.clearLive()
	switch e := e.(type) {
	case runner.Lines:
		p.open = "" // these lines end it
		p.lines(e)
		return true
	case runner.RunStarted:
		p.track = e.Track
		fmt.Fprintf(p.w, "%s: %s to run · run %s\n", e.Track, text.Plural(e.Total, "step"), e.RunID)
	case runner.Notice:
		fmt.Fprintf(p.w, "%s %s\n", p.paint(sgrYellow, "note:"), e.Text)
	case runner.StepSkipped:
		fmt.Fprintf(p.w, "%s %s skipped: %s\n", p.paint(sgrDim, "-"), e.Step, e.WhySkipped)
	case runner.StepStarted:
		p.started(e)
	case runner.Found:
		f := e.Finding
		p.found[e.Step] = append(p.found[e.Step], f)
		if f.Line > 0 {
			fmt.Fprintf(p.w, "%s [%s] %s: %s (line %d)\n", p.paint(sgrYellow, "!"), e.Step, f.Family, f.Summary, f.Line)
		} else {
			fmt.Fprintf(p.w, "%s [%s] %s: %s\n", p.paint(sgrYellow, "!"), e.Step, f.Family, f.Summary)
		}
	case runner.WaitingForInput:
		p.waiting(e)
	case runner.StepFinished:
		p.finished(e)
	case serve.StartupPhase:
		p.servePhase(e)
	case serve.Ready:
		fmt.Fprintf(p.w, "%s [%s] %s\n", p.paint(sgrGreen, "✓"), e.Step, e.Sentence())
		p.usage(e)
		if p.o.ReadyHint != "" {
			fmt.Fprintf(p.w, "  %s\n", p.o.ReadyHint)
		}
	case serve.Smoke:
		p.smoke(e)
	case serve.Checking:
		fmt.Fprintf(p.w, "%s [%s] %s\n", p.paint(sgrDim, "…"), e.Step, e.What)
	case serve.Checked:
		p.checked(e)
	case runner.RunFinished:
		p.runFinished(e)
	}
	p.flush()
	return false
}

// flush writes what is buffered, the live line last.
func (p *printer) flush() {
	p.drawLive()
	p.w.Flush()
}

// progress keeps a step's progress; without a terminal it becomes a line
// now and then.
func (p *printer) progress(e runner.Progress) {
	p.prog = e
	if p.o.Live || p.o.ProgressEvery < 0 || e.Kind == "" {
		return
	}
	now := time.Now()
	s := ProgressText(e)
	if now.Sub(p.progAt) < p.o.ProgressEvery || s == p.progShown {
		return
	}
	p.progAt, p.progShown = now, s
	fmt.Fprintf(p.w, "%s [%s] %s\n", p.paint(sgrDim, "~"), e.Step, s)
}

// ProgressText is how every screen says a step's progress: the badge, the
// run's remaining time when earlier runs tell it, and what is in progress.
func ProgressText(e runner.Progress) string {
	s := e.Badge()
	if e.RunETA > 0 {
		s += " · run ETA " + text.Duration(e.RunETA)
	}
	if e.Total > 0 && e.Label != "" {
		s += " · " + e.Label
	}
	return s
}

// liveText is the last line of a terminal while a step runs: its
// progress, else its open line.
func (p *printer) liveText() string {
	if !p.o.Live || p.step == "" {
		return ""
	}
	var s string
	switch {
	case p.prog.Kind != "" && p.prog.Step == p.step:
		s = ProgressText(p.prog)
	case strings.TrimSpace(p.open) != "":
		s = strings.TrimLeft(p.open, " ") // a bar's indent says nothing here
	default:
		return ""
	}
	width := 80
	if p.o.Width != nil {
		if w := p.o.Width(); w > 0 {
			width = w
		}
	}
	// One column short of the edge: a line that fills it would wrap on
	// some terminals, and the redraw clears only the last row.
	line := "… [" + p.step + "] " + s
	return runewidth.Truncate(line, width-1, "…")
}

// drawLive puts the live line on the terminal, replacing the one there.
func (p *printer) drawLive() {
	s := p.liveText()
	if s == p.drawn {
		return
	}
	p.w.WriteString("\r\x1b[K")
	if s != "" {
		p.w.WriteString(p.paint(sgrDim, s))
	}
	p.drawn = s
}

// clearLive takes the live line off the terminal before a line is printed.
func (p *printer) clearLive() {
	if p.drawn != "" {
		p.w.WriteString("\r\x1b[K")
		p.drawn = ""
	}
}

// usage prints how to point a client at a ready server: the base URL,
// then its export and curl, each wrapped between shell words with " \\"
// continuations (at 80 columns, a terminal's least) so that a copied row
// block runs as printed.
func (p *printer) usage(e serve.Ready) {
	u := e.Usage()
	fmt.Fprintf(p.w, "  %s\n", u[0])
	for _, c := range u[1:] {
		for _, row := range text.CommandRows("  "+c, 80) {
			fmt.Fprintln(p.w, row)
		}
	}
}

// servePhase prints a server's start-up phase, or a warning within it.
func (p *printer) servePhase(e serve.StartupPhase) {
	if e.Warning != "" {
		fmt.Fprintf(p.w, "%s [%s] in %s: %s\n", p.paint(sgrYellow, "!"), e.Step, e.Phase, e.Warning)
		if e.Line != "" {
			fmt.Fprintf(p.w, "    line: %s\n", e.Line)
		}
		return
	}
	fmt.Fprintf(p.w, "%s [%s] phase %d/%d %s: %s · %s", p.paint(sgrBold, "◆"), e.Step, e.Index, e.Total, e.Phase, e.Title, text.Duration(e.Elapsed))
	if e.Budget > 0 {
		fmt.Fprintf(p.w, " (stalled after %s of silence)", text.Duration(e.Budget))
	}
	fmt.Fprintln(p.w)
}

// smoke prints the first request's timings.
func (p *printer) smoke(e serve.Smoke) {
	mark := p.paint(sgrGreen, "✓")
	if e.Err != "" {
		mark = p.paint(sgrRed, "✗")
	}
	fmt.Fprintf(p.w, "%s [%s] %s\n", mark, e.Step, e.Sentence())
	if e.Err == "" && e.Text != "" {
		fmt.Fprintf(p.w, "  answer: %s\n", e.Text)
	}
}

// checked prints the check of a server's answers: the verdict, which
// check ran, and for wrong answers the likely fix.
func (p *printer) checked(e serve.Checked) {
	mark := p.paint(sgrYellow, "!")
	switch {
	case e.Wrong():
		mark = p.paint(sgrRed, "✗")
	case e.Result != nil && e.Result.Verdict == verify.Right:
		mark = p.paint(sgrGreen, "✓")
	}
	fmt.Fprintf(p.w, "%s [%s] %s\n", mark, e.Step, e.Sentence())
	fmt.Fprintf(p.w, "  check: %s\n", e.How)
	if f := e.Finding; f != nil {
		fmt.Fprintf(p.w, "  likely fix (%s, %s):\n", f.Family, f.Title)
		for _, l := range strings.Split(f.Fix, "\n") {
			fmt.Fprintf(p.w, "    %s\n", l)
		}
	}
}

func (p *printer) started(e runner.StepStarted) {
	p.step, p.open, p.prog, p.progAt, p.progShown = e.Step, "", runner.Progress{}, time.Now(), ""
	var b strings.Builder
	fmt.Fprintf(&b, "%s [%d/%d] %s: %s", p.paint(sgrBold, "▶"), e.Index, e.Total, e.Step, e.Title)
	if e.Optional && !strings.Contains(e.Title, "optional") {
		b.WriteString(" (optional)")
	}
	fmt.Fprintf(&b, " · elapsed %s", text.Duration(e.Elapsed))
	if e.ETA > 0 {
		fmt.Fprintf(&b, " · ETA %s", text.Duration(e.ETA))
	}
	fmt.Fprintln(p.w, b.String())
}

func (p *printer) lines(e runner.Lines) {
	p.dropped(e.Step, e.Dropped)
	for i, l := range e.Text {
		p.w.WriteString("[")
		p.w.WriteString(e.Step)
		p.w.WriteString("] ")
		p.w.WriteString(l)
		if e.Cut != nil && e.Cut[i] > 0 {
			p.w.WriteString(cutNote(e.Cut[i]))
		}
		p.w.WriteByte('\n')
	}
}

// CutLine is how every screen shows line i of e: its text, and for a line
// cut at the runner's MaxLine how many bytes only the log has.
func CutLine(e runner.Lines, i int) string {
	if e.Cut == nil || e.Cut[i] <= 0 {
		return e.Text[i]
	}
	return e.Text[i] + cutNote(e.Cut[i])
}

func cutNote(n int) string { return fmt.Sprintf(" … (%d more bytes in the log)", n) }

// dropped says how many lines the screen did not get.
func (p *printer) dropped(step string, n int) {
	if n > 0 {
		fmt.Fprintf(p.w, "[%s] %s\n", step, p.paint(sgrDim, fmt.Sprintf("… %s not shown here (all in the log)", text.Plural(n, "line"))))
	}
}

func (p *printer) finished(e runner.StepFinished) {
	p.step, p.open, p.prog = "", "", runner.Progress{}
	p.dropped(e.Step, e.Dropped)
	switch e.Status {
	case steps.OutcomeSucceeded:
		fmt.Fprintf(p.w, "%s %s %s\n", p.paint(sgrGreen, "✓"), e.Step, text.Duration(e.Duration))
		p.why(e.Why)
		p.verified(e.Verified)
		p.leftovers(e.Leftovers)
		return
	case steps.OutcomeNotVerified:
		p.res.NotVerified = append(p.res.NotVerified, e.Step)
		for _, why := range e.NotVerified {
			fmt.Fprintf(p.w, "%s %s not verified: %s\n", p.paint(sgrYellow, "⚠"), e.Step, why)
		}
		p.why(e.Why)
		p.verified(e.Verified)
	case steps.OutcomeInterrupted:
		p.res.Stopped = e.Step
		fmt.Fprintf(p.w, "%s %s interrupted after %s\n", p.paint(sgrYellow, "■"), e.Step, text.Duration(e.Duration))
	default:
		opt := ""
		if e.Optional {
			opt = " (optional: the build goes on)"
		}
		fmt.Fprintf(p.w, "%s %s failed (exit %d) after %s%s\n", p.paint(sgrRed, "✗"), e.Step, e.ExitCode, text.Duration(e.Duration), opt)
		p.why(e.Why)
		if e.Optional && e.WhyOptional != "" {
			fmt.Fprintf(p.w, "  why it is optional: %s\n", e.WhyOptional)
		}
		p.failure(e)
	}
	p.leftovers(e.Leftovers)
	if e.Err != nil {
		fmt.Fprintf(p.w, "  error: %v\n", e.Err)
	}
	fmt.Fprintf(p.w, "  log: %s\n", e.Log)
}

// why is the verdict of the one who judged a server step.
func (p *printer) why(why string) {
	if why != "" {
		fmt.Fprintf(p.w, "  why: %s\n", why)
	}
}

// waiting says a step waits for an answer, and how it can get one.
func (p *printer) waiting(e runner.WaitingForInput) {
	if e.Prompt != "" {
		fmt.Fprintf(p.w, "%s [%s] waiting for input: %s\n", p.paint(sgrYellow, "?"), e.Step, e.Prompt)
	} else {
		fmt.Fprintf(p.w, "%s [%s] waiting for input: it reads its terminal and has printed nothing for %s\n", p.paint(sgrYellow, "?"), e.Step, text.Duration(e.Quiet))
	}
	switch {
	case p.o.Answering && !e.Echo:
		fmt.Fprintf(p.w, "  type the answer and press Enter: it goes to the step, not shown (the step turned the echo off); Ctrl-C stops\n")
	case p.o.Answering:
		fmt.Fprintf(p.w, "  type the answer and press Enter: it goes to the step; Ctrl-C stops\n")
	default:
		fmt.Fprintf(p.w, "  nothing can answer it here (no terminal): stop with Ctrl-C, answer it beforehand (a sudo password: sudo -v), then resume\n")
	}
}

// maxLeftovers bounds the leftovers listed under a step; the log has all.
const maxLeftovers = 10

// leftovers lists what a step left running and what became of it.
func (p *printer) leftovers(left []runner.Leftover) {
	for i, l := range left {
		if i == maxLeftovers {
			fmt.Fprintf(p.w, "  … and %d more left running (all in the log)\n", len(left)-i)
			return
		}
		fmt.Fprintf(p.w, "  left running: pid %d %s (%s)\n", l.PID, l.Command, l.Fate)
	}
}

// verified lists what a step proved.
func (p *printer) verified(what []string) {
	for _, v := range what {
		fmt.Fprintf(p.w, "  verified: %s\n", v)
	}
}

// failure prints the last lines and the diagnosis of a failed step, and
// remembers the first failure that fails the run.
func (p *printer) failure(e runner.StepFinished) {
	if len(e.Tail) > 0 {
		fmt.Fprintf(p.w, "  last lines of %s:\n", e.Step)
		for _, l := range e.Tail {
			fmt.Fprintf(p.w, "  │ %s\n", l)
		}
	}
	fs := e.Findings
	if len(fs) == 0 {
		fs = p.found[e.Step]
	}
	if len(fs) == 0 {
		fmt.Fprintf(p.w, "  diagnosis: no known failure recognised in the log\n")
		p.suspects(e.Log)
	}
	for _, f := range fs {
		p.diagnosis(f)
	}
	if p.res.Failed == "" && !e.Optional && e.Status == steps.OutcomeFailed {
		p.res.Failed = e.Step
		if len(fs) > 0 {
			p.res.Finding = &fs[0]
		}
	}
}

// suspects points at the lines of an unrecognised failure that look like
// its error, so the reader starts there rather than at the last lines.
func (p *printer) suspects(log string) {
	if log == "" {
		return
	}
	ss, err := diagnose.Suspects(log, 3)
	if err != nil || len(ss) == 0 {
		return
	}
	fmt.Fprintf(p.w, "  the error may be at:\n")
	for _, s := range ss {
		fmt.Fprintf(p.w, "    line %d: %s\n", s.Line, s.Text)
	}
}

func (p *printer) diagnosis(f diagnose.Finding) {
	fmt.Fprintf(p.w, "  %s %s: %s\n", p.paint(sgrYellow, "diagnosis"), f.Family, f.Summary)
	if f.Text != "" {
		fmt.Fprintf(p.w, "    line %d: %s\n", f.Line, f.Text)
	}
	for i, l := range strings.Split(strings.TrimSpace(f.Fix), "\n") {
		label := "fix:"
		if i > 0 {
			label = "    "
		}
		fmt.Fprintf(p.w, "    %s %s\n", label, l)
	}
	// A hang has no error line to fix, so line mode shows the same ladder
	// as diagnose, the wizard and TUTORIAL.md.
	if rungs := diagnose.LadderLines(f.Family); len(rungs) > 0 {
		fmt.Fprintf(p.w, "    %s:\n", diagnose.LadderTitle)
		for _, r := range rungs {
			fmt.Fprintf(p.w, "      %s\n", r)
		}
	}
	for _, link := range f.Links {
		fmt.Fprintf(p.w, "    see: %s\n", link)
	}
}

func (p *printer) runFinished(e runner.RunFinished) {
	p.res.Status, p.res.RunDir, p.res.Err = e.Status, e.RunDir, e.Err
	if p.track == "" && e.Err != nil {
		// The run never started (another build holds the state dir, the
		// run directory cannot be made): one line, nothing to resume.
		fmt.Fprintf(p.w, "%s the run did not start: %v\n", p.paint(sgrRed, "✗"), e.Err)
		return
	}
	switch {
	case p.o.DryRun && (e.Status == steps.OutcomeSucceeded || e.Status == steps.OutcomeNotVerified):
		fmt.Fprintf(p.w, "%s %s dry run done in %s: the commands are above, nothing was changed\n", p.paint(sgrGreen, "✓"), p.track, text.Duration(e.Duration))
	case e.Status == steps.OutcomeSucceeded:
		fmt.Fprintf(p.w, "%s %s done in %s\n", p.paint(sgrGreen, "✓"), p.track, text.Duration(e.Duration))
	case e.Status == steps.OutcomeNotVerified:
		fmt.Fprintf(p.w, "%s %s done in %s, not verified: %s\n", p.paint(sgrYellow, "⚠"), p.track, text.Duration(e.Duration),
			strings.Join(p.res.NotVerified, ", "))
	case e.Status == steps.OutcomeInterrupted:
		fmt.Fprintf(p.w, "%s %s interrupted after %s\n", p.paint(sgrYellow, "■"), p.track, text.Duration(e.Duration))
		p.resumeHint(p.res.Stopped)
	default:
		fmt.Fprintf(p.w, "%s %s failed after %s\n", p.paint(sgrRed, "✗"), p.track, text.Duration(e.Duration))
		p.resumeHint(p.res.Failed)
	}
	if e.Err != nil {
		fmt.Fprintf(p.w, "error: %v\n", e.Err)
	}
	if e.RunDir != "" {
		fmt.Fprintf(p.w, "report: %s/%s\n", e.RunDir, runner.ReportFile)
	}
	if !p.o.DryRun && p.o.Clean != "" {
		for _, l := range InstalledLines(e.Installed, p.o.Clean) {
			fmt.Fprintln(p.w, l)
		}
	}
	if !p.o.DryRun && (e.Status == steps.OutcomeSucceeded || e.Status == steps.OutcomeNotVerified) {
		PrintNext(p.w, p.o.Next)
	}
}

// InstalledLines list what haloforge created for a track and holds on
// disk, the one form of line mode, `runs show`, `clean` and the summary:
// a heading naming clean (the command that removes them), an item a line
// with its size, the total.
func InstalledLines(items []installed.Item, clean string) []string {
	if len(items) == 0 {
		return nil
	}
	lines := []string{"installed (" + clean + " removes it):"}
	for _, it := range items {
		lines = append(lines, "  "+text.Printable(it.Describe(), 200)+" · "+it.Size())
	}
	total, unknown := installed.Total(items)
	t := "  total " + text.Bytes(total)
	if unknown > 0 {
		t += " and " + text.Plural(unknown, "item") + " of unknown size"
	}
	return append(lines, t)
}

// PrintNext writes the commands to type next, one "next: CMD" line each:
// the one format of line mode, the wizard's recap and the demo's story.
func PrintNext(w io.Writer, cmds []string) {
	for _, c := range cmds {
		fmt.Fprintf(w, "next: %s\n", c)
	}
}

func (p *printer) resumeHint(step string) {
	if p.o.Resume == nil || p.o.DryRun {
		return
	}
	if c := p.o.Resume(step); c != "" {
		fmt.Fprintf(p.w, "  resume with: %s\n", c)
	}
}

func (p *printer) paint(sgr, s string) string {
	if !p.o.Color {
		return s
	}
	return sgr + s + sgrReset
}
