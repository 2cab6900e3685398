package tui

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/steps"
)

// screenExamples build one of each screen, by its crumb, on c (whose
// engine is the fake). The flow's screens are listed here; a screen off
// the flow adds its own from its test file (an init), so that a new screen
// brings its row with it: TestEveryScreenIsInTheTable fails until then.
var screenExamples = map[string]func(c *common) screen{
	"detect":       func(c *common) screen { return newDetectScreen(c, false) },
	"track":        func(c *common) screen { return newPickerScreen(c, steps.Catalogue(), "", nil) },
	"plan":         func(c *common) screen { return newPlanScreen(c, examplePlan(), nil) },
	"run":          func(c *common) screen { return newRunScreen(c, examplePlan(), false) },
	"summary":      func(c *common) screen { p := examplePlan(); return newSummaryScreen(c, newRunState(p), p, "") },
	"troubleshoot": func(c *common) screen { return newTroubleshootScreen(c, "", nil) },
}

// examplePlan is a one-step plan of therock-toolbox.
func examplePlan() *Plan {
	tr, _ := steps.Lookup("therock-toolbox")
	return &Plan{Plan: &steps.Plan{Track: tr, Steps: []steps.PlannedStep{{Step: steps.Step{ID: "toolbox", Title: "Toolbox"}, WillRun: true, Reason: "never ran"}}}}
}

// everyScreen builds one of each screen (screenExamples) on the fake.
func everyScreen(t *testing.T) map[string]screen {
	t.Helper()
	c := testCommonOn(newFakeBackend(t))
	out := map[string]screen{}
	for name, build := range screenExamples {
		out[name] = build(c)
	}
	return out
}

// TestEveryScreenHasACrumb: each screen names itself, and the header shows
// that name, within the flow or on its own.
func TestEveryScreenHasACrumb(t *testing.T) {
	for want, s := range everyScreen(t) {
		t.Run(want, func(t *testing.T) {
			if got := s.Crumb(); got != want {
				t.Fatalf("%T.Crumb() = %q, want %q", s, got, want)
			}
			m := newSized(t, newFakeBackend(t), 100, 30)
			m.open(s)
			header, _, _ := strings.Cut(plain(m), "\n")
			if !strings.Contains(header, want) {
				t.Errorf("header %q lacks the crumb %q", header, want)
			}
			inFlow := slices.Contains(flowCrumbs, want)
			if shows := strings.Contains(header, "detect › track"); shows != inFlow {
				t.Errorf("header %q: flow shown %v, want %v (the flow is for its own steps)", header, shows, inFlow)
			}
		})
	}
}

// TestEveryScreenIsInTheTable finds, in the package's source, every type
// that declares Crumb, so that a new screen cannot skip the crumb test.
func TestEveryScreenIsInTheTable(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "Crumb" {
				continue
			}
			recv := fn.Recv.List[0].Type
			if star, ok := recv.(*ast.StarExpr); ok {
				recv = star.X
			}
			declared = append(declared, recv.(*ast.Ident).Name)
		}
	}
	var tabled []string
	for _, s := range everyScreen(t) {
		tabled = append(tabled, reflect.TypeOf(s).Elem().Name())
	}
	sort.Strings(declared)
	sort.Strings(tabled)
	if !slices.Equal(declared, tabled) {
		t.Errorf("screens declaring Crumb: %v; screens in everyScreen: %v", declared, tabled)
	}
}

