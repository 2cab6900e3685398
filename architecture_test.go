package haloforge

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureNamesRealFiles keeps ARCHITECTURE.md's recipes true: every
// file it names exists, and every test it names is a test of the repository.
func TestArchitectureNamesRealFiles(t *testing.T) {
	doc, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	fence := regexp.MustCompile("(?ms)^```.*?^```$")
	code := regexp.MustCompile("`([^`\n]+)`")
	file := regexp.MustCompile(`^[a-zA-Z0-9_./-]+\.(go|md|env|jsonl|sh|bats)$`)
	test := regexp.MustCompile(`^Test[A-Za-z]+$`)
	var files, tests []string
	for _, m := range code.FindAllStringSubmatch(fence.ReplaceAllString(string(doc), ""), -1) {
		for _, word := range strings.Fields(m[1]) {
			switch {
			case file.MatchString(word):
				files = append(files, word)
			case test.MatchString(word):
				tests = append(tests, word)
			}
		}
	}
	if len(files) < 15 || len(tests) < 5 {
		t.Fatalf("found %d files and %d tests in ARCHITECTURE.md; the recipes name more", len(files), len(tests))
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("ARCHITECTURE.md names %s: %v", f, err)
		}
	}
	defined := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z]+)\(`)
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
			defined[m[1]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range tests {
		if !defined[name] {
			t.Errorf("ARCHITECTURE.md names %s, which no test file defines", name)
		}
	}
}

// TestInternalIsTheFloor keeps internal/ a leaf: every package imports its
// sanitiser, reader and formats from there, so nothing there may import a
// package above it (a cycle, or the copies coming back).
func TestInternalIsTheFloor(t *testing.T) {
	const module = "github.com/haloforge/haloforge/"
	files, err := filepath.Glob("internal/*/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no files under internal/: %v", err)
	}
	for _, f := range files {
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if strings.HasPrefix(p, module) && !strings.HasPrefix(p, module+"internal/") {
				t.Errorf("%s imports %s: internal/ imports nothing of haloforge above it", f, p)
			}
		}
	}
}

// TestReadmeStartsWithTheTwoCommands: the first two shell blocks of README.md
// are the set-up commands, one line each: the one that installs and runs the
// wizard, then the one that runs every test.
func TestReadmeStartsWithTheTwoCommands(t *testing.T) {
	doc, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(doc), 2)
	if len(blocks) < 2 {
		t.Fatalf("README.md has %d shell blocks, want the two set-up commands first", len(blocks))
	}
	wizard, tests := strings.TrimSpace(blocks[0][1]), strings.TrimSpace(blocks[1][1])
	if strings.Contains(wizard, "\n") || !strings.HasSuffix(wizard, "&& haloforge") || !strings.Contains(wizard, "go install ./cmd/haloforge") {
		t.Errorf("README's first command is %q, want one line that installs haloforge and runs the wizard", wizard)
	}
	if tests != "make test" {
		t.Errorf("README's second command is %q, want make test", tests)
	}
}
