package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/haloforge/haloforge/tui/demo"
)

// dur is text.Duration's output.
const dur = `(?:\d+s|\d+m\d\ds|\d+h\d\dm)`

// lineForms is every line a run prints in line mode, as README.md's "Line
// mode output" documents it for CI users who parse it: one form per event
// and per detail of a failure.
var lineForms = []struct {
	name string
	re   *regexp.Regexp
}{
	{"run started", regexp.MustCompile(`^\S+: \d+ steps? to run · run [0-9]{8}-[0-9]{6}-[0-9a-f]{6}$`)},
	{"notice", regexp.MustCompile(`^note: \S.*$`)},
	{"step skipped", regexp.MustCompile(`^- \S+ skipped: \S.*$`)},
	{"step started", regexp.MustCompile(`^▶ \[\d+/\d+\] \S+: \S.* · elapsed ` + dur + `(?: · ETA ` + dur + `)?$`)},
	{"output", regexp.MustCompile(`^\[[a-z0-9-]+\] .*$`)},
	{"progress", regexp.MustCompile(`^~ \[[a-z0-9-]+\] \S.*$`)},
	{"found", regexp.MustCompile(`^! \[\S+\] [a-z0-9-]+: \S.* \(line \d+\)$`)},
	{"step succeeded", regexp.MustCompile(`^✓ \S+ ` + dur + `$`)},
	{"step not verified", regexp.MustCompile(`^⚠ \S+ not verified: \S.*$`)},
	{"verified", regexp.MustCompile(`^  verified: \S.*$`)},
	{"step failed", regexp.MustCompile(`^✗ \S+ failed \(exit -?\d+\) after ` + dur + `(?: \(optional: the build goes on\))?$`)},
	{"step interrupted", regexp.MustCompile(`^■ \S+ interrupted after ` + dur + `$`)},
	{"why optional", regexp.MustCompile(`^  why it is optional: \S.*$`)},
	{"last lines", regexp.MustCompile(`^  last lines of \S+:$`)},
	{"last line", regexp.MustCompile(`^  │ .*$`)},
	{"diagnosis", regexp.MustCompile(`^  diagnosis [a-z0-9-]+: \S.*$`)},
	{"no diagnosis", regexp.MustCompile(`^  diagnosis: no known failure recognised in the log$`)},
	{"suspects", regexp.MustCompile(`^  the error may be at:$`)},
	{"line of the log", regexp.MustCompile(`^    line \d+: .*$`)},
	{"fix", regexp.MustCompile(`^    fix: .*$`)},
	{"fix, next line", regexp.MustCompile(`^         .*$`)},
	{"see", regexp.MustCompile(`^    see: \S+$`)},
	{"step error", regexp.MustCompile(`^  error: \S.*$`)},
	{"log", regexp.MustCompile(`^  log: /\S+\.log$`)},
	{"run done", regexp.MustCompile(`^✓ \S+ done in ` + dur + `$`)},
	{"run dry", regexp.MustCompile(`^✓ \S+ dry run done in ` + dur + `: the commands are above, nothing was changed$`)},
	{"run not verified", regexp.MustCompile(`^⚠ \S+ done in ` + dur + `, not verified: \S+(?:, \S+)*$`)},
	{"run failed", regexp.MustCompile(`^✗ \S+ failed after ` + dur + `$`)},
	{"run interrupted", regexp.MustCompile(`^■ \S+ interrupted after ` + dur + `$`)},
	{"resume", regexp.MustCompile(`^  resume with: haloforge build .*--resume.*$`)},
	{"run error", regexp.MustCompile(`^error: \S.*$`)},
	{"report", regexp.MustCompile(`^report: /\S+/report\.json$`)},
	{"installed", regexp.MustCompile(`^installed \(haloforge clean --track \S+.* removes it\):$`)},
	{"installed item", regexp.MustCompile(`^  \S.* · (size unknown|in the box|\d+(\.\d)? (bytes?|KiB|MiB|GiB))$`)},
	{"installed total", regexp.MustCompile(`^  total \d+(\.\d)? (bytes?|KiB|MiB|GiB)( and \d+ items? of unknown size)?$`)},
	{"waiting for input", regexp.MustCompile(`^\? \[\S+\] waiting for input: \S.*$`)},
	{"how to answer", regexp.MustCompile(`^  (type the answer and press Enter|nothing can answer it here \(no terminal\)): \S.*$`)},
	{"left running", regexp.MustCompile(`^  left running: pid \d+ .* \((killed: the step failed|stopped when the run ends|kept: \S.*)\)$`)},
	{"more left running", regexp.MustCompile(`^  … and \d+ more left running \(all in the log\)$`)},
}

// runForms classifies every line of the runs in out (from each "run
// started" line to its "report" line) and fails on a line of no known form.
func runForms(t *testing.T, what, out string) map[string]int {
	t.Helper()
	seen := map[string]int{}
	inRun := false
	for _, l := range strings.Split(out, "\n") {
		if lineForms[0].re.MatchString(l) {
			inRun = true
		}
		if !inRun {
			continue
		}
		form := ""
		for _, f := range lineForms {
			if f.re.MatchString(l) {
				form = f.name
				break
			}
		}
		if form == "" {
			t.Errorf("%s: a line of no documented form: %q", what, l)
			continue
		}
		seen[form]++
		if form == "report" {
			inRun = false
		}
	}
	return seen
}

// runCLI runs haloforge in this process with stdout captured (so not a
// terminal: line mode).
func runCLI(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRoot()
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	t.Logf("haloforge %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	return out.String()
}

// TestLineModeIsOneFormat runs a failing `build --plain` on the fixture
// tree and `demo --plain` on the demo's replays: the same events must come
// out in the same documented forms, whichever command prints them.
func TestLineModeIsOneFormat(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	scripts := filepath.Join(filepath.Dir(file), "..", "..", "steps", "runner", "testdata", "tracks")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("NO_COLOR", "1")
	t.Setenv(demo.SpeedEnv, "1000")
	t.Setenv("FX_FAIL", "aiter vllm")
	t.Setenv("FX_FAIL_TEXT", "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!")

	build := runForms(t, "build --plain", runCLI(t, "build", "--track", "therock-toolbox", "--plain", "--ignore-checks", "--scripts", scripts))
	demoRun := runForms(t, "demo --plain", runCLI(t, "demo", "--plain"))

	// What both runs go through: a start, steps that pass, an optional step
	// and a step that fail with a known diagnosis, and the run's end.
	both := []string{"run started", "step started", "output", "found", "step succeeded", "step failed", "why optional",
		"last lines", "last line", "diagnosis", "line of the log", "fix", "see", "log", "run failed", "report"}
	for _, form := range both {
		if build[form] == 0 || demoRun[form] == 0 {
			t.Errorf("form %q: %d lines from build, %d from demo; both runs must print it", form, build[form], demoRun[form])
		}
	}
	if demoRun["run done"] == 0 || build["resume"] != 1 {
		t.Errorf("the demo's retry must end done (%d), the build's failure suggest --resume once (%d)", demoRun["run done"], build["resume"])
	}
	dry := runForms(t, "build --dry-run", runCLI(t, "build", "--track", "therock-toolbox", "--plain", "--dry-run", "--scripts", scripts))
	if dry["run dry"] != 1 || dry["run done"] != 0 || dry["resume"] != 0 {
		t.Errorf("a dry run must end saying nothing changed, once, and suggest no resume: %v", dry)
	}
}
