package tui

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/steps/serve"
	"github.com/haloforge/haloforge/tui/linemode"
)

func init() {
	screenExamples["serve"] = func(c *common) screen { return newServeScreen(c, "llamacpp-distro") }
}

// follow sends msg to the screen and then every message its commands
// return, until none is left or one does not answer within d.
func follow(t *testing.T, s *serveScreen, msg tea.Msg, d time.Duration) {
	t.Helper()
	queue := []tea.Msg{msg}
	for n := 0; len(queue) > 0; n++ {
		if n > 10000 {
			t.Fatal("the screen never settles")
		}
		m := queue[0]
		queue = queue[1:]
		cmd := s.Update(m)
		msgs, _ := runWithin(cmd, d)
		for _, x := range msgs {
			queue = append(queue, x)
		}
	}
}

func newServeTest(t *testing.T) (*serveScreen, *fakeBackend) {
	t.Helper()
	f := newFakeBackend(t)
	s := newServeScreen(testCommonOn(f), "therock-toolbox")
	s.SetSize(110, 60)
	follow(t, s, s.Init()(), time.Second)
	return s, f
}

func screenText(s *serveScreen) string { return ansi.Strip(strings.Join(s.lines, "\n")) }

// The form opens on the track's defaults with the fit of the tiny model
// against the GTT ceiling; changing the context changes the estimate at
// once, and a context that does not fit says what would and starts nothing.
func TestServeScreenLiveFit(t *testing.T) {
	s, _ := newServeTest(t)
	text := screenText(s)
	for _, want := range []string{"Serve and measure · llamacpp-distro · llama.cpp", "model    ", "tiny-random.gguf",
		"fits  6.7 MiB of 111.6 GiB usable (0.90 × 124 GiB)", "KV cache 256 KiB (ctx 512)", "command  llama-server -m "} {
		if !strings.Contains(text, want) {
			t.Fatalf("the form lacks %q:\n%s", want, text)
		}
	}
	s.Update(press("down")) // context: from the model's trained 512, doubled
	s.Update(keyRight())
	if text := screenText(s); !strings.Contains(text, "context  1024") || !strings.Contains(text, "KV cache 512 KiB (ctx 1024)") {
		t.Fatalf("the estimate did not follow the context:\n%s", text)
	}
	// A context far beyond memory: edit the field.
	s.Update(press("e"))
	if !s.TakesText() {
		t.Fatal("e did not open the field for typing")
	}
	s.edit.SetValue("99999999999")
	s.Update(press("enter"))
	text = screenText(s)
	if !strings.Contains(text, "does not fit") || !strings.Contains(text, "try --ctx") {
		t.Fatalf("no advice for a context that does not fit:\n%s", text)
	}
	if cmd := s.Update(press("enter")); cmd != nil || s.running {
		t.Fatal("a launch that does not fit was started")
	}
	// Util: left lowers it by 0.05 and the usable share follows.
	s.Update(press("down"))
	s.Update(keyLeft())
	if !strings.Contains(screenText(s), "util     0.85") {
		t.Fatalf("util not lowered:\n%s", screenText(s))
	}
}

func keyRight() tea.Msg { return tea.KeyPressMsg{Code: tea.KeyRight} }
func keyLeft() tea.Msg  { return tea.KeyPressMsg{Code: tea.KeyLeft} }

// pumpServe feeds the server's events to the screen, one at a time, until
// done says so; it reads the channel itself, so no waiting command is left
// behind to take events the test needs.
func pumpServe(t *testing.T, s *serveScreen, done func() bool) {
	t.Helper()
	for !done() {
		select {
		case e, ok := <-s.serving.Events():
			if !ok {
				s.Update(serveEventsMsg{closed: true})
				return
			}
			s.Update(serveEventsMsg{events: []runner.Event{e}})
		case <-time.After(10 * time.Second):
			t.Fatal("the server's events stopped")
		}
	}
}

