package tui

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/pins"
)

// planScreen shows what a run will do: each step with whether it runs and
// why, the pins it reads, and the floating pins flagged. Enter starts.
type planScreen struct {
	*common
	plan     *Plan
	blocking []Check  // the track's blocking checks that fail on this machine
	warned   bool     // Enter was pressed once despite them
	lines    []string // the whole plan at the current width
	offset   int
	w, h     int
}

func newPlanScreen(c *common, p *Plan, det *Detection) *planScreen {
	return &planScreen{common: c, plan: p, blocking: failingBlocking(p.Track.BlockingChecks, det)}
}

// failingBlocking returns the checks among ids whose status is fail: the
// ones that would stop `haloforge build`.
func failingBlocking(ids []string, det *Detection) []Check {
	if det == nil {
		return nil
	}
	var out []Check
	for _, c := range det.Checks {
		if c.Status == detect.StatusFail && slices.Contains(ids, c.ID) {
			out = append(out, c)
		}
	}
	return out
}

func (s *planScreen) SetSize(w, h int) {
	s.w, s.h = w, h
	s.lines = nil
	if len(s.blocking) > 0 {
		s.lines = append(s.lines, s.blockingLines()...)
	}
	s.lines = append(s.lines, pinWarningLines(s.plan.PinWarning, w, s.Styles)...) // tui/sets.go
	s.lines = append(s.lines, strings.Split(planText(s.plan, s.Styles, w), "\n")...)
	s.offset = clampOffset(s.offset, len(s.lines), s.h-1)
}

func (s *planScreen) Crumb() string { return "plan" }

func (s *planScreen) TakesText() bool { return false }

func (s *planScreen) ShortHelp() []key.Binding {
	return []key.Binding{withHelp(s.Keys.Enter, "start"), s.Keys.Up, s.Keys.Down, s.Keys.Sets, s.Keys.Back, s.Keys.Help, s.Keys.Quit}
}

func (s *planScreen) FullHelp() [][]key.Binding { return [][]key.Binding{s.ShortHelp()} }

func (s *planScreen) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	switch {
	case key.Matches(k, s.Keys.Enter):
		if len(s.blocking) > 0 && !s.warned {
			s.warned = true
			return nil
		}
		return send(startRunMsg{plan: s.plan})
	case key.Matches(k, s.Keys.Back):
		return closeScreen
	case key.Matches(k, s.Keys.Sets):
		return send(openSetsMsg{track: s.plan.Track.ID})
	case scrollBy(s.Keys, k, &s.offset, s.h):
		s.offset = clampOffset(s.offset, len(s.lines), s.h-1)
	}
	return nil
}

func (s *planScreen) View() string {
	visible, off := window(s.lines, s.offset, s.h-1)
	foot := s.Styles.Subtle.Render("enter: start the run   esc: pick another track")
	if s.warned {
		foot = s.Styles.Warn.Render("enter again: run anyway (like build --ignore-checks)   esc: pick another track")
	}
	if len(s.lines) > s.h-1 {
		foot = s.Styles.Subtle.Render(fmt.Sprintf("↑/↓ %d–%d of %d   ", off+1, off+len(visible), len(s.lines))) + foot
	}
	return strings.Join(visible, "\n") + "\n" + foot
}

// blockingLines warn about the checks that `build` would stop at.
func (s *planScreen) blockingLines() []string {
	ids := make([]string, len(s.blocking))
	for i, c := range s.blocking {
		ids[i] = c.ID
	}
	out := []string{s.Styles.Fail.Render("✗ Blocking checks fail: " + strings.Join(ids, ", ") + " (build stops at them)")}
	for _, c := range s.blocking {
		if c.Fix != "" {
			first, _, _ := strings.Cut(c.Fix, "\n")
			out = append(out, ansiCut(s.Styles.Subtle.Render("  "+c.ID+": "+first), s.w))
		}
	}
	return append(out, "")
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
	b.WriteString(st.Subtle.Render(fmt.Sprintf("%d of %d steps run; the others are up to date with their pins.", runs, len(p.Steps))) + "\n\n")
	for i, s := range p.Steps {
		mark := st.Running.Render("▶ runs    ")
		if !s.WillRun {
			mark = st.Skip.Render("= cached  ")
		}
		title := s.Title
		if s.Optional && !strings.Contains(strings.ToLower(title), "optional") {
			title += st.Subtle.Render(" (optional)")
		}
		b.WriteString(fmt.Sprintf("%d. %s %s %s\n", i+1, mark, padRight(st.Bold.Render(s.ID), 16), title))
		b.WriteString("              " + st.Subtle.Render(s.Reason) + "\n")
		if pins := pinLine(s.Pins, p.Floating, st); pins != "" {
			for _, l := range strings.Split(wrap(pins, width-14), "\n") {
				b.WriteString("              " + l + "\n")
			}
		}
	}
	if len(p.Floating) > 0 {
		b.WriteString("\n" + st.Warn.Render("! Floating pins (not reproducible): "+strings.Join(p.Floating, ", ")) + "\n")
		b.WriteString(st.Subtle.Render("  A branch or :latest tag can change under you; pin a commit SHA or digest in versions.env.") + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// pinLine lists NAME=value pairs, sorted, floating ones flagged.
func pinLine(values map[string]string, floating []string, st Styles) string {
	names := slices.Sorted(maps.Keys(values))
	parts := make([]string, len(names))
	for i, n := range names {
		v := pins.Short(values[n])
		if slices.Contains(floating, n) {
			parts[i] = st.Warn.Render(n + "=" + v + " (floating)")
			continue
		}
		parts[i] = st.Subtle.Render(n + "=" + v)
	}
	return strings.Join(parts, "  ")
}
