package tui

import (
	"cmp"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/internal/text"
)

// detectScreen shows the GPU card and the doctor checks with their fixes.
// A fix's commands are never broken inside a word or a quoted string
// (fixRows); a row still wider than the screen scrolls sideways (←/→).
type detectScreen struct {
	*common
	own     detectKeys
	det     *Detection
	err     error
	demo    bool // d runs the demo (offered when there is no AMD GPU)
	spinner spinner.Model
	card    string   // the GPU card, rendered at the current width
	checks  []string // the checks list, one entry per line
	wide    bool     // a row is wider than the screen: ←/→ scroll
	room    int      // lines of the checks list that fit under the card
	offset  int      // scroll of the checks list
	xoff    int      // sideways scroll of the checks list
	w, h    int
}

// detectKeys are the detection screen's own keys: d runs the demo where
// there is no AMD GPU.
type detectKeys struct{ Demo key.Binding }

func newDetectScreen(c *common, demo bool) *detectScreen {
	return &detectScreen{common: c, own: detectKeys{Demo: key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "run the demo"))},
		demo: demo, spinner: spinner.New(spinner.WithSpinner(spinner.MiniDot))}
}

// Init starts the spinner that turns while detection runs.
func (s *detectScreen) Init() tea.Cmd { return s.spinner.Tick }

func (s *detectScreen) SetSize(w, h int) {
	s.w, s.h = w, h
	s.layout()
}

// layout renders the card and the checks for the size and clamps the scroll.
func (s *detectScreen) layout() {
	if s.det == nil {
		return
	}
	s.card = s.cardView()
	s.checks = strings.Split(s.checksView(s.w), "\n")
	s.wide = false
	for _, l := range s.checks {
		s.wide = s.wide || ansi.StringWidth(l) > s.w
	}
	s.room = max(s.h-lineCount(s.card)-1-lineCount(s.footerLine()), 3)
	s.offset = clampOffset(s.offset, len(s.checks), s.room)
}

func (s *detectScreen) Crumb() string { return "detect" }

func (s *detectScreen) TakesText() bool { return false }

func (s *detectScreen) ShortHelp() []key.Binding {
	k := s.Keys
	if s.det == nil && s.err == nil {
		return []key.Binding{k.Quit}
	}
	b := []key.Binding{withHelp(k.Enter, "pick a track")}
	if a, ok := s.hostFixKey(); ok { // tui/hostfix.go
		b = append(b, a)
	}
	if s.offerDemo() {
		b = append(b, s.own.Demo)
	}
	if len(s.checks) > s.room {
		b = append(b, k.Down, k.Up)
	}
	if s.wide {
		b = append(b, k.Left)
	}
	return append(b, k.Troubleshoot, k.Help, k.Quit)
}

// FullHelp lists only the keys that work on this screen now: a when there
// are host fixes, d when the demo is offered.
func (s *detectScreen) FullHelp() [][]key.Binding {
	k := s.Keys
	var more []key.Binding
	if a, ok := s.hostFixKey(); ok {
		more = append(more, a)
	}
	if s.offerDemo() {
		more = append(more, s.own.Demo)
	}
	return [][]key.Binding{{withHelp(k.Enter, "pick a track"), k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Left},
		append(more, k.Troubleshoot, k.Help, k.Quit)}
}

// hostFixKey is a with what it does here: apply the host fixes haloforge
// makes, or show the ones left to the user; ok is false when there are none.
func (s *detectScreen) hostFixKey() (key.Binding, bool) {
	switch {
	case s.det == nil:
		return key.Binding{}, false
	case s.det.HostFixes > 0:
		return s.Keys.Apply, true
	case s.det.HostFixesByHand > 0:
		return withHelp(s.Keys.Apply, "show host fixes (by hand)"), true
	}
	return key.Binding{}, false
}

// hostFixOffer is the line next to the checks that names a's action.
func (s *detectScreen) hostFixOffer() string {
	switch d := s.det; {
	case d.HostFixes > 0:
		return fmt.Sprintf("a: apply these fixes (%s)", text.Plural(d.HostFixes, "host change"))
	case d.HostFixesByHand > 0:
		if d.HostFixesByHand == 1 {
			return "a: show the host fix (by hand)"
		}
		return fmt.Sprintf("a: show the %d host fixes (by hand)", d.HostFixesByHand)
	}
	return ""
}

// report is the detection's report, nil when there was no detection.
func (d *Detection) report() *detect.Report {
	if d == nil {
		return nil
	}
	return d.Report
}

