package main

import (
	"strings"
	"testing"
)

func TestWrapWords(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"short", "short"},
		{"one two three four five six seven eight nine ten eleven twelve", "one two three four five six\nseven eight nine ten eleven\ntwelve"},
		// a flag or a path is never split, even wider than the width
		{"see --from and ~/.local/state/haloforge/llamacpp-distro/llama-bench.json here", "see --from and\n~/.local/state/haloforge/llamacpp-distro/llama-bench.json\nhere"},
		// a line that fits is kept as it is; an indented one keeps its indent
		{"fits\n  an indented line that is much too long for the width given here", "fits\n  an indented line that is\n  much too long for the width\n  given here"},
	} {
		got := wrapWords(tc.in, 30)
		if got != tc.want {
			t.Errorf("wrapWords(%q) =\n%s\nwant\n%s", tc.in, got, tc.want)
		}
		for _, l := range strings.Split(got, "\n") {
			if len(l) > 30 && !strings.Contains(l, "/") {
				t.Errorf("row %q is over 30", l)
			}
		}
	}
}
