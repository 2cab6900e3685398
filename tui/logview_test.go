package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func filled(capacity, n int) *logBuffer {
	b := newLogBuffer(capacity)
	for i := range n {
		b.Append(fmt.Sprintf("line %d", i))
	}
	return b
}

func TestLogBufferKeepsTheTail(t *testing.T) {
	for _, tc := range []struct {
		capacity, n, first, len int
	}{
		{5, 0, 0, 0}, {5, 3, 0, 3}, {5, 5, 0, 5}, {5, 6, 1, 5}, {5, 12, 7, 5}, {1, 3, 2, 1},
	} {
		t.Run(fmt.Sprintf("cap %d, %d lines", tc.capacity, tc.n), func(t *testing.T) {
			b := filled(tc.capacity, tc.n)
			if b.First() != tc.first || b.Len() != tc.len || b.End() != tc.n {
				t.Errorf("cap %d, %d lines: first %d len %d end %d, want %d %d %d", tc.capacity, tc.n, b.First(), b.Len(), b.End(), tc.first, tc.len, tc.n)
			}
			for abs := b.First(); abs < b.End(); abs++ {
				if got := b.Line(abs); got != fmt.Sprintf("line %d", abs) {
					t.Errorf("cap %d: Line(%d) = %q", tc.capacity, abs, got)
				}
			}
			if tc.first > 0 && b.Line(tc.first-1) != "" {
				t.Errorf("an evicted line is still returned")
			}
		})
	}
}

func TestLogBufferExpandsTabs(t *testing.T) {
	b := newLogBuffer(2)
	b.Append("a\tb")
	if got := b.Line(0); got != "a    b" {
		t.Errorf("tab not expanded: %q", got)
	}
}

func TestLogViewFollowScrollAndResume(t *testing.T) {
	v := newLogView(filled(100, 50))
	v.SetSize(20, 10)
	if v.Top() != 40 {
		t.Fatalf("following: top %d, want 40", v.Top())
	}
	v.Scroll(-5)
	if v.follow || v.Top() != 35 {
		t.Fatalf("after scrolling up 5: follow %v top %d", v.follow, v.Top())
	}
	v.buf.Append("new")
	if v.Top() != 35 {
		t.Errorf("a paused view moved with new output: top %d", v.Top())
	}
	v.Scroll(100)
	if !v.follow || v.Top() != 41 {
		t.Errorf("scrolling to the bottom: follow %v top %d, want following at 41", v.follow, v.Top())
	}
	v.Home()
	if v.Top() != 0 || v.follow {
		t.Errorf("home: top %d follow %v", v.Top(), v.follow)
	}
	v.ToggleFollow()
	if !v.follow {
		t.Error("f did not resume following")
	}
	v.ToggleFollow()
	if v.follow || v.Top() != 41 {
		t.Errorf("f did not pause where the view was: top %d", v.Top())
	}
}

func TestLogViewScrollClampsWhenRingRotates(t *testing.T) {
	v := newLogView(filled(20, 20))
	v.SetSize(20, 5)
	v.Home()
	for range 30 {
		v.buf.Append("more")
	}
	if top := v.Top(); top != v.buf.First() {
		t.Errorf("top %d fell out of the kept lines (first %d)", top, v.buf.First())
	}
}

