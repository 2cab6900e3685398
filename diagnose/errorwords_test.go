package diagnose

import (
	"os"
	"strings"
	"testing"
)

// agreeWithRegexps checks that the fast classification of one clean line
// means exactly what the suspect regexps say.
func agreeWithRegexps(t *testing.T, text string) {
	t.Helper()
	l := &lineText{text: text}
	if got, want := l.isFalseFriend(), notError.MatchString(text); got != want {
		t.Errorf("notError on %q: words say %v, regexp %v", text, got, want)
	}
	for _, c := range []struct {
		strong bool
		re     string
		want   bool
	}{
		{true, "strongError", looksLike(strongError, text)},
		{false, "weakError", looksLike(weakError, text)},
	} {
		if got := l.looksLikeError(c.strong); got != c.want {
			t.Errorf("%s on %q: words say %v, regexp %v", c.re, text, got, c.want)
		}
	}
	if l.ascii {
		if weakError.MatchString(text) != (l.class&weakWord != 0) {
			t.Errorf("weakError on %q: words say %v", text, l.class&weakWord != 0)
		}
		if strongError.MatchString(text) && l.class&strongCandidate == 0 {
			t.Errorf("strongError matches %q but no strong literal was found", text)
		}
	}
}

// TestErrorWordsAgreeWithRegexps holds the fast suspect classification to
// the regexps it implements, on every line of every test set and on lines
// made to sit on each word's edges.
func TestErrorWordsAgreeWithRegexps(t *testing.T) {
	paths := []string{"testdata/corpus.jsonl", coveragePath}
	for _, set := range heldOutSets {
		paths = append(paths, set.path())
	}
	lines := 0
	for _, path := range paths {
		for _, row := range loadSamples(t, path) {
			for _, l := range strings.Split(row.Log, "\n") {
				agreeWithRegexps(t, cleanText(l))
				lines++
			}
		}
	}
	data, err := os.ReadFile(vllmBuildLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		agreeWithRegexps(t, cleanText(l))
	}
	// every word alone, at the edges of a line, inside a longer word, in
	// other cases, next to each kind of byte, and cut short
	var edges []string
	for _, w := range suspectWords.terms {
		for _, v := range []string{w.lit, strings.ToUpper(w.lit), strings.ToUpper(w.lit[:1]) + w.lit[1:], w.lit[:len(w.lit)-1]} {
			for _, around := range []string{"", " ", "x", "_", "-", "0", ":", "é", "\t", "K"} {
				edges = append(edges, v, around+v, v+around, around+v+around, "a "+v+" b", v+"s", v+"s"+around)
			}
		}
	}
	edges = append(edges,
		"error: x", "Error 1", "ERROR]", "error!", "error 2", "error (x)", "-error: x", "x-error: x", "_error: x",
		"FAILED: x.o", "fatal error: x.h", "fatal: x", "Fatal Python error", "Traceback (most recent call last):",
		" Traceback (most recent call last):", "RuntimeError: x", "ValueError: x", "Exception: x", "KeyError:x",
		"Killed", "Segmentation fault (core dumped)", "Aborted", "panic: x", "SIGSEGV", "exited with code 1",
		"exited with code 0", "died with <Signals.SIGKILL: 9>", "make: *** [all] Error 2",
		"0 errors", "no errors", "0 Errors", "No errors", "errors=0", "ERRORS=0", "-Werror=format", "-WERROR",
		"ignore-errors", "IGNORE-ERRORS", "Successfully installed", "SUCCEEDED", "0 failed", "0 FAILED, 1 error",
		"warning: could not", "Warning: failed", "WARNING: cannot", "warnings: failed", "warning_failed",
		"can't open", "CAN'T OPEN", "could  not", "unable to", "Unable To", "undefined symbol: x", "Undefined Reference",
		"out of memory", "timed out", "Connection refused", "no such file", "Permission denied",
		"ſuccessfully failed", "\u212Ailled", "error: naïve", "naïve failed", "é error: x", "error: \u212A",
		"could not\u00a0map", "x\x00error: y", "tab\terror: x",
	)
	for _, l := range edges {
		agreeWithRegexps(t, l)
	}
	t.Logf("%d lines of the test sets and %d edge lines agree", lines, len(edges))
}

// FuzzErrorWords holds the fast suspect classification to the regexps on
// any line.
func FuzzErrorWords(f *testing.F) {
	for _, s := range []string{"error: x", "warning: failed", "0 errors", "No such file", "Killed", "ſ", "_error x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		agreeWithRegexps(t, line)
	})
}
