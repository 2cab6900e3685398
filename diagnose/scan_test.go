package diagnose

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"
)

// smallReads returns at most n bytes a Read, as a pipe, gzip or tar
// reader does, and keeps the largest heap seen every 256 reads.
type smallReads struct {
	r        io.Reader
	n        int
	reads    int
	peakHeap uint64
}

func (s *smallReads) Read(p []byte) (int, error) {
	s.reads++
	if s.reads%256 == 0 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s.peakHeap = max(s.peakHeap, ms.HeapInuse)
	}
	return s.r.Read(p[:min(len(p), s.n)])
}

// repeatReader yields size bytes of pattern, repeated, without holding
// them in memory.
func repeatReader(pattern string, size int) io.Reader {
	return io.LimitReader(&cycle{pattern: pattern}, int64(size))
}

type cycle struct {
	pattern string
	off     int
}

func (c *cycle) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = c.pattern[c.off]
		c.off = (c.off + 1) % len(c.pattern)
	}
	return len(p), nil
}

// scanWork scans size bytes of pattern read n bytes at a time and returns
// the bytes the scan looked at (searched, checked or handed on), the
// largest heap seen while it ran, and the CPU time the process spent on
// it. It gives up with ok false after wait, so a scan that went quadratic
// fails the test instead of hanging it.
func scanWork(pattern string, size, n int, wait time.Duration) (work int64, heap uint64, cpu time.Duration, ok bool) {
	r := &smallReads{r: repeatReader(pattern, size), n: n}
	m := NewMatcher(MatcherOptions{})
	done := make(chan error, 1)
	start := processCPU()
	go func() { done <- m.scan(r) }()
	select {
	case err := <-done:
		return m.scanned, r.peakHeap, processCPU() - start, err == nil
	case <-time.After(wait):
		return 0, 0, 0, false // the scan goroutine is left to the end of the test binary
	}
}

// processCPU is the user and system time of this process so far: unlike
// the wall clock it does not grow while other work has the CPU.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestScanWorkIsLinear feeds the offline scan N and 8N bytes of input
// without newlines, with one long line, and with short lines, in the small
// reads of a pipe or an archive, and checks that the work (bytes searched
// or checked) grows as the input does and stays a small multiple of it,
// and that the heap stays bounded; 8N must also take less than 24x N's CPU
// time (the old read loop took 64x). Before the fix, each 4 KiB read of a
// line without a newline searched the whole buffer again (a 16 MiB line
// cost 32 GiB of searching), and a long line was checked against a rule
// once per occurrence of its literal, each check reading the whole line
// (71 s for a 1 GiB NUL member of a 1 MB .tar.gz); that one
// does not finish N in a minute.
func TestScanWorkIsLinear(t *testing.T) {
	// 8n is maxLine: a line without newlines fills the buffer, which is
	// then checked as one piece (TestScanOverlongLine covers the pieces)
	const n = maxLine / 8
	tests := []struct {
		name, pattern string
	}{
		{"NUL bytes", "\x00"},
		{"text without newlines", "HIP out of memory. Tried to allocate 2.00 GiB \x1b[31m"},
		{"invalid UTF-8", "\xff\xfe\xc3(\xa0\xa1"},
		{"short lines", "[ 50%] Building CXX object src/CMakeFiles/kern.dir/unit.cpp.o\n"},
		{"CR redraws", "Downloading 10%\rDownloading 55%\r"},
	}
	for _, tt := range tests {
		for _, read := range []int{4 << 10, 64 << 10} {
			t.Run(fmt.Sprintf("%s, %d KiB reads", tt.name, read>>10), func(t *testing.T) {
				small, _, cpuSmall, ok := scanWork(tt.pattern, n, read, time.Minute)
				if !ok {
					t.Fatalf("%d bytes not scanned in a minute", n)
				}
				large, heap, cpuLarge, ok := scanWork(tt.pattern, 8*n, read, 2*time.Minute)
				if !ok {
					t.Fatalf("%d bytes scanned in %v of CPU, %d bytes not in 2 minutes", n, cpuSmall, 8*n)
				}
				// linear: 8x the input in about 8x the CPU time; 24x leaves
				// room for the collector and a coarse clock, quadratic is 64x
				if cpuLarge > 24*cpuSmall+100*time.Millisecond {
					t.Errorf("%d bytes took %v of CPU, 8x the input %v", n, cpuSmall, cpuLarge)
				}
				t.Logf("work %d bytes for %d, %d for %d; heap at most %d MiB", small, n, large, 8*n, heap>>20)
				if small > 16*n || large > 16*8*n {
					t.Errorf("work %d for %d bytes and %d for %d: more than 16 looks at each byte", small, n, large, 8*n)
				}
				if large > 9*small {
					t.Errorf("8x the input cost %.1fx the work", float64(large)/float64(small))
				}
				// bounded by the buffer of one overlong line (maxLine) and
				// the escape stripping of one piece of it, whatever the input
				if heap > 192<<20 {
					t.Errorf("heap reached %d MiB on %d MiB of input", heap>>20, 8*n>>20)
				}
			})
		}
	}
}

