package linemode

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
)

// syncBuf is a buffer Print writes to while the test reads it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// screen is what a terminal shows of out: '\r' goes back to the start of
// the row, ESC [ K erases to its end, '\n' starts the next row.
func screen(out string) []string {
	rows := []string{""}
	col := 0
	for i := 0; i < len(out); i++ {
		row := []rune(rows[len(rows)-1])
		switch {
		case out[i] == '\n':
			rows = append(rows, "")
			col = 0
		case out[i] == '\r':
			col = 0
		case strings.HasPrefix(out[i:], "\x1b[K"):
			rows[len(rows)-1] = string(row[:min(col, len(row))])
			i += 2
		default:
			r := []rune(out[i:])[0]
			i += len(string(r)) - 1
			if col < len(row) {
				row[col] = r
			} else {
				row = append(row, r)
			}
			rows[len(rows)-1] = string(row)
			col++
		}
	}
	return rows
}

// feed sends events one at a time with a pause (longer than the printer's
// flush), calling check after each with what the terminal shows.
func feed(t *testing.T, o Options, events []runner.Event, check func(i int, rows []string)) string {
	t.Helper()
	ch := make(chan runner.Event)
	var out syncBuf
	done := make(chan struct{})
	go func() { Print(&out, ch, o); close(done) }()
	for i, e := range events {
		ch <- e
		time.Sleep(3 * flushEvery)
		if check != nil {
			check(i, screen(out.String()))
		}
	}
	close(ch)
	<-done
	return out.String()
}

func TestLiveLine(t *testing.T) {
	pull := runner.Progress{Step: "pull", Kind: runner.KindPull, Label: "image", Done: 12 << 20, Total: 33030915, Unit: runner.UnitBytes,
		Rate: 2.9 * (1 << 20), ETA: 7 * time.Second}
	ninja := runner.Progress{Step: "pull", Kind: runner.KindNinja, Label: "Building C object o229.o", Done: 229, Total: 400, ETA: 3*time.Minute + 12*time.Second,
		RunETA: time.Hour + 5*time.Minute}
	events := []runner.Event{
		runner.RunStarted{Track: "fx", RunID: "r1", RunDir: "/s/runs/r1", Total: 1},
		runner.StepStarted{Step: "pull", Title: "Pull", Index: 1, Total: 1},
		runner.OpenLine{Step: "pull", Text: "     ━━━━━━━━━━╸━━━━━━━━ 0.2/15.0 MB 1.5 MB/s eta 0:00:10"},
		pull,
		runner.Lines{Step: "pull", First: 1, Text: []string{"Writing manifest to image destination"}},
		ninja,
		runner.Progress{Step: "pull"}, // the counter finished
		runner.OpenLine{Step: "pull", Text: "Password: "},
		runner.StepFinished{Step: "pull", Status: steps.OutcomeSucceeded, Duration: 9 * time.Second},
		runner.RunFinished{RunID: "r1", RunDir: "/s/runs/r1", Status: steps.OutcomeSucceeded, Duration: 9 * time.Second},
	}
	want := map[int]string{
		2: "… [pull] ━━━━━━━━━━╸━━━━━━━━ 0.2/15.0 MB 1.5 MB/s eta 0:00:10",
		3: "… [pull] 38% of 31.5 MiB · 2.9 MiB/s · ETA 7s · image",
		4: "… [pull] 38% of 31.5 MiB · 2.9 MiB/s · ETA 7s · image",
		5: "… [pull] 229/400 · 57% · ETA 3m12s · run ETA 1h05m · Building C object o229.o",
		7: "… [pull] Password: ",
	}
	out := feed(t, Options{Live: true, Width: func() int { return 120 }}, events, func(i int, rows []string) {
		last := rows[len(rows)-1]
		if w, ok := want[i]; ok && last != w {
			t.Errorf("after event %d (%T) the last row is\n%q\nwant\n%q", i, events[i], last, w)
		}
		if i == 4 && rows[len(rows)-2] != "[pull] Writing manifest to image destination" {
			t.Errorf("the line above the live one: %q", rows[len(rows)-2])
		}
		if i == 6 && last != "" {
			// Open line gone with the lines; the finished counter gone: nothing to show.
			t.Errorf("after the counter went: %q", last)
		}
	})
	rows := screen(out)
	for _, r := range rows {
		if strings.HasPrefix(r, "… [") {
			t.Errorf("a live line stayed on the screen: %q\n%s", r, strings.Join(rows, "\n"))
		}
	}
	if !strings.Contains(strings.Join(rows, "\n"), "[pull] Writing manifest to image destination\n✓ pull 9s\n✓ fx done in 9s") {
		t.Errorf("screen:\n%s", strings.Join(rows, "\n"))
	}
}

func TestLiveLineFitsTheWidth(t *testing.T) {
	events := []runner.Event{
		runner.RunStarted{Track: "fx", RunID: "r1", Total: 1},
		runner.StepStarted{Step: "compile", Title: "Compile", Index: 1, Total: 1},
		runner.OpenLine{Step: "compile", Text: "[229/400] Building CXX object csrc/CMakeFiles/_C.dir/attention/paged_attention_v2.cu.o"},
	}
	feed(t, Options{Live: true, Width: func() int { return 40 }}, events, func(i int, rows []string) {
		if i != 2 {
			return
		}
		last := rows[len(rows)-1]
		if last != "… [compile] [229/400] Building CXX obj…" {
			t.Errorf("cut to 39 columns: %q (%d)", last, len([]rune(last)))
		}
	})
}

func TestProgressLinesWithoutATerminal(t *testing.T) {
	p := func(done int64) runner.Progress {
		return runner.Progress{Step: "compile", Kind: runner.KindNinja, Label: "x.o", Done: done, Total: 400}
	}
	events := []runner.Event{
		runner.RunStarted{Track: "fx", RunID: "r1", Total: 1},
		runner.StepStarted{Step: "compile", Title: "Compile", Index: 1, Total: 1},
		runner.OpenLine{Step: "compile", Text: "[10/400] x.o"}, // never printed: no terminal
		p(10),
		p(11), // too soon after the last
		p(200),
		runner.StepFinished{Step: "compile", Status: steps.OutcomeSucceeded, Duration: time.Second},
	}
	// The pause between events is 3×flushEvery: a progress line at most every 4×.
	out := feed(t, Options{ProgressEvery: 4 * flushEvery}, events, nil)
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "~ ") || strings.Contains(l, "x.o") {
			got = append(got, l)
		}
	}
	want := []string{"~ [compile] 10/400 · 2% · x.o", "~ [compile] 200/400 · 50% · x.o"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("progress lines:\n%s\nwant\n%s\nall:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), out)
	}
	if strings.Contains(out, "\x1b[K") || strings.Contains(out, "\r") {
		t.Errorf("redraws without a terminal: %q", out)
	}
}
