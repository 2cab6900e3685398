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

func TestLogViewSearch(t *testing.T) {
	b := newLogBuffer(100)
	for i := range 30 {
		line := fmt.Sprintf("building object %d", i)
		if i == 5 || i == 20 {
			line = "\x1b[31mERROR\x1b[0m: HIP error: invalid device function"
		}
		b.Append(line)
	}
	v := newLogView(b)
	v.SetSize(60, 5)
	if !v.Search("hip ERROR", false) || v.match != 20 {
		t.Fatalf("first search: match %d, want the newest, 20", v.match)
	}
	if v.follow {
		t.Error("a match did not pause following")
	}
	if !v.Search("hip ERROR", false) || v.match != 5 {
		t.Fatalf("next older: match %d, want 5", v.match)
	}
	if v.Search("hip ERROR", false) {
		t.Error("found a match older than the oldest")
	}
	if !v.Search("hip ERROR", true) || v.match != 20 {
		t.Errorf("next newer: match %d, want 20", v.match)
	}
	if v.Search("no such text", false) {
		t.Error("found text that is not there")
	}
	if v.Search("", false) || v.query != "" {
		t.Error("an empty search did not clear")
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
		got := highlight(tc.in, tc.q, st)
		got = strings.ReplaceAll(strings.ReplaceAll(got, "\x1b[7m", "["), "\x1b[m", "]")
		if got != tc.want {
			t.Errorf("highlight(%q, %q) = %q, want %q", tc.in, tc.q, got, tc.want)
		}
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
		v.Search(query, true)
		v.Scroll(-3)
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
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
