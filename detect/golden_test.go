// The golden reports are what `doctor --json` prints, recommended track
// included, so this test lives in detect_test and asks steps for it.
package detect_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/steps"
)

var update = flag.Bool("update", false, "rewrite the golden JSON files")

// TestGoldenBundles analyses every bundle built from the shared real-machine
// fixtures and compares the whole report with its golden JSON.
func TestGoldenBundles(t *testing.T) {
	dirs, err := filepath.Glob("testdata/bundles/*")
	if err != nil || len(dirs) < 15 {
		t.Fatalf("bundles: %v (%d)", err, len(dirs))
	}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			r := detect.Analyse(readBundle(t, dir))
			r.RecommendedTrack = steps.RecommendFor(r)
			got, err := json.MarshalIndent(r, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "golden", name+".json")
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./detect -run TestGoldenBundles -update)", err)
			}
			if d := cmp.Diff(string(want), string(got)+"\n"); d != "" {
				t.Errorf("report differs from %s (-want +got):\n%s", golden, d)
			}
		})
	}
}
