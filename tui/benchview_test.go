package tui

import (
	"os"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/steps/bench"
)

// The bench screen shows the same roofline share as bench --from: published
// Radeon 8060S rows (steps/bench/testdata/README.md) of a dense and a
// mixture-of-experts model no reference names.
func TestBenchTableShowsTheRoofline(t *testing.T) {
	raw, err := os.ReadFile("../steps/bench/testdata/llama-bench-8060s-published.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	run, err := bench.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	rep := bench.Compare(run, bench.References(), bench.Host{})
	// Words as the screen shows them, wherever a line wraps.
	text := strings.Join(strings.Fields(ansi.Strip(benchTable(&rep, DefaultStyles(), 120))), " ")
	for _, c := range rep.Comparisons {
		if c.Roofline == nil {
			t.Fatalf("%s: no roofline", c.Result.Test)
		}
		if want := "roofline: " + c.Roofline.Sentence(); !strings.Contains(text, want) {
			t.Errorf("the bench screen lacks %q:\n%s", want, text)
		}
	}
	for _, want := range []string{"roofline: 29.3 t/s is 77 % of the 38.2 t/s this model could reach at 256 GB/s",
		"roofline: 100.4 t/s is 54 % of the 184.7 t/s this model could reach at 256 GB/s"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q:\n%s", want, text)
		}
	}
	// On a narrow screen the sentence wraps under its column, nothing cut.
	narrow := ansi.Strip(benchTable(&rep, DefaultStyles(), 60))
	for _, l := range strings.Split(narrow, "\n") {
		if ansi.StringWidth(l) > 60 {
			t.Errorf("a line wider than the screen: %q", l)
		}
	}
	if !strings.Contains(strings.Join(strings.Fields(narrow), " "), "roofline: 29.3 t/s is 77 % of the 38.2 t/s this model could reach at 256 GB/s") {
		t.Errorf("narrow:\n%s", narrow)
	}
}
