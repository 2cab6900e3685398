package session

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/tui"
)

// Outcome is how a line-mode story ended.
type Outcome struct {
	Track       string
	Status      string // steps.Outcome* of the last run; "" when nothing ran
	NoGPU       bool   // detection found no AMD GPU
	Interrupted bool
}

// StoryOptions say how far the line-mode story goes.
type StoryOptions struct {
	Track string // "" means the recommended track
	// Run starts the build; without it the story stops after the plan and
	// says which command runs it (the real wizard never builds unasked).
	Run bool
	// Retries bounds how many times a failed step is fixed and retried.
	Retries int
	// Demo says the story runs on the demo's data, which starts afresh.
	Demo bool
}

func (o StoryOptions) resumeHint(track string) string {
	if o.Demo {
		return "`haloforge demo` tells the story again from the start."
	}
	return "`haloforge build --track " + track + " --resume` continues."
}

// Story tells the wizard's story without a terminal: detection, the track,
// its plan and, when asked, the run with every line prefixed by its step;
// on a failure the diagnosis, the fix the engine knows (the demo's) and a
// retry. It is what the TUI shows, one line at a time.
func (e *Engine) Story(ctx context.Context, w io.Writer, o StoryOptions) (Outcome, error) {
	p := &printer{w: w}
	det, err := e.Detect(ctx)
	if err != nil {
		return Outcome{}, fmt.Errorf("detection: %w", err)
	}
	p.detection(det)
	out := Outcome{NoGPU: det.GPU == nil, Track: o.Track}
	if out.Track == "" {
		out.Track = det.Recommended
	}
	if out.Track == "" {
		p.f("\nNo track fits this machine. See every track with `haloforge tracks`; see the wizard on sample data with `haloforge demo`.\n")
		return out, nil
	}
	plan, err := e.Plan(out.Track)
	if err != nil {
		return out, err
	}
	p.plan(plan)
	if !o.Run {
		p.f("\nStart it with: haloforge build --track %s\n", out.Track)
		return out, nil
	}
	return e.runStory(ctx, p, out, o, plan.Track.Next)
}

func (e *Engine) runStory(ctx context.Context, p *printer, out Outcome, o StoryOptions, next []string) (Outcome, error) {
	req := tui.RunRequest{Track: out.Track}
	for attempt := 0; ; attempt++ {
		ch, err := e.Start(ctx, req)
		if err != nil {
			return out, err
		}
		res := p.events(ch)
		out.Status, out.Interrupted = res.status, res.status == steps.OutcomeInterrupted
		// Only a failure the engine knows a fix for is worth retrying unattended.
		if res.failed == "" || res.finding == nil || e.Fix == nil || attempt >= o.Retries || ctx.Err() != nil {
			p.end(out, next, o.resumeHint(out.Track))
			return out, nil
		}
		note, err := e.PrepareRetry(ctx, res.failed, res.finding)
		if err != nil {
			return out, err
		}
		p.f("\n== %s\n\n", note)
		req.Resume = true
	}
}

// printer writes the story's lines.
type printer struct{ w io.Writer }

func (p *printer) f(format string, args ...any) { fmt.Fprintf(p.w, format, args...) }

func (p *printer) detection(d *tui.Detection) {
	p.f("== Detection (%s)\n", d.Source)
	if d.GPU == nil {
		p.f("No AMD GPU found. haloforge builds for AMD GPUs (Strix Halo, gfx1151, first of all).\n")
		p.f("See the whole wizard on sample data: haloforge demo\n")
	} else {
		g := d.GPU
		p.f("GPU     %s, %s (PCI %s)%s\n", g.Name, g.Gfx, g.PCIID, gpuFacts(g))
	}
	if d.Kernel != "" {
		p.f("kernel  %s\n", d.Kernel)
	}
	for _, c := range d.Checks {
		p.f("check   %-4s %-19s %s\n", c.Status, c.ID, c.Summary)
		if c.Fix != "" && (c.Status == tui.CheckWarn || c.Status == tui.CheckFail) {
			for _, l := range strings.Split(c.Fix, "\n") {
				p.f("             fix: %s\n", l)
			}
		}
	}
	if d.Recommended != "" {
		p.f("recommended track: %s\n", d.Recommended)
	}
}

