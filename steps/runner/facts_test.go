package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haloforge/haloforge/steps"
)

// TestFactsGoIntoTheReport: what a step records through FactsEnv is in its
// report entry and in the run's, checked, deduplicated, with the step named;
// lines that are not facts are reported, not kept; a failed step's facts
// count too (they are what it consumed).
func TestFactsGoIntoTheReport(t *testing.T) {
	bad := strings.Join([]string{
		"image\tdocker.io/x:1\tsha256:short",                                 // a digest of the wrong length
		"image\tnot an image\tsha256:" + strings.Repeat("a", 64),             // a reference with spaces
		"wheel\ttorch\thttps://x/t.whl\t" + strings.Repeat("c", 64),          // no ==VERSION
		"wheel\tt==1\tjavascript:alert(1)\t" + strings.Repeat("c", 64),       // not a download URL
		"wheel\tt==1\thttps://u:p@x/t.whl\t" + strings.Repeat("c", 64),       // a password in the URL
		"git\thttps://g/r.git\tmain\tHEAD",                                   // not a commit
		"git\t/tmp/../etc\tmain\t" + strings.Repeat("b", 40),                 // a path that climbs
		"git\thttps://g/r.git\tmain;rm -rf /\t" + strings.Repeat("b", 40),    // not a ref
		"image\tdocker.io/x:1\tsha256:" + strings.Repeat("a", 64) + "\tmore", // a field too many
		"\x1b]0;PWNED\x07", // a terminal title
	}, "\n") + "\n"
	_, onDisk := runFacts(t, bad, 1)
	s := onDisk.Steps[0]
	if s.Status != steps.OutcomeFailed || s.Resolved == nil {
		t.Fatalf("step %+v", s)
	}
	want := Resolved{
		Images: []ResolvedImage{{Ref: "docker.io/rocm/vllm-dev:nightly", Digest: "sha256:" + strings.Repeat("a", 64)}},
		Wheels: []ResolvedWheel{{Name: "torch", Version: "2.11.0+rocm7.14.0", URL: "https://repo.example/torch.whl", SHA256: strings.Repeat("c", 64)}},
		Git:    []ResolvedGit{{Repo: "https://github.com/vllm-project/vllm.git", Ref: "main", SHA: strings.Repeat("b", 40)}},
	}
	if got := fmt.Sprintf("%+v", *s.Resolved); got != fmt.Sprintf("%+v", want) {
		t.Errorf("step resolved:\n%s\nwant:\n%+v", got, want)
	}
	if len(onDisk.Resolved.Images) != 1 || onDisk.Resolved.Images[0].Step != "facts" || len(onDisk.Resolved.Wheels) != 1 || len(onDisk.Resolved.Git) != 1 {
		t.Errorf("run resolved %+v", onDisk.Resolved)
	}
	if len(s.FactErrors) != 10 {
		t.Errorf("%d fact errors, want 10: %q", len(s.FactErrors), s.FactErrors)
	}
	for _, e := range s.FactErrors {
		if strings.ContainsAny(e, "\x1b\x07") {
			t.Errorf("a control character reached the report: %q", e)
		}
	}
}

func TestReadFactsIsBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.facts")
	line := "git\thttps://g/r.git\tmain\t" + strings.Repeat("b", 40) + "\n"
	writeFile(t, big, strings.Repeat(line, maxFactsBytes/len(line)+10))
	if _, problems := readFacts(big); len(problems) != 1 || !strings.Contains(problems[0], "over the 256 KiB limit") {
		t.Errorf("a file over the limit: %q", problems)
	}
	fifo := filepath.Join(dir, "fifo.facts")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	if _, problems := readFacts(fifo); len(problems) != 1 || !strings.Contains(problems[0], "not a regular file") {
		t.Errorf("a FIFO: %q", problems)
	}
	if res, problems := readFacts(filepath.Join(dir, "none")); !res.resolved.Empty() || res.times != nil || problems != nil {
		t.Errorf("no file: %+v %q", res, problems)
	}
	_ = os.Remove(fifo)
}

// TestTimesReachStepFinished: a time the step measured of its own work
// (bench's "engine") arrives typed in StepFinished and report.json, even
// when the consumer dropped every line; a time line that is not one is a
// fact error, kept out.
func TestTimesReachStepFinished(t *testing.T) {
	extra := strings.Join([]string{
		"time\tengine\t900",
		"time\tengine\t1216", // the last one counts
		"time\tEngine\t5",    // not a lower-case name
		"time\tengine\t-5",   // not a whole number
		"time\tengine\t1.5",  // not milliseconds
		"time\tengine\t9999999999999",
		"time\tengine",
	}, "\n") + "\n"
	evs, onDisk := runFacts(t, extra, 0)
	var fin *StepFinished
	for _, e := range evs {
		if f, ok := e.(StepFinished); ok {
			fin = &f
		}
	}
	if fin == nil || fin.Times["engine"] != 1216*time.Millisecond || len(fin.Times) != 1 {
		t.Fatalf("StepFinished times: %+v", fin)
	}
	s := onDisk.Steps[0]
	if s.Times["engine"] != 1216*time.Millisecond || len(s.FactErrors) != 5 {
		t.Errorf("report: times %v, fact errors %q", s.Times, s.FactErrors)
	}
	raw, err := os.ReadFile(filepath.Join(onDisk.RunDir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"times_ns": {`) || !strings.Contains(string(raw), `"engine": 1216000000`) {
		t.Errorf("report.json has no times_ns: %s", raw)
	}
}

// runFacts runs the facts fixture step, which records its helpers' facts
// and the extra lines, then exits with code; it returns the events and the
// report.json the run wrote.
func runFacts(t *testing.T, extra string, code int) ([]Event, *Report) {
	t.Helper()
	factsFile := filepath.Join(t.TempDir(), "extra")
	writeFile(t, factsFile, extra)
	t.Setenv("FX_FACTS", factsFile)
	t.Setenv("FX_EXIT", strconv.Itoa(code))
	dir := t.TempDir()
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "facts", script: "facts.sh"}), fxPins, "testdata/scripts", dir), dir)
	rep, evs := run(t, o, nil)
	onDisk, err := ReadReport(filepath.Dir(filepath.Dir(rep.RunDir)), rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	return evs, onDisk
}
