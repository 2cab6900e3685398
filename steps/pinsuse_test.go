package steps

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	haloforge "github.com/haloforge/haloforge"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/pins/sets"
)

func TestRebuildsIsTheDownstreamOfChangedPins(t *testing.T) {
	tr, err := Lookup("therock-toolbox")
	if err != nil {
		t.Fatal(err)
	}
	var first Step
	for _, s := range tr.Steps {
		if len(s.Pins) > 0 {
			first = s
			break
		}
	}
	v := "x"
	got := Rebuilds(Catalogue(), map[string]pins.Change{first.Pins[0]: {New: &v}})
	if want := tr.Downstream([]string{first.ID}); !slices.Equal(got[tr.ID], want) {
		t.Errorf("Rebuilds[%s] = %v, want %v", tr.ID, got[tr.ID], want)
	}
	if len(Rebuilds(Catalogue(), map[string]pins.Change{"NO_SUCH_PIN": {New: &v}})) != 0 {
		t.Error("a pin no step reads rebuilds something")
	}
}

// TestPinsUseWritesWithABackup: nothing is written before Write; Write
// keeps the old file beside it, keeps the mode and writes through a link.
func TestPinsUseWritesWithABackup(t *testing.T) {
	dir := t.TempDir()
	orig := haloforge.VersionsEnv
	real := filepath.Join(dir, "real.env")
	if err := os.WriteFile(real, orig, 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "versions.env")
	if err := os.Symlink("real.env", link); err != nil {
		t.Fatal(err)
	}
	set, err := sets.Lookup("rocm-7.14")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	u, err := PreparePinsUse(link, set, Catalogue(), now)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := u.Changed["ROCM_VERSION"]; !ok || len(u.Rebuild["therock-toolbox"]) == 0 || u.Target != real {
		t.Fatalf("changed %v, rebuild %v, target %s", pins.ChangedNames(u.Changed), u.Rebuild, u.Target)
	}
	if data, _ := os.ReadFile(real); !bytes.Equal(data, orig) {
		t.Fatal("preparing wrote the file")
	}
	backup, err := u.Write(now)
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(backup); !bytes.Equal(data, orig) || !strings.HasPrefix(backup, real+".bak-20261124-") {
		t.Errorf("backup %s does not hold the old file", backup)
	}
	f, err := pins.Load(link)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Values()["ROCM_VERSION"]; got != set.Values()["ROCM_VERSION"] {
		t.Errorf("ROCM_VERSION = %s after writing %s", got, set.ID)
	}
	if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced by a file")
	}
	if st, _ := os.Stat(real); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", st.Mode().Perm())
	}
	// The same change again, computed before the file changed: refused,
	// nothing written, so a change made meanwhile is never lost.
	if _, err := u.Write(now); !errors.Is(err, ErrPinsChanged) {
		t.Errorf("a change computed from the old file: %v, want ErrPinsChanged", err)
	}
	// A second write in the same second keeps the first backup.
	seed, err := sets.Lookup("seed-source-stable")
	if err != nil {
		t.Fatal(err)
	}
	u2, err := PreparePinsUse(link, seed, Catalogue(), now)
	if err != nil {
		t.Fatal(err)
	}
	again, err := u2.Write(now)
	if err != nil || again == backup || !strings.HasPrefix(again, backup) {
		t.Errorf("second backup %s (first %s): %v", again, backup, err)
	}
}

func TestPinsUseRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.env")
	if err := os.WriteFile(bad, []byte("VLLM_REF=$(touch pwned)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	set, _ := sets.Lookup("rocm-7.14")
	var perr *pins.Error
	if _, err := PreparePinsUse(bad, set, Catalogue(), time.Now()); !errors.As(err, &perr) {
		t.Errorf("a hostile file: %v", err)
	}
	if _, err := PreparePinsUse(filepath.Join(dir, "missing.env"), set, Catalogue(), time.Now()); err == nil {
		t.Error("a missing file was accepted")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files written: %v", entries)
	}
}
