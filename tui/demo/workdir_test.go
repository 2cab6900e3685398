package demo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestWorkDirIsPrivateMarkedAndRemovedByItsDemoOnly(t *testing.T) {
	state := t.TempDir()
	a, err := NewWorkDir(state)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewWorkDir(state)
	if err != nil {
		t.Fatal(err)
	}
	if a.Path() == b.Path() || filepath.Dir(a.Path()) != state || !strings.HasPrefix(filepath.Base(a.Path()), workPrefix) {
		t.Fatalf("work dirs %s and %s under %s", a.Path(), b.Path(), state)
	}
	// A live demo's directory is not stale.
	RemoveStale(state)
	for _, w := range []*WorkDir{a, b} {
		if _, err := os.Stat(w.Path()); err != nil {
			t.Fatalf("a running demo's directory was removed: %v", err)
		}
	}
	// One demo's directory is not another's to remove.
	stolen := &WorkDir{path: a.Path(), token: b.token}
	if err := stolen.Remove(); err == nil {
		t.Error("a demo removed a directory whose marker is not its own")
	}
	if err := a.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a.Path()); !os.IsNotExist(err) {
		t.Errorf("after Remove: %v", err)
	}
	if _, err := os.Stat(b.Path()); err != nil {
		t.Errorf("the other demo's directory went too: %v", err)
	}
}

// TestStaleWorkDirs: the directory of a demo whose process is gone (killed
// before it cleaned up) is removed by the next demo; nothing without the
// marker is, whatever its name.
func TestStaleWorkDirs(t *testing.T) {
	state := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(name, marker string) string {
		dir := filepath.Join(state, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if marker != "" {
			if err := os.WriteFile(filepath.Join(dir, markerName), []byte(marker), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	token := strings.Repeat("ab", 16)
	stale := mk("demo-stale", fmt.Sprintf("%s\npid %d\nstarted 12345\ntoken %s\n", markerHead, dead.Process.Pid, token))
	// pid 1 runs, but did not start when this marker says: a reused pid
	reused := mk("demo-reused", fmt.Sprintf("%s\npid 1\nstarted %d\ntoken %s\n", markerHead, startTime(1)+1, token))
	live := mk("demo-live", fmt.Sprintf("%s\npid %d\nstarted %d\ntoken %s\n", markerHead, os.Getpid(), startTime(os.Getpid()), token))
	unmarked := mk("demo-unmarked", "")
	foreign := mk("demo", fmt.Sprintf("%s\npid %d\nstarted 1\ntoken %s\n", markerHead, dead.Process.Pid, token))
	garbled := mk("demo-garbled", "haloforge demo work directory\npid x\n")
	linked := mk("demo-linked", "")
	if err := os.Symlink(filepath.Join(stale, markerName), filepath.Join(linked, markerName)); err != nil {
		t.Fatal(err)
	}
	w, err := NewWorkDir(state) // removes what is stale first
	if err != nil {
		t.Fatal(err)
	}
	defer w.Remove()
	for dir, want := range map[string]bool{stale: false, reused: false, live: true, unmarked: true, foreign: true, garbled: true, linked: true} {
		_, err := os.Stat(dir)
		if exists := err == nil; exists != want {
			t.Errorf("%s exists: %v, want %v", filepath.Base(dir), exists, want)
		}
	}
}