// gfx is the detected GPU's target, "" when there was no detection or no
// GPU, or its target is not known.
func (d *Detection) gfx() string {
	if d == nil {
		return ""
	}
	return d.PrimaryGFX()
}

// offerDemo is true on a machine without an AMD GPU, when a demo can run.
func (s *detectScreen) offerDemo() bool { return s.demo && s.det != nil && s.det.Primary() == nil }

func (s *detectScreen) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case detectedMsg:
		s.det, s.err = msg.det, msg.err
		s.layout()
		return nil
	case spinner.TickMsg:
		if s.det != nil || s.err != nil {
			return nil
		}
		var cmd tea.Cmd
		s.spinner, cmd = s.spinner.Update(msg)
		return cmd
	case tea.KeyPressMsg:
		return s.onKey(msg)
	}
	return nil
}

func (s *detectScreen) onKey(msg tea.KeyPressMsg) tea.Cmd {
	k := s.Keys
	if scrollBy(k, msg, &s.offset, s.room) {
		s.offset = clampOffset(s.offset, len(s.checks), s.room)
		return nil
	}
	switch {
	case key.Matches(msg, k.Left):
		s.xoff = max(s.xoff-s.w/2, 0)
	case key.Matches(msg, k.Right) && s.wide:
		s.xoff += s.w / 2
	case key.Matches(msg, s.own.Demo) && s.offerDemo():
		return send(runDemoMsg{})
	case key.Matches(msg, k.Troubleshoot):
		return troubleshootStep(s.common, nil)
	case key.Matches(msg, k.Apply) && s.det != nil && s.det.HostFixes+s.det.HostFixesByHand > 0:
		return open(newHostFixScreen(s.common))
	case key.Matches(msg, k.Enter):
		if s.det != nil || s.err != nil {
			rec := ""
			if s.det != nil {
				rec = s.det.RecommendedTrack
			}
			return send(openPickerMsg{preselect: rec})
		}
	}
	return nil
}

func (s *detectScreen) View() string {
	if s.det == nil && s.err == nil {
		return s.spinner.View() + " Looking at your GPU, kernel and memory settings…"
	}
	var b strings.Builder
	if s.err != nil {
		b.WriteString(s.Styles.Fail.Render(wrap("Detection failed: "+s.err.Error(), s.w)) + "\n")
		b.WriteString(s.Styles.Subtle.Render("You can still pick a track; the build runs the doctor checks again.") + "\n")
		return b.String()
	}
	visible, off := window(s.checks, s.offset, s.room)
	b.WriteString(s.card + "\n")
	for i, l := range visible {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s.cut(l))
	}
	if len(s.checks) > s.room {
		b.WriteString("\n" + s.Styles.Subtle.Render(fmt.Sprintf("  ↑/↓ %d–%d of %d lines", off+1, off+len(visible), len(s.checks))))
	}
	b.WriteString("\n" + s.footerLine())
	return b.String()
}

// cut shows a row of the checks at the sideways scroll: a row that goes
// on past the edge ends in "→", one that starts off to the left in "←".
func (s *detectScreen) cut(l string) string {
	w := ansi.StringWidth(l)
	if s.xoff > 0 {
		if s.xoff >= w {
			return ""
		}
		l = s.Styles.Subtle.Render("←") + ansi.Cut(l, s.xoff+1, w)
		w -= s.xoff
	}
	if w > s.w {
		return ansi.Truncate(l, s.w-1, "") + s.Styles.Key.Render("→")
	}
	return l
}

// cardView renders the GPU card (or the lack of one).
func (s *detectScreen) cardView() string {
	d := s.det
	width := min(s.w-2, 72)
	if d.Primary() == nil {
		lines := []string{
			s.Styles.Fail.Render("No AMD GPU found") + s.Styles.Subtle.Render("  ("+d.Source+")"),
			"haloforge builds for AMD GPUs (Strix Halo, gfx1151, first of all).",
			"See the whole wizard on sample data: " + s.Styles.Key.Render("haloforge demo"),
		}
		if s.demo {
			lines[2] += s.Styles.Subtle.Render(" (press d)")
		}
		return s.Styles.Card.Width(width).Render(strings.Join(lines, "\n"))
	}
	return s.Styles.Card.Width(width).Render(gpuCard(d, s.Styles))
}

