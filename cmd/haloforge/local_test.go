package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPathNotes: the wizard notes that no haloforge is on the PATH (the
// README's go run, a binary started by its path), with the line that
// installs one, and says nothing once one is there.
func TestPathNotes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		install bool
		want    bool
	}{
		{"not on the PATH", false, true},
		{"on the PATH", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.install {
				if err := os.WriteFile(filepath.Join(dir, "haloforge"), []byte("#!/bin/sh\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("PATH", dir)
			notes := pathNotes()
			if got := len(notes) > 0; got != tc.want {
				t.Fatalf("notes %q, want a note: %v", notes, tc.want)
			}
			if tc.want && !strings.Contains(notes[0], "go install ./cmd/haloforge") {
				t.Errorf("the note gives no install line: %q", notes[0])
			}
		})
	}
}
