package tui

import "strings"

// keepOnlySGR drops every escape byte that does not start a complete SGR
// colour sequence (ESC [ digits/;/: m). The runner already sanitises step
// output, but a line can reach a pane from elsewhere (the demo, a log read
// back), and a stray ESC makes ansi.Truncate and ansi.StringWidth disagree
// about a line's width, so a cut line could overflow its pane.
func keepOnlySGR(s string) string {
	if strings.IndexByte(s, 0x1b) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != 0x1b {
			b.WriteByte(s[i])
			continue
		}
		if n := sgrLen(s[i:]); n > 0 {
			b.WriteString(s[i : i+n])
			i += n - 1
		}
	}
	return b.String()
}

// sgrLen is the length of the SGR sequence s starts with, 0 when s does
// not start with a complete one.
func sgrLen(s string) int {
	if len(s) < 3 || s[0] != 0x1b || s[1] != '[' {
		return 0
	}
	for j := 2; j < len(s); j++ {
		switch c := s[j]; {
		case c == 'm':
			return j + 1
		case c >= '0' && c <= '9', c == ';', c == ':':
		default:
			return 0
		}
	}
	return 0
}
