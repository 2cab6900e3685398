package diagnose

import (
	"encoding/binary"
	"math/bits"
)

// literalSet finds any of a fixed set of byte strings in a text with the
// Wu-Manber multi-pattern algorithm: a shift table over 3-byte blocks lets
// the scan jump up to m-2 bytes at a time on text that shares no block with
// the patterns, which is what keeps all rules near grep's speed on healthy
// build output (S. Wu, U. Manber, "A fast algorithm for multi-pattern
// searching", TR-94-17, 1994).
type literalSet struct {
	pats  []string
	off   []int                 // by pattern: where its m-byte window starts
	m     int                   // length of the shortest pattern: the window size
	shift *[1 << hashBits]uint8 // by block hash: how far the window may jump
	// after is the jump from a stop (shift 0) where no pattern matched:
	// the block can then only be inside the next candidate window, not
	// at its end, so the jump is to its next occurrence in a window, not 1.
	after   *[1 << hashBits]uint8
	buckets [][]int32 // by hash of the window's last block: patterns ending their m-prefix there
	// windows has a bit set for the hash of each pattern's window. Where
	// a block stops the scan (shift 0), the text's m bytes there must hash
	// to a set bit before any pattern is compared: most stops are a common
	// 3-byte block that ends a window (1 in 60-90 bytes of build output),
	// and this drops nearly all of them for two loads. (The last 8 bytes
	// alone let 1 stop in 5 through on vLLM logs, whose "attention" ends
	// like the window "FlashAttention".)
	windows *[1 << windowBits / 64]uint64
}

const (
	blockLen   = 3
	hashBits   = 14
	maxWindow  = 255 + blockLen - 1 // shifts are stored in a uint8
	windowBits = 16
)

// windowHash hashes the m bytes of text that end at pos (m >= 8): its
// first and last 8, which overlap when m < 16.
func windowHash(text []byte, pos, m int) uint64 {
	x := binary.LittleEndian.Uint64(text[pos-m+1:]) ^ bits.RotateLeft64(binary.LittleEndian.Uint64(text[pos-7:pos+1]), 29)
	return x * 0x9E3779B97F4A7C15 >> (64 - windowBits)
}

// blockHash hashes the three bytes packed in the low 24 bits of x
// (little-endian, first byte lowest) with a multiplicative hash.
func blockHash(x uint32) uint32 {
	return (x & 0xFFFFFF) * 0x9E3779B1 >> (32 - hashBits)
}

func packBlock(a, b, c byte) uint32 { return uint32(a) | uint32(b)<<8 | uint32(c)<<16 }

// newLiteralSet indexes pats; every pattern must be at least 8 bytes long.
func newLiteralSet(pats []string) *literalSet {
	s := &literalSet{pats: pats, m: maxWindow, windows: new([1 << windowBits / 64]uint64)}
	for _, p := range pats {
		if len(p) < 8 {
			panic("diagnose: literal too short for the literal set: " + p)
		}
		s.m = min(s.m, len(p))
	}
	s.shift, s.after = new([1 << hashBits]uint8), new([1 << hashBits]uint8)
	def := uint8(s.m - blockLen + 1)
	for i := range s.shift {
		s.shift[i], s.after[i] = def, def
	}
	s.buckets = make([][]int32, 1<<hashBits)
	s.off = make([]int, len(pats))
	for id, p := range pats {
		s.off[id] = rareWindow(p, s.m)
		p = p[s.off[id] : s.off[id]+s.m]
		for j := blockLen - 1; j < s.m; j++ {
			h := blockHash(packBlock(p[j-2], p[j-1], p[j]))
			s.shift[h] = min(s.shift[h], uint8(s.m-1-j))
			if j < s.m-1 {
				s.after[h] = min(s.after[h], uint8(s.m-1-j))
			}
		}
		h := blockHash(packBlock(p[s.m-3], p[s.m-2], p[s.m-1]))
		s.buckets[h] = append(s.buckets[h], int32(id))
		w := windowHash([]byte(p), s.m-1, s.m)
		s.windows[w/64] |= 1 << (w % 64)
	}
	return s
}

