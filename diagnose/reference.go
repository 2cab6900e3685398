package diagnose

import (
	"fmt"
	"strings"
)

// Markers around the generated reference in TUTORIAL.md. The begin marker
// is matched by prefix so that its wording may change without breaking
// the regeneration.
const (
	ReferenceBegin = "<!-- BEGIN FAILURE REFERENCE"
	ReferenceEnd   = "<!-- END FAILURE REFERENCE -->"
)

// MarkdownReference renders every rule as the troubleshooting reference of
// TUTORIAL.md: one section per family ID (the ID is the heading, so
// TUTORIAL.md#<family> links to it), with what the log shows, the cause,
// the fix, the public threads and, for hang families, the ladder. The rules
// are the one source of truth.
func MarkdownReference() string {
	var b strings.Builder
	b.WriteString("Each family below is a code that `haloforge diagnose`, the hint panel and `report.json`\n")
	b.WriteString("print. The sections are generated from the rules in `diagnose/rules.go`.\n")
	for _, r := range rules {
		writeRule(&b, r)
	}
	return b.String()
}

func writeRule(b *strings.Builder, r Rule) {
	fmt.Fprintf(b, "\n### %s\n\n**%s.** %s\n\n", r.ID, r.Title, r.Summary)
	if r.Stall {
		fmt.Fprintf(b, "- **Seen as:** silence right after %s: live, no output for %s (the default stall timeout); offline, the log ends there. The line alone is normal output.\n",
			codeList(markers(r)), fmt.Sprintf("%d minutes", int(DefaultStallTimeout.Minutes())))
		if other := lineSignals(r); len(other) > 0 {
			fmt.Fprintf(b, "  A stack of the stuck process shows %s.\n", codeList(other))
		}
	} else {
		fmt.Fprintf(b, "- **Seen as:** %s.\n", codeList(r.Signals))
	}
	fmt.Fprintf(b, "- **Cause:** %s\n", r.Cause)
	if where := applies(r); where != "" {
		fmt.Fprintf(b, "- **Applies to:** %s.\n", where)
	}
	if len(r.Links) > 0 {
		fmt.Fprintf(b, "- **Reported in:** %s.\n", linkList(r.Links))
	}
	if r.Seed {
		b.WriteString("- *From the project's design notes; no public log excerpt yet.*\n")
	}
	fmt.Fprintf(b, "\n```sh\n%s\n```\n", r.Fix)
	if len(r.Ladder) > 0 {
		fmt.Fprintf(b, "\n%s:\n\n", LadderTitle)
		for i, rung := range r.Ladder {
			fmt.Fprintf(b, "%d. **%s:** %s\n", i+1, rung.Try, rung.How)
		}
	}
}

func markers(r Rule) []string {
	var out []string
	for _, p := range r.pats {
		if p.marker {
			out = append(out, p.lit)
		}
	}
	return out
}

func lineSignals(r Rule) []string {
	var out []string
	for _, p := range r.pats {
		if !p.marker {
			out = append(out, p.lit)
		}
	}
	return out
}

func applies(r Rule) string {
	var parts []string
	if len(r.Tracks) > 0 {
		parts = append(parts, "tracks "+codeList(r.Tracks))
	}
	if len(r.Steps) > 0 {
		parts = append(parts, "steps "+codeList(r.Steps))
	}
	if len(r.ExceptSteps) > 0 {
		parts = append(parts, "every step but "+codeList(r.ExceptSteps)+" (where it is normal output)")
	}
	return strings.Join(parts, "; ")
}

func codeList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = "`" + s + "`"
	}
	switch len(quoted) {
	case 0:
		return ""
	case 1:
		return quoted[0]
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

// linkList renders issue addresses as [owner/repo#N](address).
func linkList(links []string) string {
	out := make([]string, len(links))
	for i, l := range links {
		label := strings.TrimPrefix(l, "https://github.com/")
		if repo, num, ok := strings.Cut(label, "/issues/"); ok {
			label = repo + "#" + num
		}
		out[i] = fmt.Sprintf("[%s](%s)", label, l)
	}
	return strings.Join(out, ", ")
}

// ReplaceReference returns doc with the text between the reference markers
// replaced by ref. ok is false when the markers are missing or out of order.
func ReplaceReference(doc, ref string) (string, bool) {
	begin := strings.Index(doc, ReferenceBegin)
	if begin < 0 {
		return doc, false
	}
	lineEnd := strings.IndexByte(doc[begin:], '\n')
	if lineEnd < 0 {
		return doc, false
	}
	from := begin + lineEnd + 1
	to := strings.Index(doc[from:], ReferenceEnd)
	if to < 0 {
		return doc, false
	}
	return doc[:from] + ref + doc[from+to:], true
}
