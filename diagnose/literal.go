package diagnose

import "encoding/binary"

// literalSet finds any of a fixed set of byte strings in a text with the
// Wu-Manber multi-pattern algorithm: a shift table over 3-byte blocks lets
// the scan jump up to m-2 bytes at a time on text that shares no block with
// the patterns, which is what keeps all rules near grep's speed on healthy
// build output (S. Wu, U. Manber, "A fast algorithm for multi-pattern
// searching", TR-94-17, 1994).
type literalSet struct {
	pats    []string
	off     []int                 // by pattern: where its m-byte window starts
	m       int                   // length of the shortest pattern: the window size
	shift   *[1 << hashBits]uint8 // by block hash: how far the window may jump
	buckets [][]int32             // by hash of the window's last block: patterns ending their m-prefix there
}

const (
	blockLen  = 3
	hashBits  = 14
	maxWindow = 255 + blockLen - 1 // shifts are stored in a uint8
)

// blockHash hashes the three bytes packed in the low 24 bits of x
// (little-endian, first byte lowest) with a multiplicative hash.
func blockHash(x uint32) uint32 {
	return (x & 0xFFFFFF) * 0x9E3779B1 >> (32 - hashBits)
}

func packBlock(a, b, c byte) uint32 { return uint32(a) | uint32(b)<<8 | uint32(c)<<16 }

// newLiteralSet indexes pats; every pattern must be at least 4 bytes long.
func newLiteralSet(pats []string) *literalSet {
	s := &literalSet{pats: pats, m: maxWindow}
	for _, p := range pats {
		if len(p) < blockLen+1 {
			panic("diagnose: literal too short for the literal set: " + p)
		}
		s.m = min(s.m, len(p))
	}
	s.shift = new([1 << hashBits]uint8)
	def := uint8(s.m - blockLen + 1)
	for i := range s.shift {
		s.shift[i] = def
	}
	s.buckets = make([][]int32, 1<<hashBits)
	s.off = make([]int, len(pats))
	for id, p := range pats {
		s.off[id] = rareWindow(p, s.m)
		p = p[s.off[id] : s.off[id]+s.m]
		for j := blockLen - 1; j < s.m; j++ {
			h := blockHash(packBlock(p[j-2], p[j-1], p[j]))
			s.shift[h] = min(s.shift[h], uint8(s.m-1-j))
		}
		h := blockHash(packBlock(p[s.m-3], p[s.m-2], p[s.m-1]))
		s.buckets[h] = append(s.buckets[h], int32(id))
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
		pos++
	}
	return -1, -1
}

// verify checks the patterns whose window ends with the block at pos and
// returns where the first that matches starts.
func (s *literalSet) verify(text []byte, pos int, h uint32) (int, int) {
	for _, id := range s.buckets[h] {
		if start, ok := s.at(text, pos, id); ok {
			return start, int(id)
		}
	}
	return -1, -1
}

// at reports whether pattern id occurs with its window ending at pos.
func (s *literalSet) at(text []byte, pos int, id int32) (int, bool) {
	p := s.pats[id]
	start := pos - s.m + 1 - s.off[id]
	return start, start >= 0 && start+len(p) <= len(text) && string(text[start:start+len(p)]) == p
}

// each calls f with the id and start of every occurrence of every pattern.
func (s *literalSet) each(text []byte, f func(id, at int)) {
	m := s.m
	for pos := m - 1; pos < len(text); pos++ {
		h := blockHash(packBlock(text[pos-2], text[pos-1], text[pos]))
		if s.shift[h] != 0 {
			continue
		}
		for _, id := range s.buckets[h] {
			if start, ok := s.at(text, pos, id); ok {
				f(int(id), start)
			}
		}
	}
}

// search is a resumable search over one text.
type search struct {
	text []byte
	pos  int // end of the current window
}

// restart continues the search from offset from of its text.
func (s *literalSet) restart(x *search, from int) { x.pos = from + s.m - 1 }

// next2 advances two searches together until one holds a candidate; it
// returns which one (0 or 1) and the candidate's start, or -1 when both
// are done. A single search is bound by the latency of each jump (load,
// hash, table lookup, add); two interleaved chains keep the core busy.
func (s *literalSet) next2(x, y *search) (int, int) {
	shift := s.shift
	for x.pos < len(x.text) && y.pos < len(y.text) {
		hx := blockHash(binary.LittleEndian.Uint32(x.text[x.pos-3:x.pos+1]) >> 8)
		hy := blockHash(binary.LittleEndian.Uint32(y.text[y.pos-3:y.pos+1]) >> 8)
		sx, sy := int(shift[hx]), int(shift[hy])
		if sx == 0 {
			if at, id := s.verify(x.text, x.pos, hx); id >= 0 {
				return 0, at
			}
			sx = 1
		}
		if sy == 0 {
			if at, id := s.verify(y.text, y.pos, hy); id >= 0 {
				return 1, at
			}
			sy = 1
		}
		x.pos += sx
		y.pos += sy
	}
	for i, z := range [2]*search{x, y} {
		if z.pos < len(z.text) {
			at, _ := s.index(z.text[z.pos-s.m+1:])
			if at >= 0 {
				at += z.pos - s.m + 1
				return i, at
			}
			z.pos = len(z.text)
		}
	}
	return -1, -1
}
