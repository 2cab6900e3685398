package tui

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func init() {
	screenExamples["pin sets"] = func(c *common) screen { return newSetsScreen(c, "therock-toolbox") }
}

// twoSets are the shapes of `pins sets` on the shipped versions.env: the
// recommended set matches, the ROCm 10 candidate changes six pins.
func twoSets() *PinSets {
	return &PinSets{PinsFile: "/work/versions.env", Sets: []PinSet{
		{ID: "rocm-7.14", Title: "TheRock ROCm 7.14.0, torch 2.11.0", Status: "recommended", Pins: 14,
			Evidence: []string{"https://github.com/kyuz0/amd-strix-halo-vllm-toolboxes/blob/x/README.md"}},
		{ID: "rocm-10.0", Title: "AMD ROCm 10.0.0 + torch 2.11.0", Status: "candidate", Pins: 11,
			Note:     "AMD's current line; no gfx1151 run in the evidence yet, hence candidate.",
			Evidence: []string{"https://github.com/ROCm/rocm-cli/releases/tag/v0.3.0"},
			Differs:  []string{"THEROCK_INDEX_URL", "ROCM_VERSION", "TORCH_VERSION", "TORCHVISION_VERSION", "TORCHAUDIO_VERSION", "VLLM_IMAGE"},
			Changes: []PinChange{{Name: "ROCM_VERSION", Old: "7.14.0", New: "10.0.0"},
				{Name: "TORCH_VERSION", Old: "2.11.0+rocm7.14.0", New: "2.11.0+rocm10.0.0"}, {Name: "TORCH_INDEX_URL", Old: "x", New: ""}},
			Rebuild: map[string][]string{"therock-toolbox": {"rocm", "aiter", "flash-attention", "vllm", "verify"}, "vllm-image": {"pull", "launcher", "verify"}}},
	}}
}

func newSetsFor(t *testing.T, f *fakeBackend, w, h int) *setsScreen {
	t.Helper()
	s := newSetsScreen(testCommonOn(f), "vllm-image")
	s.SetSize(w, h)
	s.Update(msgOf(s.Init()))
	return s
}

func TestPlanScreenWarnsAndOffersTheSets(t *testing.T) {
	f := newFakeBackend(t)
	f.pinWarning = []string{"⚠ 1 pin is gone or moved upstream (pins status, checked 9 days ago)",
		"  ✗ VLLM_IMAGE=docker.io/rocm/vllm-dev:nightly  retired: manifest unknown",
		"  known-good sets: haloforge pins sets   (then haloforge pins use SET); the status is old: haloforge pins status"}
	p, _ := f.Plan("therock-toolbox")
	s := newPlanScreen(testCommon(), p, nil)
	s.SetSize(100, 40)
	v := ansi.Strip(s.View())
	for _, want := range []string{"⚠ 1 pin is gone or moved upstream (pins status, checked 9 days ago)",
		"✗ VLLM_IMAGE=docker.io/rocm/vllm-dev:nightly  retired", "the status is old", "p shows the known-good sets"} {
		if !strings.Contains(v, want) {
			t.Errorf("the plan lacks %q:\n%s", want, v)
		}
	}
	if got, ok := msgOf(s.Update(press("p"))).(openMsg); !ok || got.s.(*setsScreen).track != "therock-toolbox" {
		t.Errorf("p sent %#v", got)
	}
	if k := helpKeys(s.ShortHelp()); !slices.Contains(k, "p") {
		t.Errorf("help %v lacks p", k)
	}
	p.PinWarning = nil
	s = newPlanScreen(testCommon(), p, nil)
	s.SetSize(100, 40)
	if v := ansi.Strip(s.View()); strings.Contains(v, "⚠") || strings.Contains(v, "p shows") {
		t.Errorf("a warning without findings:\n%s", v)
	}
}

