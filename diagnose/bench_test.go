package diagnose

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeBuildLog writes a build log of about size bytes made of real output:
// the healthy and noisy excerpts of the corpus and holdout, repeated, with
// one real failure excerpt every ~4 MB. It returns the failure count.
func writeBuildLog(tb testing.TB, path string, size int) int {
	tb.Helper()
	var healthy, failing []string
	for _, p := range []string{"testdata/corpus.jsonl", "testdata/holdout.jsonl"} {
		for _, row := range loadSamples(tb, p) {
			switch {
			case row.Family == "none" && !strings.HasPrefix(row.ID, "u"):
				healthy = append(healthy, row.Log)
			case row.Family != "none":
				failing = append(failing, row.Log)
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	written, sprinkled, next := 0, 0, 4<<20
	for i := 0; written < size; i++ {
		block := healthy[i%len(healthy)]
		if written >= next {
			block = failing[sprinkled%len(failing)]
			sprinkled++
			next += 4 << 20
		}
		n, _ := io.WriteString(w, block+"\n")
		written += n
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return sprinkled
}

func scanTimed(tb testing.TB, path string) ([]Finding, time.Duration) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	fs, err := Scan(f, MatcherOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return fs, time.Since(start)
}

// grepFile times the reference pass: one `grep -c -E 'error|fail|fatal'`.
func grepFile(tb testing.TB, grep, path string) time.Duration {
	tb.Helper()
	start := time.Now()
	out, err := exec.Command(grep, "-c", "-E", "error|fail|fatal", path).Output()
	if err != nil {
		tb.Fatalf("grep: %v", err)
	}
	d := time.Since(start)
	if strings.TrimSpace(string(out)) == "0" {
		tb.Fatal("grep found nothing: the generated log is not realistic")
	}
	return d
}

// speedRatio times Scan and grep over the same file, alternating, and
// returns grep's time over Scan's (≥ 1 means at least grep's speed), using
// the best of runs for each to damp noise from other processes.
func speedRatio(tb testing.TB, grep, path string, runs int) (ratio float64, scan time.Duration, fs []Finding) {
	bestScan, bestGrep := time.Duration(1<<62), time.Duration(1<<62)
	for range runs {
		var d time.Duration
		fs, d = scanTimed(tb, path)
		bestScan = min(bestScan, d)
		bestGrep = min(bestGrep, grepFile(tb, grep, path))
	}
	return float64(bestGrep) / float64(bestScan), bestScan, fs
}

// BenchmarkMatcherVsGrep runs every rule (through Scan) over a 200 MB build
// log and one grep pass over the same file, in the same run, and reports
// x_grep_speed = grep time / Scan time. Run with `make bench` or
// `go test ./diagnose -run '^$' -bench MatcherVsGrep -benchtime 1x`.
func BenchmarkMatcherVsGrep(b *testing.B) {
	grep, err := exec.LookPath("grep")
	if err != nil {
		b.Skip("grep not installed")
	}
	path := filepath.Join(b.TempDir(), "build.log")
	const size = 200 << 20
	failures := writeBuildLog(b, path, size)
	b.ResetTimer()
	var ratio float64
	var scan time.Duration
	var fs []Finding
	for range b.N {
		ratio, scan, fs = speedRatio(b, grep, path, 3)
	}
	b.StopTimer()
	if len(fs) == 0 || failures == 0 {
		b.Fatalf("no findings in a log with %d failure excerpts", failures)
	}
	b.ReportMetric(ratio, "x_grep_speed")
	b.ReportMetric(float64(size)/1e6/scan.Seconds(), "scan_MB/s")
	b.ReportMetric(float64(len(fs)), "families")
}

// BenchmarkLine measures the live path: one call per line, as the runner
// makes them, over real healthy output with escapes and redraws.
func BenchmarkLine(b *testing.B) {
	var lines []string
	for _, row := range loadSamples(b, "testdata/holdout.jsonl") {
		if row.Family == "none" {
			lines = append(lines, strings.Split(row.Log, "\n")...)
		}
	}
	lines = append(lines, "\x1b[32m[ 42%] Building CXX object x.o\x1b[0m", "Downloading 10%\rDownloading 55%")
	m := NewMatcher(MatcherOptions{})
	b.ResetTimer()
	for i := range b.N {
		m.Line(i+1, lines[i%len(lines)])
	}
}

// TestSpeedAgainstGrep is the quick guard in the default test run: all
// rules over a 16 MB log must not fall far behind one grep pass. The bar is
// lower than the benchmark's target because the machine is shared.
func TestSpeedAgainstGrep(t *testing.T) {
	if testing.Short() || raceOn || testing.CoverMode() != "" {
		t.Skip("timing test: not under -short, -race or -cover")
	}
	grep, err := exec.LookPath("grep")
	if err != nil {
		t.Skip("grep not installed")
	}
	path := filepath.Join(t.TempDir(), "build.log")
	writeBuildLog(t, path, 16<<20)
	ratio, scan, fs := speedRatio(t, grep, path, 3)
	t.Logf("Scan %v (%.0f MB/s), %.2fx grep's speed, %d families", scan, 16/scan.Seconds(), ratio, len(fs))
	if len(fs) == 0 {
		t.Error("no findings in a log with failure excerpts")
	}
	if ratio < 0.25 {
		t.Errorf("Scan at %.2fx grep's speed", ratio)
	}
}

// TestNoPerLineLiterals keeps the scan fast on the logs it reads most: no
// anchor or context literal may occur on most lines of a healthy excerpt,
// as a per-line prefix such as vLLM's "(EngineCore_DP0 pid=…)" would. Each
// occurrence stops the literal scan; one on every line halved its speed
// (BenchmarkMatcherVsGrep fell from 1.1x to 0.7x grep before this check).
// Hang-prone markers are exempt: the stall rules need them.
func TestNoPerLineLiterals(t *testing.T) {
	e := compileEngine(rules)
	markers := map[string]bool{}
	for _, r := range rules {
		for _, p := range r.pats {
			if p.marker {
				markers[p.lit] = true
			}
		}
	}
	for _, path := range []string{"testdata/corpus.jsonl", "testdata/holdout.jsonl", blind6Path, blind7Path, blind8Path} {
		for _, row := range loadSamples(t, path) {
			if row.Family != "none" {
				continue
			}
			lines := strings.Split(row.Log, "\n")
			if len(lines) < 4 {
				continue
			}
			onLines := map[int]map[int]bool{} // literal → lines holding it
			for i, line := range lines {
				e.set.each([]byte(line), func(id, _ int) {
					if onLines[id] == nil {
						onLines[id] = map[int]bool{}
					}
					onLines[id][i] = true
				})
			}
			for id, ls := range onLines {
				lit := e.set.pats[id]
				if !markers[lit] && 2*len(ls) > len(lines) {
					t.Errorf("%s (%s): literal %q is on %d of %d lines", row.ID, path, lit, len(ls), len(lines))
				}
			}
		}
	}
}