// TestScanFindsAcrossSmallReads checks that filling the buffer before
// searching it loses nothing: signatures on both sides of every read
// boundary, and a long line before them, are found on their own lines.
func TestScanFindsAcrossSmallReads(t *testing.T) {
	log := strings.Repeat("x", 3<<20) + "\n" +
		strings.Repeat("[ 50%] Building CXX object src/CMakeFiles/kern.dir/unit.cpp.o\n", 20_000) +
		"double free or corruption (!prev)\n" + "tail\n"
	for _, read := range []int{1, 7, 4 << 10, 1 << 20} {
		if read == 1 && testing.Short() {
			continue
		}
		fs, err := Scan(&smallReads{r: strings.NewReader(log), n: read}, MatcherOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != 1 || fs[0].Line != 20_002 || fs[0].Family != "therock-amdsmi-double-free" {
			t.Errorf("%d-byte reads: findings %+v", read, fs)
		}
	}
}

// BenchmarkScanWithoutNewlines scans 256 MiB that hold no newline (NUL
// bytes, as in an archive bomb's members) in the reads of a file
// (1 MiB) and of a pipe or an archive (64 KiB), beside the same bytes as
// short lines: the per-byte cost must not depend on either.
func BenchmarkScanWithoutNewlines(b *testing.B) {
	const size = 256 << 20
	for _, in := range []struct{ name, pattern string }{
		{"NUL", "\x00"},
		{"lines", "[ 50%] Building CXX object src/CMakeFiles/kern.dir/unit.cpp.o\n"},
	} {
		for _, read := range []int{1 << 20, 64 << 10} {
			b.Run(fmt.Sprintf("%s/%dKiB-reads", in.name, read>>10), func(b *testing.B) {
				// the input made once, outside the timing
				data := bytes.Repeat([]byte(in.pattern), size/len(in.pattern))
				b.SetBytes(int64(len(data)))
				b.ResetTimer()
				for range b.N {
					if _, err := Scan(&smallReads{r: bytes.NewReader(data), n: read}, MatcherOptions{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestLastIndexByte holds the block-wise search to bytes.LastIndexByte
// around its block edges.
func TestLastIndexByte(t *testing.T) {
	for _, size := range []int{0, 1, 4095, 4096, 4097, 8192, 10_000} {
		for _, at := range []int{-1, 0, 1, 4095, 4096, 4097, size - 1} {
			b := bytes.Repeat([]byte{'x'}, size)
			if at >= 0 && at < size {
				b[at] = '\n'
				if at > 2 {
					b[at/2] = '\n' // an earlier one must not win
				}
			}
			if got, want := lastIndexByte(b, '\n'), bytes.LastIndexByte(b, '\n'); got != want {
				t.Errorf("size %d, newline at %d: got %d, want %d", size, at, got, want)
			}
		}
	}
}

// TestScanReusesItsBuffer: scanning many newline-free streams one after
// another (the members of a bundle archive) reuses one grown buffer instead
// of growing a fresh 16 MiB one (plus 15 MiB of smaller ones) for each;
// the garbage doubled diagnose's peak memory on such archives.
func TestScanReusesItsBuffer(t *testing.T) {
	const members, size = 12, 20 << 20
	zeros := make([]byte, size)
	Scan(bytes.NewReader(zeros), MatcherOptions{}) // warm: the first scan may grow
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range members {
		if _, err := Scan(iotest.HalfReader(bytes.NewReader(zeros)), MatcherOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	perMember := (after.TotalAlloc - before.TotalAlloc) / members
	if perMember > 8<<20 {
		t.Errorf("%d MiB allocated per newline-free member, want the scan buffer reused (under 8 MiB)", perMember>>20)
	}
}
