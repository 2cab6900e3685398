package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/haloforge/haloforge/steps"
)

// serverRun runs the fixture server step without history, with args, and
// calls onLine for every line it prints (with the runner and the cancel).
func serverRun(t *testing.T, args []string, onLine func(string, *Runner, context.CancelFunc)) (*Report, []Event, string) {
	t.Helper()
	dir := t.TempDir()
	track := fxTrack(fx{id: "serve", script: "server.sh"})
	o := fxOptions(fxPlan(t, track, fxPins, "testdata/scripts", dir), dir)
	o.NoHistory = true
	o.Args = map[string][]string{"serve": args}
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var evs []Event
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range r.Events() {
			evs = append(evs, e)
			if l, ok := e.(Lines); ok {
				for _, text := range l.Text {
					onLine(text, r, cancel)
				}
			}
		}
	}()
	rep, err := r.Run(ctx)
	<-done
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep, evs, dir
}

// A server step ends by the consumer's verdict: succeeded with its proof
// and why, every process stopped, no history written, its arguments passed
// as they are.
func TestSettleSucceedsALongLivedStep(t *testing.T) {
	args := []string{"--port", "18080", "two words", "it's $HOME"}
	rep, evs, dir := serverRun(t, args, func(line string, r *Runner, _ context.CancelFunc) {
		if line == "listening" {
			r.Settle(Verdict{Status: steps.OutcomeSucceeded, Why: "ready; stopped by you", Verified: []string{"answered"}})
		}
	})
	fin := finished(evs, "serve")
	if fin.Status != steps.OutcomeSucceeded || fin.Why != "ready; stopped by you" || !slices.Equal(fin.Verified, []string{"answered"}) {
		t.Fatalf("StepFinished %+v", fin)
	}
	if rep.Status != steps.OutcomeSucceeded || rep.Steps[0].Why != fin.Why {
		t.Fatalf("report %s, why %q", rep.Status, rep.Steps[0].Why)
	}
	var want []string
	for _, a := range args {
		want = append(want, "arg ["+a+"]")
	}
	if got := lines(evs, "serve")[:len(args)]; !slices.Equal(got, want) {
		t.Errorf("arguments reached the script as %q, want %q", got, want)
	}
	if _, alive := pidsAlive(t, filepath.Join(dir, "runs", rep.RunID, "pids")); len(alive) != 0 {
		t.Errorf("still alive after the verdict: %v", alive)
	}
	if _, err := os.Stat(filepath.Join(dir, "state.json")); !os.IsNotExist(err) {
		t.Errorf("a run without history wrote state.json (%v)", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "runs", rep.RunID, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	var onDisk Report
	if err := json.Unmarshal(b, &onDisk); err != nil || onDisk.Steps[0].Why != fin.Why {
		t.Errorf("report.json why %q (%v)", onDisk.Steps[0].Why, err)
	}
}

func TestSettleFailsAStalledStep(t *testing.T) {
	rep, evs, _ := serverRun(t, nil, func(line string, r *Runner, _ context.CancelFunc) {
		if line == "listening" {
			r.Settle(Verdict{Status: steps.OutcomeFailed, Why: `stalled in phase "loading"`})
		}
	})
	if fin := finished(evs, "serve"); fin.Status != steps.OutcomeFailed || fin.Why != `stalled in phase "loading"` {
		t.Fatalf("StepFinished %+v", fin)
	}
	if rep.Status != steps.OutcomeFailed {
		t.Fatalf("run %s", rep.Status)
	}
}

// A stop by the user wins over a verdict that comes after it.
func TestCancelBeatsALaterVerdict(t *testing.T) {
	rep, evs, _ := serverRun(t, nil, func(line string, r *Runner, cancel context.CancelFunc) {
		if line == "listening" {
			cancel()
			time.Sleep(20 * time.Millisecond)
			r.Settle(Verdict{Status: steps.OutcomeSucceeded, Why: "too late"})
		}
	})
	if fin := finished(evs, "serve"); fin.Status != steps.OutcomeInterrupted || fin.Why != "" {
		t.Fatalf("StepFinished %+v", fin)
	}
	if rep.Status != steps.OutcomeInterrupted {
		t.Fatalf("run %s", rep.Status)
	}
}

// A verdict given before a step starts is not about that step.
func TestVerdictBeforeTheStepIsDropped(t *testing.T) {
	dir := t.TempDir()
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "hello", script: "hello.sh"}), fxPins, "testdata/scripts", dir), dir)
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	r.Settle(Verdict{Status: steps.OutcomeFailed, Why: "stale"})
	go func() {
		for range r.Events() {
		}
	}()
	rep, err := r.Run(context.Background())
	if err != nil || rep.Status != steps.OutcomeSucceeded || rep.Steps[0].Why != "" {
		t.Fatalf("run %v, why %q (%v)", rep.Status, rep.Steps[0].Why, err)
	}
}

func TestNoHistoryCannotResume(t *testing.T) {
	dir := t.TempDir()
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "hello", script: "hello.sh"}), fxPins, "testdata/scripts", dir), dir)
	o.NoHistory, o.Resume = true, true
	if _, err := New(o); err == nil {
		t.Fatal("a run without history accepted --resume")
	}
}
