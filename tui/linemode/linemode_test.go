package linemode

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/steps/serve"
)

// printAll prints events as a run would deliver them.
func printAll(events []runner.Event, o Options) (string, Result) {
	ch := make(chan runner.Event, len(events))
	for _, e := range events {
		ch <- e
	}
	close(ch)
	var out bytes.Buffer
	res := Print(&out, ch, o)
	return out.String(), res
}

func TestPrint(t *testing.T) {
	f := diagnose.Finding{Family: "hip-no-binary-for-gpu", Line: 3, Text: "hipErrorNoBinaryForGpu", Summary: "no code object for this GPU",
		Fix: "export PYTORCH_ROCM_ARCH=gfx1151\npip install …", Links: []string{"https://example.invalid/1"}}
	events := []runner.Event{
		runner.RunStarted{Track: "fx", RunID: "r1", RunDir: "/s/runs/r1", Total: 3},
		runner.Notice{Text: "resuming run r0: b (interrupted)"},
		runner.StepSkipped{Step: "a", WhySkipped: "up to date (succeeded 2026-11-20 10:00)"},
		runner.StepStarted{Step: "b", Title: "Build B", Index: 1, Total: 3, Optional: true, Elapsed: 2 * time.Second, ETA: 3*time.Minute + 12*time.Second},
		runner.Lines{Step: "b", First: 1, Text: []string{"one"}},
		runner.Lines{Step: "b", First: 7, Text: []string{"two", "three"}, Cut: []int{100, 0}, Dropped: 5},
		runner.Found{Step: "b", Finding: f},
		runner.StepFinished{Step: "b", Status: steps.OutcomeFailed, ExitCode: 2, Duration: 75 * time.Second, Optional: true, WhyOptional: "CDNA only",
			Log: "/s/runs/r1/b.log", Tail: []string{"two", "three"}, Findings: []diagnose.Finding{f}, Dropped: 2},
		runner.StepStarted{Step: "d", Title: "Build D", Index: 2, Total: 3, Elapsed: 77 * time.Second},
		runner.StepFinished{Step: "d", Status: steps.OutcomeSucceeded, Duration: 400 * time.Millisecond},
		runner.StepStarted{Step: "c", Title: "Build C (optional)", Index: 3, Total: 3, Optional: true},
		runner.StepFinished{Step: "c", Status: steps.OutcomeInterrupted, Duration: time.Hour + 2*time.Minute, Log: "/s/runs/r1/c.log", Err: errors.New("log incomplete")},
		runner.RunFinished{RunID: "r1", RunDir: "/s/runs/r1", Status: steps.OutcomeInterrupted, Duration: 2 * time.Hour},
	}
	got, res := printAll(events, Options{Resume: func(string) string { return "haloforge build --track fx --resume" }})
	want := `fx: 3 steps to run · run r1
note: resuming run r0: b (interrupted)
- a skipped: up to date (succeeded 2026-11-20 10:00)
▶ [1/3] b: Build B (optional) · elapsed 2s · ETA 3m12s
[b] one
[b] … 5 lines not shown here (all in the log)
[b] two … (100 more bytes in the log)
[b] three
! [b] hip-no-binary-for-gpu: no code object for this GPU (line 3)
[b] … 2 lines not shown here (all in the log)
✗ b failed (exit 2) after 1m15s (optional: the build goes on)
  why it is optional: CDNA only
  last lines of b:
  │ two
  │ three
  diagnosis hip-no-binary-for-gpu: no code object for this GPU
    line 3: hipErrorNoBinaryForGpu
    fix: export PYTORCH_ROCM_ARCH=gfx1151
         pip install …
    see: https://example.invalid/1
  log: /s/runs/r1/b.log
▶ [2/3] d: Build D · elapsed 1m17s
✓ d 0s
▶ [3/3] c: Build C (optional) · elapsed 0s
■ c interrupted after 1h02m
  error: log incomplete
  log: /s/runs/r1/c.log
■ fx interrupted after 2h00m
  resume with: haloforge build --track fx --resume
report: /s/runs/r1/report.json
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("line mode (-want +got):\n%s", diff)
	}
	// An optional failure is not what failed the run.
	if want := (Result{Status: steps.OutcomeInterrupted, RunDir: "/s/runs/r1", Stopped: "c"}); !cmp.Equal(res, want, cmp.Comparer(func(a, b error) bool { return a == b })) {
		t.Errorf("result %+v, want %+v", res, want)
	}
}

func TestPrintColoursOnlyTheMarks(t *testing.T) {
	got, _ := printAll([]runner.Event{
		runner.Lines{Step: "b", First: 1, Text: []string{"\x1b[32mok\x1b[0m"}},
		runner.StepFinished{Step: "b", Status: steps.OutcomeSucceeded, Duration: 2 * time.Second},
	}, Options{Color: true})
	if want := "[b] \x1b[32mok\x1b[0m\n" + sgrGreen + "✓" + sgrReset + " b 2s\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestPrintResultNamesTheFailure is what the demo's line mode retries on:
// the first failed step that is not optional and its first finding, from
// the step's final findings or else the live ones.
func TestPrintResultNamesTheFailure(t *testing.T) {
	live := diagnose.Finding{Family: "therock-amdsmi-double-free", Line: 3, Summary: "double free", Fix: "pip uninstall -y amdsmi"}
	out, res := printAll([]runner.Event{
		runner.RunStarted{Track: "t", RunID: "r", RunDir: "/r", Total: 2},
		runner.StepFinished{Step: "aiter", Optional: true, Status: steps.OutcomeFailed, ExitCode: 1, Findings: []diagnose.Finding{{Family: "x", Fix: "y"}}},
		runner.Found{Step: "rocm", Finding: live},
		runner.StepFinished{Step: "rocm", Status: steps.OutcomeFailed, ExitCode: 134},
		runner.RunFinished{RunID: "r", RunDir: "/r", Status: steps.OutcomeFailed, Duration: time.Second},
	}, Options{})
	if res.Status != steps.OutcomeFailed || res.Failed != "rocm" || res.Finding == nil || res.Finding.Family != live.Family {
		t.Errorf("result %+v", res)
	}
	if !strings.Contains(out, "  diagnosis therock-amdsmi-double-free: double free\n") || !strings.Contains(out, "✗ t failed after 1s\n") {
		t.Errorf("output:\n%s", out)
	}
}

// TestPrintPointsAtAnUnknownError checks the fallback for a failure no
// rule knows: the lines that look like its error, with the log's line
// numbers, after the last lines.
func TestPrintPointsAtAnUnknownError(t *testing.T) {
	log := filepath.Join(t.TempDir(), "b.log")
	text := "[1/9] Building HIP object kern.o\nkern.hip:3:1: error: unknown type name 'hipFoo'\nFAILED: kern.o\nninja: build stopped\n"
	if err := os.WriteFile(log, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ := printAll([]runner.Event{
		runner.StepFinished{Step: "b", Status: steps.OutcomeFailed, ExitCode: 1, Log: log, Tail: []string{"ninja: build stopped"}},
	}, Options{})
	want := "  diagnosis: no known failure recognised in the log\n" +
		"  the error may be at:\n" +
		"    line 2: kern.hip:3:1: error: unknown type name 'hipFoo'\n" +
		"    line 3: FAILED: kern.o\n"
	if !strings.Contains(got, want) {
		t.Errorf("output lacks the suspects:\n%s\nwant:\n%s", got, want)
	}
}

// TestPrintNotVerified: a step that ran to its end without proving its
// outcome says why, with a ⚠, and so does the run's end; never ✓.
func TestPrintNotVerified(t *testing.T) {
	got, res := printAll([]runner.Event{
		runner.RunStarted{Track: "therock-toolbox", RunID: "r1", RunDir: "/s/runs/r1", Total: 2},
		runner.StepFinished{Step: "vllm", Status: steps.OutcomeSucceeded, Duration: 3 * time.Second, Verified: []string{"vllm imports"}},
		runner.StepFinished{Step: "verify", Status: steps.OutcomeNotVerified, Duration: 2 * time.Second, Log: "/s/runs/r1/verify.log",
			Verified:    []string{"a kernel ran on gfx1151", "the platform is ROCm"},
			NotVerified: []string{"offline: no model to generate with", "no llama-bench"}},
		runner.RunFinished{RunID: "r1", RunDir: "/s/runs/r1", Status: steps.OutcomeNotVerified, Duration: 5 * time.Second},
	}, Options{Resume: func(string) string { return "haloforge build --track therock-toolbox --resume" }})
	want := `therock-toolbox: 2 steps to run · run r1
✓ vllm 3s
  verified: vllm imports
⚠ verify not verified: offline: no model to generate with
⚠ verify not verified: no llama-bench
  verified: a kernel ran on gfx1151
  verified: the platform is ROCm
  log: /s/runs/r1/verify.log
⚠ therock-toolbox done in 5s, not verified: verify
report: /s/runs/r1/report.json
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("line mode (-want +got):\n%s", diff)
	}
	if res.Status != steps.OutcomeNotVerified || res.Failed != "" || !cmp.Equal(res.NotVerified, []string{"verify"}) {
		t.Errorf("result %+v", res)
	}
}