// Start, phases, readiness, the first completion, the stop, then the
// benchmark's table against the references.
func TestServeScreenServesAndBenches(t *testing.T) {
	s, _ := newServeTest(t)
	msgs, _ := runWithin(s.Update(press("enter")), time.Second)
	if len(msgs) != 1 {
		t.Fatalf("enter: %v", msgs)
	}
	s.Update(msgs[0]) // started: the screen's own wait is not run, pumpServe reads instead
	pumpServe(t, s, func() bool { return s.run.smoke != nil })
	text := screenText(s)
	for _, want := range []string{"Start-up", "✓ starting llama-server", "✓ healthy: waiting for /v1/models", "✓ ready",
		"✓ ready at http://127.0.0.1:8080 in 2s", "/v1/completions answered: first token after 118 ms, 9 tokens at 385.9 tok/s (engine: 365.1 tok/s)"} {
		if !strings.Contains(text, want) {
			t.Fatalf("after the start, no %q:\n%s", want, text)
		}
	}
	if !s.running {
		t.Fatal("the server is not running after readiness")
	}
	if cmd := s.Update(press("esc")); cmd != nil {
		t.Fatal("esc left the screen while the server runs")
	}
	follow(t, s, press("b"), time.Second)
	text = screenText(s)
	for _, want := range []string{"Benchmark", "pp64", "tg16", "no reference for this hardware", "verdict: no reference for this hardware: it ran on llvmpipe", "engine time 1216 ms",
		"roofline: no known memory bandwidth", "roofline: no known compute peak"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the bench view lacks %q:\n%s", want, text)
		}
	}
	s.Update(press("x"))
	pumpServe(t, s, func() bool { return !s.running })
	if s.running || s.run.finished == nil || s.run.finished.Status != steps.OutcomeSucceeded {
		t.Fatalf("after x: running %v, finished %+v", s.running, s.run.finished)
	}
	if !strings.Contains(screenText(s), "■ server stopped: ready in 2s; stopped by you") {
		t.Fatalf("no stop line:\n%s", screenText(s))
	}
}

// A stall names its phase with the family's finding; the screen marks the phase.
func TestServeScreenShowsAStall(t *testing.T) {
	s, _ := newServeTest(t)
	s.run = serverRun{started: true, phases: serve.PhasesOf(serve.EngineLlamaCpp), reached: map[serve.PhaseID]serve.StartupPhase{}}
	s.running = true
	ph := serve.PhasesOf(serve.EngineLlamaCpp)[1]
	s.Update(serveEventsMsg{events: []runner.Event{
		serve.StartupPhase{Step: "serve", Phase: ph.ID, Title: ph.Title, Index: 2, Total: 6, Budget: ph.Budget, Elapsed: time.Second},
		runner.Found{Step: "serve", Finding: stallFindingFor(string(ph.ID))},
		runner.StepFinished{Step: "serve", Status: steps.OutcomeFailed, Why: `no progress for 6m0s in phase "loading" (loading the model)`, Log: "/state/runs/x/serve.log"},
	}, closed: true})
	text := screenText(s)
	for _, want := range []string{"■ loading the model", "server-port-never-opens", "✗ server failed: no progress for 6m0s in phase \"loading\"", "log: /state/runs/x/serve.log"} {
		if !strings.Contains(text, want) {
			t.Fatalf("no %q:\n%s", want, text)
		}
	}
}

func stallFindingFor(phase string) diagnose.Finding {
	return diagnose.Finding{Family: "server-port-never-opens", Summary: "The server stalled in start-up: stuck in phase " + phase + "."}
}

// The summary of a clean run of a servable track opens the serve screen on s.
func TestSummaryOpensServe(t *testing.T) {
	f := newFakeBackend(t)
	m := newSized(t, f, 110, 40)
	tr, _ := steps.Lookup("llamacpp-distro")
	plan := &Plan{Plan: &steps.Plan{Track: tr, Steps: []steps.PlannedStep{{Step: steps.Step{ID: "toolbox", Title: "Toolbox"}, WillRun: true}}}}
	rs := newRunState(plan)
	m.open(newSummaryScreen(m.common, rs, &Plan{Plan: &steps.Plan{Track: tr}}, ""))
	if !strings.Contains(plain(m), "s serve a model") {
		t.Fatalf("the summary does not offer serving:\n%s", plain(m))
	}
	drive(t, m, press("s"))
	if m.top().Crumb() != "serve" {
		t.Fatalf("s opened %q", m.top().Crumb())
	}
}

// A track that is not built gets no form: one line says so and what builds
// it, and Enter starts nothing.
func TestServeScreenRefusesUnbuiltTrack(t *testing.T) {
	f := newFakeBackend(t)
	f.serveErr = &serve.NotBuiltError{Track: "llamacpp-distro", Why: "llamacpp-distro is not built yet", Next: "haloforge build --track llamacpp-distro"}
	s := newServeScreen(testCommonOn(f), "llamacpp-distro")
	s.SetSize(80, 24)
	follow(t, s, s.Init()(), time.Second)
	text := screenText(s)
	for _, want := range []string{"✗ llamacpp-distro is not built yet: nothing was started.", "Build it first, in your terminal", "  haloforge build --track llamacpp-distro"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the screen lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "command  ") {
		t.Fatalf("a form for an unbuilt track:\n%s", text)
	}
	if cmd := s.Update(press("enter")); cmd != nil || s.running {
		t.Fatal("Enter started something on an unbuilt track")
	}
	// The footer offers only the keys that work there: esc and q.
	var help []string
	for _, b := range s.ShortHelp() {
		help = append(help, b.Help().Key+" "+b.Help().Desc)
	}
	if got := strings.Join(help, " • "); got != "esc back • q quit" {
		t.Errorf("footer = %q, want only esc back and q quit", got)
	}
}

