package session

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEngineHasEveryRole: every role a screen asks the session for
// (role[X] in package tui) is one the engine asserts it implements (a
// `_ tui.X = (*Engine)(nil)` beside its implementation); the demo embeds
// the engine, so it has them too. A screen whose role nobody implements
// would only say "this session has no …" at run time; this fails first.
func TestEngineHasEveryRole(t *testing.T) {
	asked := identsIn(t, "../*.go", func(n ast.Node) string {
		// role[X](c): an index expression on the name role.
		if ix, ok := n.(*ast.IndexExpr); ok {
			if fn, ok := ix.X.(*ast.Ident); ok && fn.Name == "role" {
				if id, ok := ix.Index.(*ast.Ident); ok {
					return id.Name
				}
			}
		}
		return ""
	})
	if len(asked) == 0 {
		t.Fatal("no role[X] found in package tui: the test reads the wrong files")
	}
	for _, impl := range []string{"Engine"} {
		asserted := identsIn(t, "*.go", func(n ast.Node) string {
			// var _ tui.X = (*Impl)(nil)
			vs, ok := n.(*ast.ValueSpec)
			if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "_" || len(vs.Values) != 1 {
				return ""
			}
			sel, ok := vs.Type.(*ast.SelectorExpr)
			if !ok {
				return ""
			}
			if call, ok := vs.Values[0].(*ast.CallExpr); ok {
				if par, ok := call.Fun.(*ast.ParenExpr); ok {
					if star, ok := par.X.(*ast.StarExpr); ok {
						if id, ok := star.X.(*ast.Ident); ok && id.Name == impl {
							return sel.Sel.Name
						}
					}
				}
			}
			return ""
		})
		for _, r := range asked {
			if !slices.Contains(asserted, r) {
				t.Errorf("a screen asks for tui.%s, which %s does not assert (var _ tui.%s = (*%s)(nil)); asserted: %v", r, impl, r, impl, asserted)
			}
		}
	}
}

// identsIn collects what find returns for the nodes of the non-test Go
// files matching glob.
func identsIn(t *testing.T, glob string, find func(ast.Node) string) []string {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if s := find(n); s != "" && !slices.Contains(out, s) {
				out = append(out, s)
			}
			return true
		})
	}
	return out
}
