package detect

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/haloforge/haloforge/internal/text"
)

// Marks of the human output, in the style of flutter doctor.
var marks = map[Status]string{StatusOK: "✓", StatusWarn: "!", StatusFail: "✗", StatusSkip: "-"}

// WriteText prints the report for people: one line per check, the fix
// indented under warnings and failures; verbose adds skipped checks,
// details and the facts behind them.
func (r *Report) WriteText(w io.Writer, verbose bool) error {
	var b strings.Builder
	if !verbose {
		b.WriteString("Doctor summary (to see all details, run haloforge doctor -v):\n")
	}
	for _, c := range r.Checks {
		if c.Status == StatusSkip && !verbose {
			continue
		}
		fmt.Fprintf(&b, "[%s] %s: %s\n", marks[c.Status], c.ID.Title(), c.Summary)
		showFix := c.Fix != "" && (c.Status == StatusWarn || c.Status == StatusFail || verbose)
		if showFix {
			writeIndented(&b, c.Fix, "    ")
		}
		if verbose && c.Detail != "" {
			writeIndented(&b, c.Detail, "    ")
		}
	}
	if verbose {
		r.writeFacts(&b)
	}
	b.WriteString("\n" + r.verdict() + "\n")
	// Facts and summaries quote the bundle, text from outside.
	_, err := io.WriteString(w, text.Sanitize(b.String()))
	return err
}

func writeIndented(b *strings.Builder, text, indent string) {
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		b.WriteString(indent + l + "\n")
	}
}

func (r *Report) verdict() string {
	var warn, fail int
	for _, c := range r.Checks {
		switch c.Status {
		case StatusWarn:
			warn++
		case StatusFail:
			fail++
		}
	}
	s := "• No issues found."
	if warn+fail > 0 {
		s = fmt.Sprintf("! Doctor found issues: %d failed, %s.", fail, text.Plural(warn, "warning"))
	}
	if r.RecommendedTrack != "" {
		s += "\nRecommended track: " + r.RecommendedTrack + " (haloforge plan --track " + r.RecommendedTrack + ")"
	} else if r.Primary() != nil {
		s += "\nGPU target unknown, so no track is recommended: run haloforge doctor on the machine itself."
	} else {
		s += "\nNo track fits this machine yet: haloforge needs an AMD GPU (haloforge demo shows it on a Strix Halo)."
	}
	return s
}

func (r *Report) writeFacts(b *strings.Builder) {
	b.WriteString("\nFacts:\n")
	for i := range r.GPUs {
		fmt.Fprintf(b, "  GPU %d: %s", i, describeGPU(&r.GPUs[i]))
		g := r.GPUs[i]
		if g.VRAMBytes != nil {
			fmt.Fprintf(b, ", VRAM %s", text.Bytes(*g.VRAMBytes))
		}
		if g.GTTBytes != nil {
			fmt.Fprintf(b, ", GTT %s", text.Bytes(*g.GTTBytes))
		}
		if g.PCISlot != nil {
			fmt.Fprintf(b, ", at %s", *g.PCISlot)
		}
		fmt.Fprintf(b, " [from %s]\n", g.Source)
	}
	for _, g := range r.OtherGPUs {
		id := ""
		if g.PCIID != nil {
			id = ", " + *g.PCIID
		}
		fmt.Fprintf(b, "  other display device: %s (%s%s) [from %s]\n", strOr(g.Name, "unnamed"), g.Vendor, id, g.Source)
	}
	fmt.Fprintf(b, "  kernel: %s\n", strOr(r.Kernel.Release, "unknown"))
	if r.Kernel.Cmdline != nil {
		var ps []string
		for _, p := range slices.Sorted(maps.Keys(r.Kernel.Cmdline)) {
			ps = append(ps, strings.TrimSuffix(p+"="+r.Kernel.Cmdline[p], "="))
		}
		fmt.Fprintf(b, "  GPU kernel parameters: %s\n", strOr(ptrIf(strings.Join(ps, " ")), "none"))
	}
	if r.Memory.TotalBytes != nil {
		fmt.Fprintf(b, "  RAM: %s\n", text.Bytes(*r.Memory.TotalBytes))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(b, "  note: %s\n", n)
	}
	fmt.Fprintf(b, "  read from: %s\n", strings.Join(r.Sources, ", "))
}

func ptrIf(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
