package verify

import (
	"strconv"
	"strings"

	"github.com/haloforge/haloforge/internal/text"
)

// Everything a server sends is untrusted: a model's text, a token, an error
// message, a model name. None of it reaches a terminal, a reference file or
// a JSON report before it has gone through printable or tokenText, both of
// which end in the one sanitiser (internal/text: escape sequences, C0/C1
// controls and bidi overrides out).

// maxShown bounds a text shown in a line or kept in a report, in runes.
const maxShown = 120

// printable is s on one line, at most n runes, sanitised (text.Printable);
// U+FFFD, a byte token cut in the middle of a character, is left out.
func printable(s string, n int) string {
	return text.Printable(strings.ReplaceAll(s, "\uFFFD", ""), n)
}

// tokenText is a token's bytes as a reader can see them exactly: Go's
// quoting without the quotes (a newline is \n, a lone byte of a character
// is \xe2, a bidi override is \u202e, leading and trailing spaces kept),
// then the sanitiser, which leaves such text as it is. At most 64 bytes of
// the token are shown.
func tokenText(b []byte) string {
	cut := ""
	if len(b) > 64 {
		b, cut = b[:64], "…"
	}
	q := strconv.Quote(string(b))
	return text.Sanitize(q[1:len(q)-1]) + cut
}

// quoted is a token as a line shows it: tokenText in double quotes.
func quoted(b []byte) string { return `"` + tokenText(b) + `"` }

// Printable is text from a server or a user made safe for one line of a
// terminal or a report: on one line, at most n runes, sanitised.
func Printable(s string, n int) string { return printable(s, n) }
