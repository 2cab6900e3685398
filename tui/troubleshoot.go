package tui

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/internal/text"
)

// Diagnoser scans a log, a run directory or a bundle for known failures,
// for the troubleshoot screen, as `haloforge diagnose` does.
type Diagnoser interface {
	Diagnose(path string) ([]diagnose.Finding, error)
}

// troubleshootScreen opens a log or a diagnostics bundle, lists what it
// recognises, and walks the ladder for hang families.
type troubleshootScreen struct {
	*common
	own      troubleshootKeys
	path     prompt // the log or bundle to open
	scanned  bool   // findings (or an error) are there to show
	scanning bool   // a scan is under way
	source   string // what was scanned
	findings []diagnose.Finding
	suspects []diagnose.Suspect
	err      error
	selected int
	climbed  map[string]int // family -> rungs tried
	offset   int
	lines    int // lines of the view at the current width, for scrolling
	w, h     int
	// copied is the family whose fix c put on the clipboard, said until
	// another finding is selected.
	copied string
}

// troubleshootKeys are troubleshooting's own keys: o opens another log.
type troubleshootKeys struct{ Open key.Binding }

// newTroubleshootScreen opens on path: findings already known for it are
// shown at once, a path alone is scanned at once, and no path asks for one.
func newTroubleshootScreen(c *common, path string, findings []diagnose.Finding) *troubleshootScreen {
	s := &troubleshootScreen{
		common: c, own: troubleshootKeys{Open: key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "open another"))},
		source: path, climbed: map[string]int{},
		path: newPrompt("log or bundle: ", "/path/to/step.log or a doctor --collect directory (tab completes)", "scan", "back").completingPaths(),
	}
	s.path.SetValue(path)
	if len(findings) > 0 {
		s.findings, s.scanned = findings, true
	}
	return s
}

// Init scans the path it was given, or asks for one.
func (s *troubleshootScreen) Init() tea.Cmd {
	switch {
	case s.scanned:
		return nil
	case s.source != "":
		return s.scan(s.source)
	}
	return s.path.Open()
}

func (s *troubleshootScreen) SetSize(w, h int) {
	s.w, s.h = w, h
	s.path.SetWidth(max(w-20, 10))
	s.lines = lineCount(s.body())
	s.offset = clampOffset(s.offset, s.lines, s.h)
}

func (s *troubleshootScreen) Crumb() string { return "troubleshoot" }

func (s *troubleshootScreen) TakesText() bool { return s.path.IsOpen() }

