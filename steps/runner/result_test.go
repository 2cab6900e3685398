package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/haloforge/haloforge/steps"
)

// TestNotVerifiedStep runs a real verify script through the outcome
// protocol: it ran to its end and exits 0, but says what it could not
// check, so the step and the run are not-verified, everywhere they show.
func TestNotVerifiedStep(t *testing.T) {
	dir := t.TempDir()
	track := fxTrack(fx{id: "hello", script: "hello.sh"}, fx{id: "verify", script: "verify.sh", deps: []string{"hello"}})
	t.Setenv("FX_NOT_VERIFIED", "offline: no model to generate with")
	o := fxOptions(fxPlan(t, track, fxPins, "testdata/scripts", dir), dir)
	rep, evs := run(t, o, nil)

	if rep.Status != steps.OutcomeNotVerified {
		t.Fatalf("run status %q, want not-verified", rep.Status)
	}
	v := rep.Steps[1]
	if v.Status != steps.OutcomeNotVerified || v.ExitCode != 0 ||
		!slices.Equal(v.Verified, []string{"torch sees gfx1151 and a kernel ran"}) ||
		!slices.Equal(v.NotVerified, []string{"offline: no model to generate with"}) {
		t.Errorf("verify in the report: %+v", v)
	}
	if h := rep.Steps[0]; h.Status != steps.OutcomeSucceeded || len(h.Verified) != 0 || h.NotVerified == nil {
		t.Errorf("hello in the report: %+v", h)
	}
	f := finished(evs, "verify")
	if f.Status != steps.OutcomeNotVerified || !slices.Equal(f.NotVerified, v.NotVerified) || !slices.Equal(f.Verified, v.Verified) {
		t.Errorf("StepFinished %+v", f)
	}
	if got := lines(evs, "verify"); !slices.Equal(got, []string{"checking the stack", "not verified: offline: no model to generate with"}) {
		t.Errorf("verify printed %q (a result file left from before?)", got)
	}

	// report.json has both lists for every step, as arrays.
	b := mustRead(t, filepath.Join(rep.RunDir, ReportFile))
	for _, want := range []string{`"status": "not-verified"`, `"verified": [
        "torch sees gfx1151 and a kernel ran"
      ]`, `"not_verified": [
        "offline: no model to generate with"
      ]`, `"verified": []`, `"not_verified": []`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("report.json lacks %s:\n%s", want, b)
		}
	}

	// JUnit: a skipped test case with the reason, never a pass.
	var x bytes.Buffer
	if err := rep.WriteJUnit(&x); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<skipped message="not verified: offline: no model to generate with">`, `skipped="1"`, "verified: torch sees gfx1151 and a kernel ran"} {
		if !strings.Contains(x.String(), want) {
			t.Errorf("JUnit lacks %s:\n%s", want, x.String())
		}
	}

	// For the cache the step is done, and the plan says why it is not verified.
	st, err := steps.LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	ss := st.Tracks["fx"].Steps["verify"]
	if ss.Status != steps.OutcomeNotVerified || ss.LastSuccess == nil || !slices.Equal(ss.LastSuccess.NotVerified, v.NotVerified) {
		t.Errorf("state of verify: %+v, last success %+v", ss, ss.LastSuccess)
	}
	p := fxPlan(t, track, fxPins, "testdata/scripts", dir)
	if ps := p.Steps[1]; ps.WillRun || !strings.HasPrefix(ps.Reason, "up to date (not verified ") || !strings.HasSuffix(ps.Reason, ": offline: no model to generate with)") {
		t.Errorf("plan of verify: will run %v, %q", ps.WillRun, ps.Reason)
	}

	// Asked to run again with what it lacked, it verifies: the run succeeds.
	t.Setenv("FX_NOT_VERIFIED", "")
	o = fxOptions(p, dir)
	o.Only = []string{"verify"}
	rep2, _ := run(t, o, nil)
	if rep2.Status != steps.OutcomeSucceeded || rep2.Steps[1].Status != steps.OutcomeSucceeded || len(rep2.Steps[1].NotVerified) != 0 {
		t.Errorf("second run: %s, verify %+v", rep2.Status, rep2.Steps[1])
	}
	st, _ = steps.LoadState(dir)
	if last := st.Tracks["fx"].Steps["verify"].LastSuccess; last.NotVerified != nil {
		t.Errorf("the old reason stayed: %+v", last)
	}
}

// TestFailedStepIgnoresItsResult: a step that fails is failed, whatever its
// result file says, and a failure outranks not-verified in the run.
func TestFailedStepIgnoresItsResult(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("FX_NOT_VERIFIED", "no model")
	t.Setenv("FX_EXIT", "4")
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "verify", script: "verify.sh"}), fxPins, "testdata/scripts", dir), dir)
	rep, evs := run(t, o, nil)
	if rep.Status != steps.OutcomeFailed || rep.Steps[0].Status != steps.OutcomeFailed || len(rep.Steps[0].NotVerified) != 0 {
		t.Errorf("run %s, step %+v", rep.Status, rep.Steps[0])
	}
	if f := finished(evs, "verify"); f.Status != steps.OutcomeFailed || f.ExitCode != 4 || f.NotVerified != nil {
		t.Errorf("StepFinished %+v", f)
	}
}

func TestReadResult(t *testing.T) {
	long := strings.Repeat("x", 2*maxResultText)
	for _, tt := range []struct {
		name        string
		content     string
		verified    []string
		notVerified []string
	}{
		{"verified only", "verified\ta kernel ran on gfx1151\nverified\tthe platform is ROCm\n",
			[]string{"a kernel ran on gfx1151", "the platform is ROCm"}, nil},
		{"not verified", "verified\ttorch imports\nnot-verified\toffline: no model\n",
			[]string{"torch imports"}, []string{"offline: no model"}},
		{"blank lines, CRLF, no final newline", "\r\nverified\tok\r\n\n  \nnot-verified\tno GPU",
			[]string{"ok"}, []string{"no GPU"}},
		{"escapes and controls stripped", "not-verified\t\x1b]52;c;cm0gLXJmIH4K\x07\x1b[31mred\x1b[0m \x00bell\x07\u0085 tab\there\n",
			nil, []string{"red bell tab here"}},
		{"invalid UTF-8 replaced", "verified\tbad\xff\xfeutf8\n", []string{"bad\ufffd\ufffdutf8"}, nil},
		{"a line of no known form", "verified torch\nVERIFIED\tx\nverified\t\n",
			nil, []string{
				`result line 1 is not verified<TAB>… or not-verified<TAB>…: "verified torch"`,
				`result line 2 is not verified<TAB>… or not-verified<TAB>…: "VERIFIED x"`,
				`result line 3 is not verified<TAB>… or not-verified<TAB>…: "verified"`,
			}},
		{"a long text is cut", "verified\t" + long + "\n", []string{long[:maxResultText] + "…"}, nil},
		{"too many lines", strings.Repeat("verified\tok\n", maxResultLines+5),
			slices.Repeat([]string{"ok"}, maxResultLines), []string{"the result file is longer than 100 lines or 64 KiB; the rest was not read"}},
		{"too many bytes", "not-verified\tfirst\n" + strings.Repeat("y", maxResultBytes),
			nil, []string{"first", "the result file is longer than 100 lines or 64 KiB; the rest was not read"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "verify.result")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got := readResult(path)
			if diff := cmp.Diff(stepResult{verified: tt.verified, notVerified: tt.notVerified}, got, cmp.AllowUnexported(stepResult{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadResultOfAStrangeFile: what is not a regular file the step wrote
// is never read (a FIFO would hang the runner, a link leads elsewhere).
func TestReadResultOfAStrangeFile(t *testing.T) {
	dir := t.TempDir()
	if got := readResult(filepath.Join(dir, "absent.result")); got.verified != nil || got.notVerified != nil {
		t.Errorf("an absent file: %+v", got)
	}
	fifo := filepath.Join(dir, "fifo.result")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.result")
	if err := os.Symlink("/etc/passwd", link); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "dir.result")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for p, kind := range map[string]string{fifo: "a FIFO (named pipe)", link: "a symbolic link", sub: "a directory"} {
			want := "the result file is " + kind + ", not a regular file"
			if got := readResult(p); !slices.Equal(got.notVerified, []string{want}) || got.verified != nil {
				t.Errorf("%s: %+v", filepath.Base(p), got)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("reading a result file that is not a regular file hangs")
	}
}
