package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/installed"
	"github.com/haloforge/haloforge/steps/runner"
)

func TestRunStateProgress(t *testing.T) {
	rs := newRunState(testPlan())
	ninja := runner.Progress{Step: "rocm", Kind: runner.KindNinja, Done: 229, Total: 400, ETA: time.Minute, RunETA: time.Hour}
	rs.Apply(runner.OpenLine{Step: "rocm", Text: "early"}) // before the step runs: not its
	rs.Apply(runner.StepStarted{Step: "rocm"})
	rs.Apply(runner.OpenLine{Step: "rocm", Text: "[229/400] Building CXX object a.o"})
	rs.Apply(ninja)
	s := rs.Step("rocm")
	if s.Open != "[229/400] Building CXX object a.o" || s.Progress == nil || s.Progress.Done != 229 || rs.RunETA() != time.Hour {
		t.Fatalf("open %q, progress %+v, run ETA %v", s.Open, s.Progress, rs.RunETA())
	}
	rs.Apply(runner.Lines{Step: "rocm", First: 1, Text: []string{"[230/400] done"}})
	if s.Open != "" || s.Progress == nil {
		t.Errorf("lines end the open line, not the progress: %q %+v", s.Open, s.Progress)
	}
	rs.Apply(runner.Progress{Step: "rocm"})
	if s.Progress != nil {
		t.Errorf("a finished counter stays: %+v", s.Progress)
	}
	rs.Apply(ninja)
	rs.Apply(runner.OpenLine{Step: "rocm", Text: "Password: "})
	rs.Apply(runner.StepFinished{Step: "rocm", Status: steps.OutcomeSucceeded})
	if s.Open != "" || s.Progress != nil {
		t.Errorf("after the step: %q %+v", s.Open, s.Progress)
	}
	n := int64(1 << 20)
	rs.Apply(runner.RunFinished{Status: steps.OutcomeSucceeded, Installed: []installed.Item{{Kind: installed.KindBox, Name: "b", Engine: "podman", SizeBytes: &n}}})
	if len(rs.Installed) != 1 {
		t.Errorf("installed: %+v", rs.Installed)
	}
}

// TestRunScreenProgress: the running step's progress is a badge in the
// header and the log pane's last row, its open line that row when there is
// no progress; the run's ETA comes from the progress once earlier runs give
// one; at 80 and 120 columns nothing goes past the edge, and the row goes
// with the step.
func TestRunScreenProgress(t *testing.T) {
	for _, w := range []int{80, 120} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			c := testCommon()
			now := fixedClock
			c.now = func() time.Time { return now }
			s := newRunScreen(withBackend(c, newFakeBackend(t)), testPlan(), false)
			s.SetSize(w, 24)
			apply := func(evs ...runner.Event) string {
				t.Helper()
				s.Update(eventsMsg{events: evs})
				v := ansi.Strip(s.View())
				for _, l := range strings.Split(v, "\n") {
					if ansi.StringWidth(l) > w {
						t.Fatalf("a line is wider than %d:\n%s", w, v)
					}
				}
				if n := strings.Count(v, "\n") + 1; n > 24 {
					t.Fatalf("%d rows on a screen of 24:\n%s", n, v)
				}
				return v
			}
			v := apply(runner.StepStarted{Step: "rocm", At: now},
				runner.OpenLine{Step: "rocm", Text: "     ━━━━━━━━━━╸━━━━━━━━ 0.2/15.0 MB 1.5 MB/s eta 0:00:10"})
			if !strings.Contains(v, "… ━━━━━━━━━━╸━━━━━━━━ 0.2/15.0 MB") {
				t.Errorf("the open line is not shown:\n%s", v)
			}
			v = apply(runner.Progress{Step: "rocm", Kind: runner.KindPull, Label: "image", Done: 12 << 20, Total: 33030915,
				Unit: runner.UnitBytes, Rate: 3 << 20, ETA: 7 * time.Second})
			if !strings.Contains(s.header(), "38% of 31.5 MiB · 3 MiB/s · ETA 7s") || strings.Contains(s.header(), "no ETA on a first run") {
				t.Errorf("header: %q", ansi.Strip(s.header()))
			}
			if !strings.Contains(v, "… 38% of 31.5 MiB · 3 MiB/s · ETA 7s") {
				t.Errorf("the log pane's last row:\n%s", v)
			}
			v = apply(runner.Progress{Step: "rocm", Kind: runner.KindNinja, Label: "Building CXX object csrc/attention.cu.o",
				Done: 229, Total: 400, ETA: 3*time.Minute + 12*time.Second, RunETA: time.Hour + 5*time.Minute})
			if h := ansi.Strip(s.header()); !strings.Contains(h, "229/400 · 57% · ETA 3m12s") || (w >= 120 && !strings.Contains(h, "run ETA ~1h05m")) {
				t.Errorf("header: %q", h)
			}
			if !strings.Contains(v, "… 229/400 · 57% · ETA 3m12s · run ETA 1h05m") {
				t.Errorf("the log pane's last row:\n%s", v)
			}
			v = apply(runner.StepFinished{Step: "rocm", Status: steps.OutcomeSucceeded, Duration: time.Minute})
			if strings.Contains(v, "229/400") || strings.Contains(v, "… ━") {
				t.Errorf("the progress stays after the step:\n%s", v)
			}
		})
	}
}

