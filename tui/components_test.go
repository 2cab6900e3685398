package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
)

// Direct Update/View tests of each screen, without the root (huh's style).

func testCommon() *common {
	return &common{Width: 100, Height: 30, Styles: DefaultStyles(), Keys: DefaultKeyMap()}
}

// testCommonOn is testCommon with b as the session's engine.
func testCommonOn(b Backend) *common { return withBackend(testCommon(), b) }

// withBackend gives c the session's engine b.
func withBackend(c *common, b Backend) *common {
	c.backend = b
	return c
}

// msgOf runs a command and returns its message (nil for none).
func msgOf(cmd tea.Cmd) tea.Msg {
	if cmd == nil {
		return nil
	}
	return cmd()
}

func TestDetectScreenLoadsScrollsAndChooses(t *testing.T) {
	s := newDetectScreen(testCommon(), false)
	s.SetSize(100, 14)
	if v := ansi.Strip(s.View()); !strings.Contains(v, "Looking at your GPU") {
		t.Fatalf("loading view: %q", v)
	}
	if msgOf(s.Update(press("enter"))) != nil {
		t.Error("enter did something before detection finished")
	}
	det := strixHalo()
	for i := range 12 {
		det.Checks = append(det.Checks, detect.Check{ID: detect.CheckID("extra-" + itoa(i)), Status: detect.StatusOK, Summary: "fine"})
	}
	s.Update(detectedMsg{det: det})
	v := ansi.Strip(s.View())
	if !strings.Contains(v, "Radeon 8060S Graphics  gfx1151") || !strings.Contains(v, "VRAM 512 MiB · GTT 124 GiB") {
		t.Errorf("GPU card:\n%s", v)
	}
	if !strings.Contains(v, "↑/↓ 1–") {
		t.Fatalf("a long check list has no scroll position:\n%s", v)
	}
	s.Update(press("down"))
	if v := ansi.Strip(s.View()); !strings.Contains(v, "↑/↓ 2–") {
		t.Errorf("down did not scroll:\n%s", v)
	}
	if got, ok := msgOf(s.Update(press("enter"))).(openPickerMsg); !ok || got.preselect != "therock-toolbox" {
		t.Errorf("enter sent %#v, want the picker on the recommended track", got)
	}
	if got, ok := msgOf(s.Update(press("t"))).(openMsg); !ok || got.s.Crumb() != "troubleshoot" {
		t.Error("t did not open troubleshooting")
	}
}

func TestDetectScreenShowsFixOnlyForWarnAndFail(t *testing.T) {
	s := newDetectScreen(testCommon(), false)
	s.SetSize(100, 30)
	s.Update(detectedMsg{det: &Detection{Report: &detect.Report{GPUs: []detect.GPU{{GFX: ptr("gfx1151")}}, Checks: []detect.Check{
		{ID: "gpu", Status: detect.StatusOK, Summary: "ok", Fix: "never shown"},
		{ID: "gtt-size", Status: detect.StatusWarn, Summary: "small", Fix: "raise ttm.pages_limit"},
		{ID: "iommu", Status: detect.StatusSkip, Summary: "n/a", Fix: "never shown either"},
	}}}})
	v := ansi.Strip(s.View())
	if strings.Contains(v, "never shown") || !strings.Contains(v, "fix: raise ttm.pages_limit") {
		t.Errorf("fix lines:\n%s", v)
	}
	if !strings.Contains(v, "1 ok · 1 warn · 0 fail") {
		t.Errorf("counts:\n%s", v)
	}
}

func TestPlanScreenFlagsFloatingAndCached(t *testing.T) {
	tr, _ := steps.Lookup("nightly-spoof")
	p := &Plan{Plan: &steps.Plan{Track: tr, Floating: []string{"NIGHTLY_IMAGE"}, Steps: []steps.PlannedStep{
		{Step: steps.Step{ID: "pull", Title: "Pull"}, WillRun: true, Reason: "pins changed: NIGHTLY_IMAGE", PinValues: map[string]string{"NIGHTLY_IMAGE": "rocm/vllm-dev:nightly"}},
		{Step: steps.Step{ID: "verify", Title: "Verify"}, WillRun: false, Reason: "up to date (last success 2026-11-20)"},
	}}}
	s := newPlanScreen(testCommon(), p, nil)
	s.SetSize(100, 25)
	v := ansi.Strip(s.View())
	for _, want := range []string{"1 of 2 steps run", "▶ runs", "= cached", "pins changed: NIGHTLY_IMAGE",
		"NIGHTLY_IMAGE=rocm/vllm-dev:nightly (floating)", "! Floating pins (not reproducible): NIGHTLY_IMAGE"} {
		if !strings.Contains(v, want) {
			t.Errorf("plan lacks %q:\n%s", want, v)
		}
	}
	if _, ok := msgOf(s.Update(press("enter"))).(startRunMsg); !ok {
		t.Error("enter did not start")
	}
	if _, ok := msgOf(s.Update(press("esc"))).(closeScreenMsg); !ok {
		t.Error("esc did not go back")
	}
}

