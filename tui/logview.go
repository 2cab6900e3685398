package tui

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// logBuffer keeps the last lines of a step's log. A 200 MB step must not
// grow the wizard's memory: the full log is on disk, the screen only ever
// needs the tail and what the user scrolls back to. Each line keeps its
// line number in the log file, so that what the screen calls line 38 is
// line 38 of the file the pager opens.
type logBuffer struct {
	lines []string
	nos   []int // the file line number of each kept line
	start int   // ring index of the oldest kept line
	n     int   // lines kept
	first int   // absolute number (0-based) of the oldest kept line
	next  int   // the file line number the next appended line gets
}

func newLogBuffer(capacity int) *logBuffer {
	return &logBuffer{lines: make([]string, capacity), nos: make([]int, capacity), next: 1}
}

// Append adds a line that follows the last one in the file.
func (b *logBuffer) Append(line string) { b.AppendAt(b.next, line) }

// AppendAt adds the line with file line number no, evicting the oldest
// when full. Tabs are expanded and invalid UTF-8 replaced so that cell
// widths are right when the line is cut to the pane: the cutter and the
// width count disagree on stray bytes.
func (b *logBuffer) AppendAt(no int, line string) {
	if strings.IndexByte(line, '\t') >= 0 {
		line = strings.ReplaceAll(line, "\t", "    ")
	}
	if !utf8.ValidString(line) {
		line = strings.ToValidUTF8(line, "\uFFFD")
	}
	line = keepOnlySGR(line)
	b.next = no + 1
	i := (b.start + b.n) % len(b.lines)
	if b.n < len(b.lines) {
		b.n++
	} else {
		b.start = (b.start + 1) % len(b.lines)
		b.first++
	}
	b.lines[i], b.nos[i] = line, no
}

