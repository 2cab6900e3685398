package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/haloforge/haloforge/detect"
)

// One name per check ID everywhere: the TUTORIAL's table lists every check
// ID once, in doctor's order, with the name doctor, the plan and the wizard
// show (detect.CheckID's Title; sentences use its Label, "name (id)").
func TestCheckNamesAreOneEverywhere(t *testing.T) {
	raw, err := os.ReadFile("../../TUTORIAL.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\| ([^|]+) \\| ")
	var ids []detect.CheckID
	for _, m := range row.FindAllStringSubmatch(string(raw), -1) {
		id := detect.CheckID(m[1])
		if !slices.Contains(detect.CheckIDs, id) {
			continue // another table's row
		}
		ids = append(ids, id)
		if got, want := strings.TrimSpace(m[2]), id.Title(); got != want {
			t.Errorf("TUTORIAL names check %s %q; doctor shows %q", id, got, want)
		}
	}
	if !slices.Equal(ids, detect.CheckIDs) {
		t.Errorf("TUTORIAL's check table lists %v, want every ID in doctor's order %v", ids, detect.CheckIDs)
	}
}
