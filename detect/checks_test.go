package detect

import (
	"slices"
	"strings"
	"testing"
)

// designCheckIDs are the check IDs docs/ids.md promises: a contract, so each must stay.
var designCheckIDs = []string{
	"gpu", "gfx-support", "kernel-version", "mes-firmware", "cwsr", "gtt-size",
	"gttsize-deprecated", "ttm-module", "carveout", "kfd-access", "render-groups",
	"hsa-override", "iommu", "container-engine", "distrobox", "disk-space", "build-memory",
}

// TestCheckTable: every row names itself for machines and people, and the
// IDs doctor prints are exactly the table's, in its order.
func TestCheckTable(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range checks {
		switch {
		case c.ID == "" || strings.ToLower(c.ID) != c.ID || strings.ContainsAny(c.ID, " _"):
			t.Errorf("check %q: IDs are lower-case words joined by hyphens", c.ID)
		case seen[c.ID]:
			t.Errorf("check %s: listed twice", c.ID)
		case c.Title == "" || c.Run == nil:
			t.Errorf("check %s: a title and a function are required", c.ID)
		case c.Doc == "" || strings.Contains(c.Doc, "\n"):
			t.Errorf("check %s: the doc is one line", c.ID)
		}
		seen[c.ID] = true
	}
	for _, id := range designCheckIDs {
		if !seen[id] {
			t.Errorf("check %s (docs/ids.md) is not in the table", id)
		}
	}
	r := Analyse(NewBundle())
	var got []string
	for _, c := range r.Checks {
		got = append(got, c.ID)
	}
	if !slices.Equal(got, CheckIDs) || len(CheckIDs) != len(checks) {
		t.Errorf("doctor printed %v, want the table's order %v", got, CheckIDs)
	}
	if checkTitle("kfd-access") != "/dev/kfd" || checkTitle("no-such-check") != "no-such-check" {
		t.Error("checkTitle does not read the table")
	}
}
