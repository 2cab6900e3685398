package verify

import (
	"fmt"
	"math"
)

// Tolerance is how far a server's logprobs may be from a reference's and
// still be the same computation. The package documentation says how the
// defaults were measured.
type Tolerance struct {
	// Logprob bounds the distance at any compared position: the largest
	// difference, in nats, of the logprob of a token either side lists
	// among its most likely ones.
	Logprob float64 `json:"logprob"`
	// Tie is the near-tie margin: where the reference's chosen token is
	// within Tie of the token the server chose, the two are a near-tie
	// and a different choice is rounding, not a different computation.
	Tie float64 `json:"tie"`
}

// DefaultTolerance accepts the rounding between llama.cpp's CPU and Vulkan
// backends measured on the test model (0.131 at most) with room for a GPU's
// coarser arithmetic, and rejects that model with one matrix scaled by 1.3
// (0.69 at least on every prompt): the package documentation says how.
// Tie is twice Logprob: each of two logprobs may move by Logprob.
var DefaultTolerance = Tolerance{Logprob: 0.3, Tie: 0.6}

// comparison is one prompt's answer set against the reference's.
type comparison struct {
	// Of is how many tokens the reference has; Compared how many
	// positions were compared (up to a near-tie flip, or the shorter
	// answer); Agreed how many of those chose the same token.
	Of, Compared, Agreed int
	// MaxDistance is the largest distance seen, at MaxAt.
	MaxDistance float64
	MaxAt       int
	// TieAt is where an accepted near-tie flip ended the comparison, -1
	// for none.
	TieAt int
	// Bad is the first disagreement, nil when there is none.
	Bad *Disagreement
}

// Disagreement is the evidence of a wrong answer: where, what the
// reference chose and what the server chose, and how far apart their
// distributions are there.
type Disagreement struct {
	Position int `json:"position"`
	// Expected and Got are the reference's and the server's tokens,
	// printable ("" with Ended set when an answer ended there).
	Expected string `json:"expected"`
	Got      string `json:"got"`
	// ExpectedLogprob and GotLogprob are the chosen tokens' logprobs,
	// Distance the distributions' distance there (nil where there is no
	// such number: an answer ended, a logprob was NaN).
	ExpectedLogprob *float64 `json:"expected_logprob"`
	GotLogprob      *float64 `json:"got_logprob"`
	Distance        *float64 `json:"distance"`
	// Why says what was wrong, in a few words.
	Why string `json:"why"`
}

// compare walks the answers position by position on the reference's own
// tokens. At each position both were given the same text, so their
// distributions should match within tol; the first position beyond it, or
// the first different choice that is not a near-tie, is the disagreement.
// While the two choose the same tokens the walk goes on (MaxDistance is
// the largest over all of them); after a different choice the two
// continue from different text, so it stops there.
func compare(ref, got Answer, tol Tolerance) comparison {
	c := comparison{Of: len(ref.Tokens), TieAt: -1}
	byID := ref.hasIDs() && got.hasIDs()
	n := min(len(ref.Tokens), len(got.Tokens))
	for i := 0; i < n; i++ {
		r, g := ref.Tokens[i], got.Tokens[i]
		d := distance(r, g, byID)
		c.Compared++
		if d > c.MaxDistance || c.Compared == 1 {
			c.MaxDistance, c.MaxAt = d, i
		}
		same := tokenKey(r, byID) == tokenKey(g, byID)
		if d > tol.Logprob && c.Bad == nil {
			c.Bad = disagreement(i, r, g, d, fmt.Sprintf("the distributions differ by %.3g nats (tolerance %.3g)", d, tol.Logprob))
		}
		if same {
			// The same text goes on: keep measuring, for the figures.
			c.Agreed++
			continue
		}
		if c.Bad != nil {
			return c
		}
		if gap, ok := tieGap(r, g, byID); ok && gap <= tol.Tie {
			c.TieAt = i
			return c
		}
		c.Bad = disagreement(i, r, g, d, "a different token where the reference had a clear choice")
		return c
	}
	if c.Bad != nil {
		return c
	}
	// One answer ended where the other went on: a different choice of the
	// end-of-answer token, which neither lists. It is a near-tie only if
	// the reference's choice there was one.
	if len(ref.Tokens) != len(got.Tokens) && (ref.Finish == "stop" || got.Finish == "stop") {
		i := n
		if i < len(ref.Tokens) && nearTie(ref.Tokens[i], tol.Tie) {
			c.TieAt = i
			return c
		}
		d := &Disagreement{Position: i}
		if i < len(ref.Tokens) {
			d.Expected, d.ExpectedLogprob = tokenText(ref.Tokens[i].Bytes), number(ref.Tokens[i].Logprob)
			d.Why = "the server ended its answer where the reference went on"
		} else {
			d.Got, d.GotLogprob = tokenText(got.Tokens[i].Bytes), number(got.Tokens[i].Logprob)
			d.Why = "the server went on where the reference ended its answer"
		}
		c.Bad = d
	}
	return c
}

