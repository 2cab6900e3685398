package tui

import (
	"strings"
	"unicode"

	"github.com/charmbracelet/x/ansi"
)

// Fixes are read and copied. Prose wraps at word boundaries; a command
// wraps only between shell words, each broken row ending in " \" and the
// rest indented deeper, so that a block copied with the mouse runs as one
// command (the shell reads backslash-newline as nothing, and the indent as
// the space it replaced). A command is never broken inside a word or a
// quoted string: such a piece longer than the width stays whole, and the
// screen that shows it scrolls sideways. A comment that does not fit
// beside its command goes on rows of its own, each a comment again.

// fixRows lays out the lines of a fix for a width.
func fixRows(fix string, width int) []string {
	var out []string
	for _, r := range fixLayout(fix, width) {
		out = append(out, r.text)
	}
	return out
}

// fixRow is one row of a laid-out fix and the kind of line it comes from.
type fixRow struct {
	text string
	kind fixLineKind
}

// fixLayout lays out each line of a fix by its kind.
func fixLayout(fix string, width int) []fixRow {
	var out []fixRow
	for _, l := range strings.Split(strings.TrimRight(fix, "\n"), "\n") {
		var rows []string
		kind := lineKind(l)
		switch kind {
		case kindCommand:
			rows = commandRows(l, width)
		case kindComment:
			rows = commentRows(l, width)
		default:
			rows = proseRows(l, width)
		}
		for _, r := range rows {
			out = append(out, fixRow{r, kind})
		}
	}
	return out
}

type fixLineKind int

const (
	kindProse fixLineKind = iota
	kindCommand
	kindComment
)

// lineKind tells the lines of a fix apart: a shell comment; a command
// (indented under a heading, as doctor writes them, or starting with a
// lower-case program name or a path, without sentences in it); else prose
// ("Fedora (grubby):", "Then reboot.", "that the driver binds to it: …").
func lineKind(l string) fixLineKind {
	t := strings.TrimSpace(l)
	if t == "" {
		return kindProse
	}
	switch {
	case t == "":
		return kindProse
	case strings.HasPrefix(t, "#"):
		return kindComment
	case strings.HasPrefix(l, "  "), strings.HasPrefix(l, "\t"):
		return kindCommand
	}
	words := shellWords(t)
	if last := words[len(words)-1]; strings.HasPrefix(last, "#") {
		words = words[:len(words)-1] // a trailing comment may be prose
	}
	var bare []string // the words without what they quote
	for _, w := range words {
		bare = append(bare, unquoted(w))
	}
	code := strings.Join(bare, " ")
	if strings.Contains(code, ". ") || strings.Contains(code, ": ") || strings.Contains(code, ", ") ||
		strings.HasSuffix(code, ".") || strings.HasSuffix(code, ":") {
		return kindProse // sentences: a command line has none
	}
	r := []rune(t)[0]
	if unicode.IsLower(r) || strings.ContainsRune("./$~", r) {
		return kindCommand
	}
	return kindProse
}

// unquoted drops what a shell word quotes: "x: y" and 's/a: b/' hold no
// sentence however they read.
func unquoted(w string) string {
	var b strings.Builder
	var quote rune
	for _, r := range w {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// leading splits a line into its indentation and the rest.
func leading(l string) (string, string) {
	t := strings.TrimLeft(l, " \t")
	return l[:len(l)-len(t)], t
}

// proseRows wraps a line of text at word boundaries; the rows after the
// first are indented two cells deeper than the line.
func proseRows(l string, width int) []string {
	return wrapWithPrefix(l, width, "  ")
}

// commentRows wraps a shell comment; every row stays a comment.
func commentRows(l string, width int) []string {
	lead, t := leading(l)
	return wrapWithPrefix(lead+t, width, "#   ")
}

// wrapWithPrefix word-wraps l at spaces; rows after the first start with
// the line's indent and then next. A word longer than a row stays whole.
func wrapWithPrefix(l string, width int, next string) []string {
	if ansi.StringWidth(l) <= width {
		return []string{l} // as written, its spacing kept
	}
	lead, text := leading(l)
	var rows []string
	cur := lead
	for _, w := range strings.Fields(text) {
		switch {
		case cur == lead || cur == lead+next:
			cur += w
		case ansi.StringWidth(cur)+1+ansi.StringWidth(w) > width:
			rows = append(rows, cur)
			cur = lead + next + w
		default:
			cur += " " + w
		}
	}
	return append(rows, cur)
}

// commandRows wraps a shell command between its words with " \"
// continuations; words (with their quotes) are never split.
func commandRows(l string, width int) []string {
	lead, text := leading(l)
	words := shellWords(text)
	if len(words) == 0 {
		return []string{l}
	}
	comment := ""
	if last := words[len(words)-1]; strings.HasPrefix(last, "#") {
		comment, words = last, words[:len(words)-1]
		if len(words) == 0 {
			return commentRows(l, width)
		}
	}
	indent := lead + "    "
	var rows []string
	cur := lead + words[0]
	for _, w := range words[1:] {
		// a row keeps room for its " \" when another word follows
		if ansi.StringWidth(cur)+1+ansi.StringWidth(w)+2 > width {
			rows = append(rows, cur+" \\")
			cur = indent + w
			continue
		}
		cur += " " + w
	}
	switch {
	case comment == "":
	case ansi.StringWidth(cur)+3+ansi.StringWidth(comment) <= width:
		cur += "   " + comment
	default:
		// on rows of its own: the command ends where it did, the comment
		// after it is one again on every row
		rows = append(rows, cur)
		cur = ""
		rows = append(rows, commentRows(lead+comment, width)...)
	}
	if cur != "" {
		rows = append(rows, cur)
	}
	return rows
}

// shellWords splits a command line at the spaces a shell splits it at:
// quotes and backslash escapes keep their spaces, and each word keeps its
// quotes as written. A comment (from a word starting with #) runs to the
// end of the line and stays one piece: a continuation inside it would not
// continue.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	var quote rune
	escaped := false
	for i, r := range s {
		switch {
		case escaped:
			escaped = false
		case r == '\\' && quote != '\'':
			escaped = true
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && cur.Len() == 0:
			return append(words, strings.TrimSpace(s[i:]))
		case r == ' ' || r == '\t':
			if cur.Len() > 0 {
				words = append(words, cur.String())
				cur.Reset()
			}
			continue
		}
		cur.WriteRune(r)
	}
	if cur.Len() > 0 {
		words = append(words, cur.String())
	}
	return words
}
