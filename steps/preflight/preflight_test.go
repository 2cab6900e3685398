package preflight

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/pins/sets"
	"github.com/haloforge/haloforge/pins/upstream"
	"github.com/haloforge/haloforge/pins/upstream/upstreamtest"
	"github.com/haloforge/haloforge/steps"
)

// world is two real simple indexes on the loopback interface, with wheels
// pip built: "next" holds the 10.0.0 stack the newcomer's pins name, "old"
// the 7.14.0 stack of the set "previous"; and a set "dead" on an index
// where nothing answers.
type world struct {
	next, old       *upstreamtest.Index
	nextDir, oldDir string
	sets            []sets.Set
	track           steps.Track
}

// built holds the wheels pip built, once for the package (it takes a while
// on a busy machine); each test serves copies.
var built struct {
	sync.Once
	next, old string
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range []string{built.next, built.old} {
		if d != "" {
			os.RemoveAll(d)
		}
	}
	os.Exit(code)
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func newWorld(t *testing.T) *world {
	t.Helper()
	built.Do(func() {
		built.next, _ = os.MkdirTemp("", "hf-preflight-next-")
		built.old, _ = os.MkdirTemp("", "hf-preflight-old-")
		upstreamtest.BuildWheels(t, built.next, upstreamtest.TheRockStack("10.0.0")...)
		upstreamtest.BuildWheels(t, built.old, upstreamtest.TheRockStack("7.14.0")...)
	})
	w := &world{nextDir: t.TempDir(), oldDir: t.TempDir()}
	copyDir(t, built.next, w.nextDir)
	copyDir(t, built.old, w.oldDir)
	w.next, w.old = upstreamtest.StartIndex(t, w.nextDir), upstreamtest.StartIndex(t, w.oldDir)
	w.next.HTMLOnly(true) // AMD's indexes are static PEP 503 pages
	dead := "https://" + upstreamtest.ClosedAddr(t) + "/simple/"
	for _, body := range []string{
		setFile("dead", "validated", dead, "7.14.0"), // most trusted of the two: tried first, answers nothing
		setFile("previous", "previous", w.old.URL, "7.14.0"),
		setFile("kept", "history", w.old.URL, "7.14.0"), // history is never offered
	} {
		s, err := sets.Parse("set.env", []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		w.sets = append(w.sets, s)
	}
	var err error
	if w.track, err = steps.Lookup("therock-toolbox"); err != nil {
		t.Fatal(err)
	}
	return w
}

func setFile(id, status, index, rocm string) string {
	return fmt.Sprintf("# id: %s\n# title: the %s stack\n# status: %s\n# evidence: https://example.org/%s\n\n"+
		"# index\nTHEROCK_INDEX_URL=%s\n# rocm\nROCM_VERSION=%s\n# torch\nTORCH_VERSION=2.11.0+rocm${ROCM_VERSION}\n"+
		"# vision\nTORCHVISION_VERSION=0.26.0+rocm${ROCM_VERSION}\n# audio\nTORCHAUDIO_VERSION=2.11.0+rocm${ROCM_VERSION}\n",
		id, id, status, id, index, rocm)
}

// newcomer is the pins of someone who never changed them: the 10.0.0 stack
// on the next index.
func (w *world) newcomer(t *testing.T) *pins.File {
	t.Helper()
	f, err := pins.Parse("versions.env", []byte("GPU_TARGET=gfx1151\nPYTHON_VERSION=3.12\nTHEROCK_INDEX_URL="+w.next.URL+"\n"+
		"ROCM_VERSION=10.0.0\nTORCH_VERSION=2.11.0+rocm${ROCM_VERSION}\nTORCHVISION_VERSION=0.26.0+rocm${ROCM_VERSION}\nTORCHAUDIO_VERSION=2.11.0+rocm${ROCM_VERSION}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (w *world) options(stateDir string) Options {
	// httptest's servers share one certificate: the next index's roots trust both.
	return Options{StateDir: stateDir, Sets: w.sets, Deadline: 15 * time.Second,
		Upstream: upstream.Options{RootCAs: w.next.Roots, RequestTimeout: 3 * time.Second}}
}

// retire removes the torch wheels of the 10.0.0 stack from the next index.
func (w *world) retire(t *testing.T) {
	upstreamtest.RemoveWheels(t, w.nextDir, "torch", "amd-torch-device-gfx1151")
}

// TestRetiredWheelStopsAndNamesTheWorkingSet: the newcomer's torch wheel is
// gone from the index: the check blocks, names step 3 (rocm) as the one that
// would fail, tries the sets most trusted first (dead answers nothing, kept
// is history) and names previous, whose stack resolves on its index.
func TestRetiredWheelStopsAndNamesTheWorkingSet(t *testing.T) {
	w := newWorld(t)
	w.retire(t)
	state := t.TempDir()
	r := Check(context.Background(), w.track, w.newcomer(t), w.options(state))
	if !r.Blocks() || len(r.Retired) != 1 || r.Retired[0].Name != "TORCH_VERSION" || r.FirstStep != "rocm" {
		t.Fatalf("retired %+v, first step %q", r.Retired, r.FirstStep)
	}
	if r.Works == nil || r.Works.ID != "previous" || r.Works.Verdict != "resolves" {
		t.Fatalf("works %+v, tried %+v", r.Works, r.Tried)
	}
	if len(r.Tried) != 2 || r.Tried[0].ID != "dead" || r.Tried[0].Verdict != "not checked" {
		t.Errorf("tried %+v: want dead (no answer), then previous", r.Tried)
	}
	lines := strings.Join(r.Lines(time.Now()), "\n")
	for _, want := range []string{
		"✗ 1 pin of therock-toolbox gone upstream (checked just now): step 3/7 rocm would fail",
		"  ✗ TORCH_VERSION=2.11.0+rocm10.0.0  retired: torch is not on the index (HTTP 404); amd-torch-device-gfx1151 is not on the index (HTTP 404)",
		"  the set that resolves: previous [previous] (THEROCK_INDEX_URL, ROCM_VERSION, TORCH_VERSION, TORCHVISION_VERSION, TORCHAUDIO_VERSION answer upstream): haloforge pins use previous",
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("lines lack %q:\n%s", want, lines)
		}
	}
	// What it learnt is the last status: `pins status` and the next plan read it.
	c, err := upstream.LoadCache(state)
	if err != nil || c == nil {
		t.Fatalf("no status kept: %v", err)
	}
	if p, _ := c.Get("TORCH_VERSION"); p.State != upstream.Retired {
		t.Errorf("the kept status says %s for TORCH_VERSION", p.State)
	}
}

// TestLiveWheelsGoOn: with every wheel there, nothing blocks and one line says so.
func TestLiveWheelsGoOn(t *testing.T) {
	w := newWorld(t)
	r := Check(context.Background(), w.track, w.newcomer(t), w.options(t.TempDir()))
	if r.Blocks() || r.Offline != "" || r.OK != 5 || len(r.Tried) != 0 {
		t.Fatalf("%+v", r)
	}
	if l := r.Lines(time.Now()); len(l) != 1 || l[0] != "✓ pins of therock-toolbox resolve upstream: 5 ok (checked just now)" {
		t.Errorf("lines %q", l)
	}
}

// TestARecentStatusStandsForACheck: a second plan within the hour reads the
// status the first one kept, even when the index no longer answers; an older
// one is asked again, and without network that is one line, and the build
// goes on (the old finding is shown, not enforced).
func TestARecentStatusStandsForACheck(t *testing.T) {
	w := newWorld(t)
	w.retire(t)
	state := t.TempDir()
	now := time.Now()
	o := w.options(state)
	o.Now = func() time.Time { return now }
	first := Check(context.Background(), w.track, w.newcomer(t), o)
	if !first.Blocks() || first.FromCache {
		t.Fatalf("first %+v", first)
	}
	w.next.Close()
	w.old.Close()
	o.Now = func() time.Time { return now.Add(30 * time.Minute) }
	second := Check(context.Background(), w.track, w.newcomer(t), o)
	if !second.FromCache || !second.Blocks() || second.Retired[0].Name != "TORCH_VERSION" {
		t.Fatalf("second %+v", second)
	}
	if !strings.Contains(second.Lines(now.Add(30 * time.Minute))[0], "(pins status checked 30 minutes ago)") {
		t.Errorf("lines %q", second.Lines(now.Add(30*time.Minute)))
	}
	o.Now = func() time.Time { return now.Add(2 * time.Hour) }
	third := Check(context.Background(), w.track, w.newcomer(t), o)
	if third.Blocks() || !strings.HasPrefix(third.Offline, "pins not checked upstream: no upstream answered (127.0.0.1:") {
		t.Fatalf("third %+v", third)
	}
	lines := third.Lines(now.Add(2 * time.Hour))
	if !strings.HasPrefix(lines[0], "· pins not checked upstream: no upstream answered") || !strings.Contains(strings.Join(lines, "\n"), "✗ TORCH_VERSION=2.11.0+rocm10.0.0  retired") {
		t.Errorf("offline lines %q", lines)
	}
}

// TestOfflineAsksNothing: HALOFORGE_OFFLINE=1's option: one line, no request.
func TestOfflineAsksNothing(t *testing.T) {
	w := newWorld(t)
	w.next.Close() // a request would be "no answer", not "not checked"
	o := w.options(t.TempDir())
	o.Offline = "HALOFORGE_OFFLINE=1"
	start := time.Now()
	r := Check(context.Background(), w.track, w.newcomer(t), o)
	if r.Blocks() || r.Offline != "pins not checked upstream (HALOFORGE_OFFLINE=1): building with them as they are" {
		t.Fatalf("%+v", r)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("offline took %s", d)
	}
	if l := r.Lines(time.Now()); len(l) != 1 {
		t.Errorf("lines %q", l)
	}
}

// TestNoSetResolves: when the previous stack is gone too, the check says so
// and names no set.
func TestNoSetResolves(t *testing.T) {
	w := newWorld(t)
	w.retire(t)
	entries, _ := os.ReadDir(w.oldDir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "rocm-") {
			os.Remove(w.oldDir + "/" + e.Name())
		}
	}
	r := Check(context.Background(), w.track, w.newcomer(t), w.options(t.TempDir()))
	if !r.Blocks() || r.Works != nil || len(r.Tried) != 2 || r.Tried[1].Verdict != "gone" {
		t.Fatalf("works %+v, tried %+v", r.Works, r.Tried)
	}
	if l := strings.Join(r.Lines(time.Now()), "\n"); !strings.Contains(l, "set previous: gone (ROCM_VERSION=7.14.0: ") || !strings.Contains(l, "no known-good set resolves for certain") {
		t.Errorf("lines:\n%s", l)
	}
}
