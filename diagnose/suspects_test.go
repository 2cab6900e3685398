package diagnose

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeLog(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "step.log")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSuspects(t *testing.T) {
	tests := []struct {
		name string
		log  []string
		want []int // line numbers
	}{
		{"compiler error, then the build tool's report", []string{
			"[ 41%] Building CXX object src/CMakeFiles/kern.dir/a.cpp.o",
			"src/a.cpp:12:3: error: use of undeclared identifier 'hipFooBar'",
			"1 error generated when compiling for gfx1151.",
			"make[2]: *** [src/CMakeFiles/kern.dir/build.make:76: src/CMakeFiles/kern.dir/a.cpp.o] Error 1",
			"make[1]: *** [CMakeFiles/Makefile2:100: src/CMakeFiles/kern.dir/all] Error 2",
		}, []int{2, 4, 5}},
		{"an old error, then a later failure", []string{
			"test_one: error: expected 3, got 4 (retrying)",
			"ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok",
			"ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok",
			"ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok",
			"Traceback (most recent call last):",
			`  File "serve.py", line 3, in <module>`,
			"RuntimeError: engine core initialization failed",
		}, []int{45, 47}},
		{"warnings and flags are not errors", []string{
			"-- Performing Test HAS_WERROR: -Werror=format-security - Success",
			"warning: unused variable 'x' [-Wunused-variable]",
			"Build finished: 0 errors, 3 warnings",
			"Successfully installed torch-2.9.1",
			"./run.sh: line 3: model.gguf: No such file or directory",
		}, []int{5}},
		{"weak words only when nothing is strong", []string{
			"loading model",
			"could not map the model file: permission denied",
			"done",
		}, []int{2}},
		{"nothing looks like an error", []string{
			"[100%] Built target kern",
			"install ok",
		}, nil},
		{"escapes and CI timestamps are ignored", []string{
			"2025-09-18T09:39:09.0813437Z \x1b[31mFAILED: caffe2/x.o\x1b[0m",
		}, []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Suspects(writeLog(t, strings.Join(tt.log, "\n")+"\n"), 3)
			if err != nil {
				t.Fatal(err)
			}
			var lines []int
			for _, s := range got {
				lines = append(lines, s.Line)
				if want := strings.TrimSpace(string(stripTimestamp(cleanLine([]byte(tt.log[s.Line-1]))))); s.Text != want {
					t.Errorf("line %d text %q, want %q", s.Line, s.Text, want)
				}
			}
			if !slices.Equal(lines, tt.want) {
				t.Errorf("suspect lines %v, want %v", lines, tt.want)
			}
		})
	}
}

// TestSuspectsLineNumbersInALargeLog checks that a log longer than what
// Suspects reads still gets its own line numbers.
func TestSuspectsLineNumbersInALargeLog(t *testing.T) {
	var b strings.Builder
	n := 0
	for b.Len() < suspectTail+(1<<20) {
		b.WriteString("[ 50%] Building CXX object src/CMakeFiles/kern.dir/unit.cpp.o\n")
		n++
	}
	b.WriteString("clang++: error: unable to execute command: Killed\n")
	got, err := Suspects(writeLog(t, b.String()), 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Line != n+1 {
		t.Errorf("got %+v, want line %d", got, n+1)
	}
}

// TestSuspectsOnUnrecognisedRealLogs measures the fallback where it
// matters: on the real failure logs of the held-out sets that no rule
// recognises, how often the suspect lines hold the line the thread itself
// points at (the row's trigger).
func TestSuspectsOnUnrecognisedRealLogs(t *testing.T) {
	var missed, errorLike, pointed int
	paths := []string{"testdata/holdout.jsonl"}
	for _, set := range heldOutSets {
		if set.fresh {
			paths = append(paths, set.path())
		}
	}
	for _, path := range paths {
		for _, row := range loadSamples(t, path) {
			if row.Family == "none" || row.Trigger == "" {
				continue
			}
			if e, c := recognised(row.Family, familiesOf(t, row.Log)); e || c {
				continue
			}
			missed++
			got, err := Suspects(writeLog(t, row.Log), 3)
			if err != nil {
				t.Fatal(err)
			}
			trigger := strings.TrimSpace(string(stripTimestamp(cleanLine([]byte(row.Trigger)))))
			if !looksLike(strongError, trigger) && !looksLike(weakError, trigger) {
				// prose, a warning or a shell prompt: no line to point at
				t.Logf("%s %s: the thread's line does not read as an error: %q; suspects %+v", row.ID, row.Family, trigger, got)
				continue
			}
			if !looksLike(strongError, trigger) && slices.ContainsFunc(strings.Split(row.Log, "\n"), func(l string) bool {
				return looksLike(strongError, strings.TrimSpace(string(stripTimestamp(cleanLine([]byte(l))))))
			}) {
				// a weak line where the log also holds strong ones: the
				// suspects are the strong ones, by design
				t.Logf("%s %s: the thread points at a weak line %q; suspects %+v", row.ID, row.Family, trigger, got)
				continue
			}
			errorLike++
			if slices.ContainsFunc(got, func(s Suspect) bool { return strings.Contains(s.Text, trigger) || strings.Contains(trigger, s.Text) }) {
				pointed++
			} else {
				t.Errorf("%s %s: the thread's error line %q is not among the suspects %+v", row.ID, row.Family, trigger, got)
			}
		}
	}
	t.Logf("of %d unrecognised failure logs, %d have an error-looking line of their own; the suspects hold it on %d",
		missed, errorLike, pointed)
}

// TestSuspectsOnlyInOneLog checks that a directory or a bundle archive,
// which diagnose reads as many logs, gets no suspects from its raw bytes.
func TestSuspectsOnlyInOneLog(t *testing.T) {
	dir := t.TempDir()
	bundle := filepath.Join(dir, "bundle.tgz")
	if err := os.WriteFile(bundle, []byte("error: looks like one\nFAILED: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, bundle} {
		got, err := Suspects(path, 3)
		if err != nil || got != nil {
			t.Errorf("%s: %+v, %v; want none", path, got, err)
		}
	}
}
