package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/internal/text"
)

// The hint panel and its longer form: how a finding is shown, on the run
// screen (pinned, a few lines) and in troubleshooting (all of it, with the
// ladder of a hang family).

// hintPanel is the run screen's pinned hint for the step whose log is
// shown: the finding's family code, where it was seen, its summary, the
// fix wrapped to the width (commands between their words, fixRows) and
// the first link. An optional step's failure is a warning (the run went
// on), so it is drawn as one. more is how many other findings the step
// has (t shows them).
func hintPanel(step *stepRun, f *diagnose.Finding, more, width int, st Styles) string {
	inner := width - 4 // border and padding
	mark, title, box := "✗ ", st.HintTitle, st.Hint
	where := fmt.Sprintf("  step %s, log line %d", step.ID, f.Line)
	if step.Optional {
		mark, title, box = "! ", st.Warn.Bold(true), st.Hint.BorderForeground(st.Warn.GetForeground())
		where += " · optional: the run goes on without it"
	}
	head := title.Render(mark+f.Family) + st.Subtle.Render(where)
	if more > 0 {
		head += st.Subtle.Render(fmt.Sprintf("  (+%d more: t)", more))
	}
	lines := []string{ansiCut(head, inner)}
	if f.Summary != "" {
		lines = append(lines, strings.Split(wrap(f.Summary, inner), "\n")...)
	}
	lines = append(lines, fixLines(f.Fix, inner, hintFixRows, st)...)
	if len(f.Links) > 0 {
		lines = append(lines, ansiCut(st.Subtle.Render("More: "+f.Links[0]), inner))
	}
	return box.Width(width).Render(strings.Join(lines, "\n"))
}

// hintFixRows bounds the fix's rows in the pinned panel; t shows all of it.
const hintFixRows = 4

// fixLines shows the first rows of a fix laid out for the width (fixRows);
// a row still too wide (a long quoted string) goes on, marked, on the next
// rows, for reading: c copies the fix whole, and t shows all of it.
func fixLines(fix string, width, n int, st Styles) []string {
	if fix == "" {
		return nil
	}
	rows := readRows(text.FixRows(fix, width-5), width-5)
	var out []string
	for i, l := range rows[:min(n, len(rows))] {
		prefix := "     "
		if i == 0 {
			prefix = st.Bold.Render("Fix: ")
		}
		out = append(out, prefix+l)
	}
	if len(rows) > n {
		out = append(out, st.Subtle.Render(fmt.Sprintf("     … %d more lines: t shows the whole fix", len(rows)-n)))
	}
	return out
}

// readRows breaks the rows still wider than width (a word or a quoted
// string that no row holds) for reading, each piece after the first marked
// with ↪: on screen the whole fix is read, and c copies it whole.
func readRows(rows []string, width int) []string {
	var out []string
	for _, r := range rows {
		if ansi.StringWidth(r) <= width {
			out = append(out, r)
			continue
		}
		lead := r[:len(r)-len(strings.TrimLeft(r, " \t"))]
		pieces := strings.Split(ansi.Hardwrap(r, width, true), "\n")
		out = append(out, pieces[0])
		for _, p := range pieces[1:] {
			rest := strings.Split(ansi.Hardwrap(p, max(width-len(lead)-2, 8), true), "\n")
			for _, q := range rest {
				out = append(out, lead+"↪ "+q)
			}
		}
	}
	return out
}

// findingText explains one finding in full: what, the line, the whole fix
// and every link, wrapped to the width. Each line ends with a newline.
func findingText(f diagnose.Finding, width int, st Styles) string {
	var b strings.Builder
	if f.Title != "" {
		b.WriteString(st.Bold.Render(wrap(f.Title, width)) + "\n")
	}
	b.WriteString(wrap(f.Summary, width) + "\n")
	if f.Text != "" {
		for _, l := range text.ProseRows(fmt.Sprintf("line %d: %s", f.Line, f.Text), width) {
			b.WriteString(st.Subtle.Render(l) + "\n")
		}
	}
	if f.Fix != "" {
		b.WriteString("\n" + st.Bold.Render("Fix") + st.Subtle.Render("  (c copies it whole)") + "\n")
		for _, l := range readRows(text.FixRows(f.Fix, width-2), width-2) {
			b.WriteString("  " + st.Key.Render(l) + "\n")
		}
	}
	for _, l := range f.Links {
		b.WriteString(st.Subtle.Render("  "+l) + "\n")
	}
	return b.String()
}

// ladderView walks a hang family's ladder: the rungs tried, the one to try
// now with how, and what is left once every rung was tried.
func ladderView(l []diagnose.Rung, tried, width int, st Styles) string {
	var b strings.Builder
	b.WriteString(st.Bold.Render(diagnose.LadderTitle) + "\n")
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