func (s *troubleshootScreen) ShortHelp() []key.Binding {
	k := s.Keys
	if s.path.IsOpen() {
		return s.path.Help(k)
	}
	b := []key.Binding{k.Back}
	if s.ladder() != nil {
		b = append(b, withHelp(k.Enter, "still stuck: next rung"))
	}
	if s.fix() != "" {
		b = append(b, k.Copy)
	}
	if len(s.findings) > 1 {
		b = append(b, key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑/↓", "finding")))
	}
	if s.lines > s.h {
		b = append(b, k.PageDown)
	}
	return append(b, s.own.Open, k.Help, k.Quit)
}

func (s *troubleshootScreen) FullHelp() [][]key.Binding {
	return [][]key.Binding{s.ShortHelp(), pageHelp(s.Keys)}
}

func (s *troubleshootScreen) Update(msg tea.Msg) tea.Cmd {
	cmd := s.update(msg)
	s.lines = lineCount(s.body())
	return cmd
}

func (s *troubleshootScreen) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case diagnosedMsg:
		s.source, s.findings, s.suspects, s.err, s.scanned, s.selected = msg.path, msg.findings, msg.suspects, msg.err, true, 0
		s.scanning, s.offset = false, 0
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

// completePath completes a path as far as every match agrees, adding a
// slash to a directory (a shell's Tab).
func completePath(p string) string {
	if p == "" {
		return p
	}
	expanded := p
	if home, err := os.UserHomeDir(); err == nil && strings.HasPrefix(p, "~/") {
		expanded = filepath.Join(home, p[2:])
	}
	matches, _ := filepath.Glob(globEscape(expanded) + "*")
	if len(matches) == 0 {
		return p
	}
	common := matches[0]
	for _, m := range matches[1:] {
		for !strings.HasPrefix(m, common) {
			common = common[:len(common)-1]
		}
	}
	if len(matches) == 1 {
		if st, err := os.Stat(common); err == nil && st.IsDir() {
			common += string(filepath.Separator)
		}
	}
	if expanded != p { // keep the ~ the user typed
		home, _ := os.UserHomeDir()
		common = "~" + strings.TrimPrefix(common, home)
	}
	return common
}

// globEscape quotes the characters filepath.Glob treats as patterns.
func globEscape(p string) string {
	r := strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`)
	return r.Replace(p)
}

// scan diagnoses path; when nothing is known, it points at the lines that
// look like the error.
func (s *troubleshootScreen) scan(path string) tea.Cmd {
	b, ok := role[Diagnoser](s.common)
	s.scanning, s.source = true, path
	if !ok {
		return send(diagnosedMsg{path: path, err: errors.New("this session scans nothing: haloforge diagnose " + path + " does")})
	}
	return func() tea.Msg {
		f, err := b.Diagnose(path)
		msg := diagnosedMsg{path: path, findings: f, err: readable(path, err)}
		if err == nil && len(f) == 0 {
			msg.suspects, _ = diagnose.Suspects(path, 3) // none for a directory or bundle
		}
		return msg
	}
}

// readable words an error opening path for people, not as Go's os package
// does ("stat x: no such file or directory").
func readable(path string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist: give a step log (<state-dir>/runs/<run-id>/<step>.log), a run directory or a bundle", path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s cannot be read (permission denied)", path)
	}
	return err
}

func (s *troubleshootScreen) onKey(k tea.KeyPressMsg) tea.Cmd {
	keys := s.Keys
	switch {
	case key.Matches(k, s.own.Open):
		return s.path.Open()
	case key.Matches(k, keys.Back):
		return closeScreen
	case key.Matches(k, keys.Up):
		s.selected = max(s.selected-1, 0)
		s.offset, s.copied = 0, ""
	case key.Matches(k, keys.Down):
		s.selected = min(s.selected+1, max(len(s.findings)-1, 0))
		s.offset, s.copied = 0, ""
	case pageBy(keys, k, &s.offset, s.h):
		s.offset = clampOffset(s.offset, s.lines, s.h)
	case key.Matches(k, keys.Copy):
		if fix := s.fix(); fix != "" {
			s.copied = s.findings[s.selected].Family
			return tea.SetClipboard(fix)
		}
	case key.Matches(k, keys.Enter):
		if l := s.ladder(); l != nil {
			fam := s.findings[s.selected].Family
			s.climbed[fam] = min(s.climbed[fam]+1, len(l))
		}
	}
	return nil
}

// fix is the selected finding's fix, "" when there is none.
func (s *troubleshootScreen) fix() string {
	if s.selected >= len(s.findings) {
		return ""
	}
	return s.findings[s.selected].Fix
}

// ladder is the walkthrough for the selected finding, nil when it has none.
func (s *troubleshootScreen) ladder() []diagnose.Rung {
	if s.selected >= len(s.findings) {
		return nil
	}
	return diagnose.Ladder(s.findings[s.selected].Family)
}

func (s *troubleshootScreen) View() string {
	lines := strings.Split(s.body(), "\n")
	visible, _ := window(lines, s.offset, s.h)
	for i, l := range visible {
		visible[i] = ansiCutTail(l, s.w)
	}
	return strings.Join(visible, "\n")
}

func (s *troubleshootScreen) body() string {
	var b strings.Builder
	if s.path.IsOpen() || (!s.scanned && !s.scanning) {
		b.WriteString(s.path.View() + "\n\n")
		b.WriteString(s.Styles.Subtle.Render(wrap("Open a build log (haloforge keeps one per step under the run directory), any pasted log, "+
			"or a diagnostics bundle from `haloforge doctor --collect DIR`.", max(s.w, 20))) + "\n")
		if !s.scanned {
			return b.String()
		}
	}
	if s.scanning {
		return b.String() + "Scanning " + s.source + "…"
	}
	if s.copied != "" {
		b.WriteString(s.Styles.OK.Render(wrap("Copied the fix of "+s.copied+" (OSC 52: the terminal must allow it).", max(s.w, 20))) + "\n")
	}
	b.WriteString(s.results())
	return b.String()
}

func (s *troubleshootScreen) results() string {
	st := s.Styles
	var b strings.Builder
	src := cmp.Or(s.source, "the run")
	width := max(s.w-4, 20)
	switch {
	case s.err != nil:
		return st.Fail.Render(wrap(s.err.Error(), width))
	case len(s.findings) == 0 && len(s.suspects) > 0:
		b.WriteString(st.OK.Render(wrapHard("No known failure in "+src+".", width)) + "\n" +
			st.Subtle.Render("These lines look like the error; `haloforge doctor` checks the host.") + "\n")
		for _, l := range s.suspects {
			label := fmt.Sprintf("line %d  ", l.Line)
			for i, row := range text.Wrap(l.Text, width-len(label), "") {
				if i == 0 {
					b.WriteString("  " + st.Subtle.Render(label) + row + "\n")
				} else {
					b.WriteString("  " + strings.Repeat(" ", len(label)) + row + "\n")
				}
			}
		}
		return b.String()
	case len(s.findings) == 0:
		return st.OK.Render(wrapHard("No known failure in "+src+".", width)) + "\n" +
			st.Subtle.Render(wrap("If it still fails, the last lines of the log are the place to look; `haloforge doctor` checks the host.", width))
	}
	b.WriteString(st.Bold.Render(wrapHard(fmt.Sprintf("%s in %s", text.Plural(len(s.findings), "known failure"), src), width)) + "\n")
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
