package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/haloforge/haloforge"
	"github.com/haloforge/haloforge/internal/safefile"
)

// Files in the current directory that replace haloforge's built-in copies
// without a flag: ./versions.env, ./scripts and ./toolbox. That is the documented
// default (docs/cli.md), handy in a checkout, but it acts like `.` in PATH: a ./scripts
// folder of some other project would run as build steps. So an implicit tree
// is used only when it looks like haloforge's, and every command that plans
// or runs says, in one line on stderr, which local copy it uses.

// scriptsTreeMarker is the file every haloforge scripts tree has: the
// helpers each step sources.
const scriptsTreeMarker = "lib/common.sh"

// toolboxTreeMarker is the file every haloforge toolbox tree has.
const toolboxTreeMarker = "toolbox.env"

// localScripts reports whether ./scripts is a haloforge scripts tree.
func localScripts() bool { return looksLike("scripts", scriptsTreeMarker) }

// localToolbox reports whether ./toolbox is a haloforge toolbox tree.
func localToolbox() bool { return looksLike("toolbox", toolboxTreeMarker) }

// localPins reports whether ./versions.env replaces the built-in pins.
func localPins() bool { return fileExists("versions.env") }

func looksLike(dir, marker string) bool {
	return dirExists(dir) && fileExists(filepath.Join(dir, marker))
}

// localNotes are the lines that announce the implicit local copies a
// command uses; runs says whether it also runs scripts (./toolbox matters
// only then).
func localNotes(g *globalOptions, runs bool) []string {
	var notes []string
	if g.pins.pins == "" && localPins() && !sameFileAsBuiltIn("versions.env", haloforge.VersionsEnv) {
		notes = append(notes, fmt.Sprintf("using the pins in ./versions.env (%s), not the built-in ones; --pins FILE names a file on purpose", abs("versions.env")))
	}
	switch {
	case g.scripts != "":
	case localScripts():
		if sameTreeAsBuiltIn("scripts", haloforge.Scripts) {
			break
		}
		notes = append(notes, fmt.Sprintf("using the scripts in ./scripts (%s), not the built-in ones; --scripts DIR names a tree on purpose", abs("scripts")))
	case dirExists("scripts"):
		notes = append(notes, fmt.Sprintf("./scripts is not a haloforge scripts tree (no %s): using the built-in scripts", scriptsTreeMarker))
	}
	if runs {
		switch {
		case localToolbox():
			if sameTreeAsBuiltIn("toolbox", haloforge.Toolbox) {
				break
			}
			notes = append(notes, fmt.Sprintf("using the container definitions in ./toolbox (%s), not the built-in ones", abs("toolbox")))
		case dirExists("toolbox"):
			notes = append(notes, fmt.Sprintf("./toolbox is not a haloforge toolbox tree (no %s): using the built-in container definitions", toolboxTreeMarker))
		}
	}
	return notes
}

// sameFileAsBuiltIn says whether the local file holds exactly the built-in
// bytes (read no further than one byte past them): then using it changes
// nothing, and a note about it would only be noise (a checkout's own copy).
func sameFileAsBuiltIn(path string, builtIn []byte) bool {
	b, err := safefile.ReadRegular(path, int64(len(builtIn))+1, safefile.NoFollow)
	return err == nil && bytes.Equal(b, builtIn)
}

// sameTreeAsBuiltIn says whether the local tree dir holds exactly the
// files of the built-in one (embedded under dir), byte for byte: no file
// more, none less, nothing that is not a regular file or a directory. It
// stops at the first difference.
func sameTreeAsBuiltIn(dir string, builtIn fs.FS) bool {
	want := map[string][]byte{}
	err := fs.WalkDir(builtIn, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(builtIn, p)
		want[p] = b
		return err
	})
	if err != nil {
		return false
	}
	seen := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fs.ErrInvalid
		}
		b, ok := want[filepath.ToSlash(p)]
		if !ok || !sameFileAsBuiltIn(p, b) {
			return fs.ErrInvalid
		}
		seen++
		return nil
	})
	return err == nil && seen == len(want)
}

// pathNotes says, when no `haloforge` is on the PATH (a `go run`, or a
// binary started by its path), that the commands haloforge prints will
// not run as typed until one is, and how to put it there.
func pathNotes() []string {
	if _, err := exec.LookPath("haloforge"); err == nil {
		return nil
	}
	return []string{"no haloforge on your PATH, and the commands haloforge prints start with `haloforge`: " +
		"from a checkout, go install ./cmd/haloforge && export PATH=\"$(go env GOPATH)/bin:$PATH\" (README: Install)"}
}

// printNotes writes each note as one "note:" line.
func printNotes(w io.Writer, notes []string) {
	for _, n := range notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// checkReportPath makes sure --report FILE can be written before anything
// runs: a typo must not cost a whole build (exit 2, nothing run). It
// creates nothing that stays.
func checkReportPath(path string) error {
	if path == "" {
		return nil
	}
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return usageErr(fmt.Errorf("--report %s is a directory; give a file name such as %s", path, filepath.Join(path, "junit.xml")))
	case err == nil:
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return usageErr(fmt.Errorf("--report %s cannot be written: %w (nothing was run)", path, safefile.Cause(err)))
		}
		return f.Close()
	}
	return checkNewFile("--report", path)
}

// checkNewFile makes sure a file that does not exist yet can be created
// at path (its directory exists and takes a new file), for the flag that
// names it; it creates nothing that stays.
func checkNewFile(flag, path string) error {
	dir := filepath.Dir(path)
	if !dirExists(dir) {
		return usageErr(fmt.Errorf("%s %s: directory %s does not exist (nothing was run)", flag, path, dir))
	}
	f, err := os.CreateTemp(dir, ".haloforge-check-*")
	if err != nil {
		return usageErr(fmt.Errorf("%s %s cannot be written: %w (nothing was run)", flag, path, safefile.Cause(err)))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
