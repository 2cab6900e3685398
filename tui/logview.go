package tui

import (
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// logBuffer keeps the last lines of a step's log. A 200 MB step must not
// grow the wizard's memory: the full log is on disk, the screen only ever
// needs the tail and what the user scrolls back to.
type logBuffer struct {
	lines []string
	start int // ring index of the oldest kept line
	n     int // lines kept
	first int // absolute number (0-based) of the oldest kept line
}

func newLogBuffer(capacity int) *logBuffer {
	return &logBuffer{lines: make([]string, capacity)}
}

// Append adds a line, evicting the oldest when full. Tabs are expanded and
// invalid UTF-8 replaced so that cell widths are right when the line is
// cut to the pane: the cutter and the width count disagree on stray bytes.
func (b *logBuffer) Append(line string) {
	if strings.IndexByte(line, '\t') >= 0 {
		line = strings.ReplaceAll(line, "\t", "    ")
	}
	if !utf8.ValidString(line) {
		line = strings.ToValidUTF8(line, "\uFFFD")
	}
	line = keepOnlySGR(line)
	if b.n < len(b.lines) {
		b.lines[(b.start+b.n)%len(b.lines)] = line
		b.n++
		return
	}
	b.lines[b.start] = line
	b.start = (b.start + 1) % len(b.lines)
	b.first++
}

// Len is the number of lines kept.
func (b *logBuffer) Len() int { return b.n }

// First is the absolute number of the oldest kept line.
func (b *logBuffer) First() int { return b.first }

// End is one past the absolute number of the newest line.
func (b *logBuffer) End() int { return b.first + b.n }

// Line returns the line with absolute number abs; "" when it was evicted.
func (b *logBuffer) Line(abs int) string {
	i := abs - b.first
	if i < 0 || i >= b.n {
		return ""
	}
	return b.lines[(b.start+i)%len(b.lines)]
}

// logView is a window on a logBuffer that follows the tail unless the user
// scrolled away or paused it, and can search.
type logView struct {
	buf           *logBuffer
	width, height int
	follow        bool
	top           int    // absolute number of the first visible line when not following
	query         string // current search, "" for none
	match         int    // absolute line of the current match, -1 for none
}

func newLogView(buf *logBuffer) logView {
	return logView{buf: buf, follow: true, match: -1}
}

// SetBuffer switches the view to another step's log.
func (v *logView) SetBuffer(b *logBuffer) {
	if v.buf == b {
		return
	}
	v.buf = b
	v.match = -1
	v.top = max(b.First(), b.End()-v.height)
}

// SetSize sets the window size in cells.
func (v *logView) SetSize(w, h int) { v.width, v.height = max(w, 1), max(h, 1) }

// Top returns the absolute number of the first visible line.
func (v *logView) Top() int {
	if v.buf == nil {
		return 0
	}
	lo := v.buf.First()
	hi := max(lo, v.buf.End()-v.height)
	if v.follow {
		return hi
	}
	return min(max(v.top, lo), hi)
}

// Scroll moves the window by delta lines (negative is up) and pauses
// following; scrolling back to the bottom resumes it.
func (v *logView) Scroll(delta int) {
	if v.buf == nil {
		return
	}
	top := v.Top() + delta
	bottom := max(v.buf.First(), v.buf.End()-v.height)
	v.top = min(max(top, v.buf.First()), bottom)
	v.follow = delta > 0 && v.top == bottom
}

// Home jumps to the oldest kept line and pauses following.
func (v *logView) Home() { v.follow = false; v.top = v.buf.First() }

// End jumps to the tail and follows it.
func (v *logView) End() { v.follow = true }

// ToggleFollow pauses or resumes following the tail.
func (v *logView) ToggleFollow() {
	if v.follow {
		v.top = v.Top()
		v.follow = false
		return
	}
	v.follow = true
}

// Search finds query, starting from the current match (or the bottom of the
// window) and going backwards or forwards; it returns whether it found one.
// Matching is case-insensitive on the text without colours.
func (v *logView) Search(query string, forward bool) bool {
	if v.buf == nil || query == "" {
		v.query, v.match = "", -1
		return false
	}
	if query != v.query {
		v.query = query
		v.match = -1
	}
	from := v.match
	if from < 0 {
		from = v.Top() + v.height
		if forward {
			from = v.Top() - 1
		}
	}
	q := strings.ToLower(query)
	step := -1
	if forward {
		step = 1
	}
	start := from + step
	if v.match < 0 { // from the window's edge, which may be past the last line
		start = min(max(start, v.buf.First()), v.buf.End()-1)
	}
	for abs := start; abs >= v.buf.First() && abs < v.buf.End(); abs += step {
		if strings.Contains(strings.ToLower(ansi.Strip(v.buf.Line(abs))), q) {
			v.match = abs
			v.follow = false
			v.top = abs - v.height/2
			v.top = v.Top() // clamp
			return true
		}
	}
	return false
}

// View renders the visible lines, cut to the width; the current match is
// highlighted.
func (v *logView) View(st Styles) string {
	if v.buf == nil {
		return ""
	}
	top := v.Top()
	var sb strings.Builder
	for i := range v.height {
		abs := top + i
		if i > 0 {
			sb.WriteByte('\n')
		}
		if abs >= v.buf.End() {
			continue
		}
		line := v.buf.Line(abs)
		if abs == v.match {
			line = highlight(ansi.Strip(line), v.query, st)
		}
		sb.WriteString(ansi.Truncate(line, v.width, "…"))
	}
	return sb.String()
}

// highlight marks every case-insensitive occurrence of q in plain.
func highlight(plain, q string, st Styles) string {
	if q == "" {
		return plain
	}
	lower, lq := strings.ToLower(plain), strings.ToLower(q)
	if len(lower) != len(plain) || len(lq) != len(q) {
		return st.Match.Render(plain) // case folding changed byte offsets
	}
	var sb strings.Builder
	for {
		i := strings.Index(lower, lq)
		if i < 0 {
			sb.WriteString(plain)
			return sb.String()
		}
		sb.WriteString(plain[:i])
		sb.WriteString(st.Match.Render(plain[i : i+len(q)]))
		plain, lower = plain[i+len(q):], lower[i+len(q):]
	}
}