// An image that is gone since the build: every step is cached, so the plan's
// Enter would build nothing; the screen gives the exact command (with the
// user's flags) and the image reference whole, wrapped, never cut.
func TestServeScreenImageGone(t *testing.T) {
	const image = "docker.io/rocm/vllm:rocm10.0.0_ubuntu24.04_py3.14_pytorch_2.12.0_vllm_0.27.0@sha256:b8a082f346d069376d35784250e38b23a043efe979408ae3a33d7c6b62ee3276"
	f := newFakeBackend(t)
	f.serveErr = &serve.NotBuiltError{Track: "vllm-image", Why: "the image " + image + " of vllm-image does not exist (removed since the build?)",
		Next: "haloforge build --track vllm-image --from pull --state-dir /tmp/st"}
	s := newServeScreen(testCommonOn(f), "vllm-image")
	s.SetSize(80, 24)
	follow(t, s, s.Init()(), time.Second)
	text := screenText(s)
	var rows []string
	for _, l := range strings.Split(text, "\n") {
		rows = append(rows, strings.TrimRight(l, " "))
	}
	if joined := strings.Join(rows, ""); !strings.Contains(joined, image) {
		t.Fatalf("the image reference is cut:\n%s", text)
	}
	if strings.Contains(text, "Enter on the track's plan") {
		t.Fatalf("the screen sends the user to a plan that builds nothing:\n%s", text)
	}
	if !strings.Contains(text, "  haloforge build --track vllm-image --from pull --state-dir /tmp/st") {
		t.Fatalf("the exact build command is missing:\n%s", text)
	}
	for _, l := range strings.Split(text, "\n") {
		if ansi.StringWidth(l) > 80 {
			t.Errorf("row wider than 80: %q", l)
		}
	}
}

// At 80x24 (a body of 22 rows) the started server's result is on screen
// without scrolling: the form folds into two lines, the engine log gives
// way to the result once it is ready. On a smaller terminal the screen
// scrolls to the result by itself. Long lines wrap instead of being cut:
// the fit line, the command (between its words), the bench verdicts; the
// model's path keeps its file name.
func TestServeScreenFitsAndWraps(t *testing.T) {
	for _, size := range [][2]int{{80, 22}, {60, 13}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			f := newFakeBackend(t)
			s := newServeScreen(testCommonOn(f), "llamacpp-distro")
			s.SetSize(size[0], size[1])
			follow(t, s, s.Init()(), time.Second)
			form := screenText(s)
			for _, want := range []string{"(0.90 × 124 GiB)", "-fa on", "tiny-random.gguf"} {
				if !strings.Contains(form, want) {
					t.Fatalf("the form lost %q at width %d:\n%s", want, size[0], form)
				}
			}
			for _, l := range strings.Split(form, "\n") {
				if ansi.StringWidth(l) > size[0] {
					t.Fatalf("a line wider than %d: %q", size[0], l)
				}
			}
			msgs, _ := runWithin(s.Update(press("enter")), time.Second)
			s.Update(msgs[0])
			pumpServe(t, s, func() bool { return s.run.smoke != nil })
			view := ansi.Strip(s.View())
			for _, want := range []string{"http://127.0.0.1:8080", "first token after 118 ms"} {
				if !strings.Contains(view, want) {
					t.Fatalf("the result %q is not on the %dx%d screen:\n%s", want, size[0], size[1], view)
				}
			}
			if size[0] == 80 && !strings.Contains(view, "Serve and measure") {
				t.Fatalf("at 80x24 the title scrolled away:\n%s", view)
			}
			follow(t, s, press("b"), time.Second)
			if view := ansi.Strip(s.View()); !strings.Contains(view, "verdict: ") {
				t.Fatalf("the benchmark's verdict is not on the %dx%d screen:\n%s", size[0], size[1], view)
			}
			text := screenText(s)
			if !strings.Contains(strings.Join(strings.Fields(text), " "), "it ran on llvmpipe (LLVM 22.1.8, 256 bits); the references are Radeon 8060S") {
				t.Fatalf("a bench verdict was cut:\n%s", text)
			}
			s.Update(press("x"))
			pumpServe(t, s, func() bool { return !s.running })
		})
	}
}

