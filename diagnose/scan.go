package diagnose

import (
	"bytes"
	"errors"
	"io"
	"sync"
)

const (
	scanBuf = 1 << 20 // read size: large enough to amortise the per-chunk work
	// maxLine is the longest line kept whole; a longer line is checked in
	// pieces of this size (a match that straddles two pieces is missed).
	maxLine     = 16 << 20
	escapeByte  = 0x1b
	splitMin    = 64 << 10 // regions smaller than this are searched as one
	newlineByte = '\n'
)

// Scan reads a whole stream offline and returns its findings, including
// the offline stall rule. Lines of any length are fine. On a read error
// it returns the findings so far with the error.
func Scan(r io.Reader, o MatcherOptions) ([]Finding, error) {
	m := NewMatcher(o)
	err := m.scan(r)
	return m.End(), err
}

// scan feeds the matcher in large chunks of whole lines. Only lines that
// hold a rule's literal are split out and cleaned; the rest of the text is
// skipped by the literal set, which is what keeps it near grep's speed.
//
// Every byte is looked at a bounded number of times whatever the reads
// and lines: the buffer is filled before it is searched (pipes and
// archives return 4-64 KiB a read), and only the bytes after the carried
// part of a line are searched for its end (the carried part has none).
// Searching the whole buffer after each read made a 16 MiB line of a
// gzip member cost hundreds of passes over it.
func (m *Matcher) scan(r io.Reader) error {
	// buf is a window of store that starts at 1 MiB and doubles up to
	// maxLine; store is kept for the next scan (scanBufs), so the window
	// grows without allocating once a long line has been seen.
	bp := scanBufs.Get().(*[]byte)
	store := *bp
	buf := store[:0:scanBuf]
	defer func() { *bp = store[:0]; scanBufs.Put(bp) }()
	carried := 0 // bytes at the start of buf known to hold no newline
	for {
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			m.chunkCounted(buf) // what was read counts, even before a read error
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if len(buf) < cap(buf) {
			continue
		}
		m.scanned += int64(len(buf) - carried)
		if nl := lastIndexByte(buf[carried:], newlineByte); nl >= 0 {
			nl += carried
			m.chunkCounted(buf[:nl+1])
			buf = buf[:copy(buf, buf[nl+1:])]
			carried = len(buf)
			continue
		}
		if cap(buf) < maxLine {
			if grown := 2 * cap(buf); cap(store) >= grown {
				buf = store[:len(buf):grown]
			} else {
				store = append(make([]byte, 0, grown), buf...)
				buf = store[:len(buf):grown]
			}
			carried = len(buf)
			continue
		}
		m.chunkCounted(buf) // a piece of an overlong line: the line number stays
		buf, carried = buf[:0], 0
	}
}

// scanBufs keeps scan's buffers, grown to maxLine by a long line, for the
// next scan: an archive of hundreds of newline-free members grew a fresh
// 16 MiB buffer (and 15 MiB of smaller ones) for each, and the garbage
// between collections doubled the peak memory of diagnose.
var scanBufs = sync.Pool{New: func() any { b := make([]byte, 0, scanBuf); return &b }}

// chunkCounted is chunk, counting the bytes it is given as scanned.
func (m *Matcher) chunkCounted(text []byte) {
	m.scanned += int64(len(text))
	m.chunk(text)
}

// chunk checks text that starts at a line start; it ends at a line end
// except for the last piece of a stream or an overlong line.
func (m *Matcher) chunk(text []byte) {
	c := chunkState{m: m, text: text, line: m.lines + 1}
	for off := 0; off < len(text); {
		esc := bytes.IndexByte(text[off:], escapeByte)
		if esc < 0 {
			c.fast(off, len(text))
			break
		}
		ls := lineStart(text, off+esc)
		c.fast(off, ls)
		off = c.evalAt(ls)
	}
	m.lines += bytes.Count(text, []byte{newlineByte})
	m.tail(text)
}

// chunkState tracks line numbers lazily: newlines are only counted up to
// the lines that are looked at.
type chunkState struct {
	m       *Matcher
	text    []byte
	counted int // offset up to which newlines are counted
	line    int // line number at offset counted
}

// searchWays is how many parts fast splits a large region into.
const searchWays = 4