func TestSetsScreenListsAndShowsTheChange(t *testing.T) {
	f := newFakeBackend(t)
	f.pinSets = twoSets()
	s := newSetsFor(t, f, 100, 40)
	v := ansi.Strip(s.View())
	for _, want := range []string{"Known-good pin sets compared with /work/versions.env",
		"› rocm-7.14  [recommended]  your pins match this set",
		"  rocm-10.0  [candidate]    6 of its 11 pins differ from yours",
		"Your pins already have every pin of this set"} {
		if !strings.Contains(v, want) {
			t.Errorf("lacks %q:\n%s", want, v)
		}
	}
	s.Update(press("u"))
	if s.TakesText() || !strings.Contains(ansi.Strip(s.View()), "nothing to write") {
		t.Errorf("u on a matching set asked:\n%s", ansi.Strip(s.View()))
	}
	s.Update(press("down"))
	v = ansi.Strip(s.View())
	for _, want := range []string{"› rocm-10.0", "note: AMD's current line", "evidence: https://github.com/ROCm/rocm-cli",
		"haloforge pins use rocm-10.0 changes (as pins diff shows it):", "ROCM_VERSION: 7.14.0 → 10.0.0", "TORCH_INDEX_URL: x → (none)",
		"Steps to re-run:", "vllm-image       pull, launcher, verify", "therock-toolbox  rocm, aiter"} {
		if !strings.Contains(v, want) {
			t.Errorf("the detail lacks %q:\n%s", want, v)
		}
	}
	if strings.Index(v, "vllm-image       pull") > strings.Index(v, "therock-toolbox  rocm") {
		t.Errorf("the plan's track is not first among the rebuilds:\n%s", v)
	}
	if _, ok := msgOf(s.Update(press("esc"))).(closeScreenMsg); !ok {
		t.Error("esc does not go back to the plan")
	}
}

// TestSetsScreenAsksBeforeWriting: u asks y/N; anything but y writes
// nothing; y writes, and enter then plans the track again.
func TestSetsScreenAsksBeforeWriting(t *testing.T) {
	f := newFakeBackend(t)
	f.pinSets = twoSets()
	s := newSetsFor(t, f, 100, 40)
	s.Update(press("down"))
	s.Update(press("u"))
	if !s.TakesText() || !strings.Contains(ansi.Strip(s.View()), "Write 3 changed pins into versions.env, keeping a backup? y yes  N no") {
		t.Fatalf("u did not ask:\n%s", ansi.Strip(s.View()))
	}
	s.Update(press("q"))
	if s.TakesText() || len(f.used) != 0 || !strings.Contains(ansi.Strip(s.View()), "Not written.") {
		t.Errorf("q: asking %v, used %v", s.TakesText(), f.used)
	}
	s.Update(press("u"))
	msg := msgOf(s.Update(press("y")))
	if _, ok := msg.(setUsedMsg); !ok || !slices.Equal(f.used, []string{"rocm-10.0"}) {
		t.Fatalf("y gave %#v, used %v", msg, f.used)
	}
	s.Update(msg)
	v := ansi.Strip(s.View())
	if !strings.Contains(v, "✓ Wrote 3 changed pins into /work/versions.env") || !strings.Contains(v, "kept as /work/versions.env.bak-20261124-100000") {
		t.Errorf("after writing:\n%s", v)
	}
	if s.Update(press("enter")) == nil {
		t.Error("enter does not plan again")
	}
}

