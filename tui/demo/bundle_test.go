package demo

import (
	"encoding/json"
	"testing"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/steps"
)

// TestBundleIsAStrixHalo analyses the demo machine with the real detector: one
// gfx1151 GPU, nothing failing, and the untuned GTT as the one warning, the
// story TUTORIAL.md's walkthrough tells.
func TestBundleIsAStrixHalo(t *testing.T) {
	b, err := Bundle()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"rocminfo.txt", "lspci.txt", "cmdline.txt", "uname.txt", "dmesg.txt",
		"lsmod.txt", "amd-smi.txt", "firmware.txt", "free.txt"} {
		if !b.Has(name) {
			t.Errorf("bundle lacks %s", name)
		}
	}
	if b.Has("SOURCES.md") {
		t.Error("SOURCES.md leaked into the bundle")
	}
	r := detect.Analyse(b)
	out, _ := json.MarshalIndent(r, "", "  ")
	if len(r.GPUs) != 1 || r.Primary() == nil || r.Primary().GFX == nil || *r.Primary().GFX != "gfx1151" {
		t.Fatalf("want exactly one gfx1151 GPU:\n%s", out)
	}
	if rec := steps.RecommendFor(r); rec != TrackID {
		t.Errorf("recommended track %q, want %s", rec, TrackID)
	}
	for _, c := range r.Failed() {
		t.Errorf("check %s fails on the demo machine: %s", c.ID, c.Summary)
	}
	var warned []detect.CheckID
	for _, c := range r.Checks {
		if c.Status == "warn" {
			warned = append(warned, c.ID)
		}
	}
	if len(warned) != 1 || warned[0] != "gtt-size" {
		t.Errorf("warnings %v, want just gtt-size:\n%s", warned, out)
	}
	if c, _ := r.Check("gtt-size"); c.Fix == "" {
		t.Error("the gtt-size warning has no fix line")
	}
}