// fast scans text[from:to] (whole lines, no escapes) for literals and
// evaluates the lines that hold one. Large regions are split in parts at
// line starts and searched together (see next4); the later parts' lines
// are evaluated after the first part's, so lines are seen in order.
func (c *chunkState) fast(from, to int) {
	if to-from < splitMin {
		c.fastOne(from, to)
		return
	}
	set := engine.set
	var parts [searchWays]search
	var base [searchWays]int
	var later [searchWays][]int // line starts of the later parts' candidates
	active := make([]int, 0, searchWays)
	for k, start := 1, from; k <= searchWays; k++ {
		end := to
		if k < searchWays {
			end = lineStart(c.text, from+(to-from)*k/searchWays)
		}
		if end <= start {
			continue // a long line: it goes to the next part
		}
		i := len(active)
		parts[i], base[i] = search{text: c.text[start:end]}, start
		set.restart(&parts[i], 0)
		active = append(active, i)
		start = end
	}
	for len(active) > 0 {
		var j, at int
		switch len(active) {
		case 4:
			j, at = set.next4(&parts[active[0]], &parts[active[1]], &parts[active[2]], &parts[active[3]])
		case 1:
			at = set.next1(&parts[active[0]])
		default: // with three, the third waits for one of the first two to end
			j, at = set.next2(&parts[active[0]], &parts[active[1]])
		}
		k := active[j]
		switch {
		case at < 0:
			active = append(active[:j], active[j+1:]...)
		case k == 0:
			set.restart(&parts[0], c.evalAt(lineStart(c.text, base[0]+at))-base[0])
		default:
			later[k] = append(later[k], lineStart(c.text, base[k]+at))
			set.restart(&parts[k], lineEnd(c.text, base[k]+at)+1-base[k])
		}
	}
	for _, lss := range later[1:] {
		for _, ls := range lss {
			c.evalAt(ls)
		}
	}
}

// fastOne is fast without the split.
func (c *chunkState) fastOne(from, to int) {
	for from < to {
		p, _ := engine.set.index(c.text[from:to])
		if p < 0 {
			return
		}
		from = c.evalAt(lineStart(c.text, from+p))
	}
}

// lineEnd returns the offset of the newline ending the line at i, or the
// text's length.
func lineEnd(text []byte, i int) int {
	if e := bytes.IndexByte(text[i:], newlineByte); e >= 0 {
		return i + e
	}
	return len(text)
}

// evalAt evaluates the line starting at ls and returns the next line's start.
func (c *chunkState) evalAt(ls int) int {
	le := lineEnd(c.text, ls)
	c.line += bytes.Count(c.text[c.counted:ls], []byte{newlineByte})
	c.counted = ls
	c.m.eval(c.line, cleanLine(c.text[ls:le]))
	return le + 1
}

func lineStart(text []byte, i int) int {
	return lastIndexByte(text[:i], newlineByte) + 1
}

// lastIndexByte is bytes.LastIndexByte at the speed of bytes.IndexByte,
// which is vectorised where LastIndexByte reads a byte at a time: a line
// without newlines is searched back to its start at ~1 GB/s otherwise.
// It looks at blocks from the end and only reads a block backwards once it
// knows the byte is in it.
func lastIndexByte(b []byte, c byte) int {
	const block = 4 << 10
	for end := len(b); end > 0; {
		start := max(0, end-block)
		if bytes.IndexByte(b[start:end], c) >= 0 {
			return start + bytes.LastIndexByte(b[start:end], c)
		}
		end = start
	}
	return -1
}

// tail finds the last line with content in a chunk, walking back from its
// end, for the offline stall rule. Only blank lines are walked over, so
// the walk is short on real logs and linear at worst.
func (m *Matcher) tail(text []byte) {
	end := len(text)
	below := 0 // newlines between the current line's end and the chunk's end
	if end > 0 && text[end-1] == newlineByte {
		end--
		below = 1
	}
	for {
		ls := lineStart(text, end)
		if meaningful(cleanLine(text[ls:end])) {
			m.lastMeaningful = m.lines + 1 - below
			return
		}
		if ls == 0 {
			return
		}
		end = ls - 1
		below++
	}
}
