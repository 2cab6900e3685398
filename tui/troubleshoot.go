package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/haloforge/haloforge/diagnose"
)

// troubleshootScreen opens a log or a diagnostics bundle, lists what it
// recognises, and walks the ladder for hang families.
type troubleshootScreen struct {
	*common
	backend  Backend
	input    textinput.Model
	editing  bool
	path     string
	findings []diagnose.Finding
	suspects []diagnose.Suspect
	err      error
	selected int
	climbed  map[string]int // family -> rungs tried
	scanned  bool
	offset   int
	w, h     int
}

func newTroubleshootScreen(c *common, b Backend, path string, from *stepRun) *troubleshootScreen {
	in := textinput.New()
	in.Prompt = "log or bundle: "
	in.Placeholder = "/path/to/step.log or a doctor --collect directory"
	in.SetValue(path)
	s := &troubleshootScreen{common: c, backend: b, input: in, path: path, climbed: map[string]int{}}
	if from != nil {
		s.findings, s.scanned = append([]diagnose.Finding(nil), from.Findings...), true
	} else {
		s.editing = true
	}
	return s
}

// Init focuses the path field when there is nothing to show yet.
func (s *troubleshootScreen) Init() tea.Cmd {
	if s.editing {
		return s.input.Focus()
	}
	return nil
}

func (s *troubleshootScreen) SetSize(w, h int) {
	s.w, s.h = w, h
	s.input.SetWidth(max(w-20, 10))
}

func (s *troubleshootScreen) ShortHelp() []key.Binding {
	if s.editing {
		return []key.Binding{withHelp(s.Keys.Enter, "scan"), withHelp(s.Keys.Back, "back")}
	}
	b := []key.Binding{s.Keys.Up, s.Keys.Down}
	if s.ladder() != nil {
		b = append(b, withHelp(s.Keys.Enter, "still stuck: next rung"))
	}
	return append(b, key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "open another")), s.Keys.Back, s.Keys.Quit)
}

func (s *troubleshootScreen) FullHelp() [][]key.Binding { return [][]key.Binding{s.ShortHelp()} }

func (s *troubleshootScreen) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case diagnosedMsg:
		s.path, s.findings, s.suspects, s.err, s.scanned, s.selected = msg.path, msg.findings, msg.suspects, msg.err, true, 0
	case tea.KeyPressMsg:
		if s.editing {
			return s.editKey(msg)
		}
		return s.onKey(msg)
	}
	return nil
}

func (s *troubleshootScreen) editKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(k, s.Keys.Enter):
		path := strings.TrimSpace(s.input.Value())
		if path == "" {
			return nil
		}
		s.editing = false
		s.input.Blur()
		b := s.backend
		return func() tea.Msg {
			f, err := b.Diagnose(path)
			msg := diagnosedMsg{path: path, findings: f, err: err}
			if err == nil && len(f) == 0 {
				msg.suspects, _ = diagnose.Suspects(path, 3) // none for a directory or bundle
			}
			return msg
		}
	case key.Matches(k, s.Keys.Back):
		if !s.scanned {
			return func() tea.Msg { return closeScreenMsg{} }
		}
		s.editing = false
		s.input.Blur()
		return nil
	}
	var cmd tea.Cmd
	s.input, cmd = s.input.Update(k)
	return cmd
}

func (s *troubleshootScreen) onKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case k.String() == "o":
		s.editing = true
		return s.input.Focus()
	case key.Matches(k, s.Keys.Back):
		return func() tea.Msg { return closeScreenMsg{} }
	case key.Matches(k, s.Keys.Up):
		s.selected = max(s.selected-1, 0)
		s.offset = 0
	case key.Matches(k, s.Keys.Down):
		s.selected = min(s.selected+1, max(len(s.findings)-1, 0))
		s.offset = 0
	case key.Matches(k, s.Keys.Enter):
		if l := s.ladder(); l != nil {
			fam := s.findings[s.selected].Family
			s.climbed[fam] = min(s.climbed[fam]+1, len(l))
		}
	}
	return nil
}

// ladder is the walkthrough for the selected finding, nil when it has none.
func (s *troubleshootScreen) ladder() []diagnose.Rung {
	if s.selected >= len(s.findings) {
		return nil
	}
	return diagnose.Ladder(s.findings[s.selected].Family)
}