// rareWindow picks where a pattern's m-byte window starts. The scan stops
// (shift 0) wherever the text holds a window's last block, and creeps
// wherever it holds a block near the end, so the best window ends in bytes
// that build logs rarely hold in a row: capitals, digits, punctuation, not
// lowercase words. Blocks weigh more the smaller the shift they allow.
func rareWindow(p string, m int) int {
	best, bestCost := 0, 0.0
	for off := 0; off+m <= len(p); off++ {
		cost := 0.0
		for j := blockLen - 1; j < m; j++ {
			cost += blockCommonness(p[off+j-2:off+j+1]) / float64(m-j)
		}
		if off == 0 || cost < bestCost {
			best, bestCost = off, cost
		}
	}
	return best
}

// blockCommonness estimates how often a 3-byte block occurs in build logs:
// prose-like blocks (lowercase letters and spaces) are everywhere.
func blockCommonness(b string) float64 {
	prose := 0
	for i := range len(b) {
		if c := b[i]; c == ' ' || c >= 'a' && c <= 'z' {
			prose++
		}
	}
	return [...]float64{0.01, 0.03, 0.2, 1}[prose]
}

// index returns the start and pattern id of the leftmost-ending candidate
// window that holds a pattern, or -1.
func (s *literalSet) index(text []byte) (int, int) {
	m := s.m
	n := len(text)
	shift := s.shift
	for pos := m - 1; pos < n; {
		// One 4-byte load ending at pos; its top three bytes are the block.
		// pos-3 >= 0 because m >= blockLen+1.
		h := blockHash(binary.LittleEndian.Uint32(text[pos-3:pos+1]) >> 8)
		if sh := shift[h]; sh != 0 {
			pos += int(sh)
			continue
		}
		if at, id := s.verify(text, pos, h); id >= 0 {
			return at, id
		}
		pos += int(s.after[h])
	}
	return -1, -1
}

// verify checks the patterns whose window ends with the block at pos and
// returns where the first that matches starts. pos >= m-1.
func (s *literalSet) verify(text []byte, pos int, h uint32) (int, int) {
	if !s.maybe(text, pos) {
		return -1, -1
	}
	for _, id := range s.buckets[h] {
		if start, ok := s.at(text, pos, id); ok {
			return start, int(id)
		}
	}
	return -1, -1
}

// maybe reports whether a window may end at pos: whether the m bytes
// there hash to a set bit of windows. pos >= m-1.
func (s *literalSet) maybe(text []byte, pos int) bool {
	w := windowHash(text, pos, s.m)
	return s.windows[w/64]&(1<<(w%64)) != 0
}

// at reports whether pattern id occurs with its window ending at pos.
func (s *literalSet) at(text []byte, pos int, id int32) (int, bool) {
	p := s.pats[id]
	start := pos - s.m + 1 - s.off[id]
	return start, start >= 0 && start+len(p) <= len(text) && string(text[start:start+len(p)]) == p
}

// each calls f with the id and start of every occurrence of every
// pattern, in order of where their windows end. It jumps as index does:
// a shift never passes a place where a window may end, so no occurrence
// is skipped, and a long line costs a pass, not a step per byte.
func (s *literalSet) each(text []byte, f func(id, at int)) {
	for pos := s.m - 1; pos < len(text); {
		h := blockHash(binary.LittleEndian.Uint32(text[pos-3:pos+1]) >> 8)
		if sh := s.shift[h]; sh != 0 {
			pos += int(sh)
			continue
		}
		if s.maybe(text, pos) {
			for _, id := range s.buckets[h] {
				if start, ok := s.at(text, pos, id); ok {
					f(int(id), start)
				}
			}
		}
		pos += int(s.after[h])
	}
}

// search is a resumable search over one text.
type search struct {
	text []byte
	pos  int // end of the current window
}

// restart continues the search from offset from of its text.
func (s *literalSet) restart(x *search, from int) { x.pos = from + s.m - 1 }

// A single search is bound by the latency of each jump (load, hash,
// table lookup, add): next2 and next4 advance two or four searches in one
// loop, so their chains overlap and keep the core busy. The loops are
// written out, positions in locals: a loop over a slice of searches keeps
// them in memory and was 30 % slower than two written-out chains.

