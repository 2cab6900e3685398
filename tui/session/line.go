package session

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/tui"
	"github.com/haloforge/haloforge/tui/linemode"
)

// Outcome is how a line-mode story ended.
type Outcome struct {
	Track       string
	Status      string // steps.Outcome* of the last run; "" when nothing ran
	NoGPU       bool   // detection found no AMD GPU
	Interrupted bool
	NotVerified []string // steps of the last run that could not prove their outcome
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
	// Build and Resume return the commands that build a track and resume
	// it after step, with the user's flags; nil means the bare commands.
	Build  func(track string) string
	Resume func(track, step string) string
	// Width is the terminal's width when stdout is one: a run's progress
	// and open line are then redrawn on the last line (linemode's Live).
	Width func() int
	// Flags are the global flags the user gave (--state-dir …), for the
	// other commands the story names.
	Flags []string
}

func (o StoryOptions) buildCommand(track string) string {
	if o.Build != nil {
		return o.Build(track)
	}
	return "haloforge build --track " + track
}

func (o StoryOptions) resumeCommand(track, step string) string {
	if o.Resume != nil {
		return o.Resume(track, step)
	}
	return o.buildCommand(track) + " --resume"
}

func (o StoryOptions) resumeHint(track, step string) string {
	if o.Demo {
		return "`haloforge demo` tells the story again from the start."
	}
	return "`" + o.resumeCommand(track, step) + "` continues."
}

// Story is the wizard's and the demo's line mode: without a terminal it
// tells what the TUI shows, one line at a time, with the engine b (an
// Engine or the Demo). Detection, the track and its plan, then, when
// asked, the run as every line mode prints one (tui/linemode, the format
// `build --plain` has too); on a failure, up to o.Retries times, the fix
// b applies before a retry (the demo's) and the retry.
func Story(ctx context.Context, b tui.Backend, w io.Writer, o StoryOptions) (Outcome, error) {
	p := &printer{w: w}
	det, err := b.Detect(ctx)
	if err != nil {
		return Outcome{}, fmt.Errorf("detection: %w", err)
	}
	p.detection(det)
	out := Outcome{NoGPU: det.Primary() == nil, Track: o.Track}
	if out.Track == "" {
		out.Track = det.RecommendedTrack
	}
	if out.Track == "" {
		p.f("\nNo track fits this machine. See every track with `%s`; see the wizard on sample data with `haloforge demo`.\n",
			strings.Join(append([]string{"haloforge", "tracks"}, o.Flags...), " "))
		return out, nil
	}
	plan, err := b.Plan(out.Track)
	if err != nil {
		return out, err
	}
	p.plan(plan)
	if !o.Run {
		start := o.buildCommand(out.Track)
		for _, n := range plan.Needs {
			start += " --set " + n + "=" + steps.InputExample(n)
		}
		p.f("\nStart it with: %s\n", start)
		return out, nil
	}
	return runStory(ctx, b, p, out, o, plan.Next)
}

func runStory(ctx context.Context, b tui.Runner, p *printer, out Outcome, o StoryOptions, next []string) (Outcome, error) {
	req := tui.RunRequest{Track: out.Track}
	lo := linemode.Options{Live: o.Width != nil, Width: o.Width}
	if !o.Demo {
		lo.Resume = func(step string) string { return o.resumeCommand(out.Track, step) }
	}
	for attempt := 0; ; attempt++ {
		ch, err := b.Start(ctx, req)
		if err != nil {
			return out, err
		}
		p.f("\n")
		res := linemode.Print(p.w, ch, lo)
		out.Status, out.Interrupted, out.NotVerified = res.Status, res.Status == steps.OutcomeInterrupted, res.NotVerified
		// Only a failure with a finding is worth retrying unattended, and
		// only when asked (the demo, which fixes what it plays).
		if res.Failed == "" || res.Finding == nil || attempt >= o.Retries || ctx.Err() != nil {
			p.end(out, next, o.resumeHint(out.Track, res.Stopped))
			return out, nil
		}
		note, err := b.PrepareRetry(ctx, res.Failed, res.Finding)
		if err != nil {
			return out, err
		}
		p.f("\n== %s\n", note)
		req.Resume = true
	}
}

// printer writes the story's lines.
type printer struct{ w io.Writer }

func (p *printer) f(format string, args ...any) { fmt.Fprintf(p.w, format, args...) }

func (p *printer) detection(d *tui.Detection) {
	p.f("== Detection (%s)\n", d.Source)
	if g := d.Primary(); g == nil {
		p.f("No AMD GPU found. haloforge builds for AMD GPUs (Strix Halo, gfx1151, first of all).\n")
		p.f("See the whole wizard on sample data: haloforge demo\n")
	} else {
		p.f("GPU     %s, %s (PCI %s)%s\n", deref(g.Name), deref(g.GFX), deref(g.PCIID), gpuFacts(g))
	}
	if k := deref(d.Kernel.Release); k != "" {
		p.f("kernel  %s\n", k)
	}
	shown, noAMD := detect.SplitNoAMD(d.Checks)
	for _, c := range shown {
		p.f("check   %-4s %-20s %s\n", c.Status, c.ID, c.Summary) // the longest ID, firmware-kernel-pair, keeps the column
		if c.Fix != "" && (c.Status == detect.StatusWarn || c.Status == detect.StatusFail) {
			for _, l := range strings.Split(c.Fix, "\n") {
				p.f("             fix: %s\n", l)
			}
		}
	}
	if len(noAMD) > 0 {
		p.f("check   skip %s about an AMD GPU: this machine has none\n", text.Plural(len(noAMD), "check"))
	}
	if d.RecommendedTrack != "" {
		p.f("recommended track: %s\n", d.RecommendedTrack)
	}
}

func gpuFacts(g *detect.GPU) string {
	var f []string
	if g.Integrated != nil && *g.Integrated {
		f = append(f, "integrated")
	}
	if g.ComputeUnits != nil && *g.ComputeUnits > 0 {
		f = append(f, fmt.Sprintf("%d CUs", *g.ComputeUnits))
	}
	if g.VRAMBytes != nil && *g.VRAMBytes > 0 {
		f = append(f, "VRAM "+text.Bytes(*g.VRAMBytes))
	}
	if g.GTTBytes != nil && *g.GTTBytes > 0 {
		f = append(f, "GTT "+text.Bytes(*g.GTTBytes))
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
	for _, n := range pl.Needs {
		spec, _ := pins.Lookup(n)
		p.f("needs   %s (%s), which is empty: build refuses to start without it\n", n, spec.Help)
	}
}

// end closes the story; resume says how to go on after an interruption.
func (p *printer) end(o Outcome, next []string, resume string) {
	switch o.Status {
	case steps.OutcomeSucceeded, steps.OutcomeNotVerified:
		if len(o.NotVerified) > 0 {
			p.f("\n== %s is built, not verified: %s\n", o.Track, strings.Join(o.NotVerified, ", "))
		} else {
			p.f("\n== %s is built\n", o.Track)
		}
		linemode.PrintNext(p.w, next)
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