func TestSummaryInstalled(t *testing.T) {
	tr, _ := steps.Lookup("llamacpp-distro")
	p := &Plan{Plan: &steps.Plan{Track: tr, Steps: []steps.PlannedStep{{Step: steps.Step{ID: "toolbox"}}, {Step: steps.Step{ID: "packages"}}, {Step: steps.Step{ID: "verify"}}}}}
	box, img, data := int64(327_600_000), int64(161_373_259), int64(782_336)
	items := []installed.Item{
		{Kind: installed.KindBox, What: installed.KindBox, Name: "haloforge-llamacpp", Engine: "sudo-podman", SizeBytes: &box},
		{Kind: installed.KindImage, What: installed.KindImage, Name: "127.0.0.1:5000/haloforge-sid-it:1", How: installed.Pulled, SizeBytes: &img},
		{Kind: installed.KindDir, What: "data", Path: "/home/u/.local/state/haloforge/llamacpp-distro", SizeBytes: &data},
	}
	for _, tc := range []struct {
		name     string
		commands func(Command) string
		want     []string
		not      []string
	}{
		{"a build", func(c Command) string {
			if c.Clean {
				return "haloforge clean --track " + c.Track + " --state-dir /tmp/s"
			}
			return "haloforge build --track " + c.Track
		}, []string{"Installed  (haloforge clean --track llamacpp-distro --state-dir /tmp/s removes it)",
			"  box haloforge-llamacpp (sudo-podman) · 312.4 MiB", "  image 127.0.0.1:5000/haloforge-sid-it:1 (pulled) · 153.9 MiB",
			"  data /home/u/.local/state/haloforge/llamacpp-distro · 764 KiB", "  total 467.1 MiB"}, nil},
		{"the demo suggests no command", nil, nil, []string{"Installed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testCommon()
			c.commands = tc.commands
			rs := newRunState(p)
			rs.Apply(runner.RunStarted{Track: tr.ID, RunDir: "/tmp/s/runs/r1", Total: 3})
			for _, st := range p.Steps {
				rs.Apply(runner.StepStarted{Step: st.ID})
				rs.Apply(runner.StepFinished{Step: st.ID, Status: steps.OutcomeSucceeded})
			}
			rs.Apply(runner.RunFinished{Status: steps.OutcomeSucceeded, Installed: items})
			s := newSummaryScreen(c, rs, p, "")
			s.SetSize(100, 60)
			v := ansi.Strip(s.View())
			mustContain(t, "summary", v, tc.want...)
			for _, n := range tc.not {
				if strings.Contains(v, n) {
					t.Errorf("summary has %q:\n%s", n, v)
				}
			}
			if len(tc.want) > 0 && strings.Index(v, "Installed") > strings.Index(v, "Artifacts") {
				t.Errorf("Installed comes after the artifacts:\n%s", v)
			}
		})
	}
}
