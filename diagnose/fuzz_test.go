package diagnose

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func addSeeds(f *testing.F) {
	for _, path := range []string{"testdata/corpus.jsonl", "testdata/holdout.jsonl", "testdata/blind.jsonl", "testdata/blind3.jsonl", coveragePath} {
		for _, row := range loadSamples(f, path) {
			f.Add([]byte(row.Log))
		}
	}
	f.Add([]byte("\x1b[31mHIP out of \x1b[0mmemory\r\n\rload_all_data: using async uploads\n\n"))
	f.Add([]byte("\x1b]8;;http://x\x1b\\graph_reserve: reserving a graph\x1b[K"))
}

// FuzzMatcher feeds arbitrary bytes line by line: it must never panic,
// findings must point at real lines, and the live path (Line) must agree
// with the bulk path (Scan) on the same input.
func FuzzMatcher(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := strings.Split(string(data), "\n")
		m := NewMatcher(MatcherOptions{})
		seen := map[string]bool{}
		for i, l := range lines {
			for nf := m.Line(i+1, l); nf != nil; nf = m.Next() {
				if seen[nf.Family] {
					t.Fatalf("family %s reported twice", nf.Family)
				}
				seen[nf.Family] = true
			}
		}
		live := m.End()
		for _, fd := range live {
			if fd.Line < 1 || fd.Line > len(lines) || fd.Count < 1 {
				t.Fatalf("finding out of range: %+v (%d lines)", fd, len(lines))
			}
			if _, ok := RuleByID(fd.Family); !ok {
				t.Fatalf("unknown family %q", fd.Family)
			}
			if !fd.Stall && !seen[fd.Family] {
				t.Fatalf("line finding %s never returned by Line", fd.Family)
			}
		}
		bulk, err := Scan(bytes.NewReader(data), MatcherOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(live, bulk); diff != "" {
			t.Fatalf("Line and Scan differ (-line +scan):\n%s", diff)
		}
	})
}

// FuzzScan checks the offline reader alone: no panic, lines in range,
// display text short and valid UTF-8.
func FuzzScan(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fs, err := Scan(bytes.NewReader(data), MatcherOptions{Step: "vllm"})
		if err != nil {
			t.Fatal(err)
		}
		n := bytes.Count(data, []byte{'\n'}) + 1
		for _, fd := range fs {
			if fd.Line < 1 || fd.Line > n {
				t.Fatalf("line %d outside 1..%d", fd.Line, n)
			}
			if !utf8.ValidString(fd.Text) || len(fd.Text) > maxTextLen+2*len("…")+utf8.UTFMax {
				t.Fatalf("bad text %q", fd.Text)
			}
			if fd.Step != "vllm" {
				t.Fatalf("step lost: %+v", fd)
			}
		}
	})
}

// FuzzSuspects checks the fallback for unrecognised failures: no panic, at
// most the lines asked for, in order, each a real line of the input, its
// text short and valid UTF-8.
func FuzzSuspects(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		got := pickSuspects(strings.Split(string(data), "\n"), 1, 3)
		n := bytes.Count(data, []byte{'\n'}) + 1
		if len(got) > 3 {
			t.Fatalf("%d suspects, asked for 3", len(got))
		}
		for i, s := range got {
			if s.Line < 1 || s.Line > n || i > 0 && s.Line <= got[i-1].Line {
				t.Fatalf("line %d out of order or outside 1..%d: %+v", s.Line, n, got)
			}
			if s.Text == "" || !utf8.ValidString(s.Text) || len(s.Text) > maxTextLen {
				t.Fatalf("bad text %q", s.Text)
			}
			for _, r := range s.Text {
				if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
					t.Fatalf("control character %U in %q", r, s.Text)
				}
			}
		}
	})
}
