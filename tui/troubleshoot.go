package tui

import (
	"cmp"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/haloforge/haloforge/diagnose"
)

// troubleshootScreen opens a log or a diagnostics bundle, lists what it
// recognises, and walks the ladder for hang families.
type troubleshootScreen struct {
	*common
	backend  Backend
	path     prompt // the log or bundle to open
	scanned  bool   // findings (or an error) are there to show
	source   string // what was scanned
	findings []diagnose.Finding
	suspects []diagnose.Suspect
	err      error
	selected int
	climbed  map[string]int // family -> rungs tried
	offset   int
	w, h     int
}

// newTroubleshootScreen opens on path; findings already known for it are
// shown at once, else the screen asks for a path to scan.
func newTroubleshootScreen(c *common, b Backend, path string, findings []diagnose.Finding) *troubleshootScreen {
	s := &troubleshootScreen{
		common: c, backend: b, source: path, climbed: map[string]int{},
		path: newPrompt("log or bundle: ", "/path/to/step.log or a doctor --collect directory", "scan", "back"),
	}
	s.path.SetValue(path)
	if len(findings) > 0 {
		s.findings, s.scanned = findings, true
	}
	return s
}

// Init asks for a path when there is nothing to show yet.
func (s *troubleshootScreen) Init() tea.Cmd {
	if !s.scanned {
		return s.path.Open()
	}
	return nil
}

func (s *troubleshootScreen) SetSize(w, h int) {
	s.w, s.h = w, h
	s.path.SetWidth(max(w-20, 10))
}

func (s *troubleshootScreen) Crumb() string { return "troubleshoot" }

func (s *troubleshootScreen) TakesText() bool { return s.path.IsOpen() }

func (s *troubleshootScreen) ShortHelp() []key.Binding {
	if s.path.IsOpen() {
		return s.path.Help(s.Keys)
	}
	b := []key.Binding{s.Keys.Up, s.Keys.Down}
	if s.ladder() != nil {
		b = append(b, withHelp(s.Keys.Enter, "still stuck: next rung"))
	}
	return append(b, s.Keys.Open, s.Keys.Back, s.Keys.Quit)
}

func (s *troubleshootScreen) FullHelp() [][]key.Binding { return [][]key.Binding{s.ShortHelp()} }

func (s *troubleshootScreen) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case diagnosedMsg:
		s.source, s.findings, s.suspects, s.err, s.scanned, s.selected = msg.path, msg.findings, msg.suspects, msg.err, true, 0
	case tea.KeyPressMsg:
		if s.path.IsOpen() {
			return s.pathKey(msg)
		}
		return s.onKey(msg)
	}
	return nil
}

func (s *troubleshootScreen) pathKey(k tea.KeyPressMsg) tea.Cmd {
	res, cmd := s.path.Key(k, s.Keys)
	switch res {
	case promptSubmitted:
		path := strings.TrimSpace(s.path.Value())
		if path == "" {
			return nil
		}
		s.path.Close()
		return s.scan(path)
	case promptCancelled:
		if !s.scanned {
			return closeScreen
		}
		return nil
	}
	return cmd
}

// scan diagnoses path; when nothing is known, it points at the lines that
// look like the error.
func (s *troubleshootScreen) scan(path string) tea.Cmd {
	b := s.backend
	return func() tea.Msg {
		f, err := b.Diagnose(path)
		msg := diagnosedMsg{path: path, findings: f, err: err}
		if err == nil && len(f) == 0 {
			msg.suspects, _ = diagnose.Suspects(path, 3) // none for a directory or bundle
		}
		return msg
	}
}

func (s *troubleshootScreen) onKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(k, s.Keys.Open):
		return s.path.Open()
	case key.Matches(k, s.Keys.Back):
		return closeScreen
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
	if s.path.IsOpen() || !s.scanned {
		b.WriteString(s.path.View() + "\n\n")
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
	src := cmp.Or(s.source, "the run")
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

// detail explains one finding in full, with the ladder of a hang family.
func (s *troubleshootScreen) detail(f diagnose.Finding) string {
	width := max(s.w-4, 20)
	text := findingText(f, width, s.Styles)
	if l := diagnose.Ladder(f.Family); l != nil {
		text += "\n" + ladderView(l, s.climbed[f.Family], width, s.Styles)
	}
	return strings.TrimRight(text, "\n")
}
