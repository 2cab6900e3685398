package tui

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/internal/text"
)

// PinSetter lists the known-good pin sets and writes one into the pins
// file, for the sets screen, as pins sets and pins use do.
type PinSetter interface {
	// PinSets lists the sets against the pins file, with what each changes.
	PinSets() (*PinSets, error)
	// UsePinSet writes a set into the pins file (the user said yes), keeping
	// a backup, and plans from the new pins afterwards.
	UsePinSet(id string) (*PinSetUsed, error)
}

// PinSets are the known-good pin sets (`haloforge pins sets`) as the sets
// view shows them, compared with the pins file this session uses.
type PinSets struct {
	PinsFile string // the file compared with and written
	// CannotWrite says why the wizard does not write the pins file (the
	// demo, the built-in copy); the view then prints the command instead.
	CannotWrite string
	// Creates is the pins file u creates (the built-in pins with the set's
	// values, as `haloforge pins use` does) when the session has none.
	Creates string
	Sets    []PinSet
}

// PinSet is one known-good set and what using it would change.
type PinSet struct {
	ID, Title, Status, Note string
	Evidence                []string
	Pins                    int      // how many pins the set has
	Differs                 []string // the set's pins whose value the file does not have (pins sets)
	// Changes and Rebuild are what `haloforge pins use ID` changes and
	// what each track then re-runs, as `pins diff` computes them.
	Changes []PinChange
	Rebuild map[string][]string
	// Err says why the set cannot be written into this file ("" when it can).
	Err string
}

// PinChange is one pin a set changes; "" is absent.
type PinChange struct{ Name, Old, New string }

// PinSetUsed is what writing a set into the pins file did.
type PinSetUsed struct {
	Path, Backup string
	Changed      int    // pins changed; 0 when the file had the set already
	Created      bool   // Path did not exist: it was created from the built-in pins
	Warning      string // written, with something to know
}

// Messages of the sets view.
type (
	setsMsg struct {
		sets *PinSets
		err  error
	}
	setUsedMsg struct {
		used *PinSetUsed
		err  error
	}
)

// setsScreen lists the known-good pin sets with their status and how many
// pins differ from the file; the selected set shows what `pins use` would
// change and what rebuilds, and u writes it after a y/N question, as `pins
// use` asks on a terminal. After a write, the track is planned again.
type setsScreen struct {
	*common
	own      setsKeys
	track    string // the plan's track, shown first among the rebuilds
	sets     *PinSets
	err      error
	selected int
	asking   bool // the y/N question is up
	used     *PinSetUsed
	note     string
	lines    []string
	offset   int
	w, h     int
}

// setsKeys are the sets' own keys: u writes the selected set.
type setsKeys struct{ Use key.Binding }

// newSetsScreen opens the sets from the plan of track (the plan's p).
func newSetsScreen(c *common, track string) *setsScreen {
	return &setsScreen{common: c, own: setsKeys{Use: key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "use this set"))}, track: track}
}

// Init lists the sets.
func (s *setsScreen) Init() tea.Cmd {
	b, ok := role[PinSetter](s.common)
	if !ok {
		return send(setsMsg{err: errors.New("this session has no pin sets: haloforge pins sets lists them")})
	}
	return func() tea.Msg {
		sets, err := b.PinSets()
		return setsMsg{sets: sets, err: err}
	}
}

func (s *setsScreen) SetSize(w, h int) {
	s.w, s.h = w, h
	s.layout()
}

func (s *setsScreen) Crumb() string { return "pin sets" }

// TakesText is true while the y/N question is up, so that every key
// answers it (q is "no" then, not quit).
func (s *setsScreen) TakesText() bool { return s.asking }

func (s *setsScreen) ShortHelp() []key.Binding {
	switch {
	case s.asking:
		return []key.Binding{withHelp(s.Keys.Yes, "write"), withHelp(s.Keys.No, "do not write")}
	case s.used != nil:
		return []key.Binding{withHelp(s.Keys.Enter, "see the new plan"), s.Keys.Quit}
	}
	return []key.Binding{withHelp(s.Keys.Up, "previous set"), withHelp(s.Keys.Down, "next set"), s.own.Use, s.Keys.Back, s.Keys.Help, s.Keys.Quit}
}

func (s *setsScreen) FullHelp() [][]key.Binding {
	return [][]key.Binding{s.ShortHelp(), pageHelp(s.Keys)}
}

func (s *setsScreen) current() *PinSet {
	if s.sets == nil || s.selected >= len(s.sets.Sets) {
		return nil
	}
	return &s.sets.Sets[s.selected]
}

func (s *setsScreen) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case setsMsg:
		s.sets, s.err = msg.sets, msg.err
	case setUsedMsg:
		if msg.err != nil {
			s.note = "Not written: " + text.Sanitize(msg.err.Error())
		} else {
			s.used, s.note = msg.used, ""
		}
	case tea.KeyPressMsg:
		return s.onKey(msg)
	default:
		return nil
	}
	s.layout()
	return nil
}

