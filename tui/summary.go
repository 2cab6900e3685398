package tui

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/haloforge/haloforge/internal/text"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/haloforge/haloforge/steps/installed"
	"github.com/haloforge/haloforge/steps/serve"
	"github.com/haloforge/haloforge/tui/linemode"
)

// summaryScreen closes a run: each step's result with its history in the
// session (attempts, skips), where every run's logs and reports are, and
// what to type next.
type summaryScreen struct {
	*common
	own    summaryKeys
	rs     *runState
	plan   *Plan
	resume string   // the command that continues after a failure ("" in the demo)
	lines  []string // the whole summary at the current width
	offset int
	w, h   int
}

// summaryKeys are the summary's own keys: s serves what the run built.
type summaryKeys struct{ Serve key.Binding }

func newSummaryScreen(c *common, rs *runState, p *Plan, resume string) *summaryScreen {
	return &summaryScreen{common: c, own: summaryKeys{Serve: key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "serve a model"))},
		rs: rs, plan: p, resume: resume}
}

// cleanCommand is the command that removes what the track installed, with
// the user's flags; "" when the session suggests no commands (the demo).
func (s *summaryScreen) cleanCommand() string {
	if s.commands == nil {
		return ""
	}
	return s.commands(Command{Track: s.plan.Track.ID, Clean: true})
}

func (s *summaryScreen) SetSize(w, h int) {
	s.w, s.h = w, h
	s.lines = strings.Split(summaryText(s.rs, s.plan, s.resume, s.Demo, s.Styles, w), "\n")
	if inst := installedBlock(s.rs.Installed, s.cleanCommand(), s.Styles, w); inst != "" {
		// After the results and the next commands, before the artifacts.
		s.lines = insertBefore(s.lines, s.Styles.Bold.Render("Artifacts"), strings.Split(inst, "\n"))
	}
	tail := "q quits and prints these commands in your terminal."
	if s.Demo {
		tail = "q quits; `haloforge demo` starts the story again."
	}
	s.lines = append(s.lines, "")
	for _, l := range text.ProseRows(tail, max(w, 20)) {
		s.lines = append(s.lines, s.Styles.Subtle.Render(l))
	}
	s.offset = clampOffset(s.offset, len(s.lines), s.room())
}

// room is the rows the summary's text gets: all of them when it fits,
// else one less, for the line that says there is more and where.
func (s *summaryScreen) room() int {
	if len(s.lines) <= s.h {
		return s.h
	}
	return max(s.h-1, 1)
}

func (s *summaryScreen) Crumb() string { return "summary" }

func (s *summaryScreen) TakesText() bool { return false }

func (s *summaryScreen) ShortHelp() []key.Binding {
	k := s.Keys
	b := []key.Binding{withHelp(k.Back, "back to the run"), k.Troubleshoot}
	if s.canServe() {
		b = append(b, s.own.Serve)
	}
	if len(s.lines) > s.h {
		b = append(b, k.Up, k.Down)
	}
	return append(b, k.Help, k.Quit)
}

// canServe says the run built a track haloforge serve can run.
func (s *summaryScreen) canServe() bool {
	return s.rs.Failed() == nil && s.rs.Err == nil && serve.EngineOf(s.plan.Track.ID) != ""
}

func (s *summaryScreen) FullHelp() [][]key.Binding {
	return [][]key.Binding{s.ShortHelp(), scrollHelp(s.Keys)}
}

func (s *summaryScreen) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	switch {
	case key.Matches(k, s.Keys.Back):
		return closeScreen
	case key.Matches(k, s.Keys.Troubleshoot):
		if f := s.rs.Failed(); f != nil {
			return troubleshootStep(s.common, f)
		}
		for _, st := range s.rs.Steps {
			if len(st.Findings) > 0 {
				return troubleshootStep(s.common, st)
			}
		}
		return troubleshootStep(s.common, nil)
	case key.Matches(k, s.own.Serve) && s.canServe():
		return open(newServeScreen(s.common, s.plan.Track.ID))
	case scrollBy(s.Keys, k, &s.offset, s.room()):
		s.offset = clampOffset(s.offset, len(s.lines), s.room())
	}
	return nil
}

func (s *summaryScreen) View() string {
	visible, off := window(s.lines, s.offset, s.room())
	if len(s.lines) <= s.h {
		return strings.Join(visible, "\n")
	}
	more := "↑/↓ PgUp/PgDn g/G"
	if off+len(visible) < len(s.lines) {
		more = "more below: " + more
	}
	return strings.Join(visible, "\n") + "\n" + s.Styles.Subtle.Render(ansiCut(fmt.Sprintf("lines %d–%d of %d · %s", off+1, off+len(visible), len(s.lines), more), s.w))
}

