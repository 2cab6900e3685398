package bench

import "testing"

// A stack that answers wrong keeps its figures but no verdict calls them
// normal.
func TestRefuse(t *testing.T) {
	ref := &Reference{Label: "kyuz0's RADV figure", TokensPerS: 50}
	rep := Report{Comparisons: []Comparison{{Result: Result{Test: "tg128", TokensPerS: 49}, Reference: ref, Ratio: 0.98, Verdict: "within 10 % of …"},
		{Result: Result{Test: "pp512", TokensPerS: 9}, Verdict: "no reference"}}, Verdict: "normal"}
	rep.Refuse("its answers were wrong")
	if rep.Verdict != "not normal, whatever the figures: its answers were wrong" ||
		rep.Comparisons[0].Verdict != "not judged (98 % of kyuz0's RADV figure): the stack answers wrong" || rep.Comparisons[1].Verdict != "no reference" {
		t.Fatalf("%+v", rep)
	}
	if rep.Comparisons[0].Result.TokensPerS != 49 {
		t.Fatal("the figure was lost")
	}
}
