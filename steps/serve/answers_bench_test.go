package serve

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/steps/verify"
	"github.com/haloforge/haloforge/steps/verify/standin"
)

// BenchmarkServeAnswersCheck is what the answers check adds to serve, as a
// ratio against a named baseline measured in the same run:
//
//	go test -run '^$' -bench ServeAnswersCheck -benchtime 3x ./steps/serve
//
// baseline-ms     serve of the stand-in engine, from the start to the first
//
//	request answered (the runner, supervisor, pty, probes and
//	smoke request: what serve did before the check existed);
//
// check-ms        from that answer to the check's outcome: the model file's
//
//	hash looked up (remembered per path, size, time and inode),
//	haloforge's reference for it read from the state dir, the
//	six prompts asked and compared (a stand-in server answering
//	at once with GPU-like noise: vLLM and a GPU cannot run here);
//
// check-x-baseline  check-ms ÷ baseline-ms;
// first-hash-64MiB-ms  the SHA-256 of a 64 MiB model file, paid once per
//
//	file (then remembered): about 0.3 s per GiB of weights.
//
// A real server spends seconds generating the six answers; this measures
// what haloforge itself adds around them. Recording a reference the first
// time (a model load on the CPU backend) is not in it: it happens once per
// model file.
func BenchmarkServeAnswersCheck(b *testing.B) {
	state := b.TempDir()
	model := filepath.Join(b.TempDir(), "m.gguf")
	if err := os.WriteFile(model, make([]byte, 64<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	cpu := standin.New(standin.Right, standin.Llama)
	defer cpu.Close()
	_, rec, err := verify.Verify(context.Background(), verify.Options{URL: cpu.URL, Backend: "CPU"}, nil, "")
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	key, err := verify.ModelKey(state, model)
	if err != nil {
		b.Fatal(err)
	}
	firstHash := time.Since(t0)
	if _, err := verify.StoreReference(state, key, rec); err != nil {
		b.Fatal(err)
	}
	gpu := standin.New(standin.Noisy, standin.Llama)
	defer gpu.Close()
	check := func(ctx context.Context, progress func(string)) AnswerCheck {
		return CheckAnswers(ctx, Launch{Engine: EngineLlamaCpp, URL: gpu.URL, Model: model}, CheckOptions{StateDir: state}, progress)
	}
	var base, added time.Duration
	for range b.N {
		srv := newEngineServer(b)
		var start, smoked time.Time
		right := false
		start = time.Now()
		runStandIn(b, srv, standIn{log: "llama-server-sid-lavapipe.log", lines: 8}, WatchOptions{Smoke: true, Check: check},
			func(e runner.Event, w *Watcher) {
				switch e := e.(type) {
				case Smoke:
					smoked = time.Now()
				case Checked:
					added += time.Since(smoked)
					right = e.Result != nil && e.Result.Verdict == verify.Right
					w.Stop()
				}
			})
		if smoked.IsZero() || !right {
			b.Fatal("the check did not end right after the first answer")
		}
		base += smoked.Sub(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(base.Microseconds())/1000/n, "baseline-ms")
	b.ReportMetric(float64(added.Microseconds())/1000/n, "check-ms")
	b.ReportMetric(float64(added)/float64(base), "check-x-baseline")
	b.ReportMetric(float64(firstHash.Microseconds())/1000, "first-hash-64MiB-ms")
}
