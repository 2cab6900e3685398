package tui

import "testing"

func TestKeepOnlySGR(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"\x1b[31mred\x1b[0m", "\x1b[31mred\x1b[0m"},
		{"\x1b[38;2;1;2;3mrgb\x1b[m", "\x1b[38;2;1;2;3mrgb\x1b[m"},
		{"0\x1b\uFFFD0", "0\uFFFD0"},             // the FuzzLogView finding: a lone ESC
		{"a\x1b]0;title\x07b", "a]0;title\x07b"}, // not SGR: the ESC goes, the bytes stay visible
		{"cut\x1b[31", "cut[31"},                 // an unfinished sequence
		{"\x1b[2Jclear", "[2Jclear"},             // a cursor/erase sequence is not a colour
		{"\x1b", ""},
	} {
		if got := keepOnlySGR(tc.in); got != tc.want {
			t.Errorf("keepOnlySGR(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
