package diagnose

import (
	"slices"
	"strings"
	"testing"
)

// occurrences lists every (id, start) of every pattern in text the slow
// way, ordered as each reports them: by where the pattern's window ends.
func occurrences(s *literalSet, text string) [][2]int {
	var out [][3]int // window end, id, start
	for id, p := range s.pats {
		for off := 0; ; {
			i := strings.Index(text[off:], p)
			if i < 0 {
				break
			}
			start := off + i
			out = append(out, [3]int{start + s.off[id] + s.m - 1, id, start})
			off = start + 1
		}
	}
	slices.SortStableFunc(out, func(a, b [3]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return slices.Index(s.buckets[blockHash(packBlock(text[a[0]-2], text[a[0]-1], text[a[0]]))], int32(a[1])) -
			slices.Index(s.buckets[blockHash(packBlock(text[b[0]-2], text[b[0]-1], text[b[0]]))], int32(b[1]))
	})
	res := make([][2]int, len(out))
	for i, o := range out {
		res[i] = [2]int{o[1], o[2]}
	}
	return res
}

// checkLiteralSet holds each, index and the interleaved searches to the
// slow search on one text.
func checkLiteralSet(t *testing.T, text string) {
	t.Helper()
	s := engine.set
	want := occurrences(s, text)
	var got [][2]int
	s.each([]byte(text), func(id, at int) { got = append(got, [2]int{id, at}) })
	if !slices.Equal(got, want) {
		t.Fatalf("each on %.200q:\n got %v\nwant %v", text, got, want)
	}
	// index finds the occurrence whose window ends first
	wantAt := -1
	if len(want) > 0 {
		wantAt = want[0][1]
	}
	if at, _ := s.index([]byte(text)); at != wantAt {
		t.Fatalf("index on %.200q = %d, want %d", text, at, wantAt)
	}
	// next2 and next4, as fast drives them, on copies of the text: each
	// search reports the same first candidate, then is ended
	for _, ways := range []int{2, 4} {
		var z [4]search
		active := []int{}
		for i := range ways {
			z[i] = search{text: []byte(text)}
			s.restart(&z[i], 0)
			active = append(active, i)
		}
		found := map[int]int{}
		for len(active) > 0 {
			var j, at int
			if len(active) == 4 {
				j, at = s.next4(&z[active[0]], &z[active[1]], &z[active[2]], &z[active[3]])
			} else if len(active) >= 2 {
				j, at = s.next2(&z[active[0]], &z[active[1]])
			} else {
				j, at = 0, s.next1(&z[active[0]])
			}
			k := active[j]
			if at < 0 {
				active = slices.Delete(active, j, j+1)
				continue
			}
			if _, dup := found[k]; dup {
				t.Fatalf("next%d on %.200q: search %d found a second candidate %d", ways, text, k, at)
			}
			found[k] = at
			z[k].pos = len(z[k].text) // ended after its first candidate
		}
		for k := range ways {
			if at, ok := found[k]; ok != (wantAt >= 0) || ok && at != wantAt {
				t.Fatalf("next%d on %.200q: search %d found %d (%v), want %d", ways, text, k, at, ok, wantAt)
			}
		}
	}
}

// TestLiteralSetFindsEveryOccurrence compares the literal set with a
// plain substring search on every line of the test sets and on lines made
// of the patterns themselves: overlapping, repeated, cut short, at the
// edges.
func TestLiteralSetFindsEveryOccurrence(t *testing.T) {
	for _, path := range []string{"testdata/corpus.jsonl", "testdata/holdout.jsonl", "testdata/blind6.jsonl"} {
		for _, row := range loadSamples(t, path) {
			for _, l := range strings.Split(row.Log, "\n") {
				checkLiteralSet(t, l)
			}
		}
	}
	pats := engine.set.pats
	for i, p := range pats {
		q := pats[(i*7+3)%len(pats)]
		for _, text := range []string{
			p, p + p, p[:len(p)-1], p[1:], "x" + p + "y", p + q, q + p, p[:len(p)/2] + p,
			strings.Repeat(p, 3) + strings.Repeat("\x00", 40) + q,
		} {
			checkLiteralSet(t, text)
		}
	}
}

// FuzzLiteralSet holds the literal set to a plain substring search on any
// text.
func FuzzLiteralSet(f *testing.F) {
	for _, p := range engine.set.pats[:20] {
		f.Add("a " + p + " b " + p)
	}
	f.Fuzz(func(t *testing.T, text string) {
		checkLiteralSet(t, text)
	})
}
