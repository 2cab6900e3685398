package steps

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLoadStateRefuses: a state.json of a newer format,
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

// TestLoadStateRefusesSpecialFiles: a state.json that is a FIFO, a link
// (to /dev/zero, or to a valid state elsewhere) or a file past
// MaxStateBytes is refused at once, naming what it is; before, the FIFO
// hung, /dev/zero was read until memory ran out and a link was followed.
func TestLoadStateRefusesSpecialFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(path string) error
		want string
	}{
		{"a FIFO", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "a FIFO (named pipe), not a regular file"},
		{"a link to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "a symbolic link, not a regular file"},
		{"a link to a valid state elsewhere", func(p string) error {
			other := filepath.Join(filepath.Dir(filepath.Dir(p)), "elsewhere.json")
			if err := os.WriteFile(other, []byte(`{"version":1,"tracks":{}}`), 0o644); err != nil {
				return err
			}
			return os.Symlink(other, p)
		}, "state.json is a symbolic link, not a regular file"},
		{"a directory", func(p string) error { return os.Mkdir(p, 0o755) }, "a directory, not a regular file"},
		{"a file past the limit", func(p string) error {
			f, err := os.Create(p)
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(16<<20 + 1) // MaxStateBytes+1, sparse: costs no disk
		}, "is over the 16 MiB limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tc.make(filepath.Join(dir, StateFile)); err != nil {
				t.Skip(err)
			}
			done := make(chan error, 1)
			go func() { _, err := LoadState(dir); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("LoadState: %v, want an error containing %q", err, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("LoadState still reading after 10 s (it must refuse at once)")
			}
		})
	}
}

// TestSaveRemovesAPlantedTempLink: a state.json temp file planted as a
// link (to a file outside) goes with the killed writes' leftovers; the file
// it pointed at keeps its bytes, and state.json is written in the state
// dir, not through a link in its place.
func TestSaveRemovesAPlantedTempLink(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "state")
	os.Mkdir(dir, 0o755)
	precious := filepath.Join(base, "precious")
	os.WriteFile(precious, []byte("precious\n"), 0o644)
	os.Symlink(precious, filepath.Join(dir, "."+StateFile+".tmp-planted"))
	os.Symlink(precious, filepath.Join(dir, StateFile))
	if err := NewState().Save(dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(precious); string(b) != "precious\n" {
		t.Errorf("the file outside is now %q", b)
	}
	if _, err := os.Lstat(filepath.Join(dir, "."+StateFile+".tmp-planted")); err == nil {
		t.Error("the planted temp link is still there")
	}
	if st, err := os.Lstat(filepath.Join(dir, StateFile)); err != nil || !st.Mode().IsRegular() {
		t.Errorf("state.json is %v, %v: want a regular file in place of the link", st, err)
	}
}
