package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/diagnose"
)

// The hint panel and its longer form: how a finding is shown, on the run
// screen (pinned, a few lines) and in troubleshooting (all of it, with the
// ladder of a hang family).

// hintPanel is the run screen's pinned hint: the finding's family code, where
// it was seen, its summary, the first lines of the fix and the first link.
// more is how many other findings the step has (t shows them).
func hintPanel(step string, f *diagnose.Finding, more, width int, st Styles) string {
	inner := width - 4 // border and padding
	head := st.HintTitle.Render("✗ "+f.Family) + st.Subtle.Render(fmt.Sprintf("  step %s, log line %d", step, f.Line))
	if more > 0 {
		head += st.Subtle.Render(fmt.Sprintf("  (+%d more: t)", more))
	}
	lines := []string{ansiCut(head, inner)}
	if f.Summary != "" {
		lines = append(lines, clipLines(wrap(f.Summary, inner), 2))
	}
	lines = append(lines, fixLines(f.Fix, inner, 3, st)...)
	if len(f.Links) > 0 {
		lines = append(lines, ansiCut(st.Subtle.Render("More: "+f.Links[0]), inner))
	}
	return st.Hint.Width(width).Render(strings.Join(lines, "\n"))
}

// fixLines shows the first lines of a fix as written (commands must not be
// re-wrapped), each cut to the width; t shows all of it.
func fixLines(fix string, width, n int, st Styles) []string {
	if fix == "" {
		return nil
	}
	all := strings.Split(fix, "\n")
	var out []string
	for i, l := range all[:min(n, len(all))] {
		prefix := "     "
		if i == 0 {
			prefix = st.Bold.Render("Fix: ")
		}
		out = append(out, ansi.Truncate(prefix+l, width, "…"))
	}
	if len(all) > n {
		out = append(out, st.Subtle.Render(fmt.Sprintf("     … %d more lines: t shows the whole fix", len(all)-n)))
	}
	return out
}

// findingText explains one finding in full: what, the line, the whole fix
// and every link. Each line ends with a newline.
func findingText(f diagnose.Finding, width int, st Styles) string {
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