func TestPathTail(t *testing.T) {
	for _, tc := range []struct {
		in   string
		w    int
		want string
	}{
		{"/short/m.gguf", 40, "/short/m.gguf"},
		{"/tmp/ux/state/demo-123/models/tiny-random.gguf", 26, "…/models/tiny-random.gguf"},
		{"/a/b.gguf", 5, "/a/b.gguf"}, // too narrow to shorten usefully
	} {
		t.Run(fmt.Sprintf("%s at %d", tc.in, tc.w), func(t *testing.T) {
			if got := pathTail(tc.in, tc.w); got != tc.want || (tc.w >= 8 && ansi.StringWidth(got) > tc.w) {
				t.Errorf("pathTail(%q, %d) = %q, want %q", tc.in, tc.w, got, tc.want)
			}
		})
	}
}

// TestServeScreenSaysWhatServePrints: the serve screen says what `haloforge
// serve` prints (the demo's serve act is this screen, and it must match the
// real command): the same ready and first-answer sentences, and the answer.
func TestServeScreenSaysWhatServePrints(t *testing.T) {
	s, _ := newServeTest(t)
	msgs, _ := runWithin(s.Update(press("enter")), time.Second)
	s.Update(msgs[0])
	pumpServe(t, s, func() bool { return s.run.smoke != nil })
	events := make(chan runner.Event, 2)
	events <- *s.run.ready
	events <- *s.run.smoke
	close(events)
	var cli strings.Builder
	linemode.Print(&cli, events, linemode.Options{})
	// words, without the " \\" that continues a command on the next row:
	// the screen and line mode wrap the commands at different widths
	words := func(s string) string {
		return strings.Join(slices.DeleteFunc(strings.Fields(s), func(w string) bool { return w == "\\" }), " ")
	}
	screen := words(screenText(s))
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(cli.String()), "\n") {
		l = strings.TrimPrefix(strings.TrimPrefix(l, "✓ [serve] "), "  ")
		if !strings.Contains(screen, words(l)) {
			t.Errorf("serve prints %q; the screen does not say it:\n%s", l, screenText(s))
		}
		n++
	}
	if n != 8 { // ready, base URL, export, curl on three rows, answered, answer
		t.Fatalf("line mode printed %d lines:\n%s", n, cli.String())
	}
	s.Update(press("x"))
	pumpServe(t, s, func() bool { return !s.running })
}

// TestServeScreenCopiesUsage: once the server is ready the screen gives its
// OpenAI base URL, the export and the curl (the words line mode prints),
// its footer names c, and c puts the two commands on the clipboard one a
// line, as a shell reads them; before it is ready c copies nothing.
func TestServeScreenCopiesUsage(t *testing.T) {
	s, _ := newServeTest(t)
	msgs, _ := runWithin(s.Update(press("enter")), time.Second)
	s.Update(msgs[0])
	if cmd := s.Update(press("c")); cmd != nil && s.run.ready == nil {
		t.Errorf("c before readiness did something")
	}
	pumpServe(t, s, func() bool { return s.run.smoke != nil })
	r := *s.run.ready
	scr := screenText(s)
	for _, want := range []string{"OpenAI base URL: " + r.URL + "/v1", "export OPENAI_BASE_URL=" + r.URL + "/v1", "curl -sS " + r.URL + "/v1/completions", "c copies the export and the curl"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the ready screen lacks %q:\n%s", want, scr)
		}
	}
	var footer []string
	for _, b := range s.ShortHelp() {
		footer = append(footer, b.Help().Key+" "+b.Help().Desc)
	}
	if !slices.Contains(footer, "c copy export and curl") {
		t.Errorf("footer %q lacks the copy key", footer)
	}
	// the demo's server is a recording: the screen says nothing listens
	s.Demo = true
	s.relayout()
	if !strings.Contains(screenText(s), "Use it on a real server (the demo serves nothing)") {
		t.Errorf("the demo offers its recorded address as live:\n%s", screenText(s))
	}
	s.Demo = false
	msgs, _ = runWithin(s.Update(press("c")), time.Second)
	if len(msgs) != 1 || fmt.Sprint(msgs[0]) != strings.Join(r.Commands(), "\n")+"\n" {
		t.Errorf("c sent %q, want the commands %q", msgs, r.Commands())
	}
	if !strings.Contains(screenText(s), "copied the export and the curl") {
		t.Errorf("the screen does not say it copied:\n%s", screenText(s))
	}
	s.Update(press("x"))
	pumpServe(t, s, func() bool { return !s.running })
	if strings.Contains(screenText(s), "OpenAI base URL") {
		t.Errorf("a stopped server still offers its URL:\n%s", screenText(s))
	}
}