// TestPrintShowsTheHangLadder: a hang family has no error line to fix, so
// line mode prints the same ladder as diagnose and the wizard, in order.
func TestPrintShowsTheHangLadder(t *testing.T) {
	const family = "llamacpp-rocm-load-hang-sdma"
	rungs := diagnose.LadderLines(family)
	if len(rungs) < 2 {
		t.Fatalf("%s has %d rungs, want a ladder", family, len(rungs))
	}
	f := diagnose.Finding{Family: family, Line: 9, Summary: "stalled after the async upload", Fix: "HSA_ENABLE_SDMA=0"}
	out, _ := printAll([]runner.Event{
		runner.RunStarted{Track: "t", RunID: "r", RunDir: "/r", Total: 1},
		runner.StepFinished{Step: "bench", Status: steps.OutcomeFailed, ExitCode: 1, Findings: []diagnose.Finding{f}},
		runner.RunFinished{RunID: "r", RunDir: "/r", Status: steps.OutcomeFailed},
	}, Options{})
	want := "    " + diagnose.LadderTitle + ":\n"
	for _, r := range rungs {
		want += "      " + r + "\n"
	}
	if !strings.Contains(out, want) {
		t.Errorf("the ladder is missing or out of order; want\n%s\nin\n%s", want, out)
	}
	// A family without a ladder prints none.
	out, _ = printAll([]runner.Event{
		runner.StepFinished{Step: "rocm", Status: steps.OutcomeFailed, ExitCode: 1, Findings: []diagnose.Finding{{Family: "hip-no-binary-for-gpu", Fix: "x"}}},
	}, Options{})
	if strings.Contains(out, diagnose.LadderTitle) {
		t.Errorf("a ladder for a family without one:\n%s", out)
	}
}

