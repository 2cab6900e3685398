package tui

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
)

// planScreen shows what a run will do: each step with whether it runs and
// why, the pins it reads, the floating pins flagged, what it costs (time
// from earlier runs, disk), and what stops it: blocking checks, another
// build, a value the track needs (asked for here). Enter starts.
type planScreen struct {
	*common
	own      planKeys
	plan     *Plan
	blocking []detect.Check // the track's blocking checks that fail on this machine
	warned   bool           // Enter was pressed once despite them
	input    prompt         // asks for a value the plan needs
	asking   string         // the pin the input is for
	lines    []string       // the whole plan at the current width
	offset   int
	w, h     int
}

// planKeys are the plan's own keys: p opens the known-good pin sets.
type planKeys struct{ Sets key.Binding }

func newPlanScreen(c *common, p *Plan, det *Detection) *planScreen {
	return &planScreen{common: c, own: planKeys{Sets: key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pin sets"))}, plan: p, blocking: steps.FailingChecks(p.Track, det.report())}
}

// Replan shows the plan again after a value it needed was set.
func (s *planScreen) Replan(p *Plan) {
	s.plan = p
	s.SetSize(s.w, s.h)
}

func (s *planScreen) SetSize(w, h int) {
	s.w, s.h = w, h
	s.input.SetWidth(max(w-30, 10))
	s.lines = nil
	s.lines = append(s.lines, s.stopLines()...)
	s.lines = append(s.lines, pinWarningLines(s.plan.PinWarning, w, s.Styles)...) // tui/sets.go
	s.lines = append(s.lines, strings.Split(planText(s.plan, s.Styles, w), "\n")...)
	s.offset = clampOffset(s.offset, len(s.lines), s.room())
}

// room is how many plan lines fit above the screen's bottom line.
func (s *planScreen) room() int { return max(s.h-1, 1) }

func (s *planScreen) Crumb() string { return "plan" }

func (s *planScreen) TakesText() bool { return s.input.IsOpen() }

func (s *planScreen) ShortHelp() []key.Binding {
	k := s.Keys
	if s.input.IsOpen() {
		return s.input.Help(k)
	}
	enter := withHelp(k.Enter, "start")
	switch {
	case s.plan.ReadOnly != "" || s.plan.Busy != "":
		enter = key.NewBinding(key.WithDisabled())
	case len(s.plan.Needs) > 0:
		enter = withHelp(k.Enter, "set "+s.plan.Needs[0])
	case len(s.blocking) > 0 && s.warned:
		enter = withHelp(k.Enter, "run anyway")
	}
	b := []key.Binding{enter, withHelp(k.Back, "pick another track"), s.own.Sets}
	if len(s.lines) > s.room() {
		b = append(b, k.Down, k.Up)
	}
	return append(b, k.Help, k.Quit)
}

func (s *planScreen) FullHelp() [][]key.Binding {
	return [][]key.Binding{s.ShortHelp(), scrollHelp(s.Keys)}
}

func (s *planScreen) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	if s.input.IsOpen() {
		return s.inputKey(k)
	}
	switch {
	case key.Matches(k, s.Keys.Enter):
		return s.enter()
	case key.Matches(k, s.Keys.Back):
		return closeScreen
	case key.Matches(k, s.own.Sets):
		return open(newSetsScreen(s.common, s.plan.Track.ID))
	case scrollBy(s.Keys, k, &s.offset, s.room()):
		s.offset = clampOffset(s.offset, len(s.lines), s.room())
	}
	return nil
}

// enter starts the run once nothing stops it; a value the plan needs is
// asked for first, and failing blocking checks need a second Enter.
func (s *planScreen) enter() tea.Cmd {
	p := s.plan
	switch {
	case p.ReadOnly != "" || p.Busy != "":
		return nil
	case len(p.Needs) > 0:
		n := p.Needs[0]
		s.asking = n
		s.input = newPrompt(n+"=", steps.InputExample(n), "set it", "cancel").completingPaths()
		s.input.SetWidth(max(s.w-30, 10))
		return s.input.Open()
	case len(s.blocking) > 0 && !s.warned:
		s.warned = true
		return nil
	}
	return send(startRunMsg{plan: p, ignoreChecks: len(s.blocking) > 0})
}

func (s *planScreen) inputKey(k tea.KeyPressMsg) tea.Cmd {
	res, cmd := s.input.Key(k, s.Keys)
	if res != promptSubmitted {
		return cmd
	}
	v := strings.TrimSpace(s.input.Value())
	if v == "" {
		return nil
	}
	s.input.Close()
	return send(setPinMsg{track: s.plan.Track.ID, assign: s.asking + "=" + v})
}

func (s *planScreen) View() string {
	visible, off := window(s.lines, s.offset, s.room())
	var foot string
	switch {
	case s.input.IsOpen():
		foot = s.input.View()
	case s.plan.ReadOnly != "":
		foot = s.Styles.Warn.Render("This plan is for reading here.") + s.Styles.Subtle.Render("   esc: pick another track")
	case s.plan.Busy != "":
		foot = s.Styles.Fail.Render("Another build runs: enter starts nothing until it ends.") + s.Styles.Subtle.Render("   esc: back")
	case len(s.plan.Needs) > 0:
		foot = s.Styles.Warn.Render("enter: set "+s.plan.Needs[0]+" first") + s.Styles.Subtle.Render("   esc: pick another track")
	case s.warned:
		foot = s.Styles.Warn.Render("enter again: run anyway (like build --ignore-checks)") + s.Styles.Subtle.Render("   esc: pick another track")
	default:
		foot = s.Styles.Subtle.Render("enter: start the run   esc: pick another track")
	}
	if len(s.lines) > s.room() && !s.input.IsOpen() {
		foot = s.Styles.Subtle.Render(fmt.Sprintf("↑/↓ %d–%d of %d   ", off+1, off+len(visible), len(s.lines))) + foot
	}
	return strings.Join(visible, "\n") + "\n" + ansiCutTail(foot, s.w)
}

// stopLines say what stops the run or comes first: another build, a value
// the track needs, the blocking checks that fail, notes about where the
// plan comes from. Wrapped, never cut.
func (s *planScreen) stopLines() []string {
	st, p, w := s.Styles, s.plan, max(s.w, 20)
	var out []string
	add := func(style func(...string) string, s string) {
		for _, l := range text.ProseRows(s, w) {
			out = append(out, style(l))
		}
	}
	if p.Busy != "" {
		add(st.Fail.Render, "✗ "+p.Busy)
	}
	if p.ReadOnly != "" {
		add(st.Warn.Render, "! "+p.ReadOnly)
	}
	for _, n := range p.Needs {
		how := "enter asks for it."
		if p.ReadOnly != "" {
			how = "a build sets it with --set " + n + "=" + steps.InputExample(n) + "."
		}
		add(st.Warn.Render, fmt.Sprintf("! %s needs %s (%s), which is empty: %s", p.Track.ID, n, pinHelp(n), how))
	}
	if len(s.blocking) > 0 {
		names := make([]string, len(s.blocking))
		for i, c := range s.blocking {
			names[i] = c.ID.Label()
		}
		add(st.Fail.Render, "✗ Blocking checks fail: "+strings.Join(names, ", ")+". The build stops at them; the detection screen has the fixes.")
		for _, c := range s.blocking {
			add(st.Subtle.Render, "  "+c.ID.Title()+": "+c.Summary)
		}
	}
	for _, n := range p.Notes {
		add(st.Warn.Render, "note: "+n)
	}
	if len(out) > 0 {
		out = append(out, "")
	}
	return out
}

// planText renders the whole plan; the screen windows it.
func planText(p *Plan, st Styles, width int) string {
	var b strings.Builder
	runs := 0
	for _, s := range p.Steps {
		if s.WillRun {
			runs++
		}
	}
	b.WriteString(st.Title.Render(p.Track.ID) + "  " + p.Track.Title + "\n")
	b.WriteString(st.Subtle.Render(RunWords(runs, len(p.Steps))) + "\n")
	for _, c := range costLines(p) {
		b.WriteString(st.Subtle.Render(wrap(c, max(width, 20))) + "\n")
	}
	b.WriteString("\n")
	for i, s := range p.Steps {
		mark := st.Running.Render("▶ runs    ")
		if !s.WillRun {
			mark = st.Skip.Render("= cached  ")
		}
		title := s.Title
		if s.Optional && !strings.Contains(strings.ToLower(title), "optional") {
			title += st.Subtle.Render(" (optional)")
		}
		b.WriteString(ansiCutTail(fmt.Sprintf("%d. %s %s %s", i+1, mark, padRight(st.Bold.Render(s.ID), 16), title), width) + "\n")
		b.WriteString("              " + st.Subtle.Render(ansiCutTail(s.Reason, width-14)) + "\n")
		for _, l := range pinRows(s.PinValues, p.Floating, st, width-14) {
			b.WriteString("              " + l + "\n")
		}
	}
	if len(p.Floating) > 0 {
		b.WriteString("\n" + st.Warn.Render("! Floating pins (not reproducible): "+strings.Join(p.Floating, ", ")) + "\n")
		b.WriteString(st.Subtle.Render(wrap("  A branch or :latest tag can change under you; pin a commit SHA or digest in versions.env.", max(width, 20))) + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// RunWords says how many of a plan's steps run, in words that fit a
// first run as well as a rebuild; `haloforge plan` says it the same way.
func RunWords(runs, total int) string {
	switch runs {
	case total:
		return fmt.Sprintf("All %d steps run.", total)
	case 0:
		return fmt.Sprintf("All %d steps are up to date: nothing runs (build --from STEP runs steps again).", total)
	}
	return fmt.Sprintf("%d of %d steps run; %d are up to date with their pins.", runs, total, total-runs)
}

// costLines say what the run costs: time from the steps' last successes
// (none on a first run) and the disk the track needs.
func costLines(p *Plan) []string {
	var parts []string
	var sum time.Duration
	unknown := 0
	for _, s := range p.Steps {
		if !s.WillRun {
			continue
		}
		if last := p.Last[s.ID]; last > 0 {
			sum += last
		} else {
			unknown++
		}
	}
	switch {
	case sum > 0 && unknown == 0:
		parts = append(parts, "Time: about "+text.Duration(sum)+" (the steps' last runs)")
	case sum > 0:
		parts = append(parts, fmt.Sprintf("Time: at least %s, plus %s never timed", text.Duration(sum), text.Plural(unknown, "step")))
	case unknown > 0:
		parts = append(parts, "Time: no estimate before a first run (haloforge times each step)")
	}
	for _, r := range p.Track.Requires {
		if strings.Contains(r, "disk") {
			// "about 30 GB free disk" reads as "Disk: needs about 30 GB free".
			parts = append(parts, "Disk: needs "+strings.Replace(r, " free disk", " free", 1))
		}
	}
	return parts
}

// pinHelp is what a pin is, from its spec.
func pinHelp(name string) string {
	spec, _ := pins.Lookup(name)
	return spec.Help
}

// shortPin is pins.Short marked with "…" when it shortened the value (a
// commit SHA or a digest), so that a cut digest never reads as whole.
func shortPin(v string) string {
	if s := pins.Short(v); s != v {
		return s + "…"
	}
	return v
}

// pinRows lists NAME=value pairs, sorted, floating ones flagged, as many
// to a row as fit: a pair is never broken between rows it fits in (a URL
// stays whole); one wider than a row goes on, marked ↪, on the next.
func pinRows(values map[string]string, floating []string, st Styles, width int) []string {
	var rows []string
	cur, curW := "", 0
	for _, n := range slices.Sorted(maps.Keys(values)) {
		text := n + "=" + shortPin(values[n])
		style := st.Subtle
		if slices.Contains(floating, n) {
			text, style = text+" (floating)", st.Warn
		}
		w := len([]rune(text))
		if curW > 0 && curW+2+w > width {
			rows = append(rows, cur)
			cur, curW = "", 0
		}
		if w > width {
			for _, piece := range readRows([]string{text}, width) {
				rows = append(rows, style.Render(piece))
			}
			continue
		}
		if curW > 0 {
			cur, curW = cur+"  ", curW+2
		}
		cur, curW = cur+style.Render(text), curW+w
	}
	if cur != "" {
		rows = append(rows, cur)
	}
	return rows
}