func TestSetsScreenCannotWrite(t *testing.T) {
	f := newFakeBackend(t)
	f.pinSets = twoSets()
	f.pinSets.CannotWrite = "demo: nothing is written (sample data); on your machine, u writes the set"
	s := newSetsFor(t, f, 100, 40)
	s.Update(press("down"))
	s.Update(press("u"))
	v := ansi.Strip(s.View())
	if s.TakesText() || len(f.used) != 0 || !strings.Contains(v, `Not written: see "Writing a set" below`) || !strings.Contains(v, "on your machine, u writes") {
		t.Errorf("asking %v, used %v:\n%s", s.TakesText(), f.used, v)
	}

	f.pinSets.CannotWrite = ""
	f.useErr = errors.New("versions.env:3: bad line")
	s = newSetsFor(t, f, 100, 40)
	s.Update(press("down"))
	s.Update(press("u"))
	s.Update(msgOf(s.Update(press("y"))))
	if v := ansi.Strip(s.View()); !strings.Contains(v, "Not written: versions.env:3: bad line") {
		t.Errorf("a failed write:\n%s", v)
	}
	// Built-in pins: u asks to create ./versions.env, as pins use does.
	f.useErr = nil
	f.pinSets.Creates = "/home/u/versions.env"
	s = newSetsFor(t, f, 80, 24)
	s.Update(press("down"))
	s.Update(press("u"))
	if v := ansi.Strip(s.View()); !strings.Contains(v, "Create ./versions.env (built-in pins, 3 changed)? y yes  N no") {
		t.Errorf("no create question:\n%s", v)
	}
	f.pinSets = nil
	if v := ansi.Strip(newSetsFor(t, f, 100, 40).View()); !strings.Contains(v, "The pin sets could not be read: fake: no pin sets") {
		t.Errorf("no sets:\n%s", v)
	}
}

// TestWizardWritesASetAndPlansAgain: plan → p → a set → u → y → enter
// leaves the new plan on top of the picker, as after picking the track.
func TestWizardWritesASetAndPlansAgain(t *testing.T) {
	f := newFakeBackend(t)
	f.pinSets = twoSets()
	f.pinWarning = []string{"⚠ 1 pin is gone or moved upstream (pins status, checked 2 hours ago)"}
	m := newSized(t, f, 100, 40)
	drive(t, m, press("enter"), press("enter"))
	if m.top().Crumb() != "plan" || !strings.Contains(plain(m), "gone or moved upstream") {
		t.Fatalf("not on the plan with its warning:\n%s", plain(m))
	}
	drive(t, m, press("p"))
	if m.top().Crumb() != "pin sets" {
		t.Fatalf("p opened %s", m.top().Crumb())
	}
	drive(t, m, press("down"), press("u"), press("y"), press("enter"))
	var crumbs []string
	for _, s := range m.stack {
		crumbs = append(crumbs, s.Crumb())
	}
	if !slices.Equal(crumbs, []string{"detect", "track", "plan"}) || !slices.Equal(f.used, []string{"rocm-10.0"}) {
		t.Errorf("stack %v, used %v", crumbs, f.used)
	}
	if v := plain(m); strings.Contains(v, "gone or moved upstream") {
		t.Errorf("the new plan still warns:\n%s", v)
	}
}

// An evidence URL too long for its line goes on lines of its own from the
// first column, never behind an indent, so its pieces join back into the
// URL; a short one stays on the evidence line.
func TestSetsScreenKeepsURLsWhole(t *testing.T) {
	long := "https://github.com/kyuz0/amd-strix-halo-vllm-toolboxes/blob/ecbe4bf404b7aef5cf37ade5d7f0f395335df185/tests/test_rocm_release_config.py"
	f := newFakeBackend(t)
	f.pinSets = twoSets()
	f.pinSets.Sets[1].Evidence = []string{long, "https://hub.docker.com/r/rocm/vllm/tags"}
	for _, w := range []int{80, 120} {
		s := newSetsFor(t, f, w, 60)
		s.Update(press("down"))
		lines := s.detailLines(w)
		var joined strings.Builder
		at := -1
		for i, l := range lines {
			l = ansi.Strip(l)
			if l == "evidence:" {
				at = i
				continue
			}
			if at >= 0 && strings.HasPrefix(l, "evidence: ") {
				break
			}
			if at >= 0 {
				if strings.HasPrefix(l, " ") {
					t.Fatalf("width %d: a URL piece behind an indent: %q", w, l)
				}
				joined.WriteString(l)
			}
		}
		if joined.String() != long {
			t.Fatalf("width %d: the URL's lines join into %q, want %q\n%s", w, joined.String(), long, ansi.Strip(strings.Join(lines, "\n")))
		}
		if !slices.ContainsFunc(lines, func(l string) bool { return ansi.Strip(l) == "evidence: https://hub.docker.com/r/rocm/vllm/tags" }) {
			t.Fatalf("width %d: the short URL left its line", w)
		}
	}
}
