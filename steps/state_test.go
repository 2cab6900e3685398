package steps

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadStateRefuses is the review's F15: a state.json of a newer format,
// or one whose last_run is a path, is refused with the file named.
func TestLoadStateRefuses(t *testing.T) {
	for _, tc := range []struct{ name, json, want string }{
		{"a newer version", `{"version": 99, "tracks": {}}`, "version 99, written by a newer haloforge"},
		{"a last_run that climbs", `{"version": 1, "tracks": {"x": {"last_run": "../../../../tmp/evilrun", "steps": {}}}}`, `track x: last_run "../../../../tmp/evilrun" is not a run ID`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, StateFile), []byte(tc.json), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadState(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), StateFile) {
				t.Errorf("LoadState: %v, want %q", err, tc.want)
			}
		})
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, StateFile), []byte(`{"version": 1, "tracks": {"x": {"last_run": "20261124-101500-a1b2c3", "steps": {}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadState(dir); err != nil {
		t.Errorf("a valid state: %v", err)
	}
}

// TestSaveRemovesTempFilesOfAKilledWrite: kill -9 during a write leaves
// .state.json.tmp-*; the next save (the holder of the lock) removes them.
func TestSaveRemovesTempFilesOfAKilledWrite(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, ".state.json.tmp-123456")
	other := filepath.Join(dir, ".report.json.tmp-1")
	for _, p := range []string{stale, other} {
		if err := os.WriteFile(p, []byte("{"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := NewState().Save(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale temp file is still there: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a file that is not state.json's temp went: %v", err)
	}
}