func (s *troubleshootScreen) View() string {
	var b strings.Builder
	if s.editing || !s.scanned {
		b.WriteString(s.input.View() + "\n\n")
		b.WriteString(s.Styles.Subtle.Render("Open a build log (haloforge keeps one per step under the run directory), any pasted log,\nor a diagnostics bundle from `haloforge doctor --collect DIR`.") + "\n")
		if !s.scanned {
			return b.String()
		}
	}
	b.WriteString(s.results())
	lines := strings.Split(b.String(), "\n")
	visible, _ := window(lines, s.offset, s.h)
	return strings.Join(visible, "\n")
}

func (s *troubleshootScreen) results() string {
	st := s.Styles
	var b strings.Builder
	src := nonEmpty(s.path, "the run")
	switch {
	case s.err != nil:
		return st.Fail.Render(s.err.Error())
	case len(s.findings) == 0 && len(s.suspects) > 0:
		b.WriteString(st.OK.Render("No known failure in "+src+".") + "\n" +
			st.Subtle.Render("These lines look like the error; `haloforge doctor` checks the host.") + "\n")
		for _, l := range s.suspects {
			b.WriteString(ansiCut(st.Subtle.Render(fmt.Sprintf("  line %d  ", l.Line))+l.Text, s.w) + "\n")
		}
		return b.String()
	case len(s.findings) == 0:
		return st.OK.Render("No known failure in "+src+".") + "\n" +
			st.Subtle.Render("If it still fails, the last lines of the log are the place to look; `haloforge doctor` checks the host.")
	}
	b.WriteString(st.Bold.Render(fmt.Sprintf("%d known failure(s) in %s", len(s.findings), src)) + "\n")
	for i, f := range s.findings {
		cur := "  "
		if i == s.selected {
			cur = st.Selected.Render("› ")
		}
		b.WriteString(cur + st.HintTitle.Render(f.Family) + st.Subtle.Render(fmt.Sprintf("  line %d", f.Line)) + "\n")
	}
	b.WriteString("\n" + s.detail(s.findings[s.selected]))
	return b.String()
}

// detail explains one finding: what, the line, the fix, the links, and the
// ladder for hang families.
func (s *troubleshootScreen) detail(f diagnose.Finding) string {
	st, width := s.Styles, max(s.w-4, 20)
	var b strings.Builder
	if f.Title != "" {
		b.WriteString(st.Bold.Render(f.Title) + "\n")
	}
	b.WriteString(wrap(f.Summary, width) + "\n")
	if f.Text != "" {
		b.WriteString(st.Subtle.Render(ansiCut(fmt.Sprintf("line %d: %s", f.Line, f.Text), width)) + "\n")
	}
	if f.Fix != "" {
		b.WriteString("\n" + st.Bold.Render("Fix") + "\n")
		for _, l := range strings.Split(f.Fix, "\n") {
			b.WriteString("  " + st.Key.Render(ansiCut(l, width-2)) + "\n")
		}
	}
	for _, l := range f.Links {
		b.WriteString(st.Subtle.Render("  "+l) + "\n")
	}
	if l := diagnose.Ladder(f.Family); l != nil {
		b.WriteString("\n" + s.ladderView(f.Family, l, width))
	}
	return strings.TrimRight(b.String(), "\n")
}

func (s *troubleshootScreen) ladderView(family string, l []diagnose.Rung, width int) string {
	st := s.Styles
	var b strings.Builder
	b.WriteString(st.Bold.Render(diagnose.LadderTitle) + "\n")
	tried := s.climbed[family]
	for i, r := range l {
		mark := st.Skip.Render("○")
		switch {
		case i < tried:
			mark = st.Subtle.Render("✗ tried")
		case i == tried:
			mark = st.Running.Render("▶ now")
		}
		b.WriteString(fmt.Sprintf("  %d. %s %s\n", i+1, st.Bold.Render(r.Try), mark))
		if i == tried {
			for _, l := range strings.Split(wrap(r.How, width-5), "\n") {
				b.WriteString("     " + l + "\n")
			}
		}
	}
	if tried >= len(l) {
		b.WriteString(st.Warn.Render("  Every rung tried: collect a bundle with `haloforge doctor --collect DIR` and open an issue.") + "\n")
	}
	return b.String()
}
