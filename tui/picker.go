package tui

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/huh/v2"
	"charm.land/lipgloss/v2"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps"
)

// pickerListWidth is the width of the track list; the details of the
// hovered track take the rest.
const pickerListWidth = 38

// pickerScreen is the track picker: a huh select with the tracks, and the
// hovered track's description, requirements (checked against what
// detection found), pros and cons beside it. / filters the list, as in
// gum: Esc while typing keeps the filter, Esc with a filter clears it, and
// only Esc without one goes back.
type pickerScreen struct {
	*common
	own    pickerKeys
	tracks []steps.Track
	det    *Detection
	choice string
	form   *huh.Form
	sel    *huh.Select[string]
	scroll int // of the details pane
	w, h   int
}

// pickerKeys are the picker's own keys: / filters the list (huh's select
// takes the key; the binding is its help).
type pickerKeys struct{ Filter key.Binding }

func newPickerScreen(c *common, tracks []steps.Track, preselect string, det *Detection) *pickerScreen {
	// Tracks kept as history are listed only when asked for (--track ID).
	tracks = steps.Offered(tracks, preselect)
	p := &pickerScreen{common: c, own: pickerKeys{Filter: key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter"))},
		tracks: tracks, choice: preselect, det: det}
	p.buildForm()
	return p
}

// buildForm makes the select of tracks, on the current choice. The form
// never completes: Enter is the picker's (Update), so that the list, its
// cursor and its filter are as the user left them when the plan above it
// closes, as gum's filter keeps its text.
func (p *pickerScreen) buildForm() {
	opts := make([]huh.Option[string], len(p.tracks))
	for i, t := range p.tracks {
		opts[i] = huh.NewOption(p.label(t), t.ID)
	}
	p.sel = huh.NewSelect[string]().
		Title("Pick a track").
		Description(p.intro()).
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

// intro says what detection means for the choice.
func (p *pickerScreen) intro() string {
	switch {
	case p.det == nil:
		return "No detection: see each track's needs."
	case p.det.Primary() == nil:
		// Not every track checks for a GPU before it builds: name those,
		// so that nobody starts a multi-GB build believing it would stop.
		var unchecked []string
		for _, t := range p.tracks {
			if !slices.Contains(t.BlockingChecks, detect.CheckGPU) {
				unchecked = append(unchecked, t.ID)
			}
		}
		if len(unchecked) == 0 {
			return "No AMD GPU here: plans can be read, builds stop at the GPU check."
		}
		return "No AMD GPU here: plans can be read; builds stop at the GPU check, except " +
			strings.Join(unchecked, ", ") + ": they build without checking for one."
	case p.det.RecommendedTrack == "":
		return "No track fits " + gfxOf(p.det) + " yet."
	}
	return "★ is the best fit for this " + gfxOf(p.det) + "."
}

func gfxOf(d *Detection) string {
	if gfx := d.gfx(); gfx != "" {
		return gfx
	}
	return "machine"
}

// label is the option text: ID and a badge in brackets, so that it reads
// the same with and without colour. ★ marks detection's pick; a track that
// does not build for this machine's GPU says so.
func (p *pickerScreen) label(t steps.Track) string {
	badge := badgeText(t.Status)
	switch {
	case p.det != nil && t.ID == p.det.RecommendedTrack:
		badge = "★ for this box"
	case p.det.gfx() != "" && !slices.Contains(t.GFX, p.det.gfx()):
		badge = "not for " + p.det.gfx()
	}
	return fmt.Sprintf("%-17s %s", t.ID, badge)
}

func badgeText(s steps.Status) string {
	switch s {
	case steps.StatusRecommended:
		return "recommended" // as `haloforge tracks` says it
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
	p.scroll = clampOffset(p.scroll, lineCount(p.details()), h)
}

func (p *pickerScreen) Crumb() string { return "track" }

// TakesText is true while the filter is typed: letters go to it.
func (p *pickerScreen) TakesText() bool {
	filtering, _ := p.filterState()
	return filtering
}

// filterState reads the select's filter: being typed, or set.
func (p *pickerScreen) filterState() (filtering, filtered bool) {
	for _, b := range p.sel.KeyBinds() {
		switch b.Help().Desc {
		case "set filter":
			filtering = b.Enabled()
		case "clear filter":
			filtered = b.Enabled()
		}
	}
	return filtering, filtered
}

func (p *pickerScreen) ShortHelp() []key.Binding {
	k := p.Keys
	switch filtering, filtered := p.filterState(); {
	case filtering:
		return []key.Binding{withHelp(k.Enter, "plan"), withHelp(k.Back, "keep the filter"), k.Up, k.Down, k.ForceQuit}
	case filtered:
		return []key.Binding{withHelp(k.Enter, "plan"), withHelp(k.Back, "clear the filter"), p.own.Filter, k.Up, k.Down, k.Help, k.Quit}
	}
	return []key.Binding{withHelp(k.Enter, "plan"), p.own.Filter, k.Up, k.Down, withHelp(k.PageDown, "details"), k.Back, k.Help, k.Quit}
}

func (p *pickerScreen) FullHelp() [][]key.Binding {
	k := p.Keys
	return [][]key.Binding{
		{withHelp(k.Enter, "plan"), k.Up, k.Down, withHelp(k.PageDown, "scroll the details"), withHelp(k.PageUp, "scroll back")},
		{p.own.Filter, withHelp(k.Back, "keep, then clear the filter; back"), k.Help, k.Quit},
	}
}

func (p *pickerScreen) Update(msg tea.Msg) tea.Cmd {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		filtering, filtered := p.filterState()
		switch {
		case key.Matches(k, p.Keys.Back) && !filtering && !filtered:
			return closeScreen
		case key.Matches(k, p.Keys.Back) && filtered && !filtering:
			return p.clearFilter()
		case key.Matches(k, p.Keys.Enter):
			return p.choose(filtering)
		case !filtering && (key.Matches(k, p.Keys.PageDown) || key.Matches(k, p.Keys.PageUp)):
			d := p.h / 2
			if key.Matches(k, p.Keys.PageUp) {
				d = -d
			}
			p.scroll = clampOffset(p.scroll+d, lineCount(p.details()), p.h)
			return nil
		}
	}
	before := p.hovered()
	f, cmd := p.form.Update(msg)
	p.form = f.(*huh.Form)
	if p.hovered() != before {
		p.scroll = 0
	}
	return cmd
}

// clearFilter shows every track again with the cursor on the one it was
// on (huh's own clear keeps the row number, which is another track).
func (p *pickerScreen) clearFilter() tea.Cmd {
	if id := p.hovered(); id != "" {
		p.choice = id
	}
	p.buildForm()
	return p.form.Init()
}

// choose asks for the plan of the hovered track. A filter being typed is
// set first (huh's Esc while typing), so that it is still there, with the
// cursor on the track, when the user comes back from the plan.
func (p *pickerScreen) choose(filtering bool) tea.Cmd {
	id := p.hovered()
	if id == "" {
		return nil // the filter matches nothing
	}
	if filtering {
		f, _ := p.form.Update(tea.KeyPressMsg{Code: tea.KeyEscape})
		p.form = f.(*huh.Form)
	}
	p.choice = id
	return send(trackChosenMsg{track: id})
}

func (p *pickerScreen) hovered() string {
	id, _ := p.sel.Hovered()
	return id
}

// Hovered is the track under the cursor.
func (p *pickerScreen) Hovered() steps.Track {
	id := p.hovered()
	for _, t := range p.tracks {
		if t.ID == id {
			return t
		}
	}
	return steps.Track{}
}

func (p *pickerScreen) detailsWidth() int { return max(p.w-pickerListWidth-3, 20) }

func (p *pickerScreen) details() string {
	return trackDetails(p.Hovered(), p.det, p.Styles, p.detailsWidth())
}

func (p *pickerScreen) View() string {
	list := p.form.View()
	lines := strings.Split(p.details(), "\n")
	visible, off := window(lines, p.scroll, p.h)
	if len(lines) > p.h && p.h > 2 {
		visible, off = window(lines, p.scroll, p.h-1)
		more := fmt.Sprintf("↓ %d more lines: pgdn", len(lines)-off-len(visible))
		if off+len(visible) >= len(lines) {
			more = "↑ pgup: back to the top"
		}
		visible = append(visible, p.Styles.Subtle.Render(more))
	}
	return lipgloss.JoinHorizontal(lipgloss.Top, lipgloss.NewStyle().Width(pickerListWidth).Render(list), " │ ", strings.Join(visible, "\n"))
}

// trackDetails is the right-hand panel of the picker. The checks that
// would stop the track's build carry detection's verdict.
func trackDetails(t steps.Track, det *Detection, st Styles, width int) string {
	if t.ID == "" {
		return ""
	}
	badge := st.Badge[string(t.Status)].Render(badgeText(t.Status))
	var b strings.Builder
	b.WriteString(st.Bold.Render(wrap(t.Title, width)) + "\n" + badge + "\n")
	b.WriteString(st.Subtle.Render(wrap("gfx: "+strings.Join(t.GFX, ", "), width)) + "\n")
	if gfx := det.gfx(); gfx != "" && !slices.Contains(t.GFX, gfx) {
		b.WriteString(st.Warn.Render(wrap("Not for this machine's "+gfx+".", width)) + "\n")
	}
	b.WriteString("\n" + wrap(t.Description, width) + "\n")
	section := func(title string, items []string, mark string) {
		if len(items) == 0 {
			return
		}
		b.WriteString("\n" + st.Bold.Render(title) + "\n")
		for _, it := range items {
			b.WriteString(strings.Join(text.ProseRows(mark+it, width), "\n") + "\n")
		}
	}
	section("Needs", t.Requires, "• ")
	if checks := blockingView(t, det, st, width); checks != "" {
		b.WriteString(checks)
	}
	section("Good", t.Pros, "+ ")
	section("Costs", t.Cons, "- ")
	b.WriteString("\n" + st.Subtle.Render(fmt.Sprintf("%d steps", len(t.Steps))))
	return b.String()
}

// blockingView lists the track's blocking checks with what detection says
// of them on this machine.
func blockingView(t steps.Track, det *Detection, st Styles, width int) string {
	if det == nil || len(t.BlockingChecks) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(st.Subtle.Render("On this machine (build stops at a ✗):") + "\n")
	for _, id := range t.BlockingChecks {
		status, summary := detect.StatusSkip, "not checked"
		if c, ok := det.Check(id); ok {
			status, summary = c.Status, c.Summary
		}
		b.WriteString(ansiCutTail(" "+checkMark(status, st)+" "+id.Title()+": "+summary, width) + "\n")
	}
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
