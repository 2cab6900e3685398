package tui

import (
	"cmp"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"

	"github.com/haloforge/haloforge/detect"
)

// detectScreen shows the GPU card and the doctor checks with their fixes.
type detectScreen struct {
	*common
	det     *Detection
	err     error
	spinner spinner.Model
	card    string   // the GPU card, rendered at the current width
	checks  []string // the checks list, one entry per line
	room    int      // lines of the checks list that fit under the card
	offset  int      // scroll of the checks list
	w, h    int
}

func newDetectScreen(c *common) *detectScreen {
	return &detectScreen{common: c, spinner: spinner.New(spinner.WithSpinner(spinner.MiniDot))}
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
	s.room = max(s.h-lineCount(s.card)-2, 3)
	s.offset = clampOffset(s.offset, len(s.checks), s.room)
}

func (s *detectScreen) Crumb() string { return "detect" }

func (s *detectScreen) TakesText() bool { return false }

func (s *detectScreen) ShortHelp() []key.Binding {
	if s.det == nil {
		return []key.Binding{s.Keys.Quit}
	}
	if s.det.HostFixes > 0 { // tui/hostfix.go
		return []key.Binding{s.Keys.Enter, s.Keys.Apply, s.Keys.Up, s.Keys.Down, s.Keys.Troubleshoot, s.Keys.Help, s.Keys.Quit}
	}
	return []key.Binding{s.Keys.Enter, s.Keys.Up, s.Keys.Down, s.Keys.Troubleshoot, s.Keys.Help, s.Keys.Quit}
}

func (s *detectScreen) FullHelp() [][]key.Binding {
	return [][]key.Binding{{s.Keys.Enter, s.Keys.Up, s.Keys.Down}, {s.Keys.Troubleshoot, s.Keys.Help, s.Keys.Quit}}
}

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
	if scrollBy(s.Keys, msg, &s.offset, s.h) {
		s.offset = clampOffset(s.offset, len(s.checks), s.room)
		return nil
	}
	switch {
	case key.Matches(msg, s.Keys.Troubleshoot):
		return openTroubleshoot
	case key.Matches(msg, s.Keys.Apply) && s.det != nil && s.det.HostFixes > 0:
		return send(openHostFixMsg{})
	case key.Matches(msg, s.Keys.Enter):
		if s.det != nil || s.err != nil {
			rec := ""
			if s.det != nil {
				rec = s.det.Recommended
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
		b.WriteString(s.Styles.Fail.Render("Detection failed: "+s.err.Error()) + "\n")
		b.WriteString(s.Styles.Subtle.Render("You can still pick a track; the build runs the doctor checks again.") + "\n")
		return b.String()
	}
	visible, off := window(s.checks, s.offset, s.room)
	b.WriteString(s.card + "\n")
	b.WriteString(strings.Join(visible, "\n"))
	if len(s.checks) > s.room {
		b.WriteString("\n" + s.Styles.Subtle.Render(fmt.Sprintf("  ↑/↓ %d–%d of %d lines", off+1, off+len(visible), len(s.checks))))
	}
	b.WriteString("\n" + s.footerLine())
	return b.String()
}

// cardView renders the GPU card (or the lack of one).
func (s *detectScreen) cardView() string {
	d := s.det
	width := min(s.w-2, 72)
	if d.GPU == nil {
		lines := []string{
			s.Styles.Fail.Render("No AMD GPU found") + s.Styles.Subtle.Render("  ("+d.Source+")"),
			"haloforge builds for AMD GPUs (Strix Halo, gfx1151, first of all).",
			"See the whole wizard on sample data: " + s.Styles.Key.Render("haloforge demo"),
		}
		return s.Styles.Card.Width(width).Render(strings.Join(lines, "\n"))
	}
	return s.Styles.Card.Width(width).Render(gpuCard(d, s.Styles))
}

func gpuCard(d *Detection, st Styles) string {
	g := d.GPU
	head := st.Bold.Render(cmp.Or(g.Name, "AMD GPU")) + "  " + st.Title.Render(cmp.Or(g.Gfx, "gfx unknown"))
	var facts []string
	if g.PCIID != "" {
		facts = append(facts, "PCI "+g.PCIID)
	}
	if g.Integrated {
		facts = append(facts, "integrated (unified memory)")
	}
	if g.ComputeUnits > 0 {
		facts = append(facts, fmt.Sprintf("%d CUs", g.ComputeUnits))
	}
	var mem []string
	if g.VRAMBytes > 0 {
		mem = append(mem, "VRAM "+humanBytes(g.VRAMBytes))
	}
	if g.GTTBytes > 0 {
		mem = append(mem, "GTT "+humanBytes(g.GTTBytes))
	}
	lines := []string{head}
	if len(facts) > 0 {
		lines = append(lines, strings.Join(facts, " · "))
	}
	if len(mem) > 0 {
		lines = append(lines, strings.Join(mem, " · "))
	}
	if d.Kernel != "" {
		lines = append(lines, "kernel "+d.Kernel)
	}
	lines = append(lines, st.Subtle.Render(d.Source))
	return strings.Join(lines, "\n")
}

// checksView lists the checks, worst first being the user's business: we
// keep DESIGN.md's order and put each fix under its check.
func (s *detectScreen) checksView(width int) string {
	var b strings.Builder
	ok, warn, fail := countChecks(s.det.Checks)
	b.WriteString(s.Styles.Bold.Render("Checks") + s.Styles.Subtle.Render(fmt.Sprintf("  %d ok · %d warn · %d fail", ok, warn, fail)))
	if n := s.det.HostFixes; n > 0 { // the host-fix screen (tui/hostfix.go)
		b.WriteString(s.Styles.Warn.Render(fmt.Sprintf("   a: apply these fixes (%d host changes)", n)))
	}
	b.WriteString("\n")
	for _, c := range s.det.Checks {
		b.WriteString(" " + checkMark(c.Status, s.Styles) + " " + padRight(c.ID, 20) + c.Summary + "\n")
		if c.Fix != "" && (c.Status == detect.StatusWarn || c.Status == detect.StatusFail) {
			fix := wrap("fix: "+c.Fix, width-6)
			for _, l := range strings.Split(fix, "\n") {
				b.WriteString("     " + s.Styles.Subtle.Render(l) + "\n")
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func (s *detectScreen) footerLine() string {
	rec := s.det.Recommended
	if rec == "" {
		return s.Styles.Subtle.Render("enter: pick a track")
	}
	return "Recommended track: " + s.Styles.Title.Render(rec) + s.Styles.Subtle.Render("   enter: pick a track")
}

func countChecks(cs []Check) (ok, warn, fail int) {
	for _, c := range cs {
		switch c.Status {
		case detect.StatusOK:
			ok++
		case detect.StatusWarn:
			warn++
		case detect.StatusFail:
			fail++
		}
	}
	return ok, warn, fail
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
