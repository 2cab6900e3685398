package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The number: `bench` adds under 2 s to the engine's own time. These
// measure what bench itself adds to reading its input, as a ratio against
// the baseline of reading the same file in the same run:
//
//	go test -run '^$' -bench 'Read|ParseCompare' ./steps/bench
//
// BenchmarkParseCompare*/BenchmarkReadFile* is the overhead factor.

func benchFile(b *testing.B, rows int) string {
	b.Helper()
	if rows == 0 {
		return "testdata/llama-bench-lavapipe.json"
	}
	line := strings.SplitN(string(readFile(b, "llama-bench-lavapipe.jsonl")), "\n", 2)[0]
	p := filepath.Join(b.TempDir(), "big.jsonl")
	if err := os.WriteFile(p, []byte(strings.Repeat(line+"\n", rows)), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

func benchRead(b *testing.B, p string) {
	for b.Loop() {
		if _, err := os.ReadFile(p); err != nil {
			b.Fatal(err)
		}
	}
}

func benchParseCompare(b *testing.B, p string) {
	refs := References()
	for b.Loop() {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		run, err := Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		_ = Compare(run, refs, Host{}).ToJSON()
	}
}

func BenchmarkReadFile(b *testing.B)             { benchRead(b, benchFile(b, 0)) }
func BenchmarkParseCompare(b *testing.B)         { benchParseCompare(b, benchFile(b, 0)) }
func BenchmarkReadFile1000Rows(b *testing.B)     { benchRead(b, benchFile(b, 1000)) }
func BenchmarkParseCompare1000Rows(b *testing.B) { benchParseCompare(b, benchFile(b, 1000)) }