// TestViewOnlyReads: drawing a screen changes none of its fields; layout
// and scroll clamping happen in Update and SetSize.
func TestViewOnlyReads(t *testing.T) {
	for name, s := range everyScreen(t) {
		t.Run(name, func(t *testing.T) {
			s.SetSize(100, 12)
			if d, ok := s.(*detectScreen); ok {
				d.Update(detectedMsg{det: strixHalo()})
			}
			for range 40 {
				s.Update(press("down"))
			}
			before := fields(s)
			s.View()
			if after := fields(s); after != before {
				t.Errorf("View changed the screen:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

func fields(s screen) string { return fmt.Sprintf("%+v", reflect.ValueOf(s).Elem().Interface()) }

// TestScrollIsClampedInUpdate: past the end, one key up moves the view at
// once, without a frame drawn in between to clamp it.
func TestScrollIsClampedInUpdate(t *testing.T) {
	s := newDetectScreen(testCommon(), false)
	s.SetSize(100, 14)
	s.Update(detectedMsg{det: manyChecks(30)})
	for range 100 {
		s.Update(press("down"))
	}
	bottom := ansi.Strip(s.View())
	s.Update(press("up"))
	if ansi.Strip(s.View()) == bottom {
		t.Errorf("up after scrolling past the end did not move:\n%s", bottom)
	}

	tr, _ := steps.Lookup("therock-toolbox")
	var ps []steps.PlannedStep
	for i := range 30 {
		ps = append(ps, steps.PlannedStep{Step: steps.Step{ID: "step" + itoa(i), Title: "Step"}, WillRun: true, Reason: "never ran"})
	}
	sum := newSummaryScreen(testCommon(), newRunState(&Plan{Plan: &steps.Plan{Track: tr, Steps: ps}}), &Plan{Plan: &steps.Plan{Track: tr, Steps: ps}}, "")
	sum.SetSize(100, 10)
	top := ansi.Strip(sum.View())
	sum.Update(press("pgdown"))
	if v := ansi.Strip(sum.View()); v == top || !strings.Contains(v, "step") {
		t.Errorf("the summary does not page down:\n%s", v)
	}
	for range 100 {
		sum.Update(press("pgdown"))
	}
	if sum.offset != len(sum.lines)-sum.room() {
		t.Errorf("summary offset %d past its %d lines", sum.offset, len(sum.lines))
	}
}

// TestPrompt: Enter submits and leaves closing to the caller, Esc cancels
// and closes, other keys edit.
func TestPrompt(t *testing.T) {
	k := DefaultKeyMap()
	p := newPrompt("/", "", "find", "cancel")
	p.Open()
	for _, r := range "rocm" {
		if res, _ := p.Key(press(string(r)).(tea.KeyPressMsg), k); res != promptEditing {
			t.Fatalf("typing %q gave %v", r, res)
		}
	}
	if res, _ := p.Key(press("enter").(tea.KeyPressMsg), k); res != promptSubmitted || p.Value() != "rocm" || !p.IsOpen() {
		t.Errorf("enter: %v, value %q, open %v", res, p.Value(), p.IsOpen())
	}
	if res, _ := p.Key(press("esc").(tea.KeyPressMsg), k); res != promptCancelled || p.IsOpen() {
		t.Errorf("esc: %v, open %v", res, p.IsOpen())
	}
	if h := p.Help(k); len(h) != 3 || h[0].Help().Desc != "find" || h[1].Help().Desc != "cancel" || h[2].Help().Key != "ctrl+c" {
		t.Errorf("help %v", h)
	}
}

// TestKeysMeanOneThingPerScreen: on each screen, in the states the flow
// leaves it in, neither its short nor its full help lists a key twice with
// two meanings, the root's keys (help, quit) included. A key that means
// something else on one screen belongs to that screen's own keys (its
// file), not to a second meaning of a shared binding.
func TestKeysMeanOneThingPerScreen(t *testing.T) {
	check := func(t *testing.T, where string, m *Model) {
		t.Helper()
		root := []key.Binding{m.helpKey(), m.common.Keys.Quit, m.common.Keys.ForceQuit}
		lists := map[string][]key.Binding{"short help": append(slices.Clone(root), m.top().ShortHelp()...)}
		full := slices.Clone(root)
		for _, row := range m.top().FullHelp() {
			full = append(full, row...)
		}
		lists["full help"] = full
		for list, bindings := range lists {
			meaning := map[string]string{}
			for _, b := range bindings {
				if !b.Enabled() {
					continue
				}
				for _, k := range b.Keys() {
					if had, ok := meaning[k]; ok && had != b.Help().Desc {
						t.Errorf("%s, %s: %q means %q and %q", where, list, k, had, b.Help().Desc)
					}
					meaning[k] = b.Help().Desc
				}
			}
		}
	}
	for name, build := range screenExamples {
		t.Run(name, func(t *testing.T) {
			m := newSized(t, newFakeBackend(t), 100, 30)
			drive(t, m, openMsg{s: build(m.common)})
			check(t, name, m)
		})
	}
	t.Run("the flow to a failed run", func(t *testing.T) {
		m := newSized(t, newFakeBackend(t), 100, 30)
		check(t, "detect", m)
		drive(t, m, press("enter"))
		check(t, "picker", m)
		drive(t, m, press("enter"))
		check(t, "plan", m)
		drive(t, m, press("enter"))
		check(t, "run, failed", m)
		drive(t, m, press("enter"))
		check(t, "summary", m)
	})
}

// TestKeyboardGaps: j/k scroll the log; the detection screen has g/G; d runs
// the demo where there is no AMD GPU.
func TestKeyboardGaps(t *testing.T) {
	f := newFakeBackend(t)
	f.extra = 100
	m := toRun(t, f, 120, 40)
	drive(t, m, press("k"))
	if m.run.log.follow {
		t.Error("k did not scroll the log up")
	}
	drive(t, m, press("j"))
	s := newDetectScreen(testCommon(), true)
	s.SetSize(100, 14)
	s.Update(detectedMsg{det: manyChecks(30)})
	s.Update(press("G"))
	if s.offset == 0 {
		t.Error("G did not go to the end of the checks")
	}
	s.Update(press("g"))
	if s.offset != 0 {
		t.Error("g did not go back to the top")
	}
	if msgOf(s.Update(press("d"))) != nil {
		t.Error("d ran the demo on a machine with a GPU")
	}
	s.Update(detectedMsg{det: &Detection{Report: &detect.Report{}, Source: "this machine"}})
	if _, ok := msgOf(s.Update(press("d"))).(runDemoMsg); !ok || !strings.Contains(ansi.Strip(s.View()), "(press d)") {
		t.Error("d does not run the demo on a machine without an AMD GPU")
	}
}

// TestEveryScrollingViewSharesTheScrollKeys: the plan and the summary
// scroll with the keys the detection screen has (PgUp/PgDn, g/G, Home/End)
// and every view that scrolls lists g and G in its help, as the docs say.
func TestEveryScrollingViewSharesTheScrollKeys(t *testing.T) {
	long := examplePlan()
	for i := range 40 {
		long.Steps = append(long.Steps, steps.PlannedStep{Step: steps.Step{ID: fmt.Sprintf("step%d", i), Title: "A step"}, WillRun: true, Reason: "never ran"})
	}
	c := testCommon()
	views := map[string]interface {
		screen
		scrolled() int
	}{
		"plan":    planOffset{newPlanScreen(c, long, nil)},
		"summary": summaryOffset{newSummaryScreen(c, newRunState(long), long, "")},
	}
	for name, s := range views {
		t.Run(name, func(t *testing.T) {
			s.SetSize(80, 10)
			for _, k := range []struct {
				key   string
				atTop bool
			}{{"G", false}, {"g", true}, {"end", false}, {"home", true}, {"pgdown", false}, {"pgup", true}} {
				s.Update(press(k.key))
				if (s.scrolled() == 0) != k.atTop {
					t.Errorf("after %s the offset is %d", k.key, s.scrolled())
				}
			}
		})
	}
	for name, s := range everyScreen(t) {
		if name == "track" || name == "run" || name == "serve" {
			continue // the picker's g/G pick the first and last track; the log has its own keys; serve scrolls once its server runs
		}
		t.Run(name+" help", func(t *testing.T) {
			var keys []string
			for _, row := range s.FullHelp() {
				for _, b := range row {
					keys = append(keys, b.Help().Key)
				}
			}
			if !slices.Contains(keys, "g") || !slices.Contains(keys, "G") {
				t.Errorf("%s's help lists %q: no g and G", name, keys)
			}
		})
	}
}

type planOffset struct{ *planScreen }

func (p planOffset) scrolled() int { return p.offset }

type summaryOffset struct{ *summaryScreen }

func (p summaryOffset) scrolled() int { return p.offset }