// TestLogViewSearchLikeLess: / searches forward
// from the top of the window and ? backward, n repeats the direction and N
// reverses it, the search wraps round with vim's note, and the match is
// counted ("match 2/3") and named by its line in the file.
func TestLogViewSearchLikeLess(t *testing.T) {
	b := newLogBuffer(100)
	for i := range 30 {
		line := fmt.Sprintf("building object %d", i)
		if i == 5 || i == 15 || i == 20 {
			line = "\x1b[31mERROR\x1b[0m: HIP error: invalid device function"
		}
		b.Append(line)
	}
	v := newLogView(b)
	v.SetSize(60, 5)
	v.Home() // g: the top of the log, where a search from the top starts
	r := v.Search("hip ERROR", false)
	if !r.found || v.match != 5 || r.index != 1 || r.total != 3 || r.no != 6 || r.wrapped {
		t.Fatalf("/ from the top: %+v, match %d; want the first match, 1/3, file line 6", r, v.match)
	}
	if v.follow {
		t.Error("a match did not pause following")
	}
	if r := v.Next(false); v.match != 15 || r.index != 2 {
		t.Fatalf("n: match %d (%+v), want the next one down, 15", v.match, r)
	}
	if r := v.Next(false); v.match != 20 || r.index != 3 {
		t.Fatalf("n: match %d (%+v), want 20", v.match, r)
	}
	r = v.Next(false)
	if v.match != 5 || !r.wrapped || !strings.Contains(r.Note("hip ERROR", false), "search hit BOTTOM, continuing at TOP") {
		t.Fatalf("n past the last: match %d, %+v %q; want a wrap to the first", v.match, r, r.Note("hip ERROR", false))
	}
	if r := v.Next(true); v.match != 20 || !r.wrapped {
		t.Fatalf("N from the first: match %d (%+v), want a wrap back to the last", v.match, r)
	}
	if r := v.Next(true); v.match != 15 || r.wrapped {
		t.Fatalf("N: match %d (%+v), want 15", v.match, r)
	}
	if !strings.Contains(r.Note("x", false), "match 1/3, line 6") {
		t.Errorf("the note does not count: %q", r.Note("x", false))
	}

	// ? searches backward from the bottom of the window, and n goes on up.
	v.End()
	if r := v.Search("hip error", true); v.match != 20 || r.index != 3 {
		t.Fatalf("? at the tail: match %d (%+v), want the last, 20", v.match, r)
	}
	if v.Next(false); v.match != 15 {
		t.Fatalf("n after ?: match %d, want 15 (n keeps ?'s direction)", v.match)
	}
	if r := v.Search("no such text", false); r.found || r.total != 0 {
		t.Errorf("found text that is not there: %+v", r)
	}
	if r := v.Search("", false); r.found || v.query != "" {
		t.Error("an empty search did not clear")
	}
}

// TestLogBufferKeepsFileLineNumbers: after a flood that the screen partly
// dropped, the lines keep their numbers in the file, so "line 195000" on
// screen is line 195000 of the log.
func TestLogBufferKeepsFileLineNumbers(t *testing.T) {
	b := newLogBuffer(5)
	b.AppendAt(1, "a")
	b.AppendAt(2, "b")
	b.AppendAt(195000, "after a drop") // lines 3..194999 were dropped on the way
	b.Note("──── retry ────")
	b.Append("next")
	if b.No(2) != 195000 || b.No(3) != 0 || b.No(4) != 195001 || b.LastNo() != 195001 || b.FirstNo() != 1 {
		t.Errorf("numbers %d %d %d, last %d first %d", b.No(2), b.No(3), b.No(4), b.LastNo(), b.FirstNo())
	}
	v := newLogView(b)
	v.SetSize(20, 2)
	if r := v.Search("after", false); r.no != 195000 {
		t.Errorf("search names line %d, want the file's 195000", r.no)
	}
}

// TestLogViewWrapsAndScrollsSideways: w wraps long lines whole; without it
// ←/→ shows what is past the edge.
func TestLogViewWrapsAndScrollsSideways(t *testing.T) {
	b := newLogBuffer(10)
	long := "error: running as root: distrobox refuses that. Run haloforge as your normal user"
	b.Append(long)
	b.Append("short")
	v := newLogView(b)
	v.SetSize(30, 5)
	plainView := func() string { return ansi.Strip(v.View(DefaultStyles())) }
	if got := plainView(); strings.Contains(got, "normal user") || !strings.Contains(got, "…") {
		t.Fatalf("a long line is not cut with …:\n%s", got)
	}
	v.ScrollX(60)
	if got := plainView(); !strings.Contains(got, "normal user") {
		t.Errorf("→ does not show the end of the line:\n%s", got)
	}
	v.ScrollX(-60)
	v.ToggleWrap()
	got := plainView()
	if !strings.Contains(strings.Join(strings.Fields(got), " "), long) {
		t.Errorf("wrapped, the line is not there whole:\n%s", got)
	}
	for _, l := range strings.Split(got, "\n") {
		if ansi.StringWidth(l) > 30 {
			t.Errorf("wrapped row wider than the pane: %q", l)
		}
	}
}