func disagreement(i int, r, g Token, d float64, why string) *Disagreement {
	return &Disagreement{Position: i, Expected: tokenText(r.Bytes), Got: tokenText(g.Bytes),
		ExpectedLogprob: number(r.Logprob), GotLogprob: number(g.Logprob), Distance: number(d), Why: why}
}

// number is v for JSON: nil when it is NaN or infinite (JSON has neither).
func number(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// tokenKey identifies a token: its ID when both answers have IDs, else its
// bytes.
func tokenKey(t Token, byID bool) string {
	if byID {
		return fmt.Sprintf("#%d", t.ID)
	}
	return "b" + string(t.Bytes)
}

func choiceKey(c Choice, byID bool) string {
	if byID {
		return fmt.Sprintf("#%d", c.ID)
	}
	return "b" + string(c.Bytes)
}

// dist is a position's distribution: the logprob of each listed token.
// The chosen token is listed by its own entry too: a merged entry's bytes
// are several tokens', so only its ID (when known) names it among the
// alternatives.
func dist(t Token, byID bool) map[string]float64 {
	m := make(map[string]float64, len(t.Top)+1)
	for _, c := range t.Top {
		if k := choiceKey(c, byID); !math.IsNaN(c.Logprob) {
			if _, seen := m[k]; !seen {
				m[k] = c.Logprob
			}
		}
	}
	if k := tokenKey(t, byID); !math.IsNaN(t.Logprob) {
		if _, seen := m[k]; !seen && (byID || len(t.Top) == 0) {
			m[k] = t.Logprob
		}
	}
	return m
}

// distance is how far two positions' distributions are apart: the largest
// difference of a token's logprob over the tokens either lists. A token
// one side lists and the other does not is at most as likely there as the
// other side's least likely listed token, so the difference to that is a
// lower bound of its own, counted when positive. NaN anywhere is +Inf.
func distance(r, g Token, byID bool) float64 {
	if math.IsNaN(r.Logprob) || math.IsNaN(g.Logprob) {
		return math.Inf(1)
	}
	rd, gd := dist(r, byID), dist(g, byID)
	if len(rd) == 0 || len(gd) == 0 {
		return math.Abs(r.Logprob - g.Logprob)
	}
	return math.Max(oneSide(rd, gd), oneSide(gd, rd))
}

func oneSide(a, b map[string]float64) float64 {
	floor := math.Inf(1)
	for _, v := range b {
		floor = math.Min(floor, v)
	}
	d := 0.0
	for k, v := range a {
		if w, ok := b[k]; ok {
			d = math.Max(d, math.Abs(v-w))
		} else if v > floor {
			d = math.Max(d, v-floor)
		}
	}
	return d
}

// tieGap is, at a position where the server chose differently, how much
// more likely the reference found its own choice than the server's; ok is
// false when the reference does not list the server's choice at all (no
// near-tie then).
func tieGap(r, g Token, byID bool) (float64, bool) {
	rd := dist(r, byID)
	mine, ok1 := rd[tokenKey(r, byID)]
	if !ok1 && len(r.Top) > 0 {
		mine, ok1 = r.Top[0].Logprob, true
	}
	theirs, ok2 := rd[tokenKey(g, byID)]
	if !ok2 && !byID {
		// A merged entry's bytes are not an alternative's: try the
		// server's own top choice.
		if len(g.Top) > 0 {
			theirs, ok2 = rd[choiceKey(g.Top[0], byID)]
		}
	}
	if !ok1 || !ok2 {
		return 0, false
	}
	return mine - theirs, true
}

// nearTie says the reference's first two choices at t are within margin.
func nearTie(t Token, margin float64) bool {
	return len(t.Top) >= 2 && t.Top[0].Logprob-t.Top[1].Logprob <= margin
}