func (s *setsScreen) onKey(k tea.KeyPressMsg) tea.Cmd {
	if s.asking {
		return s.answer(k)
	}
	if s.used != nil {
		if key.Matches(k, s.Keys.Enter) || key.Matches(k, s.Keys.Back) {
			return s.replan()
		}
		return nil
	}
	switch {
	case key.Matches(k, s.Keys.Back):
		return closeScreen
	case key.Matches(k, s.Keys.Up):
		s.selected, s.offset, s.note = max(s.selected-1, 0), 0, ""
	case key.Matches(k, s.Keys.Down):
		if s.sets != nil {
			s.selected, s.offset, s.note = min(s.selected+1, max(len(s.sets.Sets)-1, 0)), 0, ""
		}
	case key.Matches(k, s.own.Use):
		s.ask()
	case pageBy(s.Keys, k, &s.offset, s.room()):
	default:
		return nil
	}
	s.layout()
	return nil
}

// ask puts up the y/N question, or says why the set is not written here.
func (s *setsScreen) ask() {
	set := s.current()
	switch {
	case set == nil:
	case set.Err != "":
		s.note = "Not written: " + text.Sanitize(set.Err)
	case len(set.Changes) == 0 && s.sets.Creates == "":
		s.note = "Your pins already have every pin of " + set.ID + ": nothing to write."
	case s.sets.CannotWrite != "":
		s.note = "Not written: see \"Writing a set\" below the set's changes."
		s.offset = len(s.lines) // the explanation is the view's last lines
	default:
		s.asking, s.note = true, ""
	}
}

// answer takes the y/N answer: only y writes.
func (s *setsScreen) answer(k tea.KeyPressMsg) tea.Cmd {
	s.asking = false
	if !key.Matches(k, s.Keys.Yes) {
		s.note = "Not written."
		s.layout()
		return nil
	}
	b, _ := role[PinSetter](s.common) // the sets came from it
	id := s.current().ID
	s.note = "Writing…"
	s.layout()
	return func() tea.Msg {
		used, err := b.UsePinSet(id)
		return setUsedMsg{used: used, err: err}
	}
}

// replan closes the sets and the old plan, and plans the track again with
// the pins just written.
func (s *setsScreen) replan() tea.Cmd {
	return tea.Sequence(closeScreen, closeScreen, send(trackChosenMsg{track: s.track}))
}

// room is how many lines fit above the two footer lines.
func (s *setsScreen) room() int { return max(s.h-2, 1) }

func (s *setsScreen) layout() {
	width := max(s.w, 20)
	switch {
	case s.err != nil:
		s.lines = wrapLines(s.Styles.Fail.Render("The pin sets could not be read: "+text.Sanitize(s.err.Error())), width)
	case s.sets == nil:
		s.lines = []string{"Reading the known-good pin sets…"}
	case s.used != nil:
		s.lines = s.usedLines(width)
	default:
		s.lines = append(s.listLines(width), s.detailLines(width)...)
	}
	s.offset = clampOffset(s.offset, len(s.lines), s.room())
}

func (s *setsScreen) View() string {
	return pagedView(s.Styles, s.lines, s.offset, s.room(), s.w, "pgup/pgdn", s.note, s.hint())
}

func (s *setsScreen) hint() string {
	st := s.Styles
	set := s.current()
	switch {
	case s.asking:
		q := fmt.Sprintf("Write %s into %s, keeping a backup? ", text.Plural(len(set.Changes), "changed pin"), filepath.Base(text.Sanitize(s.sets.PinsFile)))
		if s.sets.Creates != "" {
			q = fmt.Sprintf("Create ./%s (built-in pins, %d changed)? ", filepath.Base(text.Sanitize(s.sets.Creates)), len(set.Changes))
		}
		return st.Warn.Render(q) +
			st.Key.Render("y") + " yes  " + st.Key.Render("N") + " no"
	case s.used != nil:
		return st.Subtle.Render("enter: see the plan with the new pins")
	case set != nil:
		return st.Subtle.Render("↑/↓: choose a set   u: use " + set.ID + " (asks first)   esc: back to the plan")
	}
	return st.Subtle.Render("esc: back to the plan")
}

// listLines are the sets, one a line, with how many pins differ.
func (s *setsScreen) listLines(width int) []string {
	st := s.Styles
	out := []string{st.Title.Render("Known-good pin sets") + st.Subtle.Render(" compared with "+text.Sanitize(s.sets.PinsFile))}
	idw := 0
	for _, set := range s.sets.Sets {
		idw = max(idw, len(set.ID))
	}
	for i, set := range s.sets.Sets {
		cur := "  "
		if i == s.selected {
			cur = st.Selected.Render("› ")
		}
		match := st.OK.Render("your pins match this set")
		if n := len(set.Differs); n > 0 {
			match = fmt.Sprintf("%d of its %d pins differ from yours", n, set.Pins)
		}
		out = append(out, ansiCut(cur+padRight(text.Sanitize(set.ID), idw+2)+padRight(st.Subtle.Render("["+text.Sanitize(set.Status)+"]"), 15)+match, width))
	}
	return append(out, "")
}