// next2 advances two searches together until one holds a candidate or
// ends. It returns which one (0 or 1) and the candidate's start, or -1
// when that search ended.
func (s *literalSet) next2(x, y *search) (int, int) {
	shift, after := s.shift, s.after
	tx, ty := x.text, y.text
	px, py := x.pos, y.pos
	defer func() { x.pos, y.pos = px, py }()
	for {
		if px >= len(tx) {
			return 0, -1
		}
		if py >= len(ty) {
			return 1, -1
		}
		hx := blockHash(binary.LittleEndian.Uint32(tx[px-3:px+1]) >> 8)
		hy := blockHash(binary.LittleEndian.Uint32(ty[py-3:py+1]) >> 8)
		sx, sy := int(shift[hx]), int(shift[hy])
		if sx == 0 {
			if !s.maybe(tx, px) {
			} else if at, id := s.verify(tx, px, hx); id >= 0 {
				return 0, at
			}
			sx = int(after[hx])
		}
		if sy == 0 {
			if !s.maybe(ty, py) {
			} else if at, id := s.verify(ty, py, hy); id >= 0 {
				return 1, at
			}
			sy = int(after[hy])
		}
		px += sx
		py += sy
	}
}

// next4 is next2 for four searches.
func (s *literalSet) next4(a, b, c, d *search) (int, int) {
	shift, after := s.shift, s.after
	ta, tb, tc, td := a.text, b.text, c.text, d.text
	pa, pb, pc, pd := a.pos, b.pos, c.pos, d.pos
	defer func() { a.pos, b.pos, c.pos, d.pos = pa, pb, pc, pd }()
	for {
		switch {
		case pa >= len(ta):
			return 0, -1
		case pb >= len(tb):
			return 1, -1
		case pc >= len(tc):
			return 2, -1
		case pd >= len(td):
			return 3, -1
		}
		ha := blockHash(binary.LittleEndian.Uint32(ta[pa-3:pa+1]) >> 8)
		hb := blockHash(binary.LittleEndian.Uint32(tb[pb-3:pb+1]) >> 8)
		hc := blockHash(binary.LittleEndian.Uint32(tc[pc-3:pc+1]) >> 8)
		hd := blockHash(binary.LittleEndian.Uint32(td[pd-3:pd+1]) >> 8)
		sa, sb, sc, sd := int(shift[ha]), int(shift[hb]), int(shift[hc]), int(shift[hd])
		if sa == 0 {
			if !s.maybe(ta, pa) {
			} else if at, id := s.verify(ta, pa, ha); id >= 0 {
				return 0, at
			}
			sa = int(after[ha])
		}
		if sb == 0 {
			if !s.maybe(tb, pb) {
			} else if at, id := s.verify(tb, pb, hb); id >= 0 {
				return 1, at
			}
			sb = int(after[hb])
		}
		if sc == 0 {
			if !s.maybe(tc, pc) {
			} else if at, id := s.verify(tc, pc, hc); id >= 0 {
				return 2, at
			}
			sc = int(after[hc])
		}
		if sd == 0 {
			if !s.maybe(td, pd) {
			} else if at, id := s.verify(td, pd, hd); id >= 0 {
				return 3, at
			}
			sd = int(after[hd])
		}
		pa += sa
		pb += sb
		pc += sc
		pd += sd
	}
}

// next1 is next2 for one search: the candidate's start, or -1 when the
// search ended. It searches the whole text from the current window on, so
// a pattern whose window is not its start is found even when it starts
// before that window.
func (s *literalSet) next1(x *search) int {
	shift, after := s.shift, s.after
	t := x.text
	for p := x.pos; p < len(t); {
		h := blockHash(binary.LittleEndian.Uint32(t[p-3:p+1]) >> 8)
		sh := int(shift[h])
		if sh == 0 {
			if at, id := s.verify(t, p, h); id >= 0 {
				x.pos = p
				return at
			}
			sh = int(after[h])
		}
		p += sh
	}
	x.pos = len(t)
	return -1
}
