package text

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

// FixRows lays out the lines of a fix for a width.
func FixRows(fix string, width int) []string {
	var out []string
	for _, r := range FixLayout(fix, width) {
		out = append(out, r.Text)
	}
	return out
}

// FixRow is one row of a laid-out fix and the kind of line it comes from.
type FixRow struct {
	Text string
	Kind LineKind
}

// FixLayout lays out each line of a fix by its kind.
func FixLayout(fix string, width int) []FixRow {
	var out []FixRow
	for _, l := range strings.Split(strings.TrimRight(fix, "\n"), "\n") {
		var rows []string
		kind := KindOf(l)
		switch kind {
		case Command:
			rows = CommandRows(l, width)
		case Comment:
			rows = commentRows(l, width)
		default:
			rows = ProseRows(l, width)
		}
		for _, r := range rows {
			out = append(out, FixRow{r, kind})
		}
	}
	return out
}

// LineKind is what a line of a fix is: prose, a command or a comment.
type LineKind int

// The kinds of a fix's lines.
const (
	Prose   LineKind = iota // a sentence: wraps at words
	Command                 // a shell command: wraps between its words with " \"
	Comment                 // a shell comment: every row stays one
)

// KindOf tells the lines of a fix apart: a shell comment; a command
// (indented under a heading, as doctor writes them, or starting with a
// lower-case program name or a path, without sentences in it); else prose
// ("Fedora (grubby):", "Then reboot.", "that the driver binds to it: …").
func KindOf(l string) LineKind {
	t := strings.TrimSpace(l)
	if t == "" {
		return Prose
	}
	switch {
	case t == "":
		return Prose
	case strings.HasPrefix(t, "#"):
		return Comment
	case strings.HasPrefix(l, "  "), strings.HasPrefix(l, "\t"):
		return Command
	}
	words := ShellWords(t)
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
		return Prose // sentences: a command line has none
	}
	r := []rune(t)[0]
	if unicode.IsLower(r) || strings.ContainsRune("./$~", r) {
		return Command
	}
	return Prose
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

// ProseRows wraps a line of text at word boundaries; the rows after the
// first are indented two cells deeper than the line.
func ProseRows(l string, width int) []string {
	return Wrap(l, width, "  ")
}

// commentRows wraps a shell comment; every row stays a comment.
func commentRows(l string, width int) []string {
	lead, t := leading(l)
	return Wrap(lead+t, width, "#   ")
}

// Wrap word-wraps l at spaces to width; rows after the first start with
// the line's indent and then next. A word is never cut inside: one wider
// than a row breaks only after a '/' (a path, a URL), each piece as long as
// fits, and with no '/' it stays whole (the screen scrolls sideways).
func Wrap(l string, width int, next string) []string {
	if ansi.StringWidth(l) <= width {
		return []string{l} // as written, its spacing kept
	}
	lead, text := leading(l)
	var rows []string
	cur := lead
	fresh := func() bool { return cur == lead || cur == lead+next }
	// put adds a piece after sep, or on a new row when it does not fit.
	put := func(piece, sep string) {
		switch {
		case fresh():
			cur += piece
		case ansi.StringWidth(cur)+len(sep)+ansi.StringWidth(piece) > width:
			rows = append(rows, cur)
			cur = lead + next + piece
		default:
			cur += sep + piece
		}
	}
	// at ASCII spaces only: a no-break space (U+00A0) holds its words
	// together, as it says
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '\t' }) {
		if ansi.StringWidth(lead+next+w) <= width || !strings.Contains(strings.TrimSuffix(w, "/"), "/") {
			put(w, " ")
			continue
		}
		for i, p := range pathPieces(w) {
			if i == 0 {
				put(p, " ")
			} else {
				put(p, "")
			}
		}
	}
	return append(rows, cur)
}

// pathPieces splits a word after each '/': "/a/b.json" is "/", "a/",
// "b.json".
func pathPieces(w string) []string {
	var out []string
	for w != "" {
		i := strings.IndexByte(w, '/')
		if i < 0 {
			return append(out, w)
		}
		out = append(out, w[:i+1])
		w = w[i+1:]
	}
	return out
}

// CommandRows wraps a shell command between its words with " \"
// continuations; words (with their quotes) are never split.
func CommandRows(l string, width int) []string {
	lead, text := leading(l)
	words := ShellWords(text)
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
	for _, w := range flagUnits(words[1:], width-len(indent)-2) {
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

// flagUnits keeps an option and its value on one row ("--model M"), as
// long as the two fit a row together: a break goes between options, where
// a reader looks for one.
func flagUnits(words []string, room int) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		if i+1 < len(words) && isOption(w) && !isOption(words[i+1]) && !isOperator(words[i+1]) &&
			ansi.StringWidth(w)+1+ansi.StringWidth(words[i+1]) <= room {
			w += " " + words[i+1]
			i++
		}
		out = append(out, w)
	}
	return out
}

// isOption is a word such as -o or --model that may take the next word as
// its value (not --flag=value, not a lone "-" or "--").
func isOption(w string) bool {
	return strings.HasPrefix(w, "-") && w != "-" && w != "--" && !strings.Contains(w, "=")
}

// isOperator is a word the shell reads as a pipe, list or redirection.
func isOperator(w string) bool {
	return strings.ContainsAny(w[:1], "|&;<>") || strings.HasPrefix(w, "2>") || strings.HasPrefix(w, "1>")
}

// ShellWords splits a command line at the spaces a shell splits it at:
// quotes and backslash escapes keep their spaces, and each word keeps its
// quotes as written, and so does a $(…) substitution. A comment (from a word starting with #) runs to the
// end of the line and stays one piece: a continuation inside it would not
// continue.
func ShellWords(s string) []string {
	var words []string
	var cur strings.Builder
	var quote rune
	escaped, depth := false, 0
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
		case r == '(' && strings.HasSuffix(cur.String(), "$"):
			depth++ // a $(command) is one word with its spaces
		case r == ')' && depth > 0:
			depth--
		case (r == ' ' || r == '\t') && depth == 0:
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
