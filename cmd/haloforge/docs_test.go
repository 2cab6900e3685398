package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/detect/hostfix"
	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/bench"
	"github.com/haloforge/haloforge/steps/cluster"
	"github.com/haloforge/haloforge/steps/installed"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/steps/serve"
)

// docSections splits a Markdown page into its headings' bodies, keyed by
// the heading's text ("haloforge doctor", "Global flags").
func docSections(doc string) map[string]string {
	out := map[string]string{}
	head := ""
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "#") {
			head = strings.TrimSpace(strings.TrimLeft(line, "#"))
			out[head] = ""
			continue
		}
		out[head] += line + "\n"
	}
	return out
}

// TestCLIDocNamesEveryCommandAndFlag keeps docs/cli.md the whole command
// line: each visible command has a section named by its path, each of its
// flags is named there (root's persistent flags under "Global flags"), and
// each section named "haloforge …" is a command the binary has.
func TestCLIDocNamesEveryCommandAndFlag(t *testing.T) {
	data, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	sections := docSections(doc)
	root := newRoot()
	root.InitDefaultCompletionCmd() // cobra adds it when the binary runs
	named := func(text, flag string) bool {
		return regexp.MustCompile("`--" + regexp.QuoteMeta(flag) + "[ `]").MatchString(text)
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		path := c.CommandPath()
		body, ok := sections[path]
		if !ok {
			t.Errorf("docs/cli.md has no section %q", path)
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" {
				return
			}
			where, in := path, body
			if c == root && root.PersistentFlags().Lookup(f.Name) != nil {
				where, in = "Global flags", sections["Global flags"]
			}
			if !named(in, f.Name) {
				t.Errorf("docs/cli.md: section %q does not name `--%s`", where, f.Name)
			}
		})
		if c.Name() == "completion" {
			return // cobra's own subcommands, one per shell
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if !named(doc, "version") {
		t.Error("docs/cli.md does not name `--version`")
	}
	for head := range sections {
		if !strings.HasPrefix(head, "haloforge") {
			continue
		}
		c, _, err := root.Find(strings.Fields(head)[1:])
		if err != nil || c.CommandPath() != head {
			t.Errorf("docs/cli.md has a section %q, but the binary has no such command", head)
		}
	}
}

// jsonFields adds the JSON names of t's fields, and of the structs inside
// them, to names (embedded structs' fields as their own).
func jsonFields(t reflect.Type, names map[string]bool, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || t.PkgPath() == "time" {
		return
	}
	seen[t] = true
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		switch {
		case f.Anonymous && name == "":
			jsonFields(f.Type, names, seen)
			continue
		case name == "-" || !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		names[name] = true
		jsonFields(f.Type, names, seen)
	}
}

// TestJSONDocNamesEveryField keeps docs/json.md the whole of what the
// --json outputs, the plan file and the state dir's files hold: every field
// name of their types appears there, quoted or in backticks.
func TestJSONDocNamesEveryField(t *testing.T) {
	data, err := os.ReadFile("../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, v := range []any{
		detect.Report{}, hostfix.Plan{}, hostfix.VerifyReport{}, hostfix.Manifest{},
		trackJSON{}, planJSON{}, diagnoseJSON{}, suspectJSON{}, diffJSON{}, pinsStatusJSON{}, setJSON{},
		serveOutcome{}, serve.BenchLaunch{}, bench.JSON{}, bench.Shareable{},
		cluster.Report{}, cluster.JSONPlan{}, clusterDownJSON{}, cluster.Inventory{}, cluster.Node{},
		runner.Report{}, steps.State{}, runJSON{}, installed.Record{},
	} {
		names := map[string]bool{}
		typ := reflect.TypeOf(v)
		jsonFields(typ, names, map[reflect.Type]bool{})
		if typ == reflect.TypeOf(cluster.Inventory{}) || typ == reflect.TypeOf(cluster.Node{}) {
			names = map[string]bool{}
			for i := 0; i < typ.NumField(); i++ { // the inventory is TOML
				if tag := strings.Split(typ.Field(i).Tag.Get("toml"), ",")[0]; tag != "" && tag != "-" {
					names[tag] = true
				}
			}
		}
		for name := range names {
			if !strings.Contains(doc, `"`+name+`"`) && !strings.Contains(doc, "`"+name+"`") {
				t.Errorf("docs/json.md does not name %s's field %q", typ, name)
			}
		}
	}
}

// tableRows are the rows of a section's tables whose first cell is an ID
// in backticks, each as its cells without the backticks' outer spaces.
func tableRows(section string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		cells[0] = strings.Trim(cells[0], "`")
		rows = append(rows, cells)
	}
	return rows
}

// stringConsts are the values of the string constants of a Go file whose
// names start with prefix, in the order they are declared.
func stringConsts(t *testing.T, file, prefix string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, prefix) || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					out = append(out, v)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no string constant named %s…", file, prefix)
	}
	return out
}

