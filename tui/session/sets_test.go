package session

import (
	"bytes"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	haloforge "github.com/haloforge/haloforge"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/pins/sets"
	"github.com/haloforge/haloforge/pins/upstream"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/tui"
)

// pinsEngine is the wizard's engine on a copy of the shipped versions.env,
// the real scripts and catalogue, and a fresh state dir, at a fixed time.
func pinsEngine(t *testing.T) (*Engine, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "versions.env")
	if err := os.WriteFile(path, haloforge.VersionsEnv, 0o644); err != nil {
		t.Fatal(err)
	}
	pf, err := pins.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	scripts, err := fs.Sub(haloforge.Scripts, "scripts")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	return &Engine{Workspace: steps.Workspace{StateDir: t.TempDir(), Scripts: scripts, Pins: pf, PinsFile: path}, Now: func() time.Time { return now }}, path
}

// writeStatus leaves a `pins status` of the given age that found the
// pin retired with its value in use.
func writeStatus(t *testing.T, e *Engine, name string, age time.Duration) {
	t.Helper()
	value := e.Pins.Values()[name]
	rep := &upstream.Report{CheckedAt: e.Now().Add(-age), Pins: []upstream.Result{
		{Name: name, Value: value, State: upstream.Retired, Detail: "manifest unknown"}}}
	data, err := upstream.NewCache(rep, e.PinsFile, nil).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(upstream.CachePath(e.StateDir), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPlanWarnsFromTheLastStatus(t *testing.T) {
	e, _ := pinsEngine(t)
	p, err := e.Plan("vllm-image")
	if err != nil {
		t.Fatal(err)
	}
	if p.PinWarning != nil {
		t.Errorf("no status, yet a warning: %q", p.PinWarning)
	}
	writeStatus(t, e, "VLLM_IMAGE", 10*24*time.Hour)
	p, err = e.Plan("vllm-image")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(p.PinWarning, "\n")
	for _, want := range []string{"⚠ 1 pin is gone or moved upstream (pins status, checked 10 days ago)",
		"✗ VLLM_IMAGE=" + e.Pins.Values()["VLLM_IMAGE"] + "  retired: manifest unknown", "the status is old"} {
		if !strings.Contains(text, want) {
			t.Errorf("warning lacks %q:\n%s", want, text)
		}
	}
	if p, _ := e.Plan("llamacpp-vulkan"); p.PinWarning != nil {
		t.Errorf("a track that does not read VLLM_IMAGE is warned: %q", p.PinWarning)
	}
	if err := os.WriteFile(upstream.CachePath(e.StateDir), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, _ := e.Plan("vllm-image"); len(p.PinWarning) != 1 || !strings.Contains(p.PinWarning[0], "unreadable") {
		t.Errorf("a corrupt status: %q", p.PinWarning)
	}
}

// TestPinSetsAreWhatPinsUseDoes: each set's change and rebuild set are
// exactly what `pins use` computes on the file; writing one keeps a backup,
// and the next plan reads the new pins.
func TestPinSetsAreWhatPinsUseDoes(t *testing.T) {
	e, path := pinsEngine(t)
	writeStatus(t, e, "ROCM_VERSION", time.Hour)
	ps, err := e.PinSets()
	if err != nil {
		t.Fatal(err)
	}
	if ps.PinsFile != path || ps.CannotWrite != "" || len(ps.Sets) < 3 {
		t.Fatalf("sets %+v", ps)
	}
	i := slices.IndexFunc(ps.Sets, func(s tui.PinSet) bool { return s.ID == "rocm-7.14" })
	if i < 0 {
		t.Fatal("no rocm-7.14 set")
	}
	got := ps.Sets[i]
	set, err := sets.Lookup("rocm-7.14")
	if err != nil {
		t.Fatal(err)
	}
	u, err := steps.PreparePinsUse(path, set, steps.Catalogue(), e.Now())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range got.Changes {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, pins.ChangedNames(u.Changed)) || !maps.EqualFunc(got.Rebuild, u.Rebuild, slices.Equal) || len(got.Differs) == 0 {
		t.Errorf("the view's change %v / %v, pins use's %v / %v", names, got.Rebuild, pins.ChangedNames(u.Changed), u.Rebuild)
	}
	before, _ := os.ReadFile(path)
	used, err := e.UsePinSet("rocm-7.14")
	if err != nil {
		t.Fatal(err)
	}
	if used.Changed != len(u.Changed) || used.Path != path {
		t.Errorf("used %+v", used)
	}
	if data, _ := os.ReadFile(used.Backup); !bytes.Equal(data, before) {
		t.Errorf("the backup %s is not the old file", used.Backup)
	}
	if got := e.Pins.Values()["ROCM_VERSION"]; got != set.Values()["ROCM_VERSION"] {
		t.Errorf("the session still plans with ROCM_VERSION=%s", got)
	}
	p, err := e.Plan("therock-toolbox")
	if err != nil {
		t.Fatal(err)
	}
	if p.PinWarning != nil {
		t.Errorf("the pin that changed is still warned about: %q", p.PinWarning)
	}
	again, err := e.UsePinSet("rocm-7.14")
	if err != nil || again.Changed != 0 || again.Backup != "" {
		t.Errorf("using it again: %+v, %v", again, err)
	}
}

// TestPinSetsKeepTheCommandLineSets: after a write, the pins are read
// again the way the command line read them (its --set stays).
func TestPinSetsKeepTheCommandLineSets(t *testing.T) {
	e, path := pinsEngine(t)
	e.ReloadPins = func() (*pins.File, error) {
		pf, err := pins.Load(path)
		if err == nil {
			err = pf.Set("GPU_TARGET=gfx1151")
		}
		return pf, err
	}
	if _, err := e.UsePinSet("rocm-7.14"); err != nil {
		t.Fatal(err)
	}
	if e.Pins.Values()["GPU_TARGET"] != "gfx1151" {
		t.Error("the reload dropped the --set")
	}
}

func TestPinSetsNotWritten(t *testing.T) {
	e, _ := pinsEngine(t)
	e.PinsFile = "" // the built-in copy
	ps, err := e.PinSets()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ps.CannotWrite, "built-in copy") || !strings.Contains(ps.CannotWrite, "haloforge pins use SET creates ./versions.env") {
		t.Errorf("cannot write: %q", ps.CannotWrite)
	}
	for _, s := range ps.Sets {
		if len(s.Differs) > 0 && (len(s.Changes) == 0 || len(s.Rebuild) == 0) {
			t.Errorf("%s differs in %v but changes %v, rebuilds %v", s.ID, s.Differs, s.Changes, s.Rebuild)
		}
	}
	if _, err := e.UsePinSet("rocm-7.14"); err == nil {
		t.Error("wrote without a file")
	}
	d := newTestDemo(t)
	if ps, err := d.PinSets(); err != nil || ps.CannotWrite != DemoPinsRefusal {
		t.Errorf("demo: %+v %v", ps, err)
	}
	if _, err := d.UsePinSet("rocm-7.14"); err == nil || !strings.Contains(err.Error(), "demo: nothing is written") {
		t.Errorf("the demo wrote: %v", err)
	}
}

// With the built-in pins, u creates versions.env as `pins use` does:
// the built-in copy with the set's values, read from then on.
func TestPinSetsCreateThePinsFile(t *testing.T) {
	e, _ := pinsEngine(t)
	e.PinsFile = "" // the built-in copy
	path := filepath.Join(t.TempDir(), "versions.env")
	e.CreatePins = &PinsCreate{Path: path, BaseName: "versions.env (built in)", Base: haloforge.VersionsEnv}
	ps, err := e.PinSets()
	if err != nil {
		t.Fatal(err)
	}
	if ps.CannotWrite != "" || ps.Creates != path {
		t.Fatalf("cannot write %q, creates %q", ps.CannotWrite, ps.Creates)
	}
	used, err := e.UsePinSet("rocm-7.14")
	if err != nil {
		t.Fatal(err)
	}
	if !used.Created || used.Path != path || used.Changed == 0 {
		t.Errorf("used = %+v", used)
	}
	pf, err := pins.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if v := pf.Values()["ROCM_VERSION"]; v != "7.14.0" {
		t.Errorf("ROCM_VERSION in the new file = %q", v)
	}
	if e.PinsFile != path || e.Pins.Path != path {
		t.Errorf("the session still reads %q / %q", e.PinsFile, e.Pins.Path)
	}
	// Once it exists, the next u writes into it (with a backup).
	if ps, _ := e.PinSets(); ps.Creates != "" || ps.PinsFile != path {
		t.Errorf("after the create: %+v", ps)
	}
}
