package text

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// hostile holds what must never reach a terminal or a report file: a
// right-to-left override, a C1 CSI, an OSC title, a bell, a redraw and a
// backspace.
const hostile = "model \u202eevil\u202c \u009b31m \x1b]0;pwned\x07 \x1b[2Jx\a\r\bq"

func TestSanitize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain text unchanged", "a b\n\tc\n", "a b\n\tc\n"},
		{"empty", "", ""},
		{"lines and blank lines kept", "a\n\nb\n", "a\n\nb\n"},
		{"a line of only controls keeps its place", "a\n\x1b[2K\nb", "a\n\nb"},
		{"CRLF becomes LF", "a\r\nb\r\n", "a\nb\n"},
		{"carriage return cannot hide what came before", "evil\rnice\n", "evilnice\n"},
		{"backspace cannot erase", "rm -rf /\b\b\b\b\b\b\b\bls\n", "rm -rf /ls\n"},
		{"escapes, C1 and bidi removed", hostile, "model evil 31m  xq"},
		{"bidi marks and isolates removed", "a\u200eb\u200fc\u061cd\u2066e\u2069", "abcde"},
		{"invalid UTF-8 replaced", "a\xffb", "a\ufffdb"},
		{"long lines not cut", strings.Repeat("é", 10<<10) + "\x07", strings.Repeat("é", 10<<10)},
		{"colours stripped", "\x1b[1;31merror:\x1b[0m bad", "error: bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Sanitize(tt.in); got != tt.want {
				t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestScreen(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain text unchanged", "a b\n", "a b\n"},
		{"progress bar keeps its last redraw", "  1%\r 50%\r100%\r\n", "100%\n"},
		{"backspace erases", "ab\bc", "ac"},
		{"CRLF paste", "a\r\nb\r", "a\nb"},
		{"escapes, C1 and bidi removed", "\x1b[31mred\x1b[0m \u202eevil\u009b", "red evil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Screen(tt.in); got != tt.want {
				t.Errorf("Screen(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestPrintable(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"plain", "hello", 10, "hello"},
		{"line breaks and tabs become spaces", " a\nb\r\nc\td\u2028e ", 0, "a b c d e"},
		{"hostile bytes removed", hostile, 0, "model evil 31m  x q"},
		{"cut to max runes with an ellipsis", "ééééé", 3, "ééé…"},
		{"no cut at exactly max", "ééé", 3, "ééé"},
		{"no space before the ellipsis", "ab cd", 3, "ab…"},
		{"max 0 is no bound", strings.Repeat("x", 500), 0, strings.Repeat("x", 500)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Printable(tt.in, tt.max); got != tt.want {
				t.Errorf("Printable(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
		})
	}
}

// assertSafe fails when s holds anything a terminal would act on or
// reorder; newline is allowed where oneLine is false.
func assertSafe(t *testing.T, s string, oneLine bool) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("invalid UTF-8: %q", s)
	}
	for _, r := range s {
		switch {
		case r == '\n' && !oneLine, r == '\t' && !oneLine:
		case r < 0x20, r >= 0x7f && r <= 0x9f, unicode.Is(unicode.Bidi_Control, r):
			t.Fatalf("%U reaches the output: %q", r, s)
		}
	}
}

func FuzzPrintable(f *testing.F) {
	for _, seed := range []string{hostile, "plain", "a\nb", "\xff\xfe", "\x1b]8;;x\x1b\\l", "\u2066\u2069\u200e"} {
		f.Add(seed, 20)
	}
	f.Fuzz(func(t *testing.T, in string, max int) {
		max %= 1000
		got := Printable(in, max)
		assertSafe(t, got, true)
		if max > 0 && utf8.RuneCountInString(got) > max+1 {
			t.Fatalf("%d runes for a bound of %d: %q", utf8.RuneCountInString(got), max, got)
		}
		for name, f := range map[string]func(string) string{"Sanitize": Sanitize, "Screen": Screen} {
			s := f(in)
			assertSafe(t, s, false)
			if strings.Count(s, "\n") != strings.Count(in, "\n") {
				t.Fatalf("%s changed the number of lines: %q → %q", name, in, s)
			}
		}
	})
}
