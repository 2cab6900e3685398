package verify

import (
	"math"
	"strings"
	"testing"
)

// tk is a token with its ID, text and logprob, and alternatives below it
// (each gap nats lower than the previous).
func tk(id int, text string, lp float64, alts ...Choice) Token {
	t := Token{ID: id, Bytes: Bytes(text), Logprob: lp, Top: []Choice{{ID: id, Bytes: Bytes(text), Logprob: lp}}}
	t.Top = append(t.Top, alts...)
	sortChoices(t.Top)
	return t
}

// idOf is a test vocabulary: one ID per distinct text.
func idOf(s string) int {
	h := 0
	for _, c := range []byte(s) {
		h = h*131 + int(c)
	}
	return 1000 + h%100000
}

func ch(id int, text string, lp float64) Choice {
	return Choice{ID: id, Bytes: Bytes(text), Logprob: lp}
}

// answerOf builds an answer of tokens, each with three alternatives 2, 3
// and 4 nats below.
func answerOf(texts ...string) Answer {
	a := Answer{ID: "story", Endpoint: Completions, Prompt: "Once upon a time", MaxTokens: 16, Finish: "length", Logprobs: true}
	for i, s := range texts {
		id := idOf(s)
		lp := -0.1 - 0.01*float64(i%5)
		a.Tokens = append(a.Tokens, tk(id, s, lp, ch(1, "zz", lp-2), ch(2, "yy", lp-3), ch(3, "xx", lp-4)))
		a.Text += s
	}
	return a
}

func TestDegenerate(t *testing.T) {
	rep := func(s string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	nanAt := func(a Answer, i int) Answer { a.Tokens[i].Logprob = math.NaN(); return a }
	flat := func(a Answer) Answer {
		for i := range a.Tokens {
			for j := range a.Tokens[i].Top {
				a.Tokens[i].Top[j].Logprob = -5.6
			}
			a.Tokens[i].Logprob = -5.6
		}
		return a
	}
	noTop := func(a Answer, i int) Answer { a.Tokens[i].Top = nil; return a }
	noProbs := func(a Answer) Answer { a.Logprobs, a.Tokens = false, nil; return a }
	tests := []struct {
		name string
		a    Answer
		want string // a part of the reason; "" for not degenerate
	}{
		{"fluent text", answerOf(" there", " was", " a", " girl"), ""},
		{"random-weights noise", answerOf("V", "E", "V", "E", " ", "V", "7", "O"), ""},
		{"a word repeated a few times", answerOf(" very", " very", " very", " good"), ""},
		{"a short answer", answerOf(" 42"), ""},
		{"no logprobs, fluent text", noProbs(answerOf(" Paris", ".")), ""},
		{"all !", answerOf(rep("!", 8)...), `run of 8 or more "!"`},
		{"! after a word", answerOf(append([]string{" Paris"}, rep("!!", 4)...)...), `"!"`},
		{"<unused49>", answerOf(rep("<unused49>", 3)...), "placeholder token"},
		{"Llama 3 reserved token", answerOf(" a", "<|reserved_special_token_7|>"), "placeholder token"},
		{"one token from the first on", answerOf(rep(" the", 6)...), "one token repeated"},
		{"collapse mid-answer", answerOf(append([]string{" Once", " there"}, rep(" is", 12)...)...), "×12 in a row"},
		{"empty", Answer{Finish: "stop", Logprobs: false}, "empty answer"},
		{"white space only", answerOf("\n", " ", "\n"), "white space"},
		{"NaN logprob", nanAt(answerOf(" a", " b"), 1), "NaN"},
		{"all-equal distributions", flat(answerOf(" a", " b", " c", " d")), "all-equal distributions"},
		{"a position without alternatives", noTop(answerOf(" a", " b"), 1), "no alternatives"},
		{"a server that lists no alternatives anywhere", noTop(noTop(answerOf(" a", " b"), 0), 1), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			why, _ := degenerate(tt.a)
			if (tt.want == "") != (why == "") || !strings.Contains(why, tt.want) {
				t.Fatalf("degenerate = %q, want %q", why, tt.want)
			}
		})
	}
}
