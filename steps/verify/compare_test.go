package verify

import (
	"strconv"
	"strings"
	"testing"
)

// shift returns a copy of a with every logprob of position i moved by d
// (the chosen token by dChosen).
func shift(a Answer, i int, dChosen, d float64) Answer {
	b := a
	b.Tokens = append([]Token(nil), a.Tokens...)
	t := b.Tokens[i]
	t.Top = append([]Choice(nil), t.Top...)
	t.Logprob += dChosen
	for j := range t.Top {
		if t.Top[j].ID == t.ID {
			t.Top[j].Logprob += dChosen
		} else {
			t.Top[j].Logprob += d
		}
	}
	sortChoices(t.Top)
	b.Tokens[i] = t
	return b
}

// withTie makes position i of a a near-tie: the first alternative gap
// below the chosen token.
func withTie(a Answer, i int, gap float64) Answer {
	b := a
	b.Tokens = append([]Token(nil), a.Tokens...)
	t := b.Tokens[i]
	t.Top = append([]Choice(nil), t.Top...)
	for j := range t.Top {
		if t.Top[j].ID == 1 {
			t.Top[j].Logprob = t.Logprob - gap
		}
	}
	sortChoices(t.Top)
	b.Tokens[i] = t
	return b
}

// flipAt makes the answer choose the alternative with ID 1 ("zz") at i,
// swapping the two logprobs, and go on with other tokens.
func flipAt(a Answer, i int, rest ...string) Answer {
	b := a
	t := a.Tokens[i]
	var alt Choice
	for _, c := range t.Top {
		if c.ID == 1 {
			alt = c
		}
	}
	nt := Token{ID: 1, Bytes: alt.Bytes, Logprob: t.Logprob}
	for _, c := range t.Top {
		switch c.ID {
		case t.ID:
			nt.Top = append(nt.Top, Choice{ID: c.ID, Bytes: c.Bytes, Logprob: alt.Logprob})
		case 1:
			nt.Top = append(nt.Top, Choice{ID: 1, Bytes: c.Bytes, Logprob: t.Logprob})
		default:
			nt.Top = append(nt.Top, c)
		}
	}
	sortChoices(nt.Top)
	b.Tokens = append(append([]Token(nil), a.Tokens[:i]...), nt)
	b.Tokens = append(b.Tokens, answerOf(rest...).Tokens...)
	return b
}

func TestCompare(t *testing.T) {
	ref := answerOf(",", " there", " was", " a", " little", " girl", " named", " Lily")
	tied := withTie(ref, 6, 0.04)
	noIDs := func(a Answer) Answer {
		b := a
		b.Tokens = nil
		for _, tok := range a.Tokens {
			tok.ID = -1
			tok.Top = append([]Choice(nil), tok.Top...)
			for j := range tok.Top {
				tok.Top[j].ID = -1
			}
			b.Tokens = append(b.Tokens, tok)
		}
		return b
	}
	ended := ref
	ended.Tokens, ended.Finish = ref.Tokens[:5], "stop"
	tests := []struct {
		name        string
		ref, got    Answer
		bad         string // part of the disagreement; "" for none
		tieAt       int
		compared    int
		maxDistance float64
	}{
		{"identical", ref, ref, "", -1, 8, 0},
		{"rounding", ref, shift(shift(ref, 2, 0.05, -0.1), 5, -0.2, 0.1), "", -1, 8, 0.2},
		{"just over the tolerance", ref, shift(ref, 3, 0, 0.31), "differ by 0.31 nats", -1, 8, 0.31},
		{"far off everywhere, same tokens", ref, shift(shift(ref, 0, 0, 1.5), 4, 0, 2), "position 0", -1, 8, 2},
		{"a near-tie flips", tied, flipAt(tied, 6, " Rose", "."), "", 6, 7, 0.04},
		{"a clear choice flips", ref, flipAt(ref, 6, " Rose"), "differ by 2 nats", -1, 7, 2},
		{"a sampling server picks a token its own numbers rank second", ref, picks(ref, 6), "clear choice", -1, 7, 0},
		{"the server ends early", ref, ended, "ended its answer where the reference went on", -1, 5, 0},
		{"without IDs: by bytes", noIDs(ref), noIDs(shift(ref, 1, 0.1, 0.1)), "", -1, 8, 0.1},
		{"without IDs, flipped", noIDs(ref), noIDs(flipAt(ref, 2, " is")), "differ by 2 nats", -1, 3, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compare(tt.ref, tt.got, DefaultTolerance)
			switch {
			case tt.bad == "" && c.Bad != nil:
				t.Fatalf("disagreement %+v", *c.Bad)
			case tt.bad != "" && (c.Bad == nil || !strings.Contains(c.Bad.Why+" position "+itoa(c.Bad.Position), tt.bad)):
				t.Fatalf("disagreement %+v, want %q", c.Bad, tt.bad)
			}
			if c.TieAt != tt.tieAt || c.Compared != tt.compared {
				t.Errorf("tie at %d compared %d, want %d %d", c.TieAt, c.Compared, tt.tieAt, tt.compared)
			}
			if d := c.MaxDistance - tt.maxDistance; d > 1e-9 || d < -1e-9 {
				t.Errorf("max distance %v, want %v", c.MaxDistance, tt.maxDistance)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// picks is a with the token at i replaced by its first alternative while
// the numbers stay the reference's: what a server that samples instead of
// decoding greedily answers.
func picks(a Answer, i int) Answer {
	b := a
	b.Tokens = append([]Token(nil), a.Tokens[:i+1]...)
	t := a.Tokens[i]
	alt := t.Top[1]
	b.Tokens[i] = Token{ID: alt.ID, Bytes: alt.Bytes, Logprob: alt.Logprob, Top: t.Top}
	return b
}

// A token one side lists and the other does not counts by the lower
// bound: at least as far as the other side's least likely listed token.
func TestDistanceMissingToken(t *testing.T) {
	r := tk(10, "a", -0.1, ch(1, "b", -2), ch(2, "c", -3))
	g := tk(10, "a", -0.1, ch(1, "b", -2), ch(3, "d", -2.5))
	if d := distance(r, g, true); d < 0.49 || d > 0.51 {
		t.Errorf("distance %v: want 0.5 (c at -3 in one, d at -2.5 in the other, each unlisted there)", d)
	}
	g2 := tk(10, "a", -0.1, ch(1, "b", -2), ch(2, "c", -3), ch(3, "d", -3.5))
	if d := distance(r, g2, true); d != 0 {
		t.Errorf("distance %v: tail tokens below the other's floor are not evidence", d)
	}
}
