package tui

import (
	"fmt"
	"strings"

	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps/bench"
)

// benchView is the benchmark's progress, then its results against the
// closest references and the plain verdict (the serve screen's last part).
func (s *serveScreen) benchView() string {
	st := s.Styles
	r := s.bench
	var b strings.Builder
	b.WriteString(st.Bold.Render("Benchmark") + "\n")
	switch {
	case r.err != nil:
		b.WriteString(st.Fail.Render(wrap("✗ "+r.err.Error(), s.w)) + "\n")
	case r.report != nil:
		b.WriteString(benchTable(r.report, st, s.w))
		if r.engine > 0 {
			b.WriteString(st.Subtle.Render("  engine time "+text.Ms(r.engine)) + "\n")
		}
	case s.benching:
		b.WriteString(st.Running.Render("  running…") + "\n")
		for _, l := range r.tail {
			b.WriteString(st.Subtle.Render("  │ ") + l + "\n")
		}
	}
	return b.String()
}

// benchTable lays a comparison out as rows: test, speed, the reference and
// the verdict with the roofline under it, then the overall verdict.
func benchTable(rep *bench.Report, st Styles, width int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %s\n", st.Subtle.Render(fmt.Sprintf("%-16s %12s  %12s  %s", "test", "tok/s", "reference", "verdict")))
	for _, c := range rep.Comparisons {
		ref := "—"
		if c.Reference != nil {
			ref = fmt.Sprintf("%.2f", c.Reference.TokensPerS)
		}
		verdict := c.Verdict
		style := st.Subtle
		switch {
		case c.Reference == nil:
		case c.Ratio >= 0.9:
			style = st.OK
		default:
			style = st.Warn
		}
		row := fmt.Sprintf("  %-16s %12.2f  %12s  ", c.Result.Test, c.Result.TokensPerS, ref)
		// The verdict wraps under its column (or, on a narrow terminal,
		// under the row): it is the sentence the screen is for.
		indent := len(row)
		if width-indent < 24 {
			b.WriteString(strings.TrimRight(row, " ") + "\n")
			row, indent = "    ", 4
		}
		for i, l := range wrapLines(verdict, width-indent) {
			if i > 0 {
				row = strings.Repeat(" ", indent)
			}
			b.WriteString(row + style.Render(l) + "\n")
		}
		// The roofline: the share of what the device could do with this
		// model, the sentence bench --from prints, under the verdict.
		if rf := c.Roofline; rf != nil {
			for _, l := range wrapLines("roofline: "+rf.Sentence(), width-indent) {
				b.WriteString(strings.Repeat(" ", indent) + st.Subtle.Render(l) + "\n")
			}
		}
	}
	v := strings.ReplaceAll(wrap(rep.Verdict, max(width-11, 20)), "\n", "\n           ")
	b.WriteString("  " + st.Bold.Render("verdict: ") + v + "\n")
	return b.String()
}