// Note adds a line of haloforge's own (a retry's separator) without a
// number of the file: the step's next output still gets the next number.
func (b *logBuffer) Note(line string) {
	next := b.next
	b.AppendAt(0, line)
	b.next = next
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

// No is the file line number of the line with absolute number abs; 0 for
// haloforge's own lines and for lines that were evicted.
func (b *logBuffer) No(abs int) int {
	i := abs - b.first
	if i < 0 || i >= b.n {
		return 0
	}
	return b.nos[(b.start+i)%len(b.lines)]
}

// FirstNo is the file line number of the oldest kept line of the file.
func (b *logBuffer) FirstNo() int {
	for abs := b.first; abs < b.End(); abs++ {
		if no := b.No(abs); no > 0 {
			return no
		}
	}
	return 0
}

// LastNo is the file line number of the newest line of the file.
func (b *logBuffer) LastNo() int { return b.next - 1 }

// logView is a window on a logBuffer that follows the tail unless the user
// scrolled away or paused it, searches as less does, wraps long lines or
// scrolls sideways.
type logView struct {
	buf           *logBuffer
	width, height int
	follow        bool
	top           int    // absolute number of the first visible line when not following
	query         string // current search, "" for none
	back          bool   // the search goes towards older lines (?), else newer (/)
	match         int    // absolute line of the current match, -1 for none
	wrap          bool   // long lines wrap instead of being cut
	xoff          int    // cells scrolled to the right when not wrapping
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
	hi := max(lo, v.bottomTop())
	if v.follow {
		return hi
	}
	return min(max(v.top, lo), hi)
}

// bottomTop is the first line of the window that shows the tail: with
// wrapping, long lines take several rows, so fewer lines fit.
func (v *logView) bottomTop() int {
	if !v.wrap {
		return v.buf.End() - v.height
	}
	rows := 0
	for abs := v.buf.End() - 1; abs >= v.buf.First(); abs-- {
		rows += v.rows(v.buf.Line(abs))
		if rows > v.height {
			return abs + 1
		}
	}
	return v.buf.First()
}

// rows is how many screen rows a line takes.
func (v *logView) rows(line string) int {
	if !v.wrap || ansi.StringWidth(line) <= v.width {
		return 1
	}
	return len(wrapCells(line, v.width))
}

// wrapCells wraps a log line at word boundaries into rows of at most width
// cells, cutting words wider than that. ansi.Wrap alone may return a row
// one cell too wide (a leading space before a word exactly width wide:
// FuzzLogView's find), so its rows are hard-wrapped again; the empty
// rows that leaves at the end are dropped, and a double-width character
// that cannot fit a one-cell pane is left out.
func wrapCells(line string, width int) []string {
	rows := strings.Split(ansi.Hardwrap(ansi.Wrap(line, width, ""), width, true), "\n")
	for len(rows) > 1 && ansi.StringWidth(rows[len(rows)-1]) == 0 {
		rows = rows[:len(rows)-1]
	}
	for i, r := range rows {
		if ansi.StringWidth(r) > width { // a double-width character in a one-cell pane
			rows[i] = ansi.Truncate(r, width, "")
		}
	}
	return rows
}

// Scroll moves the window by delta lines (negative is up) and pauses
// following; scrolling back to the bottom resumes it.
func (v *logView) Scroll(delta int) {
	if v.buf == nil {
		return
	}
	top := v.Top() + delta
	bottom := max(v.buf.First(), v.bottomTop())
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

// ToggleWrap turns wrapping of long lines on or off.
func (v *logView) ToggleWrap() {
	top := v.Top()
	v.wrap, v.xoff = !v.wrap, 0
	if !v.follow {
		v.top = top
	}
}

// ScrollX moves the window sideways by delta cells (not while wrapping).
func (v *logView) ScrollX(delta int) {
	if v.wrap {
		return
	}
	v.xoff = max(v.xoff+delta, 0)
}

// TopNo is the file line number at the top of the window (0 for none).
func (v *logView) TopNo() int {
	if v.buf == nil {
		return 0
	}
	for abs := v.Top(); abs < v.buf.End(); abs++ {
		if no := v.buf.No(abs); no > 0 {
			return no
		}
	}
	return 0
}

// searchResult is what a search found, for the status line.
type searchResult struct {
	found   bool
	wrapped bool // it went past the end (or the start) and on from the other
	index   int  // 1-based position of the match among all matches
	total   int  // matches in the kept lines
	no      int  // the match's file line number
}

// Note is the status line's text for the result, in less's and vim's words.
func (r searchResult) Note(query string, back bool) string {
	if !r.found {
		return ""
	}
	s := fmt.Sprintf("match %d/%d, line %d", r.index, r.total, r.no)
	switch {
	case r.wrapped && back:
		s = "search hit TOP, continuing at BOTTOM · " + s
	case r.wrapped:
		s = "search hit BOTTOM, continuing at TOP · " + s
	}
	return s
}

// Search starts a search for query: / looks forward from the top of the
// window, ? backward from its bottom, and both go on round the other end
// (less's and vim's wrapscan). Matching is case-insensitive on the text
// without colours.
func (v *logView) Search(query string, back bool) searchResult {
	if v.buf == nil || query == "" {
		v.query, v.match = "", -1
		return searchResult{}
	}
	v.query, v.back, v.match = query, back, -1
	from := v.Top() - 1 // forward: the first line of the window is the first tried
	if back {
		from = min(v.Top()+v.height, v.buf.End())
	}
	return v.find(from, back)
}

// Next repeats the search: n in its direction, N (reverse) the other way.
func (v *logView) Next(reverse bool) searchResult {
	if v.buf == nil || v.query == "" {
		return searchResult{}
	}
	from := v.match
	if from < v.buf.First() {
		from = v.Top() - 1
		if v.back != reverse {
			from = min(v.Top()+v.height, v.buf.End())
		}
	}
	return v.find(from, v.back != reverse)
}

// find looks for the query from the line after (or before) from, round the
// other end once, and puts the match in the middle of the window.
func (v *logView) find(from int, back bool) searchResult {
	q := strings.ToLower(v.query)
	first, end := v.buf.First(), v.buf.End()
	var res searchResult
	var hits []int
	for abs := first; abs < end; abs++ {
		if strings.Contains(strings.ToLower(ansi.Strip(v.buf.Line(abs))), q) {
			hits = append(hits, abs)
		}
	}
	res.total = len(hits)
	if len(hits) == 0 {
		return res
	}
	pick := -1
	if back {
		for i := len(hits) - 1; i >= 0; i-- {
			if hits[i] < from {
				pick = i
				break
			}
		}
		if pick < 0 {
			pick, res.wrapped = len(hits)-1, true
		}
	} else {
		for i, h := range hits {
			if h > from {
				pick = i
				break
			}
		}
		if pick < 0 {
			pick, res.wrapped = 0, true
		}
	}
	v.match = hits[pick]
	v.follow = false
	v.top = v.match - v.height/2
	v.top = v.Top() // clamp
	res.found, res.index, res.no = true, pick+1, v.buf.No(v.match)
	return res
}

// View renders the visible lines: cut to the width (a cut line ends in
// "…", and the part scrolled off to the left starts with "…"), or wrapped.
// The current match is highlighted.
func (v *logView) View(st Styles) string {
	if v.buf == nil {
		return ""
	}
	rows := make([]string, 0, v.height)
	for abs := v.Top(); abs < v.buf.End() && len(rows) < v.height; abs++ {
		line := v.buf.Line(abs)
		if abs == v.match {
			line = highlight(ansi.Strip(line), v.query, st)
		}
		if v.wrap {
			for _, r := range wrapCells(line, v.width) {
				if len(rows) < v.height {
					rows = append(rows, r)
				}
			}
			continue
		}
		rows = append(rows, v.cut(line))
	}
	for len(rows) < v.height {
		rows = append(rows, "")
	}
	return strings.Join(rows, "\n")
}

// cut shows the part of a line the sideways scroll puts in the window.
func (v *logView) cut(line string) string {
	w := ansi.StringWidth(line)
	if v.xoff == 0 {
		return ansi.Truncate(line, v.width, "…")
	}
	if v.xoff >= w {
		return ""
	}
	part := "…" + ansi.Cut(line, v.xoff+1, w)
	return ansi.Truncate(part, v.width, "…")
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