func TestPrintWaitingForInputAndLeftovers(t *testing.T) {
	left := []runner.Leftover{
		{PID: 41, Command: "bash -c while :; do sleep 1; done daemon", Fate: runner.FateKilled},
		{PID: 42, Command: "/usr/bin/conmon --api-version 1", Container: true, Fate: runner.FateContainer},
	}
	events := []runner.Event{
		runner.StepStarted{Step: "rocm", Title: "Install ROCm", Index: 1, Total: 1},
		runner.Lines{Step: "rocm", First: 1, Text: []string{"installing"}},
		runner.WaitingForInput{Step: "rocm", Prompt: "[sudo] password for ann:", Quiet: 2 * time.Second},
		runner.WaitingForInput{Step: "rocm", Quiet: 3 * time.Second, Echo: true},
		runner.StepFinished{Step: "rocm", Status: steps.OutcomeFailed, ExitCode: 1, Duration: 5 * time.Second, Log: "/s/rocm.log", Leftovers: left},
	}
	got, _ := printAll(events, Options{})
	want := `▶ [1/1] rocm: Install ROCm · elapsed 0s
[rocm] installing
? [rocm] waiting for input: [sudo] password for ann:
  nothing can answer it here (no terminal): stop with Ctrl-C, answer it beforehand (a sudo password: sudo -v), then resume
? [rocm] waiting for input: it reads its terminal and has printed nothing for 3s
  nothing can answer it here (no terminal): stop with Ctrl-C, answer it beforehand (a sudo password: sudo -v), then resume
✗ rocm failed (exit 1) after 5s
  diagnosis: no known failure recognised in the log
  left running: pid 41 bash -c while :; do sleep 1; done daemon (killed: the step failed)
  left running: pid 42 /usr/bin/conmon --api-version 1 (kept: the container runtime's, podman manages it)
  log: /s/rocm.log
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("line mode (-want +got):\n%s", diff)
	}
	got, _ = printAll(events[2:3], Options{Answering: true})
	if !strings.Contains(got, "  type the answer and press Enter: it goes to the step, not shown (the step turned the echo off); Ctrl-C stops\n") {
		t.Errorf("answering a password prompt:\n%s", got)
	}
}

// TestPrintARunThatNeverStarted: a run refused before it began (another
// build holds the state dir) says why, without an outcome line for a blank
// track or a resume command.
func TestPrintARunThatNeverStarted(t *testing.T) {
	got, res := printAll([]runner.Event{runner.RunFinished{RunID: "r1", Status: steps.OutcomeFailed, Err: errors.New("another haloforge build (pid 42) is running with this state dir: /s")}},
		Options{Resume: func(string) string { return "haloforge build --track fx --resume" }})
	if want := "✗ the run did not start: another haloforge build (pid 42) is running with this state dir: /s\n"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
	if res.Err == nil {
		t.Error("the result lost the error")
	}
}

// A successful run ends with the next commands, as the wizard's recap
// prints them; a failed run and a dry run do not.
func TestPrintNextAfterSuccess(t *testing.T) {
	next := []string{"haloforge serve --track t --model <model> --state-dir /s"}
	for _, tc := range []struct {
		name   string
		status string
		dry    bool
		want   bool
	}{
		{"succeeded", steps.OutcomeSucceeded, false, true},
		{"not verified", steps.OutcomeNotVerified, false, true},
		{"failed", steps.OutcomeFailed, false, false},
		{"dry run", steps.OutcomeSucceeded, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := printAll([]runner.Event{
				runner.RunStarted{RunID: "r", Track: "t"},
				runner.RunFinished{RunID: "r", RunDir: "/s/runs/r", Status: tc.status, Duration: time.Second},
			}, Options{Next: next, DryRun: tc.dry})
			got := strings.Contains(out, "\nnext: haloforge serve --track t --model <model> --state-dir /s\n")
			if got != tc.want {
				t.Errorf("next line printed = %v, want %v:\n%s", got, tc.want, out)
			}
		})
	}
}

// TestPrintAServer: the events a serve run's watch adds (steps/serve's
// StartupPhase, Ready, Smoke) print in README.md's "Line mode output"
// format, the readiness hint under the ready line, the answer under the
// first completion, a failed one with ✗.
func TestPrintAServer(t *testing.T) {
	smoke := serve.SmokeResult{Endpoint: serve.SmokeEndpoint, TTFT: 80 * time.Millisecond, Tokens: 9, TokensPerSecond: 534.24,
		EngineTokensPerSecond: 463.5, Text: "7a7a7a"}
	events := []runner.Event{
		serve.StartupPhase{Step: "serve", Phase: serve.PhaseLoading, Title: "loading the model", Index: 2, Total: 6, Budget: 6 * time.Minute, Elapsed: time.Second},
		serve.StartupPhase{Step: "serve", Phase: serve.PhaseLoading, Title: "loading the model", Index: 2, Total: 6, Elapsed: time.Second,
			Line: "ggml_vulkan: Warning: Device type is CPU.", Warning: "the Vulkan device is a CPU (llvmpipe), not a GPU"},
		serve.Ready{Step: "serve", URL: "http://127.0.0.1:8080", Model: "tiny.gguf", Elapsed: 2 * time.Second},
		serve.Smoke{Step: "serve", SmokeResult: smoke},
		serve.Smoke{Step: "serve", SmokeResult: serve.SmokeResult{Endpoint: serve.SmokeEndpoint, Err: "the stream ended without a token"}},
	}
	got, _ := printAll(events, Options{ReadyHint: "serving: stop it with Ctrl-C"})
	want := `◆ [serve] phase 2/6 loading: loading the model · 1s (stalled after 6m00s of silence)
! [serve] in loading: the Vulkan device is a CPU (llvmpipe), not a GPU
    line: ggml_vulkan: Warning: Device type is CPU.
✓ [serve] ready at http://127.0.0.1:8080 in 2s: tiny.gguf is served
  OpenAI base URL: http://127.0.0.1:8080/v1
  export OPENAI_BASE_URL=http://127.0.0.1:8080/v1
  curl -sS http://127.0.0.1:8080/v1/completions \
      -H 'Content-Type: application/json' \
      -d '{"model":"tiny.gguf","prompt":"Hello","max_tokens":16}'
  serving: stop it with Ctrl-C
✓ [serve] /v1/completions answered: first token after 80 ms, 9 tokens at 534.2 tok/s (engine: 463.5 tok/s)
  answer: 7a7a7a
✗ [serve] first request failed: the stream ended without a token
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("line mode (-want +got):\n%s", diff)
	}
}

