package text

import "strings"

// Sanitize makes text from outside (a file, a server's answer, a field of
// a JSON document, a plan) safe for a terminal and a report file, keeping
// its lines: escape sequences, C0 controls other than '\n' and '\t', C1
// controls and bidi controls are removed, invalid UTF-8 becomes U+FFFD.
// The text is not a terminal stream, so '\r' and '\b' are dropped like
// the other controls, never applied: they cannot hide what came before
// them. Nothing is cut; bound the input where it is read.
func Sanitize(s string) string { return sanitize(s, true) }

// Screen is what a terminal would show of a program's raw output (a log
// line, a paste of a terminal): as Sanitize, except that a '\r' redraw
// (a progress bar) keeps only what came after it and '\b' erases, as on a
// terminal. Use it where text is matched or shown as the program meant it
// to look; use Sanitize for data, where nothing may be hidden.
func Screen(s string) string { return sanitize(s, false) }

func sanitize(s string, literal bool) string {
	if plain(s) {
		return s
	}
	z := Sanitizer{MaxLine: 3*len(s) + 1, literal: literal} // an invalid byte becomes 3: nothing is cut
	var b strings.Builder
	b.Grow(len(s))
	line := 1
	emit := func(l Line) {
		// A line of only controls is not emitted: keep its place.
		for ; line < l.No; line++ {
			b.WriteByte('\n')
		}
		b.WriteString(l.Text)
	}
	z.Write([]byte(s), emit)
	z.Flush(emit)
	for ; line <= z.LinesSeen(); line++ {
		b.WriteByte('\n')
	}
	return b.String()
}

// Printable is untrusted text for one line of a screen, a message or a
// report: Sanitize, with line breaks and tabs as spaces, trimmed, and at
// most max runes (then ending in "…"); max ≤ 0 means no bound.
func Printable(s string, max int) string {
	s = strings.TrimSpace(Sanitize(oneLine.Replace(s)))
	if max <= 0 || len(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max {
			return strings.TrimRight(s[:i], " ") + "…"
		}
		n++
	}
	return s
}

// oneLine turns line breaks (Unicode's too) and tabs into spaces before the
// sanitiser, which would otherwise keep them.
var oneLine = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ", "\u2028", " ", "\u2029", " ")

// plain reports whether s is printable ASCII, newlines and tabs only:
// nothing to sanitise.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}