// TestDocsListEveryID keeps docs/ids.md's lists the code's: the same
// tracks with the same status and steps, the same host checks with
// doctor's names, failure families, cluster checks and serve phases, in
// the code's order.
func TestDocsListEveryID(t *testing.T) {
	data, err := os.ReadFile("../../docs/ids.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := docSections(string(data))
	firsts := func(section string) []string {
		var ids []string
		for _, row := range tableRows(sections[section]) {
			ids = append(ids, row[0])
		}
		return ids
	}
	same := func(what string, doc, code []string) {
		t.Helper()
		differs := false
		for _, c := range code {
			if !slices.Contains(doc, c) {
				differs = true
				t.Errorf("docs/ids.md %s: the code has %q, the page does not", what, c)
			}
		}
		for _, d := range doc {
			if !slices.Contains(code, d) {
				differs = true
				t.Errorf("docs/ids.md %s: the page has %q, the code does not", what, d)
			}
		}
		if !differs && !slices.Equal(doc, code) {
			t.Errorf("docs/ids.md %s: not in the code's order %v", what, code)
		}
	}

	var docTracks, codeTracks []string
	for _, row := range tableRows(sections["Tracks"]) {
		docTracks = append(docTracks, strings.Join(row, " | "))
	}
	for _, tr := range steps.Catalogue() {
		var ids []string
		for _, st := range tr.Steps {
			id := "`" + st.ID + "`"
			if st.Optional {
				id += "?"
			}
			ids = append(ids, id)
		}
		codeTracks = append(codeTracks, tr.ID+" | "+string(tr.Status)+" | "+strings.Join(ids, " "))
	}
	same("tracks (id | status | steps)", docTracks, codeTracks)

	var docChecks, codeChecks []string
	for _, row := range tableRows(sections["Host checks"]) {
		docChecks = append(docChecks, row[0]+" | "+row[1])
	}
	for _, id := range detect.CheckIDs {
		codeChecks = append(codeChecks, string(id)+" | "+id.Title())
	}
	same("host checks (id | doctor's name)", docChecks, codeChecks)

	var families []string
	for _, r := range diagnose.Rules() {
		families = append(families, r.ID)
	}
	same("failure families", firsts("Failure families"), families)
	same("cluster checks", firsts("Cluster checks"), stringConsts(t, "../../steps/cluster/check.go", "Check"))
	same("serve phases", firsts("Serve phases"), stringConsts(t, "../../steps/serve/readiness.go", "Phase"))
}

// TestDocsNameEverySchema: every JSON schema name the code prints
// ("haloforge/<shape>/v<N>") is described in docs/json.md.
func TestDocsNameEverySchema(t *testing.T) {
	data, err := os.ReadFile("../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	schema := regexp.MustCompile(`"haloforge/[a-z0-9-]+/v[0-9]+"`)
	found := 0
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "../.." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, name := range schema.FindAllString(string(src), -1) {
			found++
			if !strings.Contains(string(data), "`"+strings.Trim(name, `"`)+"`") {
				t.Errorf("%s prints the schema %s, which docs/json.md does not describe", path, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no schema name found in the code: the pattern or the walk is wrong")
	}
}

// TestDocsStateDoctorsHostFacts keeps the host facts the docs state those
// doctor judges by: the kernels with gfx1151's KFD fixes, the linux-firmware
// releases of MES 0x83 and its revert, and the watchdog's defaults and
// proposal on each side of Linux 6.19.
func TestDocsStateDoctorsHostFacts(t *testing.T) {
	read := func(path string) string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	row := func(page, section, id string) string {
		for _, r := range tableRows(docSections(read(page))[section]) {
			if r[0] == id {
				return strings.Join(r, " | ")
			}
		}
		t.Fatalf("%s, %q: no row for %s", page, section, id)
		return ""
	}
	secs := func(ms int64, ok bool) string {
		if !ok {
			t.Fatal("detect has no default watchdog for a 6.x release")
		}
		return strconv.FormatInt(ms/1000, 10) + " s"
	}
	const facts, ids = "../../docs/facts.md", "../../docs/ids.md"
	const settings = "The host settings each check judges"
	tests := []struct {
		name, text string
		want       []string
		not        []string
	}{
		{"facts.md kernel-version", row(facts, settings, "kernel-version"), []string{detect.FixedKernelsText()}, nil},
		{"ids.md kernel-version", row(ids, "Host checks", "kernel-version"), []string{detect.FixedKernelsText()}, nil},
		{"facts.md mes-firmware", row(facts, settings, "mes-firmware"), []string{detect.BadMESRelease, detect.FixedMESRelease}, []string{"`0x80` is good"}},
		{"facts.md lockup-timeout", row(facts, settings, "lockup-timeout"), []string{
			secs(detect.DefaultLockupTimeoutMS("6.18.4")) + " for every queue, compute included, before Linux 6.19",
			secs(detect.DefaultLockupTimeoutMS("6.19.0")) + " from 6.19",
			"`amdgpu.lockup_timeout=" + detect.ProposedLockupTimeout("6.18.4") + "` before 6.19",
			"`amdgpu.lockup_timeout=" + detect.ProposedLockupTimeout("6.19.0") + "` from 6.19",
		}, []string{"60000", "60 s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, w := range tc.want {
				if !strings.Contains(tc.text, w) {
					t.Errorf("the row does not say %q, which doctor does:\n%s", w, tc.text)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(tc.text, n) {
					t.Errorf("the row says %q, which doctor does not:\n%s", n, tc.text)
				}
			}
		})
	}
}