// installedBlock is what the track holds on disk, created by haloforge:
// each item with its size and the total, and the command that removes
// them; "" when nothing is recorded or no command can be suggested.
func installedBlock(items []installed.Item, clean string, st Styles, width int) string {
	lines := linemode.InstalledLines(items, clean)
	if len(lines) == 0 || clean == "" {
		return ""
	}
	out := []string{"", st.Bold.Render("Installed") + st.Subtle.Render("  ("+clean+" removes it)")}
	for _, l := range lines[1:] {
		out = append(out, hardLines(l, width, 4, plainText)...)
	}
	return strings.Join(out, "\n")
}

// insertBefore puts block before the first line that starts with head, or
// at the end when none does.
func insertBefore(lines []string, head string, block []string) []string {
	for i, l := range lines {
		if strings.HasPrefix(l, head) {
			if i > 0 && lines[i-1] == "" {
				i-- // keep the blank line above the next heading
			}
			return append(lines[:i:i], append(block, lines[i:]...)...)
		}
	}
	return append(lines, block...)
}

// summaryText renders the whole summary; the screen windows it.
func summaryText(rs *runState, p *Plan, resume string, demo bool, st Styles, width int) string {
	var b strings.Builder
	t := p.Track
	failed := rs.Failed()
	switch {
	case failed != nil:
		b.WriteString(st.Fail.Render("✗ "+t.ID+" failed at "+failed.ID) + "\n")
	case rs.Err != nil:
		b.WriteString(st.Fail.Render("✗ "+t.ID+": "+rs.Err.Error()) + "\n")
	case len(rs.NotVerified()) > 0:
		b.WriteString(st.Warn.Render("⚠ "+t.ID+" is built, not verified: "+strings.Join(rs.NotVerified(), ", ")) + "\n")
	default:
		b.WriteString(st.OK.Render("✓ "+t.ID+" is built") + "\n")
	}
	b.WriteString("\n" + st.Bold.Render("Results") + "\n")
	for _, s := range rs.Steps {
		b.WriteString(summaryStepLine(s, st, width) + "\n")
	}
	b.WriteString(nextBlock(rs, p, resume, demo, st, width))
	if len(rs.RunDirs) > 0 {
		b.WriteString("\n" + st.Bold.Render("Artifacts") + st.Subtle.Render("  (report.json and one <step>.log per step in each run)") + "\n")
		for i, d := range rs.RunDirs {
			label := "run     "
			if len(rs.RunDirs) > 1 {
				label = fmt.Sprintf("run %d/%d ", i+1, len(rs.RunDirs))
			}
			b.WriteString(strings.Join(hardLines("  "+label+d, width, 2+len(label), plainText), "\n") + "\n")
		}
		if failed != nil && failed.Log != "" {
			b.WriteString(strings.Join(hardLines("  log     "+failed.Log, width, 10, plainText), "\n") + "\n")
		} else if last := rs.RunDirs[len(rs.RunDirs)-1]; last != "" {
			b.WriteString(strings.Join(hardLines("  report  "+filepath.Join(last, "report.json"), width, 10, plainText), "\n") + "\n")
		}
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	for i, l := range lines {
		lines[i] = ansiCutTail(l, width)
	}
	return strings.Join(lines, "\n")
}

// nextBlock says what to type next: the track's commands once built, the
// resume and diagnose commands after a failure, each alone on its line so
// that it can be copied as it is.
func nextBlock(rs *runState, p *Plan, resume string, demo bool, st Styles, width int) string {
	var b strings.Builder
	failed := rs.Failed()
	// A command wider than the screen breaks between its words with " \"
	// (commandLines), so it still copies and runs as one.
	cmdLine := func(c string) {
		for _, l := range commandLines("$ "+c, width, 2) {
			b.WriteString(st.Key.Render(l) + "\n")
		}
	}
	switch {
	case failed != nil && demo:
		b.WriteString("\n" + st.Bold.Render("Next") + "\n")
		for _, l := range text.ProseRows("esc, then r: the demo applies the fix and retries. `haloforge demo` starts the story again.", max(width-2, 20)) {
			b.WriteString("  " + st.Subtle.Render(l) + "\n")
		}
	case failed != nil:
		b.WriteString("\n" + st.Bold.Render("Next") + st.Subtle.Render("  (after the fix; t shows it)") + "\n")
		if resume != "" {
			cmdLine(resume)
		}
		cmdLine("haloforge diagnose " + cmp.Or(failed.Log, rs.RunDir))
	case rs.Err == nil && len(p.Next) > 0:
		b.WriteString("\n" + st.Bold.Render("Next") + "\n")
		for _, c := range p.Next {
			cmdLine(c)
		}
		if hint := modelHint(p); hint != "" {
			for _, l := range text.ProseRows(hint, max(width-2, 20)) {
				b.WriteString("  " + st.Subtle.Render(l) + "\n")
			}
		}
		if demo {
			for _, l := range text.ProseRows("(the demo installed nothing: on your machine these run in the box the build made)", max(width-2, 20)) {
				b.WriteString("  " + st.Subtle.Render(l) + "\n")
			}
		}
	}
	return b.String()
}

// modelHint explains the <model> placeholder of the next commands: what to
// put there, and a small model the track's verify step already used.
func modelHint(p *Plan) string {
	uses := false
	for _, c := range p.Next {
		uses = uses || strings.Contains(c, "<model>")
	}
	if !uses {
		return ""
	}
	hint := "<model>: a Hugging Face model ID or a local path"
	if slices.ContainsFunc(p.Next, func(c string) bool { return strings.Contains(c, "<model>.gguf") }) {
		// llama.cpp's commands take a file, not a Hub ID
		return "<model>.gguf: the path of a GGUF model file (under ~/models for the podman line); start with a small one, then raise the context"
	}
	for _, s := range p.Steps {
		if m := s.PinValues["VERIFY_MODEL"]; m != "" {
			return hint + ", e.g. " + m + " (the small model verify used); start small, then raise the context"
		}
	}
	return hint + "; start with a small one, then raise the context"
}

func summaryStepLine(s *stepRun, st Styles, width int) string {
	var mark, what string
	switch s.State {
	case stateOK:
		mark, what = st.OK.Render("✓"), text.Duration(s.Duration)
	case stateFailed:
		mark, what = st.Fail.Render("✗"), fmt.Sprintf("failed: exit %d after %s", s.ExitCode, text.Duration(s.Duration))
		if s.Optional {
			mark, what = st.Warn.Render("!"), fmt.Sprintf("failed (optional: the run went on without it): exit %d after %s", s.ExitCode, text.Duration(s.Duration))
		}
	case stateSkipped:
		mark, what = st.Skip.Render("↷"), cmp.Or(s.Reason, "skipped")
		if s.Optional && s.Reason == "skipped by you" {
			what += " (optional)"
		}
	case stateInterrupted:
		mark, what = st.Warn.Render("■"), "stopped"
	case stateNotVerified:
		mark, what = st.Warn.Render("⚠"), "not verified: "+strings.Join(s.NotVerified, "; ")
	default:
		mark, what = st.Skip.Render("·"), "not run"
	}
	if len(s.Earlier) > 0 && (s.State == stateOK || s.State == stateNotVerified || s.State == stateFailed) {
		what += st.Subtle.Render(fmt.Sprintf(" (%s attempt; %s)", ordinal(len(s.Earlier)+1), earlierText(s.Earlier)))
	}
	// What happened wraps under its column: "exit 1 after 3s" is the end
	// of the sentence, not something to cut.
	rows := hangLines(what, width-21, 0)
	line := fmt.Sprintf("  %s %s %s", mark, padRight(s.ID, 16), rows[0])
	for _, r := range rows[1:] {
		line += "\n" + strings.Repeat(" ", 21) + r
	}
	family := st.HintTitle
	if s.Optional { // the run went on: a warning, as the step's mark
		family = st.Warn.Bold(true)
	}
	for _, f := range s.Findings {
		line += "\n      " + family.Render(f.Family)
		for _, l := range text.Wrap(f.Summary, max(width-8, 20), "") {
			line += "\n        " + st.Subtle.Render(l)
		}
	}
	return line
}

// earlierText lists how earlier attempts ended: "1st: family".
func earlierText(earlier []string) string {
	parts := make([]string, len(earlier))
	for i, e := range earlier {
		parts[i] = ordinal(i+1) + ": " + e
	}
	return strings.Join(parts, ", ")
}

func ordinal(n int) string {
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return fmt.Sprintf("%dth", n)
	case n%10 == 1:
		return fmt.Sprintf("%dst", n)
	case n%10 == 2:
		return fmt.Sprintf("%dnd", n)
	case n%10 == 3:
		return fmt.Sprintf("%drd", n)
	}
	return fmt.Sprintf("%dth", n)
}
