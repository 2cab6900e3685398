package verify

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strings"
)

// Degenerate output is what no working model answers, whatever its
// weights: the failures of 2026's broken stacks (vLLM on ROCm answering
// all "!", a ROCm nightly answering only <unused49>, generation collapsing
// to one repeated token, NaN logits). Such an answer is wrong with or
// without a reference, and a reference is never recorded from it.

// Thresholds of the detectors. A greedy answer of a working model does not
// repeat one token minRepeat times in a row from its first token on, nor
// maxRun times anywhere; it has no run of minBangs "!".
const (
	minRepeat = 6
	maxRun    = 12
	minBangs  = 8
)

// unusedToken matches the placeholder tokens of vocabularies that no
// training text contains: Gemma's <unusedN> and Llama 3's reserved specials.
var unusedToken = regexp.MustCompile(`<unused[0-9]+>|<\|reserved_special_token_[0-9]+\|>`)

// degenerate returns why an answer is degenerate output ("" when it is
// not), with the position (-1 for the whole answer).
func degenerate(a Answer) (string, int) {
	text := a.Text
	if strings.TrimSpace(text) == "" && allBlank(a.Tokens) {
		if len(a.Tokens) == 0 && a.Finish != "length" {
			return "empty answer: the server ended it before any token", -1
		}
		return "empty answer: nothing but white space", -1
	}
	if i := strings.Index(text, strings.Repeat("!", minBangs)); i >= 0 {
		return fmt.Sprintf("a run of %d or more \"!\" (the all-\"!\" failure)", minBangs), bangPosition(a)
	}
	for i, t := range a.Tokens {
		if m := unusedToken.Find(t.Bytes); m != nil {
			return fmt.Sprintf("placeholder token %s (no training text holds one)", quoted(m)), i
		}
	}
	if m := unusedToken.FindString(text); m != "" {
		return fmt.Sprintf("placeholder token %s in the text (no training text holds one)", quoted([]byte(m))), -1
	}
	if why, at := repeated(a.Tokens); why != "" {
		return why, at
	}
	if !a.Logprobs {
		return "", -1
	}
	flat, bare := 0, -1
	withTop := 0
	for _, t := range a.Tokens {
		if len(t.Top) > 0 {
			withTop++
		}
	}
	for i, t := range a.Tokens {
		if math.IsNaN(t.Logprob) || t.Logprob > 1e-3 {
			return "NaN, infinite or impossible logprob of the chosen token", i
		}
		if len(t.Top) == 0 {
			if withTop > 0 && bare < 0 {
				bare = i
			}
			continue
		}
		if allNaN(t.Top) {
			return "NaN or infinite logprobs for every alternative", i
		}
		if isFlat(t.Top) {
			flat++
		}
	}
	if bare >= 0 {
		// A server that lists no alternatives lists none anywhere; missing at
		// some positions only, they went missing (NaN logits dropped).
		return "no alternatives at a position where the others have them", bare
	}
	if flat > 0 && 2*flat >= len(a.Tokens) {
		return fmt.Sprintf("all-equal distributions at %d of %d positions (logits that carry nothing: NaN or zeroed activations)", flat, len(a.Tokens)), -1
	}
	return "", -1
}

// repeated finds one token repeated: every token the same (at least
// minRepeat of them), or a run of maxRun anywhere.
func repeated(toks []Token) (string, int) {
	if len(toks) >= minRepeat {
		same := true
		for _, t := range toks[1:] {
			if !sameToken(t, toks[0]) {
				same = false
				break
			}
		}
		if same {
			return fmt.Sprintf("one token repeated: %s ×%d, from the first token on", quoted(toks[0].Bytes), len(toks)), 0
		}
	}
	run := 1
	for i := 1; i < len(toks); i++ {
		if sameToken(toks[i], toks[i-1]) {
			run++
			if run == maxRun {
				return fmt.Sprintf("one token repeated: %s ×%d in a row (generation collapsed)", quoted(toks[i].Bytes), maxRun), i - maxRun + 1
			}
		} else {
			run = 1
		}
	}
	return "", -1
}

func sameToken(a, b Token) bool {
	if a.ID >= 0 && b.ID >= 0 {
		return a.ID == b.ID
	}
	return bytes.Equal(a.Bytes, b.Bytes)
}

// bangPosition is the first token of the run of "!", or -1.
func bangPosition(a Answer) int {
	for i, t := range a.Tokens {
		if bytes.Contains(t.Bytes, []byte("!")) {
			return i
		}
	}
	return -1
}

func allBlank(toks []Token) bool {
	for _, t := range toks {
		if len(bytes.TrimSpace(t.Bytes)) > 0 {
			return false
		}
	}
	return true
}

func allNaN(cs []Choice) bool {
	for _, c := range cs {
		if !math.IsNaN(c.Logprob) {
			return false
		}
	}
	return true
}

// isFlat says three or more alternatives have the same logprob: a working
// model's logits are never that equal; NaN logits turned uniform are.
func isFlat(cs []Choice) bool {
	if len(cs) < 3 {
		return false
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range cs {
		lo, hi = math.Min(lo, c.Logprob), math.Max(hi, c.Logprob)
	}
	return hi-lo < 1e-6
}
