package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/huh/v2"
	"charm.land/lipgloss/v2"

	"github.com/haloforge/haloforge/steps"
)

// pickerListWidth is the width of the track list; the details of the
// hovered track take the rest.
const pickerListWidth = 38

// pickerScreen is the track picker: a huh select with status badges, and the
// hovered track's description, requirements, pros and cons beside it.
type pickerScreen struct {
	*common
	tracks []steps.Track
	choice string
	form   *huh.Form
	sel    *huh.Select[string]
	w, h   int
}

func newPickerScreen(c *common, tracks []steps.Track, preselect string) *pickerScreen {
	p := &pickerScreen{common: c, tracks: tracks, choice: preselect}
	p.buildForm()
	return p
}

// buildForm makes the select of tracks, on the current choice. A completed
// huh form cannot be reused, so going back to the picker builds it again.
func (p *pickerScreen) buildForm() {
	opts := make([]huh.Option[string], len(p.tracks))
	for i, t := range p.tracks {
		opts[i] = huh.NewOption(trackLabel(t), t.ID)
	}
	p.sel = huh.NewSelect[string]().
		Title("Pick a track").
		Options(opts...).
		Value(&p.choice)
	p.form = huh.NewForm(huh.NewGroup(p.sel)).
		WithShowHelp(false).
		WithTheme(huh.ThemeFunc(huh.ThemeBase16)).
		WithWidth(pickerListWidth)
	if p.h > 0 {
		p.form = p.form.WithHeight(max(p.h, 5))
	}
}

// Reset rebuilds the form, keeping the choice, so that the picker is live
// again after its choice was taken (back from the plan, or a plan error).
func (p *pickerScreen) Reset() { p.buildForm() }

// Revealed resets the picker when the plan above it closes.
func (p *pickerScreen) Revealed() { p.Reset() }

// trackLabel is the option text: ID and a status badge in brackets, so the
// badge reads the same with and without colour.
func trackLabel(t steps.Track) string {
	return fmt.Sprintf("%-17s %s", t.ID, badgeText(t.Status))
}

func badgeText(s steps.Status) string {
	switch s {
	case steps.StatusRecommended:
		return "★ recommended"
	case steps.StatusBlockedUpstream:
		return "⚠ blocked"
	default:
		return string(s)
	}
}

// Init focuses the form.
func (p *pickerScreen) Init() tea.Cmd { return p.form.Init() }

func (p *pickerScreen) SetSize(w, h int) {
	p.w, p.h = w, h
	p.form = p.form.WithHeight(max(h, 5))
}

func (p *pickerScreen) Crumb() string { return "track" }

func (p *pickerScreen) TakesText() bool { return false }

func (p *pickerScreen) ShortHelp() []key.Binding {
	return []key.Binding{p.Keys.Up, p.Keys.Down, withHelp(p.Keys.Enter, "plan"), p.Keys.Back, p.Keys.Help, p.Keys.Quit}
}

func (p *pickerScreen) FullHelp() [][]key.Binding { return [][]key.Binding{p.ShortHelp()} }

func (p *pickerScreen) Update(msg tea.Msg) tea.Cmd {
	if k, ok := msg.(tea.KeyPressMsg); ok && key.Matches(k, p.Keys.Back) {
		return closeScreen
	}
	f, cmd := p.form.Update(msg)
	p.form = f.(*huh.Form)
	if p.form.State == huh.StateCompleted {
		return send(trackChosenMsg{track: p.choice})
	}
	return cmd
}

// Hovered is the track under the cursor.
func (p *pickerScreen) Hovered() steps.Track {
	id, _ := p.sel.Hovered()
	for _, t := range p.tracks {
		if t.ID == id {
			return t
		}
	}
	return steps.Track{}
}

func (p *pickerScreen) View() string {
	list := p.form.View()
	detailW := p.w - pickerListWidth - 3
	details := trackDetails(p.Hovered(), p.Styles, detailW)
	details = clipLines(details, p.h)
	return lipgloss.JoinHorizontal(lipgloss.Top, lipgloss.NewStyle().Width(pickerListWidth).Render(list), " │ ", details)
}

// trackDetails is the right-hand panel of the picker.
func trackDetails(t steps.Track, st Styles, width int) string {
	if t.ID == "" {
		return ""
	}
	badge := st.Badge[string(t.Status)].Render(badgeText(t.Status))
	var b strings.Builder
	b.WriteString(st.Bold.Render(wrap(t.Title, width)) + "\n" + badge + st.Subtle.Render("  gfx: "+strings.Join(t.GFX, ", ")) + "\n\n")
	b.WriteString(wrap(t.Description, width) + "\n")
	section := func(title string, items []string, mark string) {
		if len(items) == 0 {
			return
		}
		b.WriteString("\n" + st.Bold.Render(title) + "\n")
		for _, it := range items {
			b.WriteString(wrap(mark+it, width) + "\n")
		}
	}
	section("Needs", t.Requires, "• ")
	section("Good", t.Pros, "+ ")
	section("Costs", t.Cons, "- ")
	b.WriteString("\n" + st.Subtle.Render(fmt.Sprintf("%d steps", len(t.Steps))))
	return b.String()
}

// clipLines keeps the first h lines of s.
func clipLines(s string, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) <= h {
		return s
	}
	return strings.Join(lines[:max(h, 1)], "\n")
}

// withHelp copies a binding with another help text.
func withHelp(b key.Binding, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(b.Keys()...), key.WithHelp(b.Help().Key, desc))
}