func gpuFacts(g *tui.GPU) string {
	var f []string
	if g.Integrated {
		f = append(f, "integrated")
	}
	if g.ComputeUnits > 0 {
		f = append(f, fmt.Sprintf("%d CUs", g.ComputeUnits))
	}
	if g.VRAMBytes > 0 {
		f = append(f, fmt.Sprintf("VRAM %d MiB", g.VRAMBytes>>20))
	}
	if g.GTTBytes > 0 {
		f = append(f, fmt.Sprintf("GTT %d GiB", g.GTTBytes>>30))
	}
	if len(f) == 0 {
		return ""
	}
	return ", " + strings.Join(f, ", ")
}

func (p *printer) plan(pl *tui.Plan) {
	p.f("\n== Plan: %s (%s)\n", pl.Track.ID, pl.Track.Title)
	for _, s := range pl.Steps {
		mark := "runs  "
		if !s.WillRun {
			mark = "cached"
		}
		p.f("%s  %-16s %s\n", mark, s.ID, s.Reason)
	}
	if len(pl.Floating) > 0 {
		p.f("floating pins (not reproducible): %s\n", strings.Join(pl.Floating, ", "))
	}
}

// runResult is what one run's events said.
type runResult struct {
	status  string
	failed  string // first failed step that is not optional
	finding *diagnose.Finding
}

// events prints a run: each line prefixed with its step, and on a failure
// the diagnosis and the log path (DESIGN.md, line mode).
func (p *printer) events(ch <-chan runner.Event) runResult {
	var res runResult
	findings := map[string][]diagnose.Finding{}
	for e := range ch {
		switch e := e.(type) {
		case runner.RunStarted:
			p.f("\n== Run %s (%d steps)\n", e.RunID, e.Total)
		case runner.Notice:
			p.f("note: %s\n", e.Text)
		case runner.StepStarted:
			p.f("[%s] ── step %d/%d: %s\n", e.Step, e.Index, e.Total, nonEmpty(e.Title, e.Step))
		case runner.StepSkipped:
			p.f("[%s] skipped: %s\n", e.Step, e.WhySkipped)
		case runner.Lines:
			for _, l := range e.Text {
				p.f("[%s] %s\n", e.Step, l)
			}
		case runner.Found:
			findings[e.Step] = append(findings[e.Step], e.Finding)
			p.f("[%s] !! %s (line %d): %s\n", e.Step, e.Finding.Family, e.Finding.Line, e.Finding.Summary)
		case runner.StepFinished:
			p.stepFinished(e, findings[e.Step], &res)
		case runner.RunFinished:
			res.status = e.Status
			if e.Err != nil {
				p.f("run error: %v\n", e.Err)
			}
		}
	}
	return res
}

func (p *printer) stepFinished(e runner.StepFinished, fs []diagnose.Finding, res *runResult) {
	if e.Status == steps.OutcomeSucceeded {
		p.f("[%s] ✓ done in %s\n", e.Step, e.Duration.Round(time.Second))
		return
	}
	p.f("[%s] ✗ %s (exit %d) after %s\n", e.Step, e.Status, e.ExitCode, e.Duration.Round(time.Second))
	if len(fs) == 0 {
		fs = e.Findings
	}
	for _, f := range fs {
		p.f("[%s]   diagnosis: %s: %s\n", e.Step, f.Family, f.Summary)
		for _, l := range strings.Split(f.Fix, "\n") {
			p.f("[%s]   fix: %s\n", e.Step, l)
		}
	}
	p.f("[%s]   log: %s\n", e.Step, e.Log)
	if res.failed == "" && !e.Optional && e.Status == steps.OutcomeFailed {
		res.failed = e.Step
		if len(fs) > 0 {
			res.finding = &fs[0]
		}
	}
}

// end closes the story; resume says how to go on after an interruption.
func (p *printer) end(o Outcome, next []string, resume string) {
	switch o.Status {
	case steps.OutcomeSucceeded:
		p.f("\n== %s is built\n", o.Track)
		for _, c := range next {
			p.f("next: %s\n", c)
		}
	case steps.OutcomeInterrupted:
		p.f("\n== Interrupted. %s\n", resume)
	default:
		p.f("\n== %s: %s\n", o.Track, nonEmpty(o.Status, "did not run"))
	}
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
