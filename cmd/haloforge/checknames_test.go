package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/detect/hostfix"
)

// One name per check ID everywhere (C6 of the UX review): the TUTORIAL's
// table lists every check ID once, in doctor's order, with the name
// doctor and the wizard show; sentences name a check as "name (id)".
func TestCheckNamesAreOneEverywhere(t *testing.T) {
	raw, err := os.ReadFile("../../TUTORIAL.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\| ([^|]+) \\| ")
	var ids []string
	for _, m := range row.FindAllStringSubmatch(string(raw), -1) {
		if !slices.Contains(detect.CheckIDs, m[1]) {
			continue // another table's row
		}
		ids = append(ids, m[1])
		if got, want := strings.TrimSpace(m[2]), detect.CheckTitle(m[1]); got != want {
			t.Errorf("TUTORIAL names check %s %q; doctor shows %q", m[1], got, want)
		}
	}
	if !slices.Equal(ids, detect.CheckIDs) {
		t.Errorf("TUTORIAL's check table lists %v, want every ID in doctor's order %v", ids, detect.CheckIDs)
	}
	for _, id := range detect.CheckIDs {
		want := detect.CheckTitle(id) + " (" + id + ")"
		if detect.CheckTitle(id) == id {
			want = id // distrobox: its name is its ID
		}
		if got := hostfix.CheckLabel(id); got != want {
			t.Errorf("CheckLabel(%s) = %q, want %q", id, got, want)
		}
	}
}
