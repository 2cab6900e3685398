package diagnose

import (
	"bytes"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/internal/text"
)

// maxTextLen bounds the text a Finding carries: a minified 10 MB line must
// not end up in a hint panel or a JSON report.
const maxTextLen = 400

// cleanLine returns what a terminal would show for one raw line, for
// matching: escape sequences removed, and only the last redraw of a
// `\r`-overwritten line. Lines without ESC or CR are returned as they are,
// without allocating. What is printed of a line goes through capValid.
func cleanLine(raw []byte) []byte {
	raw = bytes.TrimRight(raw, "\r\n")
	if i := lastIndexByte(raw, '\r'); i >= 0 {
		raw = raw[i+1:]
	}
	if bytes.IndexByte(raw, 0x1b) < 0 {
		return raw
	}
	return []byte(ansi.Strip(string(raw)))
}

// meaningful reports whether a clean line carries content: blank lines,
// markdown fences and rules, and CI timestamps alone do not.
func meaningful(line []byte) bool {
	line = stripTimestamp(line)
	for _, c := range line {
		if !decor[c] {
			return true
		}
	}
	return false
}

// decor marks the bytes that carry no content on their own: white space
// and the characters of markdown fences, rules and quotes.
var decor = func() (t [256]bool) {
	for _, c := range []byte(" \t\v\f\r\n`~-=_*#.>|") {
		t[c] = true
	}
	return t
}()

// stripTimestamp drops a GitHub Actions style RFC 3339 prefix
// ("2025-11-20T04:49:42.3835448Z "), so a timestamp alone is not content.
func stripTimestamp(line []byte) []byte {
	if len(line) < 20 || line[4] != '-' || line[7] != '-' || line[10] != 'T' {
		return line
	}
	if i := bytes.IndexByte(line[:min(len(line), 40)], 'Z'); i > 0 {
		return line[i+1:]
	}
	return line
}

// excerpt returns the line for display: whole when short, else a window
// of maxTextLen bytes around the match at offset at, cut on rune starts.
func excerpt(line []byte, at int) string {
	line = bytes.TrimRight(line, " \t")
	if len(line) <= maxTextLen {
		return capValid(string(bytes.TrimLeft(line, " \t")))
	}
	from := max(0, min(at-maxTextLen/4, len(line)-maxTextLen))
	to := from + maxTextLen
	for from > 0 && !utf8.RuneStart(line[from]) {
		from--
	}
	for to < len(line) && !utf8.RuneStart(line[to]) {
		to++
	}
	s := capValid(string(line[from:to]))
	if from > 0 {
		s = "…" + s
	}
	if to < len(line) {
		s += "…"
	}
	return s
}

// capValid makes s printable through the one sanitiser (what is left of
// controls and bidi overrides after cleanLine, invalid UTF-8) and keeps it
// within maxTextLen bytes: each invalid byte becomes a 3-byte U+FFFD, so
// binary garbage would otherwise triple in size.
func capValid(s string) string {
	s = text.Printable(s, 0)
	if len(s) <= maxTextLen {
		return s
	}
	cut := maxTextLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
