package detect

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// designCheckIDs are the check IDs docs/ids.md promises: a contract, so each must stay.
var designCheckIDs = []CheckID{
	"gpu", "gfx-support", "kernel-version", "mes-firmware", "cwsr", "gtt-size",
	"gttsize-deprecated", "ttm-module", "carveout", "kfd-access", "render-groups",
	"hsa-override", "iommu", "container-engine", "distrobox", "disk-space", "build-memory",
	"firmware-kernel-pair", "lockup-timeout", "npu",
}

// declaredCheckIDs are the CheckID constants of checks.go, read from the
// source: a constant without a row would be an ID doctor never prints.
func declaredCheckIDs(t *testing.T) []CheckID {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "checks.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []CheckID
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || vs.Type == nil {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "CheckID" {
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok {
					out = append(out, CheckID(strings.Trim(lit.Value, `"`)))
				}
			}
		}
		return true
	})
	return out
}

// TestCheckTable: every row names itself for machines and people, says what
// its remedies may change on the host (or explicitly that they change
// nothing, and why), and every declared ID has exactly one row, in doctor's
// order. Adding a check is an ID, a row and a function; this test fails
// until the row is complete.
func TestCheckTable(t *testing.T) {
	seen := map[CheckID]bool{}
	for _, c := range checks {
		id := string(c.ID)
		switch {
		case id == "" || strings.ToLower(id) != id || strings.ContainsAny(id, " _"):
			t.Errorf("check %q: IDs are lower-case words joined by hyphens", c.ID)
		case seen[c.ID]:
			t.Errorf("check %s: listed twice", c.ID)
		case c.Title == "" || c.Run == nil:
			t.Errorf("check %s: a title and a function are required", c.ID)
		case c.Doc == "" || strings.Contains(c.Doc, "\n"):
			t.Errorf("check %s: the doc is one line", c.ID)
		case (len(c.Fixes.kinds) == 0) == (c.Fixes.none == ""):
			t.Errorf("check %s: say the kinds of host change its remedies make, or why it makes none (noChange)", c.ID)
		}
		for _, k := range c.Fixes.kinds {
			if !slices.Contains([]string{changeKernelArg, changeGroup, string(StepPackage), string(StepFirmware)}, k) {
				t.Errorf("check %s: unknown kind of change %q", c.ID, k)
			}
		}
		seen[c.ID] = true
	}
	declared := declaredCheckIDs(t)
	if len(declared) != len(checks) {
		t.Errorf("checks.go declares %d IDs, the table has %d rows", len(declared), len(checks))
	}
	for _, id := range declared {
		if !seen[id] {
			t.Errorf("check ID %s has no row in the checks table", id)
		}
	}
	for _, id := range designCheckIDs {
		if !seen[id] {
			t.Errorf("the promised check %s is not in the table", id)
		}
	}
	r := Analyse(NewBundle())
	var got []CheckID
	for _, c := range r.Checks {
		got = append(got, c.ID)
	}
	if !slices.Equal(got, CheckIDs) || !slices.Equal(got, declared) || len(CheckIDs) != len(checks) {
		t.Errorf("doctor printed %v, want the table's order %v (and the constants' %v)", got, CheckIDs, declared)
	}
	if CheckKFDAccess.Title() != "/dev/kfd" || CheckID("no-such-check").Title() != "no-such-check" {
		t.Error("Title does not read the table")
	}
	if CheckGTTSize.Label() != "GTT size (gtt-size)" || CheckDistrobox.Label() != "distrobox" {
		t.Errorf("Label: %q, %q", CheckGTTSize.Label(), CheckDistrobox.Label())
	}
}

// everyBundle are the real machines' bundles the tests hold: the bundles
// built from the shared fixtures, the held-out machines and the demo's.
func everyBundle(t *testing.T) map[string]*Bundle {
	t.Helper()
	dirs, _ := filepath.Glob("testdata/bundles/*")
	more, _ := filepath.Glob("testdata/holdout/*")
	dirs = append(append(dirs, more...), "../tui/demo/bundle")
	out := map[string]*Bundle{}
	for _, d := range dirs {
		b, err := ReadBundle(d)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		out[strings.TrimPrefix(d, "testdata/")] = b
	}
	if len(out) < 30 {
		t.Fatalf("only %d bundles", len(out))
	}
	return out
}

// TestRemediesFollowTheTable: on every bundle, a check's fix is its remedy
// rendered, a remedy asks only for the kinds of change its row declares, and
// every warning or failure either asks for a change the plan can make or
// says why there is none (the plan prints that reason).
func TestRemediesFollowTheTable(t *testing.T) {
	rows := map[CheckID]checkDef{}
	for _, c := range checks {
		rows[c.ID] = c
	}
	for name, b := range everyBundle(t) {
		t.Run(name, func(t *testing.T) {
			r := Analyse(b)
			for _, c := range r.Checks {
				row := rows[c.ID]
				if c.Fix != c.Remedy.Text(osID(r)) {
					t.Errorf("%s: the fix is not its remedy's text", c.ID)
				}
				if c.Remedy != nil && c.Remedy.Manual == "" {
					for _, k := range c.Remedy.kinds() {
						if !slices.Contains(row.Fixes.kinds, k) {
							t.Errorf("%s asks for a %s change its row does not declare", c.ID, k)
						}
					}
				}
				if c.Flagged() && (c.Remedy == nil || !c.Remedy.Changes() && c.Remedy.Manual == "") {
					t.Errorf("%s is %s (%s) with neither a change nor a reason why none", c.ID, c.Status, c.Summary)
				}
			}
		})
	}
}
