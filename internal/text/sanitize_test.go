package text

import (
	"bytes"
	"strings"
	"testing"
	"testing/iotest"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func collect(s *Sanitizer, chunks ...string) []Line {
	var out []Line
	emit := func(l Line) { out = append(out, l) }
	for _, c := range chunks {
		s.Write([]byte(c), emit)
	}
	s.Flush(emit)
	return out
}

func texts(ls []Line) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Text
	}
	return out
}

func TestSanitizeText(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   []string
	}{
		{"plain lines", []string{"a\nb\n"}, []string{"a", "b"}},
		{"pty line ends", []string{"one\r\ntwo\r\n"}, []string{"one", "two"}},
		{"blank line kept", []string{"a\r\n\r\nb\r\n"}, []string{"a", "", "b"}},
		{"no final newline", []string{"partial"}, []string{"partial"}},
		{"progress bar keeps last redraw", []string{"  1%\r 50%\r100%\r\n"}, []string{"100%"}},
		{"redraw with erase", []string{"[1/3] cc a.c\r\x1b[K[3/3] link\r\n"}, []string{"[3/3] link"}},
		{"cr split from lf", []string{"done\r", "\nnext\n"}, []string{"done", "next"}},
		{"cr at end of stream keeps text", []string{"waiting\r"}, []string{"waiting"}},
		{"colours stripped", []string{"\x1b[1;31merror:\x1b[0m bad\n"}, []string{"error: bad"}},
		{"cursor movement dropped", []string{"a\x1b[2A\x1b[10;5Hb\x1b[?25l\x1b[2J\n"}, []string{"ab"}},
		{"title OSC with BEL", []string{"\x1b]0;pwned title\x07ok\n"}, []string{"ok"}},
		{"OSC 52 clipboard with ST", []string{"x\x1b]52;c;cm0gLXJmIH4K\x1b\\y\n"}, []string{"xy"}},
		{"hyperlink keeps its label", []string{"\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\\n"}, []string{"link"}},
		{"DCS APC PM SOS swallowed", []string{"a\x1bPq#0;2;0;0;0\x1b\\b\x1b_apc\x1b\\c\x1b^pm\x1b\\d\x1bXsos\x1b\\e\n"}, []string{"abcde"}},
		{"CSI split across writes", []string{"a\x1b", "[3", "1m", "b\n"}, []string{"ab"}},
		{"OSC split across writes", []string{"a\x1b]0;ti", "tle\x1b", "\\b\n"}, []string{"ab"}},
		{"two-byte escapes", []string{"a\x1b7\x1bMb\x1bc\x1b(Bc\n"}, []string{"abc"}},
		{"bell and NUL dropped", []string{"a\x07b\x00c\x00\n"}, []string{"abc"}},
		{"tab kept", []string{"a\tb\n"}, []string{"a\tb"}},
		{"backspace overwrites", []string{"ab\bc|\b/\b-\n"}, []string{"ac-"}},
		{"invalid UTF-8 replaced", []string{"a\xffb\xc3(c\n"}, []string{"a\ufffdb\ufffd(c"}},
		{"UTF-8 split across writes", []string{"caf\xc3", "\xa9 \xe2\x9c", "\x93\n"}, []string{"café ✓"}},
		{"overlong and surrogate", []string{"\xe0\x80\xaf|\xed\xa0\x80\n"}, []string{"\ufffd|\ufffd"}},
		{"C1 controls dropped", []string{"a\xc2\x9b31mb\xc2\x85c\n"}, []string{"a31mbc"}},
		{"raw 8-bit CSI is invalid UTF-8", []string{"a\x9b2Jb\n"}, []string{"a\ufffd2Jb"}},
		{"unterminated OSC stops at newline", []string{"a\x1b]0;never ends\nvisible\n"}, []string{"a", "visible"}},
		{"malformed CSI stops at newline", []string{"a\x1b[12\nb\n"}, []string{"a", "b"}},
		{"ESC ESC restarts", []string{"a\x1b\x1b[31mb\n"}, []string{"ab"}},
		{"CAN cancels a sequence", []string{"a\x1b[3\x18b\n"}, []string{"ab"}},
		{"line of only controls is dropped", []string{"a\n\x1b[2K\x1b[1A\nb\n"}, []string{"a", "b"}},
		{"unfinished escape at end dropped", []string{"a\x1b]52;c;AAAA"}, []string{"a"}},
		{"unfinished UTF-8 at end replaced", []string{"a\xe2\x9c"}, []string{"a\ufffd"}},
		// a right-to-left override reorders what follows on screen
		{"bidi overrides and isolates dropped", []string{"abc\u202egnp.exe\u202c \u2066x\u2069 \u202ay\u202c\n"}, []string{"abcgnp.exe x y"}},
		{"bidi marks dropped", []string{"a\u200eb\u200fc\u061cd\n"}, []string{"abcd"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := texts(collect(&Sanitizer{}, tt.chunks...))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			// Every split of the joined input gives the same lines.
			joined := strings.Join(tt.chunks, "")
			for i := 1; i < len(joined); i++ {
				got := texts(collect(&Sanitizer{}, joined[:i], joined[i:]))
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Fatalf("split at %d (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestSanitizeColor(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"SGR kept and reset at line end", "\x1b[1;31merror\x1b[0m ok\n", []string{"\x1b[1;31merror\x1b[0m ok\x1b[0m"}},
		{"colour carried to next line", "\x1b[32mgreen\nstill\x1b[m\nplain\n", []string{"\x1b[32mgreen\x1b[0m", "\x1b[32mstill\x1b[m\x1b[0m", "plain"}},
		{"truecolor with colons", "\x1b[38:2::1:2:3mx\x1b[0m\n", []string{"\x1b[38:2::1:2:3mx\x1b[0m\x1b[0m"}},
		{"private SGR-like dropped", "\x1b[?25mx\x1b[>4;2m\n", []string{"x"}},
		{"non-SGR CSI dropped", "\x1b[2Kx\x1b[5C\n", []string{"x"}},
		{"oversized SGR dropped", "\x1b[" + strings.Repeat("1;", 40) + "mx\n", []string{"x"}},
		// conceal (8) could hide the step's later lines, blink
		// and reverse disguise them; colours stay, 256 and truecolor too
		{"blink, reverse and conceal dropped", "\x1b[31;1;5;7;8mred\x1b[8mhidden\x1b[0m\n", []string{"\x1b[31;1mredhidden\x1b[0m\x1b[0m"}},
		{"256 and truecolor keep their 5 and 2", "\x1b[38;5;8;48;2;5;6;7;5mx\n", []string{"\x1b[38;5;8;48;2;5;6;7mx\x1b[0m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, l := range collect(&Sanitizer{KeepColor: true}, tt.in) {
				got = append(got, l.Color)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSanitizeLineNumbers(t *testing.T) {
	// Line numbers count raw '\n', so a dropped control-only line still
	// advances them: the diagnosis points at the right line of the log.
	got := collect(&Sanitizer{}, "a\n\x1b[2K\nb\nc")
	want := []Line{{No: 1, Text: "a"}, {No: 3, Text: "b"}, {No: 4, Text: "c"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSanitizeLongLineIsCutAndBounded(t *testing.T) {
	s := &Sanitizer{MaxLine: 100}
	var got []Line
	emit := func(l Line) { got = append(got, l) }
	chunk := bytes.Repeat([]byte("é"), 32<<10) // 64 KiB of 2-byte runes per write
	for range 160 {                            // 10 MiB without a newline
		s.Write(chunk, emit)
	}
	if cap(s.text) > 4*100 {
		t.Errorf("line buffer grew to %d bytes for a 100-byte cap", cap(s.text))
	}
	s.Write([]byte("\nnext\n"), emit)
	if len(got) != 2 {
		t.Fatalf("got %d lines, want 2", len(got))
	}
	if len(got[0].Text) != 100 || !utf8.ValidString(got[0].Text) {
		t.Errorf("cut line: %d bytes, valid UTF-8 %v; want 100 bytes of whole runes", len(got[0].Text), utf8.ValidString(got[0].Text))
	}
	if want := 160*64<<10 - 100; got[0].Cut != want {
		t.Errorf("Cut = %d, want %d", got[0].Cut, want)
	}
	if got[1].Text != "next" || got[1].Cut != 0 {
		t.Errorf("line after the long one = %+v", got[1])
	}
}

// checkSafe asserts what FuzzSanitize promises for any input.
func checkSafe(t *testing.T, out string, keepColor bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("invalid UTF-8 in %q", out)
	}
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case c == 0x1b:
			if !keepColor {
				t.Fatalf("ESC at %d in %q", i, out)
			}
			j := i + 2
			if j > len(out) || out[i+1] != '[' {
				t.Fatalf("ESC not starting a CSI at %d in %q", i, out)
			}
			for j < len(out) && (out[j] >= '0' && out[j] <= ';') {
				j++
			}
			if j >= len(out) || out[j] != 'm' {
				t.Fatalf("kept escape at %d is not an SGR: %q", i, out)
			}
			i = j
		case c == '\n', c == '\t':
		case c < 0x20 || c == 0x7f:
			t.Fatalf("control %#x at %d in %q", c, i, out)
		}
	}
	for _, r := range out {
		if r >= 0x80 && r <= 0x9f {
			t.Fatalf("C1 control %U in %q", r, out)
		}
		if unicode.Is(unicode.Bidi_Control, r) {
			t.Fatalf("bidi control %U in %q", r, out)
		}
	}
}

func FuzzSanitize(f *testing.F) {
	for _, seed := range []string{
		"plain\n", "\x1b[1;31mred\x1b[0m\n", "\x1b]52;c;cm0gLXJmIH4K\x07", "\x1b]0;title\x1b\\",
		"a\rb\r\n", "\xff\xfe\xc3", "\x00\x07\x08", "\x1bP1$r\x1b\\", "\x1b[?1049h\x1b[H",
		"\x1b[38;2;1;2;3m", "\x1b\x1b[", "\xc2\x9b2J", "a\u202eb\u2067c\u200fd\u061c", "\x1b]8;;http://x\x1b\\l\x1b]8;;\x1b\\",
	} {
		f.Add([]byte(seed), uint8(3), false)
		f.Add([]byte(seed), uint8(1), true)
	}
	f.Fuzz(func(t *testing.T, in []byte, split uint8, keepColor bool) {
		s := &Sanitizer{KeepColor: keepColor, MaxLine: 64}
		var lines []Line
		emit := func(l Line) { lines = append(lines, l) }
		at := int(split) % (len(in) + 1)
		s.Write(in[:at], emit)
		s.Write(in[at:], emit)
		s.Flush(emit)
		prev := 0
		for _, l := range lines {
			if l.No <= prev {
				t.Fatalf("line numbers not increasing: %d after %d", l.No, prev)
			}
			prev = l.No
			if len(l.Text) > 64 {
				t.Fatalf("line of %d bytes over the cap", len(l.Text))
			}
			checkSafe(t, l.Text, false)
			if strings.Contains(l.Text, "\n") {
				t.Fatalf("newline inside a line: %q", l.Text)
			}
			if keepColor {
				checkSafe(t, l.Color, true)
			}
		}
		if n := bytes.Count(in, []byte{'\n'}); s.LinesSeen() != n {
			t.Fatalf("LinesSeen = %d, want %d", s.LinesSeen(), n)
		}
	})
}

func TestWriteScreen(t *testing.T) {
	in := "plain\n\x1b[31mred\x1b[0m line\n\x1b]0;PWNED\x07title gone \u202eoverride gone\n 12%|█▏ |\r 99%|███|\r\nno newline at the end"
	for _, tc := range []struct {
		name  string
		color bool
		want  string
	}{
		{"text", false, "plain\nred line\ntitle gone override gone\n 99%|███|\nno newline at the end\n"},
		{"colour", true, "plain\n\x1b[31mred\x1b[0m line\x1b[0m\ntitle gone override gone\n 99%|███|\nno newline at the end\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			// A reader that hands over a few bytes at a time: sequences split anywhere.
			if err := WriteScreen(&b, iotest.OneByteReader(strings.NewReader(in)), tc.color); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got %q\nwant %q", b.String(), tc.want)
			}
		})
	}
}
