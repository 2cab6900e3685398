package diagnose

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestStdinSuspects: standard input gets the suspect lines a file gets, numbered
// as lines of the whole stream, from a tail of bounded size.
func TestStdinSuspects(t *testing.T) {
	in, err := OpenInput("-", strings.NewReader("foo\nerror: something broke badly\n"))
	if err != nil {
		t.Fatal(err)
	}
	if fs, err := in.Scan(); err != nil || len(fs) != 0 {
		t.Fatalf("scan: %v %v", fs, err)
	}
	if got := in.Suspects(3); len(got) != 1 || got[0] != (Suspect{Line: 2, Text: "error: something broke badly"}) {
		t.Errorf("suspects of standard input: %+v", got)
	}
	if in.DisplayName() != "standard input" {
		t.Errorf("display name %q", in.DisplayName())
	}
}

func TestStreamTailIsBoundedAndNumbersLines(t *testing.T) {
	const max = 1 << 10
	for _, tc := range []struct {
		name  string
		lines int
		read  func(io.Reader) io.Reader
	}{
		{"short", 5, func(r io.Reader) io.Reader { return r }},
		{"long, byte reads", 3000, iotest.OneByteReader},
		{"long, half reads", 3000, iotest.HalfReader},
		{"long, big reads", 30000, func(r io.Reader) io.Reader { return r }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			for i := 1; i <= tc.lines; i++ {
				fmt.Fprintf(&b, "healthy line %d\n", i)
			}
			fmt.Fprintf(&b, "error: line %d broke\n", tc.lines+1)
			b.WriteString("done\n")
			tail := newStreamTail(tc.read(strings.NewReader(b.String())), max)
			if _, err := io.Copy(io.Discard, tail); err != nil {
				t.Fatal(err)
			}
			if cap(tail.buf) > 4*max+64<<10 {
				t.Errorf("the tail holds %d bytes for a %d-byte window", cap(tail.buf), max)
			}
			got := tail.suspects(3)
			want := Suspect{Line: tc.lines + 1, Text: fmt.Sprintf("error: line %d broke", tc.lines+1)}
			if len(got) != 1 || got[0] != want {
				t.Errorf("suspects %+v, want %+v", got, want)
			}
		})
	}
}
