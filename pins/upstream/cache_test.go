package upstream

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haloforge/haloforge/pins"
)

func TestMovedBetween(t *testing.T) {
	tests := []struct {
		old, now string
		moved    bool
	}{
		{"sha256:" + strings.Repeat("a", 64), "sha256:" + strings.Repeat("a", 64), false},
		{"sha256:" + strings.Repeat("a", 64), "sha256:" + strings.Repeat("b", 64), true},
		{strings.Repeat("1", 40), strings.Repeat("2", 40), true},
		// wheels: only a file in both that changed is a move
		{"t-1-cp312.whl=sha256:aa", "t-1-cp312.whl=sha256:aa t-1-cp313.whl=sha256:bb", false},
		{"t-1-cp312.whl=sha256:aa d-1-py3.whl=sha256:cc", "t-1-cp312.whl=sha256:ab d-1-py3.whl=sha256:cc", true},
		{"t-1-cp312.whl=sha256:aa", "t-1-cp311.whl=sha256:zz", false},
	}
	for _, tc := range tests {
		if _, _, moved := movedBetween(tc.old, tc.now); moved != tc.moved {
			t.Errorf("movedBetween(%q, %q) = %v, want %v", tc.old, tc.now, moved, tc.moved)
		}
	}
}

func TestCacheRoundTripAndCarryOver(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	first := &Report{CheckedAt: t0, Pins: []Result{
		{Name: "VLLM_IMAGE", Value: "rocm/vllm:v1", State: OK, Resolved: "sha256:aaa"},
		{Name: "LLAMACPP_REF", Value: "b10590", State: OK, Resolved: "c1"},
	}}
	c1 := NewCache(first, "versions.env", nil)
	data, err := c1.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseCache(data, "c.json")
	if err != nil {
		t.Fatal(err)
	}
	second := &Report{CheckedAt: t0.Add(time.Hour), Pins: []Result{
		{Name: "VLLM_IMAGE", Value: "rocm/vllm:v1", State: Unreachable}, // offline this time
		{Name: "LLAMACPP_REF", Value: "b10591", State: Unreachable},     // pin edited
	}}
	c2 := NewCache(second, "versions.env", back)
	if p, _ := c2.Get("VLLM_IMAGE"); p.Resolved != "sha256:aaa" || !p.ResolvedAt.Equal(t0) {
		t.Errorf("an unreachable pin must keep its last resolution: %+v", p)
	}
	if p, _ := c2.Get("LLAMACPP_REF"); p.Resolved != "" {
		t.Errorf("an edited pin must not inherit the old value's resolution: %+v", p)
	}
	// a third status that reaches the registry again sees the move
	third := &Report{Pins: []Result{{Name: "VLLM_IMAGE", Value: "rocm/vllm:v1", State: OK, Resolved: "sha256:bbb", Detail: "tag v1 → sha256:bbb"}}}
	compareWithPrevious(third, c2)
	if r := third.Pins[0]; r.State != Moved || !strings.Contains(r.Detail, "moved since the status of 2026-11-20 10:00 UTC: was sha256:aaa, now sha256:bbb") {
		t.Errorf("third = %s %q", r.State, r.Detail)
	}
	for _, bad := range []string{`{}`, `{"version": 2}`, `[`, ``} {
		if _, err := ParseCache([]byte(bad), "bad.json"); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestLastWarning(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	if w, err := LastWarning(dir, nil, nil, now); w != nil || err != nil {
		t.Fatalf("no status yet: %v, %v", w, err)
	}
	rep := &Report{CheckedAt: now.Add(-3 * 24 * time.Hour), Pins: []Result{
		{Name: "LLAMACPP_ROCM_IMAGE", Value: "docker.io/kyuz0/amd-strix-halo-toolboxes:rocm-7.1.1", State: Retired, Detail: "tag rocm-7.1.1 no longer exists"},
		{Name: "NIGHTLY_IMAGE", Value: "docker.io/rocm/vllm-dev:nightly", State: Moved, Detail: "moved since …"},
		{Name: "VLLM_REF", Value: "6e448d0ea9bf3d88d898b65449ca6dc2aec170ac", State: Retired, Detail: "gone"},
		{Name: "ROCM_VERSION", Value: "7.14.0", State: OK},
	}}
	data, _ := NewCache(rep, "versions.env", nil).Marshal()
	if err := os.WriteFile(CachePath(dir), data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := pins.Parse("v.env", []byte("LLAMACPP_ROCM_IMAGE=docker.io/kyuz0/amd-strix-halo-toolboxes:rocm-7.1.1\nNIGHTLY_IMAGE=docker.io/rocm/vllm-dev:nightly\nVLLM_REF=0123456789abcdef0123456789abcdef01234567\nROCM_VERSION=7.14.0\n"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := LastWarning(dir, f, nil, now)
	if err != nil || w == nil {
		t.Fatalf("%v, %v", w, err)
	}
	if len(w.Pins) != 2 || w.Pins[0].Name != "LLAMACPP_ROCM_IMAGE" || w.Pins[1].Name != "NIGHTLY_IMAGE" {
		t.Errorf("pins = %+v (VLLM_REF was edited since: no warning)", w.Pins)
	}
	if len(w.Edited) != 1 || w.Edited[0] != "VLLM_REF" {
		t.Errorf("edited = %v", w.Edited)
	}
	lines := strings.Join(w.Lines(), "\n")
	for _, want := range []string{"⚠ 2 pins are gone or moved upstream (pins status, checked 3 days ago)",
		"✗ LLAMACPP_ROCM_IMAGE=docker.io/kyuz0/amd-strix-halo-toolboxes:rocm-7.1.1  retired: tag rocm-7.1.1 no longer exists",
		"↻ NIGHTLY_IMAGE=", "haloforge pins sets"} {
		if !strings.Contains(lines, want) {
			t.Errorf("lines lack %q:\n%s", want, lines)
		}
	}
	if strings.Contains(lines, "the status is old") {
		t.Error("3 days is not old")
	}
	// restricted to a track's pins
	if w, _ := LastWarning(dir, f, []string{"ROCM_VERSION", "VLLM_REF"}, now); w != nil {
		t.Errorf("no retired pin of these names is in use: %+v", w)
	}
	if w, _ := LastWarning(dir, f, []string{"NIGHTLY_IMAGE"}, now.Add(30*24*time.Hour)); w == nil || !strings.Contains(strings.Join(w.Lines(), "\n"), "checked 33 days ago") || !strings.Contains(strings.Join(w.Lines(), "\n"), "the status is old: haloforge pins status") {
		t.Errorf("an old status: %+v", w)
	}
	if err := os.WriteFile(CachePath(dir), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LastWarning(dir, f, nil, now); err == nil {
		t.Error("a corrupt cache must be reported")
	}
}

func FuzzParseCache(f *testing.F) {
	f.Add([]byte(`{"version": 1, "checked_at": "2026-11-24T10:00:00Z", "pins": [{"name": "A", "value": "b", "state": "moved", "resolved": "x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCache(data, "fuzz.json")
		if err != nil {
			return
		}
		for _, p := range c.Pins {
			if got, ok := c.Get(p.Name); !ok || got.Name != p.Name {
				t.Fatalf("Get(%q) = %+v, %v", p.Name, got, ok)
			}
		}
		if _, err := c.Marshal(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestPartialStatusKeepsTheOtherPins: a status of a file with a few pins
// keeps what the last status found for the others, so that a later status
// of the full file still sees a moved tag.
func TestPartialStatusKeepsTheOtherPins(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	full := &Report{CheckedAt: t0, Pins: []Result{
		{Name: "VLLM_IMAGE", Value: "rocm/vllm:v1", State: OK, Resolved: "sha256:" + strings.Repeat("a", 64)},
		{Name: "LLAMACPP_ROCM_IMAGE", Value: "kyuz0/t:rocm-7.1.1", State: Retired, Detail: "tag rocm-7.1.1 no longer exists"},
		{Name: "VERIFY_MODEL", Value: "Qwen/Qwen3-0.6B", State: OK},
	}}
	c1 := NewCache(full, "versions.env", nil)
	partial := &Report{CheckedAt: t0.Add(time.Hour), Pins: []Result{{Name: "VERIFY_MODEL", Value: "Qwen/Qwen3-0.6B", State: OK}}}
	c2 := NewCache(partial, "model.env", c1)
	data, err := c2.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseCache(data, "c.json")
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := back.Get("VLLM_IMAGE"); !ok || p.Resolved != full.Pins[0].Resolved {
		t.Fatalf("VLLM_IMAGE after a status of another file: %+v, %v", p, ok)
	}
	again := &Report{CheckedAt: t0.Add(2 * time.Hour), Pins: []Result{
		{Name: "VLLM_IMAGE", Value: "rocm/vllm:v1", State: OK, Resolved: "sha256:" + strings.Repeat("b", 64), Detail: "tag v1 → sha256:bbbbbbbbbbbb"},
	}}
	compareWithPrevious(again, back)
	if r := again.Pins[0]; r.State != Moved || !strings.Contains(r.Detail, "was sha256:aaaaaaaaaaaa, now sha256:bbbbbbbbbbbb") {
		t.Errorf("the full file's status after a partial one: %s %q; want moved", r.State, r.Detail)
	}
	// plan's warning about a pin kept from the first status is as old as it
	dir := t.TempDir()
	if err := os.WriteFile(CachePath(dir), data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := pins.Parse("v.env", []byte("LLAMACPP_ROCM_IMAGE=kyuz0/t:rocm-7.1.1\n"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := LastWarning(dir, f, nil, t0.Add(3*24*time.Hour))
	if err != nil || w == nil || len(w.Pins) != 1 || w.Age != 3*24*time.Hour {
		t.Errorf("warning = %+v, %v; want the retired pin, 3 days old", w, err)
	}
}

// TestCacheThatIsNoFile: a FIFO, a link or a directory where the last
// status should be is refused at once, naming the path; nothing hangs.
func TestCacheThatIsNoFile(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		make       func(path string) error
	}{
		{"fifo", "is a FIFO (named pipe), not a regular file", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{"link", "is a symbolic link, not a regular file", func(p string) error {
			target := filepath.Join(filepath.Dir(p), "elsewhere.json")
			if err := os.WriteFile(target, []byte(`{"version": 1}`), 0o644); err != nil {
				return err
			}
			return os.Symlink(target, p)
		}},
		{"directory", "is a directory, not a regular file", func(p string) error { return os.Mkdir(p, 0o755) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tc.make(CachePath(dir)); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := LoadCache(dir)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || err.Error() != CachePath(dir)+" "+tc.want {
					t.Errorf("LoadCache = %v; want %q", err, CachePath(dir)+" "+tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("LoadCache hangs")
			}
			if _, err := LastWarning(dir, &pins.File{}, nil, time.Now()); err == nil {
				t.Error("LastWarning read it")
			}
		})
	}
}