func gpuCard(d *Detection, st Styles) string {
	g := d.Primary()
	head := st.Bold.Render(cmp.Or(deref(g.Name), "AMD GPU")) + "  " + st.Title.Render(cmp.Or(deref(g.GFX), "gfx unknown"))
	var facts []string
	if g.PCIID != nil && *g.PCIID != "" {
		facts = append(facts, "PCI "+*g.PCIID)
	}
	if deref(g.Integrated) {
		facts = append(facts, "integrated (unified memory)")
	}
	if deref(g.ComputeUnits) > 0 {
		facts = append(facts, fmt.Sprintf("%d CUs", *g.ComputeUnits))
	}
	var mem []string
	if deref(g.VRAMBytes) > 0 {
		mem = append(mem, "VRAM "+text.Bytes(*g.VRAMBytes))
	}
	if deref(g.GTTBytes) > 0 {
		mem = append(mem, "GTT "+text.Bytes(*g.GTTBytes))
	}
	lines := []string{head}
	if len(facts) > 0 {
		lines = append(lines, strings.Join(facts, " · "))
	}
	if len(mem) > 0 {
		lines = append(lines, strings.Join(mem, " · "))
	}
	if k := deref(d.Kernel.Release); k != "" {
		lines = append(lines, "kernel "+k)
	}
	lines = append(lines, st.Subtle.Render(d.Source))
	return strings.Join(lines, "\n")
}

// checkNameWidth is the column of the checks' names.
const checkNameWidth = 18

// checksView lists the checks in doctor's order, named as doctor names
// them, each fix under its check: prose wrapped, commands whole.
func (s *detectScreen) checksView(width int) string {
	var b strings.Builder
	head := s.Styles.Bold.Render("Checks") + s.Styles.Subtle.Render("  "+checkCounts(s.det.Checks))
	if o := s.hostFixOffer(); o != "" { // the host-fix screen (tui/hostfix.go)
		offer := s.Styles.Warn.Render(o)
		// The offer on a line of its own when the counts leave it no room:
		// cut, it would lose the key's meaning.
		if ansi.StringWidth(head)+3+ansi.StringWidth(offer) <= width {
			head += "   " + offer
		} else {
			head += "\n" + offer
		}
	}
	b.WriteString(head + "\n")
	indent := strings.Repeat(" ", 3+checkNameWidth)
	shown, noAMD := detect.SplitNoAMD(s.det.Checks)
	for _, c := range shown {
		for i, l := range text.Wrap(c.Summary, max(width-len(indent), 20), "") {
			if i == 0 {
				b.WriteString(" " + checkMark(c.Status, s.Styles) + " " + padRight(c.ID.Title(), checkNameWidth) + l + "\n")
			} else {
				b.WriteString(indent + l + "\n")
			}
		}
		if c.Fix != "" && (c.Status == detect.StatusWarn || c.Status == detect.StatusFail) {
			for i, l := range text.FixRows(c.Fix, width-11) {
				label := "     "
				if i == 0 {
					label = "fix: "
				}
				b.WriteString("     " + s.Styles.Subtle.Render(label) + l + "\n")
			}
		}
	}
	if len(noAMD) > 0 {
		b.WriteString(" " + checkMark(detect.StatusSkip, s.Styles) + " " + s.Styles.Subtle.Render(wrap(text.Plural(len(noAMD), "check")+" about an AMD GPU skipped: this machine has none", max(width-3, 20))) + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func (s *detectScreen) footerLine() string {
	rec := s.det.RecommendedTrack
	line := s.Styles.Subtle.Render("No track fits this machine yet.   enter: see the tracks")
	if rec != "" {
		line = "Recommended track: " + s.Styles.Title.Render(rec) + s.Styles.Subtle.Render("   enter: pick a track")
	}
	if s.wide {
		line += "\n" + s.Styles.Subtle.Render("←/→ shows the rest of a long row; `haloforge doctor` prints every fix whole.")
	}
	return line
}

// checkCounts sums the checks up, those that could not run included.
func checkCounts(cs []detect.Check) string {
	var ok, warn, fail, skip int
	for _, c := range cs {
		switch c.Status {
		case detect.StatusOK:
			ok++
		case detect.StatusWarn:
			warn++
		case detect.StatusFail:
			fail++
		default:
			skip++
		}
	}
	s := fmt.Sprintf("%d ok · %d warn · %d fail", ok, warn, fail)
	if skip > 0 {
		s += fmt.Sprintf(" · %d not checked (–)", skip)
	}
	return s
}

func checkMark(status detect.Status, st Styles) string {
	switch status {
	case detect.StatusOK:
		return st.OK.Render("✓")
	case detect.StatusWarn:
		return st.Warn.Render("!")
	case detect.StatusFail:
		return st.Fail.Render("✗")
	default:
		return st.Skip.Render("–")
	}
}

func lineCount(s string) int { return strings.Count(s, "\n") + 1 }

// deref is what a fact of the report says, the zero value when no source
// stated it.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
