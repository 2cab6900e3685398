package runner

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
)

// PrintOptions shape line mode.
type PrintOptions struct {
	Color bool // colour the status marks (a terminal without NO_COLOR)
	// Resume is the command that resumes the run, suggested after a
	// failure or a stop; "" suggests nothing.
	Resume string
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
	o     PrintOptions
	track string
	last  Event
}

// PrintLines writes a run's events as line mode until the channel closes:
// each output line prefixed with its step, a status line per step, the
// last lines, the diagnosis and the log path of a failure. It returns the
// run's EventRunFinished (zero if the run ended without one).
func PrintLines(w io.Writer, events <-chan Event, o PrintOptions) Event {
	p := &printer{w: bufio.NewWriterSize(w, 64<<10), o: o}
	// Step lines are flushed at most every flushEvery: a write per line
	// would cost a fast step more than the step itself. Status lines and
	// findings are flushed at once.
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	for {
		select {
		case e, ok := <-events:
			if !ok {
				p.w.Flush()
				return p.last
			}
			p.event(e)
			if e.Kind != EventLine {
				p.w.Flush()
				continue
			}
			// While a step pours out lines, take them in bursts: a reader
			// that waits on the channel for every line makes the runner
			// wake it for every line, and those wake-ups cost more than
			// the lines.
			if !p.drain(events) {
				p.w.Flush()
				return p.last
			}
			time.Sleep(burstPause)
		case <-tick.C:
			p.w.Flush()
		}
	}
}

// burstPause lets lines gather between bursts; far below what an eye sees,
// far above the cost of a wake-up.
const burstPause = time.Millisecond

// flushEvery bounds how long a printed step line may wait in the buffer.
const flushEvery = 50 * time.Millisecond

// drain handles the events already waiting; false when the channel closed.
func (p *printer) drain(events <-chan Event) bool {
	for range len(events) {
		e, ok := <-events
		if !ok {
			return false
		}
		p.event(e)
		if e.Kind != EventLine {
			p.w.Flush()
		}
	}
	return true
}

func (p *printer) event(e Event) {
	switch e.Kind {
	case EventRunStarted:
		p.track = e.Step
		fmt.Fprintf(p.w, "%s: %s to run · run %s\n", e.Step, plural(e.Total, "step"), e.RunID)
	case EventNotice:
		fmt.Fprintf(p.w, "%s %s\n", p.paint(sgrYellow, "note:"), e.Reason)
	case EventStepSkipped:
		fmt.Fprintf(p.w, "%s %s skipped: %s\n", p.paint(sgrDim, "-"), e.Step, e.Reason)
	case EventStepStarted:
		p.started(e)
	case EventLine:
		p.line(e)
	case EventFinding:
		f := e.Finding
		fmt.Fprintf(p.w, "%s [%s] %s: %s (line %d)\n", p.paint(sgrYellow, "!"), e.Step, f.Family, f.Summary, f.Line)
	case EventStepFinished:
		p.finished(e)
	case EventRunFinished:
		p.last = e
		p.runFinished(e)
	}
}

func (p *printer) started(e Event) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s [%d/%d] %s: %s", p.paint(sgrBold, "▶"), e.Index, e.Total, e.Step, e.Title)
	if e.Optional && !strings.Contains(e.Title, "optional") {
		b.WriteString(" (optional)")
	}
	fmt.Fprintf(&b, " · elapsed %s", FormatDuration(e.Elapsed))
	if e.ETA > 0 {
		fmt.Fprintf(&b, " · ETA %s", FormatDuration(e.ETA))
	}
	fmt.Fprintln(p.w, b.String())
}

func (p *printer) line(e Event) {
	if e.Dropped > 0 {
		fmt.Fprintf(p.w, "[%s] %s\n", e.Step, p.paint(sgrDim, fmt.Sprintf("… %s not shown here (all in the log)", plural(e.Dropped, "line"))))
	}
	if e.Lines != nil {
		for _, l := range e.Lines {
			p.stepLine(e.Step, l)
			p.w.WriteByte('\n')
		}
		return
	}
	p.stepLine(e.Step, e.Line)
	if e.Cut > 0 {
		p.w.WriteString(p.paint(sgrDim, fmt.Sprintf(" … (%d more bytes in the log)", e.Cut)))
	}
	p.w.WriteByte('\n')
}