// detailLines show the selected set: what it is, its evidence, what `pins
// use` changes and what rebuilds, this track first.
func (s *setsScreen) detailLines(width int) []string {
	st := s.Styles
	set := s.current()
	if set == nil {
		return []string{"No known-good sets."}
	}
	out := hangLines(st.Bold.Render(text.Sanitize(set.ID))+" "+text.Sanitize(set.Title), width, 2)
	out = append(out, "")
	switch {
	case set.Err != "":
		out = append(out, hangLines(st.Fail.Render("Cannot be written into "+text.Sanitize(s.sets.PinsFile)+": "+text.Sanitize(set.Err)), width, 2)...)
	case len(set.Changes) == 0:
		out = append(out, st.OK.Render("Your pins already have every pin of this set: nothing would change."))
	default:
		out = append(out, s.changeLines(set, width)...)
	}
	out = append(out, "")
	if set.Note != "" {
		out = append(out, hangLines(st.Subtle.Render("note: "+text.Sanitize(set.Note)), width, 6)...)
	}
	subtle := func(l string) string { return st.Subtle.Render(l) }
	for _, e := range set.Evidence {
		// A URL is never broken behind an indent (it would not copy or
		// click as one): too long for its line, it goes on lines of its
		// own from the first column.
		if line := "evidence: " + text.Sanitize(e); ansi.StringWidth(line) <= width {
			out = append(out, subtle(line))
			continue
		}
		out = append(out, subtle("evidence:"))
		out = append(out, hardLines(text.Sanitize(e), width, 0, subtle)...)
	}
	if s.sets.CannotWrite != "" {
		out = append(out, "", st.Bold.Render("Writing a set"))
		out = append(out, hangLines(st.Subtle.Render(text.Sanitize(s.sets.CannotWrite)), width, 2)...)
	}
	return out
}

// changeLines are what `pins use` changes and what each track re-runs,
// the plan's track first.
func (s *setsScreen) changeLines(set *PinSet, width int) []string {
	st := s.Styles
	out := []string{st.Bold.Render("haloforge pins use "+text.Sanitize(set.ID)) + st.Subtle.Render(" changes (as pins diff shows it):")}
	for _, c := range set.Changes {
		out = append(out, hangLines("  "+text.Sanitize(c.Name)+": "+text.OrNone(text.Sanitize(c.Old))+" → "+text.OrNone(text.Sanitize(c.New)), width, 6)...)
	}
	out = append(out, "", st.Bold.Render("Steps to re-run:"))
	tracks := slices.Sorted(maps.Keys(set.Rebuild))
	if i := slices.Index(tracks, s.track); i > 0 {
		tracks = append(append([]string{s.track}, tracks[:i]...), tracks[i+1:]...)
	}
	if len(tracks) == 0 {
		out = append(out, "  none: no track reads these pins")
	}
	idw := 0
	for _, t := range tracks {
		idw = max(idw, len(t))
	}
	for _, t := range tracks {
		name := padRight(text.Sanitize(t), idw+2)
		if t == s.track {
			name = st.Selected.Render(name)
		}
		out = append(out, hangLines("  "+name+text.Sanitize(strings.Join(set.Rebuild[t], ", ")), width, idw+4)...)
	}
	return out
}

// usedLines say what writing the set did.
func (s *setsScreen) usedLines(width int) []string {
	st := s.Styles
	u := s.used
	if u.Changed == 0 && !u.Created {
		return []string{st.OK.Render(text.Sanitize(u.Path) + " already has every pin of the set: nothing was written.")}
	}
	var out []string
	if u.Created {
		out = wrapLines(st.OK.Render(fmt.Sprintf("✓ Created %s: the built-in pins with %s changed by the set", text.Sanitize(u.Path), text.Plural(u.Changed, "pin"))), width)
		out = append(out, wrapLines("haloforge reads it from now on when run in this directory (or with --pins "+text.Sanitize(u.Path)+").", width)...)
	} else {
		out = wrapLines(st.OK.Render(fmt.Sprintf("✓ Wrote %s into %s", text.Plural(u.Changed, "changed pin"), text.Sanitize(u.Path))), width)
		out = append(out, wrapLines("The old file is kept as "+text.Sanitize(u.Backup), width)...)
	}
	if u.Warning != "" {
		out = append(out, wrapLines(st.Warn.Render(text.Sanitize(u.Warning)), width)...)
	}
	out = append(out, "")
	return append(out, wrapLines("The plan of "+s.track+" is made again with the new pins: the steps that read them run again.", width)...)
}

// pinWarningLines are the plan screen's lines about pins the last status
// found gone or moved, with the key to the sets.
func pinWarningLines(warning []string, width int, st Styles) []string {
	if len(warning) == 0 {
		return nil
	}
	var out []string
	for i, l := range warning {
		if i == 0 {
			out = append(out, hangLines(st.Warn.Render(text.Sanitize(l)), width, 2)...)
			continue
		}
		out = append(out, hangLines(st.Subtle.Render(text.Sanitize(l)), width, 6)...)
	}
	return append(out, st.Key.Render("  p")+" shows the known-good sets and what using one rebuilds", "")
}
