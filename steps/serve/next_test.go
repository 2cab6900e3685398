package serve

import (
	"strings"
	"testing"

	"github.com/haloforge/haloforge/steps"
)

// TestServableTracksSuggestServe: a track haloforge serve can run ends its
// summary with `haloforge serve --track ID`, so the journey goes on past
// "built"; the engine's own command stays as the manual way.
func TestServableTracksSuggestServe(t *testing.T) {
	n := 0
	for _, tr := range steps.Catalogue() {
		if EngineOf(tr.ID) == "" {
			continue
		}
		n++
		if len(tr.Next) == 0 || !strings.HasPrefix(tr.Next[0], "haloforge serve --track "+tr.ID+" ") {
			t.Errorf("%s: Next starts %q, want haloforge serve --track %s", tr.ID, tr.Next, tr.ID)
		}
	}
	if n == 0 {
		t.Fatal("no servable track in the catalogue")
	}
}