func TestSummaryScreenAfterFailure(t *testing.T) {
	tr, _ := steps.Lookup("therock-toolbox")
	rs := newRunState(&Plan{Plan: &steps.Plan{Track: tr, Steps: []steps.PlannedStep{{Step: steps.Step{ID: "rocm"}}, {Step: steps.Step{ID: "aiter", Optional: true}}, {Step: steps.Step{ID: "vllm"}}}}})
	rs.Apply(runner.RunStarted{Track: "therock-toolbox", RunDir: "/s/runs/r1", Total: 3})
	rs.Apply(runner.Found{Step: "rocm", Finding: diagnose.Finding{Family: "therock-amdsmi-double-free", Summary: "double free at exit"}})
	rs.Apply(runner.StepFinished{Step: "rocm", Status: steps.OutcomeFailed, ExitCode: 134, Log: "/s/runs/r1/rocm.log"})
	rs.Apply(runner.RunFinished{Status: steps.OutcomeFailed})
	s := newSummaryScreen(testCommon(), rs, &Plan{Plan: &steps.Plan{Track: tr}}, "haloforge build --track therock-toolbox --resume")
	s.SetSize(100, 30)
	v := ansi.Strip(s.View())
	for _, want := range []string{"✗ therock-toolbox failed at rocm", "✗ rocm             failed: exit 134", "therock-amdsmi-double-free\n        double free at exit",
		"· vllm             not run", "\n  $ haloforge build --track therock-toolbox --resume\n", "$ haloforge diagnose /s/runs/r1/rocm.log",
		"run     /s/runs/r1", "log     /s/runs/r1/rocm.log"} {
		if !strings.Contains(v, want) {
			t.Errorf("summary lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "vllm serve") {
		t.Errorf("a failed run offers the next commands of a built track:\n%s", v)
	}
}

func TestPickerScreenDetailsAndBadges(t *testing.T) {
	p := newPickerScreen(testCommon(), steps.Catalogue(), "llamacpp-rocm", nil)
	p.SetSize(100, 30)
	p.Update(p.Init()())
	v := ansi.Strip(p.View())
	if !strings.Contains(v, "> llamacpp-rocm") || !strings.Contains(v, "experimental") {
		t.Errorf("picker:\n%s", v)
	}
	for s, want := range map[steps.Status]string{steps.StatusRecommended: "recommended", steps.StatusBlockedUpstream: "⚠ blocked", steps.StatusStable: "stable"} {
		if got := badgeText(s); got != want {
			t.Errorf("badge %s = %q", s, got)
		}
	}
}

// A shortened SHA or digest is marked "…": it never reads as whole.
func TestShortPinMarksTheCut(t *testing.T) {
	for in, want := range map[string]string{
		"docker.io/rocm/vllm:tag@sha256:b8a082f346d069376d35784250e38b23a043efe979408ae3a33d7c6b62ee3276": "docker.io/rocm/vllm:tag@sha256:b8a082f346d0…",
		"6e448d0ea9bf3d88d898b65449ca6dc2aec170ac":                                                        "6e448d0ea9bf…",
		"v0.10.2": "v0.10.2",
	} {
		if got := shortPin(in); got != want {
			t.Errorf("shortPin(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDetectFoldsChecksWithoutAnAMDGPU: on a machine with no AMD GPU the
// checks about one are a single line, not one identical line each; the
// others keep their rows.
func TestDetectFoldsChecksWithoutAnAMDGPU(t *testing.T) {
	checks := []detect.Check{
		{ID: detect.CheckGPU, Status: detect.StatusFail, Summary: "no AMD GPU found"},
		{ID: detect.CheckKFDAccess, Status: detect.StatusSkip, Summary: detect.SkipNoAMD},
		{ID: detect.CheckHSAOverride, Status: detect.StatusSkip, Summary: detect.SkipNoAMD},
		{ID: detect.CheckContainerEngine, Status: detect.StatusOK, Summary: "podman 4.3.1"},
	}
	ds := &detectScreen{common: testCommon(), det: &Detection{Report: &detect.Report{Checks: checks}}}
	cv := ansi.Strip(ds.checksView(80))
	if strings.Contains(cv, detect.SkipNoAMD) || strings.Contains(cv, "/dev/kfd") {
		t.Errorf("the skipped checks have rows of their own:\n%s", cv)
	}
	for _, want := range []string{"no AMD GPU found", "podman 4.3.1", "2 checks about an AMD GPU skipped: this machine has none"} {
		if !strings.Contains(cv, want) {
			t.Errorf("checks lack %q:\n%s", want, cv)
		}
	}
}
