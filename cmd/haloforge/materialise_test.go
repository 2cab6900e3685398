package main

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

// TestMaterialiseLeavesOnlyItsCopy: the embedded tree is copied to
// parent/<hash>/ through a staging dir that is removed afterwards, not
// left empty (toolbox-tmp/) in every state dir.
func TestMaterialiseLeavesOnlyItsCopy(t *testing.T) {
	state := t.TempDir()
	fsys := fstest.MapFS{"toolbox/toolbox.env": {Data: []byte("WORK_DIR=/w\n")}, "toolbox/run.sh": {Data: []byte("#!/bin/sh\n")}}
	dest, err := materialise(fsys, "toolbox", state, "toolbox")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dest, "run.sh")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Fatalf("run.sh copied executable: %v %v", fi, err)
	}
	ents, err := os.ReadDir(state)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "toolbox" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("state dir holds %v, want only toolbox/", names)
	}
	again, err := materialise(fsys, "toolbox", state, "toolbox")
	if err != nil || again != dest {
		t.Errorf("second copy: %q %v, want %q", again, err, dest)
	}
}
