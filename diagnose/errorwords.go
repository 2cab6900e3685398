package diagnose

import (
	"math/bits"
	"strings"
)

// The suspect patterns (strongError, weakError, notError) are regexps, and
// Go's regexp engine runs them at a few MB/s on the long lines of a
// compiler's output: on the 4 MB tail of a healthy 200 MB vLLM build log,
// whose lines are mostly "warning: loop not unrolled … -Wpass-failed=…",
// the three took 1.0–1.3 s where the rule scan of the whole log took
// 0.09 s. So an ASCII line is classified by one pass that finds the
// words the regexps are made of (errorWords); the regexps decide only the
// lines with other bytes (where (?i) also folds non-ASCII letters) and
// confirm strongError's few candidates. TestErrorWordsAgreeWithRegexps
// holds the two to each other on every line of the test sets, and
// FuzzErrorWords on any line.

// lineClass is what errorWords found in a line, one bit per pattern.
type lineClass uint8

const (
	strongCandidate lineClass = 1 << iota // holds a literal every strongError match holds
	weakWord                              // matches weakError
	falseFriend                           // matches notError
)

// term is a literal of one pattern, optionally ASCII-case-insensitive,
// optionally bounded by \b on either side.
type term struct {
	lit                   string // lower-case when fold
	fold                  bool
	wordBefore, wordAfter bool
	class                 lineClass
}

// errorWords finds every term in an ASCII line in one pass: a position is
// only compared with the terms that may start there, by its first three
// bytes, which three 256-entry masks tell (a folded term is in the masks
// under both cases of its letters).
type errorWords struct {
	terms      []term
	b0, b1, b2 [256]uint64 // by byte: the terms that may hold it at offset 0, 1, 2
}

func newErrorWords(ts []term) *errorWords {
	if len(ts) > 64 {
		panic("diagnose: more than 64 error words")
	}
	w := &errorWords{terms: ts}
	for k, t := range ts {
		if len(t.lit) < 3 {
			panic("diagnose: error word shorter than 3 bytes: " + t.lit)
		}
		if t.fold && t.lit != strings.ToLower(t.lit) {
			panic("diagnose: folded error word not in lower case: " + t.lit)
		}
		// \b before a word byte means "no word byte before", which is what
		// at checks; a \b next to a non-word byte would mean the opposite.
		if t.wordBefore && !isWordByte(t.lit[0]) || t.wordAfter && !isWordByte(t.lit[len(t.lit)-1]) {
			panic("diagnose: \\b next to a non-word byte in error word " + t.lit)
		}
		for j, mask := range []*[256]uint64{&w.b0, &w.b1, &w.b2} {
			c := t.lit[j]
			mask[c] |= 1 << k
			if t.fold {
				mask[upper(c)] |= 1 << k
			}
		}
	}
	return w
}

// classify returns the classes of the terms line holds, and false (with no
// classes) when the line is not all ASCII.
func (w *errorWords) classify(line string) (lineClass, bool) {
	var found lineClass
	for i := range len(line) {
		if line[i] >= 0x80 {
			return 0, false
		}
		if i+2 >= len(line) {
			continue
		}
		cand := w.b0[line[i]] & w.b1[line[i+1]] & w.b2[line[i+2]]
		for cand != 0 {
			t := &w.terms[bits.TrailingZeros64(cand)]
			cand &= cand - 1
			if found&t.class == 0 && t.at(line, i) {
				found |= t.class
			}
		}
	}
	return found, true
}

// at reports whether the term occurs at offset i of an ASCII line with
// its boundaries.
func (t *term) at(line string, i int) bool {
	end := i + len(t.lit)
	if end > len(line) {
		return false
	}
	if t.fold {
		for j := range len(t.lit) {
			if c := line[i+j]; c != t.lit[j] && c != upper(t.lit[j]) {
				return false
			}
		}
	} else if line[i:end] != t.lit {
		return false
	}
	return (!t.wordBefore || i == 0 || !isWordByte(line[i-1])) &&
		(!t.wordAfter || end == len(line) || !isWordByte(line[end]))
}

// upper is c in upper case when it is an ASCII lower-case letter.
func upper(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// isWordByte is regexp's \w: ASCII letters, digits and underscore.
func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// words are \b…\b terms of one class, ASCII-case-insensitive when fold.
func words(class lineClass, fold bool, ws ...string) []term {
	out := make([]term, len(ws))
	for i, w := range ws {
		out[i] = term{lit: w, fold: fold, wordBefore: true, wordAfter: true, class: class}
	}
	return out
}

// literals are plain case-sensitive terms of one class.
func literals(class lineClass, ls ...string) []term {
	out := make([]term, len(ls))
	for i, l := range ls {
		out[i] = term{lit: l, class: class}
	}
	return out
}

// suspectWords are the three patterns as terms.
var suspectWords = newErrorWords(concat(
	// strongError: each alternative holds one of these literals, so a line
	// without any cannot match and a line with one goes to the regexp.
	literals(strongCandidate, "error", "Error", "ERROR", "FAILED", "fatal", "Fatal", "Traceback", "Exception",
		"Killed", "Segmentation fault", "Aborted", "core dumped", "panic: ", "SIGSEGV", "SIGABRT",
		"exited with code ", "died with <Signals"),
	// weakError is exactly (?i)\b(…)\b around each of these.
	words(weakWord, true, "cannot", "can't", "could not", "unable to", "failed", "not found", "no such file",
		"permission denied", "undefined symbol", "undefined reference", "out of memory", "timed out", "refused"),
	// notError, alternative by alternative; its (?i) covers those after it.
	literals(falseFriend, "-Werror"),
	// \b0 errors?\b and \bno errors?\b
	words(falseFriend, false, "0 error", "0 errors", "no error", "no errors"),
	words(falseFriend, true, "warning"),
	[]term{
		{lit: "error_", fold: true, class: falseFriend},
		{lit: "_error", fold: true, wordAfter: true, class: falseFriend},
		{lit: "errors=0", fold: true, class: falseFriend},
		{lit: "ignore-errors", fold: true, class: falseFriend},
	},
	words(falseFriend, true, "successfully", "succeeded", "0 failed"),
))

func concat(tss ...[]term) []term {
	var out []term
	for _, ts := range tss {
		out = append(out, ts...)
	}
	return out
}

// lineText is a clean line being looked at, with its class found once.
type lineText struct {
	text       string
	cleaned    bool // text is set
	classified bool
	ascii      bool
	class      lineClass
}

func (l *lineText) classify() {
	if !l.classified {
		l.class, l.ascii = suspectWords.classify(l.text)
		l.classified = true
	}
}

// isFalseFriend is notError.MatchString(l.text).
func (l *lineText) isFalseFriend() bool {
	if l.classify(); !l.ascii {
		return notError.MatchString(l.text)
	}
	return l.class&falseFriend != 0
}

// looksLikeError is looksLike(strongError or weakError, l.text), the
// regexp only where the words cannot decide.
func (l *lineText) looksLikeError(strong bool) bool {
	if l.text == "" || l.isFalseFriend() {
		return false
	}
	switch {
	case !l.ascii && strong:
		return strongError.MatchString(l.text)
	case !l.ascii:
		return weakError.MatchString(l.text)
	case strong:
		return l.class&strongCandidate != 0 && strongError.MatchString(l.text)
	}
	return l.class&weakWord != 0
}
