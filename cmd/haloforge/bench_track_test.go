package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haloforge/haloforge/steps/bench"
	"github.com/haloforge/haloforge/steps/serve"
	"github.com/haloforge/haloforge/steps/verify"
)

// BenchmarkBenchTrackOverhead is the number for bench --track: what
// haloforge adds to the engine's own time (detection, planning, the pty
// runner and its supervisor, parsing, the comparison), in seconds and over
// the 2 s the issue allows (want < 1):
//
//	go test -run '^$' -bench BenchTrackOverhead -benchtime 3x ./cmd/haloforge
//
// The engine is a stand-in (testdata/standin: it sleeps one second and
// leaves the sid proof's real llama-bench results); the box entry is not
// in it (make integration-distro reports the whole on the real box).
func BenchmarkBenchTrackOverhead(b *testing.B) {
	dir := b.TempDir()
	model := filepath.Join(dir, "tiny-random.gguf")
	if err := os.WriteFile(model, []byte("GGUF"), 0o644); err != nil {
		b.Fatal(err)
	}
	results, err := filepath.Abs("../../steps/bench/testdata/llama-bench-lavapipe.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv("FX_RESULTS", results)
	b.Setenv("FX_ENGINE_SECONDS", "1")
	b.Setenv("NO_COLOR", "1")
	// The stand-in's box is not built: say it exists (served with a note).
	defer func(p serve.Probe) { probeBuilt = p }(probeBuilt)
	probeBuilt = func(string, string, bool) (bool, bool) { return true, true }
	// The engine's time as bench reports it, from the step's typed time.
	reEngine := regexp.MustCompile(`time: the benchmark itself took ([0-9.]+)s;`)
	var added time.Duration
	for i := range b.N {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs([]string{"bench", "--track", "llamacpp-distro", "--model", model, "--scripts", "testdata/standin",
			"--state-dir", filepath.Join(dir, "state", strconv.Itoa(i))})
		start := time.Now()
		if err := root.ExecuteContext(context.Background()); err != nil {
			b.Fatalf("bench: %v\n%s", err, out.String())
		}
		wall := time.Since(start)
		m := reEngine.FindStringSubmatch(out.String())
		if m == nil {
			b.Fatalf("no engine time in:\n%s", out.String())
		}
		secs, _ := strconv.ParseFloat(m[1], 64)
		added += wall - time.Duration(secs*float64(time.Second))
	}
	avg := added / time.Duration(b.N)
	b.ReportMetric(avg.Seconds(), "s-added")
	b.ReportMetric(avg.Seconds()/2, "of-2s-budget")
}

// bench --help gives the exit codes of both modes, not only --from's.
func TestBenchHelpExitCodes(t *testing.T) {
	long := newBenchCmd(&globalOptions{}).Long
	for _, want := range []string{"with --from, 0 when the file was read, 2 when it could not be",
		"with --track, 0 when the benchmark ran and was compared, 1 when it failed", "2 when nothing ran", "130 when interrupted"} {
		if !strings.Contains(long, want) {
			t.Errorf("bench --help lacks %q", want)
		}
	}
}

// bench never calls a stack's speed normal when its answers were last
// found wrong, and says why; it notes a stack whose answers were never
// checked.
func TestBenchRefusesAWrongStack(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny-random.gguf")
	if err := os.WriteFile(model, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	results, err := filepath.Abs("../../steps/bench/testdata/llama-bench-lavapipe.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("FX_RESULTS", results)
	t.Setenv("FX_ENGINE_SECONDS", "0")
	t.Setenv("NO_COLOR", "1")
	defer func(p serve.Probe) { probeBuilt = p }(probeBuilt)
	probeBuilt = func(string, string, bool) (bool, bool) { return true, true }
	state := filepath.Join(dir, "state")
	run := func(extra ...string) (string, error) {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(append([]string{"bench", "--track", "llamacpp-distro", "--model", model, "--scripts", "testdata/standin", "--state-dir", state}, extra...))
		err := root.ExecuteContext(context.Background())
		return out.String(), err
	}
	ok := func(t *testing.T, extra ...string) string {
		out, err := run(extra...)
		if err != nil {
			t.Fatalf("bench: %v\n%s", err, out)
		}
		return out
	}
	answers := func(t *testing.T, out string) bench.Answers {
		var j struct {
			Answers *bench.Answers `json:"answers"`
		}
		// The run's log goes to stderr, the JSON (an indented object) last.
		if err := json.Unmarshal([]byte(out[strings.LastIndex("\n"+out, "\n{\n"):]), &j); err != nil || j.Answers == nil {
			t.Fatalf("no answers in bench --json (%v):\n%s", err, out)
		}
		return *j.Answers
	}
	t.Run("never checked: a note, and unchecked in the JSON", func(t *testing.T) {
		if out := ok(t); !strings.Contains(out, "note: this stack's answers were never checked (haloforge serve --track llamacpp-distro checks them)") {
			t.Fatalf("no note:\n%s", out)
		}
		if a := answers(t, ok(t, "--json")); a.Verdict != bench.Unchecked || !strings.Contains(a.Line, "never checked") {
			t.Fatalf("answers = %+v", a)
		}
	})
	res := verify.Result{Verdict: verify.Wrong, Reason: `prompt 1 (capital, "The capital of France is"): degenerate output`}
	t.Run("answered wrong: not measured, exit 1, and how to measure anyway", func(t *testing.T) {
		if err := verify.RecordLast(state, "llamacpp-distro", "serve", res, time.Now()); err != nil {
			t.Fatal(err)
		}
		out, err := run()
		if exitCode(err) != 1 || !regexp.MustCompile(`not measured: its answers were wrong when serve last checked them \([0-9-]+ [0-9:]+\): WRONG OUTPUT: prompt 1 .*add --despite-wrong-answers to measure it anyway`).MatchString(err.Error()) {
			t.Fatalf("exit %d, %v:\n%s", exitCode(err), err, out)
		}
		if strings.Contains(out, "llama-bench") {
			t.Fatalf("the benchmark ran:\n%s", out)
		}
	})
	t.Run("answered wrong, measured anyway: not normal, and why; the report says it", func(t *testing.T) {
		report := filepath.Join(dir, "wrong.md")
		out := ok(t, "--despite-wrong-answers", "--report", report)
		if !regexp.MustCompile(`(?m)^verdict: not normal, whatever the figures: its answers were wrong when serve last checked them \([0-9-]+ [0-9:]+\): WRONG OUTPUT: prompt 1 .*; a stack that computes wrong has no normal speed: fix it first$`).MatchString(out) {
			t.Fatalf("no refusal:\n%s", out)
		}
		js, err := os.ReadFile(filepath.Join(dir, "wrong.json"))
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Comparison struct {
				Answers *bench.Answers `json:"answers"`
			} `json:"comparison"`
		}
		if err := json.Unmarshal(js, &rep); err != nil || rep.Comparison.Answers == nil || rep.Comparison.Answers.Verdict != "wrong" ||
			rep.Comparison.Answers.By != "serve" || !strings.HasPrefix(rep.Comparison.Answers.Line, "WRONG OUTPUT: prompt 1") {
			t.Fatalf("report.json's answers (%v): %s", err, js)
		}
		md, _ := os.ReadFile(report)
		if !strings.Contains(string(md), "**Answers:** wrong: WRONG OUTPUT: prompt 1") {
			t.Fatalf("the Markdown report does not say the answers were wrong:\n%s", md)
		}
	})
	t.Run("answered right: judged as usual", func(t *testing.T) {
		if err := verify.RecordLast(state, "llamacpp-distro", "serve", verify.Result{Verdict: verify.Right, Reason: "ok"}, time.Now()); err != nil {
			t.Fatal(err)
		}
		if out := ok(t); strings.Contains(out, "not normal") || strings.Contains(out, "never checked") {
			t.Fatalf("a right stack refused:\n%s", out)
		}
		if a := answers(t, ok(t, "--json")); a.Verdict != "right" || a.By != "serve" {
			t.Fatalf("answers = %+v", a)
		}
	})
}

// BenchmarkBenchAnswersJudge is what the answers check adds to bench, as a
// ratio against a named baseline measured in the same run: the comparison
// bench makes anyway (bench.Compare of the sid proof's real llama-bench
// results against the references) is the baseline; the added part reads
// the track's last verdict from the state dir (twice: before the benchmark
// runs, to refuse a wrong stack, and with the comparison) and puts it in
// the report.
//
//	go test -run '^$' -bench BenchAnswersJudge ./cmd/haloforge
func BenchmarkBenchAnswersJudge(b *testing.B) {
	raw, err := os.ReadFile("../../steps/bench/testdata/llama-bench-lavapipe.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	run, err := bench.Parse(raw)
	if err != nil {
		b.Fatal(err)
	}
	state := b.TempDir()
	if err := verify.RecordLast(state, "llamacpp-distro", "serve", verify.Result{Verdict: verify.Right, Reason: "6 prompts agree"}, time.Now()); err != nil {
		b.Fatal(err)
	}
	o := benchOptions{track: "llamacpp-distro"}
	var base, added time.Duration
	for range b.N {
		t0 := time.Now()
		rep := bench.Compare(run, bench.References(), bench.Host{})
		t1 := time.Now()
		if err := refuseWrongStack(o, state); err != nil {
			b.Fatal(err)
		}
		judgeAnswers(io.Discard, &rep, state, o.track)
		added += time.Since(t1)
		base += t1.Sub(t0)
		if rep.Answers == nil || rep.Answers.Verdict != "right" {
			b.Fatalf("answers %+v", rep.Answers)
		}
	}
	b.ReportMetric(float64(base.Microseconds())/float64(b.N), "compare-µs")
	b.ReportMetric(float64(added.Microseconds())/float64(b.N), "answers-µs")
	b.ReportMetric(float64(added)/float64(base), "answers-x-compare")
}