// TestReadyUsageRunsAsPrinted: the rows under a ready line, pasted into a
// shell as line mode wraps them, reach a real HTTP server on loopback: the
// export names its /v1 and the curl posts to its completions endpoint.
func TestReadyUsageRunsAsPrinted(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	posted := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		posted <- r.Method + " " + r.URL.Path + " " + string(b)
		io.WriteString(w, "answered")
	}))
	defer srv.Close()
	model := "qwen3-0.6b-q8_0.gguf"
	out, _ := printAll([]runner.Event{serve.Ready{Step: "serve", URL: srv.URL, Model: model, Elapsed: time.Second}}, Options{})
	var script []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "  ") && !strings.Contains(l, "OpenAI base URL") {
			script = append(script, l)
		}
	}
	if len(script) < 3 {
		t.Fatalf("no wrapped commands under the ready line:\n%s", out)
	}
	for _, l := range script {
		if len(l) > 80 {
			t.Errorf("row wider than 80 columns: %q", l)
		}
	}
	sh := strings.Join(script, "\n") + "\necho; echo \"base=$OPENAI_BASE_URL\"\n"
	got, err := exec.Command("sh", "-c", sh).CombinedOutput()
	if err != nil {
		t.Fatalf("sh: %v\n%s\n%s", err, sh, got)
	}
	if !strings.Contains(string(got), "answered") || !strings.Contains(string(got), "base="+srv.URL+"/v1") {
		t.Errorf("output:\n%s", got)
	}
	if p := <-posted; !strings.HasPrefix(p, "POST /v1/completions {") || !strings.Contains(p, `"model":"`+model+`"`) {
		t.Errorf("the server got %q", p)
	}
}