// stepLine writes "[step] text", the newline left to the caller.
func (p *printer) stepLine(step, text string) {
	p.w.WriteString("[")
	p.w.WriteString(step)
	p.w.WriteString("] ")
	p.w.WriteString(text)
}

func (p *printer) finished(e Event) {
	if e.Dropped > 0 {
		fmt.Fprintf(p.w, "[%s] %s\n", e.Step, p.paint(sgrDim, fmt.Sprintf("… %s not shown here (all in the log)", plural(e.Dropped, "line"))))
	}
	switch e.Status {
	case steps.OutcomeSucceeded:
		fmt.Fprintf(p.w, "%s %s %s\n", p.paint(sgrGreen, "✓"), e.Step, FormatDuration(e.Duration))
		return
	case steps.OutcomeInterrupted:
		fmt.Fprintf(p.w, "%s %s interrupted after %s\n", p.paint(sgrYellow, "■"), e.Step, FormatDuration(e.Duration))
	default:
		opt := ""
		if e.Optional {
			opt = " (optional: the build goes on)"
		}
		fmt.Fprintf(p.w, "%s %s failed (exit %d) after %s%s\n", p.paint(sgrRed, "✗"), e.Step, e.ExitCode, FormatDuration(e.Duration), opt)
		if e.Optional && e.Reason != "" {
			fmt.Fprintf(p.w, "  why it is optional: %s\n", e.Reason)
		}
		p.failure(e)
	}
	if e.Err != nil {
		fmt.Fprintf(p.w, "  error: %v\n", e.Err)
	}
	fmt.Fprintf(p.w, "  log: %s\n", e.Log)
}

// failure prints the last lines and the diagnosis of a failed step.
func (p *printer) failure(e Event) {
	if len(e.Tail) > 0 {
		fmt.Fprintf(p.w, "  last lines of %s:\n", e.Step)
		for _, l := range e.Tail {
			fmt.Fprintf(p.w, "  │ %s\n", l)
		}
	}
	if len(e.Findings) == 0 {
		fmt.Fprintf(p.w, "  diagnosis: no known failure recognised in the log\n")
		p.suspects(e.Log)
	}
	for _, f := range e.Findings {
		p.diagnosis(f)
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
	for _, link := range f.Links {
		fmt.Fprintf(p.w, "    see: %s\n", link)
	}
}

func (p *printer) runFinished(e Event) {
	if e.Dropped > 0 {
		fmt.Fprintf(p.w, "%s\n", p.paint(sgrDim, fmt.Sprintf("… %s not shown here (all in the logs)", plural(e.Dropped, "line"))))
	}
	switch e.Status {
	case steps.OutcomeSucceeded:
		fmt.Fprintf(p.w, "%s %s done in %s\n", p.paint(sgrGreen, "✓"), p.track, FormatDuration(e.Duration))
	case steps.OutcomeInterrupted:
		fmt.Fprintf(p.w, "%s %s interrupted after %s\n", p.paint(sgrYellow, "■"), p.track, FormatDuration(e.Duration))
		p.resumeHint()
	default:
		fmt.Fprintf(p.w, "%s %s failed after %s\n", p.paint(sgrRed, "✗"), p.track, FormatDuration(e.Duration))
		p.resumeHint()
	}
	if e.Err != nil {
		fmt.Fprintf(p.w, "error: %v\n", e.Err)
	}
	if e.RunDir != "" {
		fmt.Fprintf(p.w, "report: %s/%s\n", e.RunDir, ReportFile)
	}
}

func (p *printer) resumeHint() {
	if p.o.Resume != "" {
		fmt.Fprintf(p.w, "  resume with: %s\n", p.o.Resume)
	}
}

func (p *printer) paint(sgr, s string) string {
	if !p.o.Color {
		return s
	}
	return sgr + s + sgrReset
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// FormatDuration prints a duration the way a person reads a build time:
// 0.4s, 12s, 3m12s, 1h02m.
func FormatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