func TestLogViewRendersWindowCutAndHighlighted(t *testing.T) {
	b := newLogBuffer(10)
	b.Append("short")
	b.Append(strings.Repeat("x", 50))
	b.Append("find Me here")
	v := newLogView(b)
	v.SetSize(20, 4)
	v.Search("me", false)
	out := v.View(DefaultStyles())
	lines := strings.Split(ansi.Strip(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want the window's 4", len(lines))
	}
	for _, l := range lines {
		if ansi.StringWidth(l) > 20 {
			t.Errorf("line wider than the pane: %q", l)
		}
	}
	if !strings.HasSuffix(lines[1], "…") {
		t.Errorf("long line not cut with an ellipsis: %q", lines[1])
	}
	if !strings.Contains(out, "\x1b[7mMe") {
		t.Errorf("the match is not in reverse video: %q", out)
	}
}

func TestHighlight(t *testing.T) {
	st := DefaultStyles()
	for _, tc := range []struct{ in, q, want string }{
		{"abc abc", "b", "a[b]c a[b]c"},
		{"ABC", "abc", "[ABC]"},
		{"none", "x", "none"},
		{"İstanbul", "i", "[İstanbul]"}, // case folding changes byte offsets: mark the line
	} {
		t.Run(tc.in+" "+tc.q, func(t *testing.T) {
			got := highlight(tc.in, tc.q, st)
			got = strings.ReplaceAll(strings.ReplaceAll(got, "\x1b[7m", "["), "\x1b[m", "]")
			if got != tc.want {
				t.Errorf("highlight(%q, %q) = %q, want %q", tc.in, tc.q, got, tc.want)
			}
		})
	}
}

// FuzzLogView feeds arbitrary step output (already sanitised by the runner,
// but anything can be in a line) and queries: the window never panics and
// never draws a line wider than the pane or more lines than its height.
func FuzzLogView(f *testing.F) {
	f.Add("double free or corruption (!prev)\nAborted (core dumped)", "free", 20, 5)
	f.Add("\x1b[31mERROR\x1b[0m\tHIP error: invalid device function", "hip", 8, 3)
	f.Add("İstanbul ǅ ﬃ 漢字 🙂\r\n", "i", 3, 1)
	f.Add("", "", 1, 1)
	f.Fuzz(func(t *testing.T, text, query string, w, h int) {
		w, h = 1+abs(w)%200, 1+abs(h)%60
		b := newLogBuffer(16)
		for _, l := range strings.Split(text, "\n") {
			b.Append(l)
		}
		v := newLogView(b)
		v.SetSize(w, h)
		v.Search(query, false)
		v.Next(false)
		v.Search(query, true)
		v.Next(true)
		v.Scroll(-3)
		for _, mode := range []func(){func() {}, func() { v.ScrollX(w/2 + 1) }, func() { v.ScrollX(-1000); v.ToggleWrap() }} {
			mode()
			out := v.View(DefaultStyles())
			lines := strings.Split(out, "\n")
			if len(lines) > h {
				t.Fatalf("%d lines in a %d-line pane", len(lines), h)
			}
			for _, l := range lines {
				if ansi.StringWidth(l) > w {
					t.Fatalf("line %q is %d cells in a %d-cell pane", l, ansi.StringWidth(l), w)
				}
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
