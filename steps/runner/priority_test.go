package runner

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// niceThreads counts the threads of this process running at nice. The
// main thread counts only with main: when the goroutine that locked it
// exits, the runtime parks it for good instead of ending it (runtime.mexit
// "wedges" m0), so no code runs there at any priority after that.
func niceThreads(t *testing.T, nice int, main bool) int {
	t.Helper()
	stats, err := filepath.Glob("/proc/self/task/*/stat")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	self := strconv.Itoa(os.Getpid())
	for _, p := range stats {
		if !main && filepath.Base(filepath.Dir(p)) == self {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended meanwhile
		}
		// proc(5): the fields after "(comm) " start at field 3; nice is field 19.
		_, rest, ok := strings.Cut(string(b), ") ")
		f := strings.Fields(rest)
		if !ok || len(f) < 17 {
			t.Fatalf("unexpected %s: %q", p, b)
		}
		if v, err := strconv.Atoi(f[16]); err == nil && v == nice {
			n++
		}
	}
	return n
}

func TestProcessorYieldsToTheStepAndTheNiceThreadEndsWithIt(t *testing.T) {
	if niceThreads(t, processorNice, false) != 0 {
		t.Skip("this process already has threads at the processor's nice value")
	}
	wedged := niceThreads(t, processorNice, true) // the main thread, from an earlier run
	dir := t.TempDir()
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "gate", script: "gate.sh"}), fxPins, "testdata/scripts", dir), dir)
	during := -1
	rep, _ := run(t, o, func(e Event, cancel context.CancelFunc) {
		if says(e, "ready") {
			during = niceThreads(t, processorNice, true) - wedged
			cancel()
		}
	})
	if rep.Steps[0].Status != "interrupted" {
		t.Fatalf("step %s", rep.Steps[0].Status)
	}
	if during != 1 {
		t.Errorf("%d threads at nice %d while the step ran; want the processor's one", during, processorNice)
	}
	// The thread must end with the processor, or other goroutines would run
	// at the lower priority.
	deadline := time.Now().Add(2 * time.Second)
	for niceThreads(t, processorNice, false) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a thread at nice %d outlived the step", processorNice)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
