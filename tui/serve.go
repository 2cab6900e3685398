package tui

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/bench"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/steps/serve"
	"github.com/haloforge/haloforge/steps/verify"
)

// Server serves and benchmarks a built track, for the serve screen.
type Server interface {
	// ServeSetup is where the serve screen starts for a built track.
	ServeSetup(ctx context.Context, track string) (*ServeSetup, error)
	// PlanServe decides a launch and its fit without starting anything;
	// it is quick (a model header at most), for a live estimate.
	PlanServe(req ServeRequest) (serve.Launch, error)
	// Serve starts the server of a request and follows it.
	Serve(ctx context.Context, req ServeRequest) (Serving, error)
	// Bench runs the track's benchmark; the channel closes after RunFinished,
	// whose RunDir holds the results for BenchReport.
	Bench(ctx context.Context, req ServeRequest) (<-chan runner.Event, error)
	// BenchReport compares the results of a bench run with the references.
	BenchReport(runDir string) (*bench.Report, error)
}

// ServeSetup is where the serve screen starts: the engine the track serves
// with, its defaults, and how much GPU memory this machine has.
type ServeSetup struct {
	Track, Engine string
	Model         string // the default model ("" when none is known)
	Context       uint64
	Util          float64
	Port          int
	Ceiling       serve.Ceiling
	Note          string // said above the form (the demo names what it replays)
}

// ServeRequest is what the serve screen's form holds.
type ServeRequest struct {
	Track, Model string
	Context      uint64
	Util         float64
	Port         int
}

// Serving is a server the backend started: its events (the runner's and
// the server's own) close after RunFinished; Stop is the user's stop.
type Serving interface {
	Events() <-chan runner.Event
	Stop()
}

// serveScreen serves a model of a built track: a form (model, context,
// utilisation, port) with the fit estimate recomputed as the values
// change, then the server's start-up phase by phase, its readiness and the
// first completion's timings, and on b the benchmark against the
// references.
type serveScreen struct {
	*common
	own    serveKeys
	server Server // nil when this session serves nothing
	track  string

	setup    *ServeSetup
	setupErr error
	req      ServeRequest
	focus    int    // the form field with the focus (serveFields)
	edit     prompt // the focused field's text, while e is editing it
	launch   serve.Launch
	planErr  error

	serving  Serving
	running  bool // the server's events still come
	run      serverRun
	benching bool
	bench    benchRun
	benchCh  <-chan runner.Event

	copied bool // c put the usage commands on the clipboard

	lines  []string // the whole view at the current width
	offset int
	w, h   int
	// resultEnd is the line of the server's latest result (ready, first
	// answer, stop), -1 before one; shownResult the one last scrolled to.
	resultEnd, shownResult int
}

// serverRun is what the server's events said.
type serverRun struct {
	started  bool
	phases   []serve.Phase // the engine's, in order
	reached  map[serve.PhaseID]serve.StartupPhase
	current  serve.PhaseID
	warnings []string
	ready    *serve.Ready
	smoke    *serve.Smoke
	checking string         // what the answers check is doing
	answers  *serve.Checked // how the answers check ended
	found    []diagnose.Finding
	finished *runner.StepFinished
	tail     []string
	err      error
}

// benchRun is what the benchmark's events and comparison said.
type benchRun struct {
	started bool
	tail    []string
	status  string
	runDir  string
	engine  time.Duration // the benchmark command's own time (the step's engine time)
	report  *bench.Report
	err     error
}

// serveFields are the form's fields, in order.
var serveFields = []string{"model", "context", "util", "port"}

// engineTailLines is how many of the engine's last lines the screen shows.
const engineTailLines = 6

// Messages of the serve screen.
type (
	serveSetupMsg struct {
		setup *ServeSetup
		err   error
	}
	serveStartedMsg struct {
		serving Serving
		err     error
	}
	serveEventsMsg  eventsMsg
	benchStartedMsg struct {
		ch  <-chan runner.Event
		err error
	}
	benchEventsMsg eventsMsg
	benchReportMsg struct {
		report *bench.Report
		err    error
	}
)

// serveKeys are the serve screen's own keys: x stops the server, b
// benchmarks, e edits the focused field, ←/→ step its number.
type serveKeys struct{ Stop, Bench, Edit, Less, More key.Binding }

func newServeKeys() serveKeys {
	return serveKeys{
		Stop:  key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "stop the server")),
		Bench: key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "benchmark")),
		Edit:  key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "edit")),
		Less:  key.NewBinding(key.WithKeys("left"), key.WithHelp("←/→", "less/more")),
		More:  key.NewBinding(key.WithKeys("right")),
	}
}

// newServeScreen opens the serve screen for a built track (the summary's s).
func newServeScreen(c *common, track string) *serveScreen {
	server, _ := role[Server](c)
	return &serveScreen{common: c, own: newServeKeys(), server: server, track: track,
		edit: newPrompt("", "", "set", "cancel"), resultEnd: -1, shownResult: -1}
}

// Init asks the backend for the track's defaults and the machine's memory.
func (s *serveScreen) Init() tea.Cmd {
	b, ctx, track := s.server, s.context(), s.track
	if b == nil {
		return send(serveSetupMsg{err: errors.New("this session serves nothing: haloforge serve --track " + track + " does")})
	}
	return func() tea.Msg {
		setup, err := b.ServeSetup(ctx, track)
		return serveSetupMsg{setup: setup, err: err}
	}
}

func (s *serveScreen) Crumb() string { return "serve" }

func (s *serveScreen) TakesText() bool { return s.edit.IsOpen() }

func (s *serveScreen) SetSize(w, h int) {
	s.w, s.h = w, h
	s.edit.SetWidth(max(w-20, 10))
	s.relayout()
}

func (s *serveScreen) ShortHelp() []key.Binding {
	k := s.Keys
	switch {
	case s.edit.IsOpen():
		return s.edit.Help(k)
	case s.running:
		b := []key.Binding{s.own.Stop}
		if s.run.ready != nil {
			b = append(b, withHelp(k.Copy, "copy export and curl"))
			if !s.benching {
				b = append(b, s.own.Bench)
			}
		}
		return append(b, k.Up, k.Down)
	case s.benching:
		return []key.Binding{k.Up, k.Down}
	case s.setup == nil:
		// No form (not built, or still reading): only leaving works.
		return []key.Binding{k.Back, withHelp(k.Quit, "quit")}
	}
	b := []key.Binding{withHelp(k.Enter, "start the server"), s.own.Edit, s.own.Less, withHelp(k.Tab, "next field")}
	if ok, needsServer := serve.CanBench(s.serveTrack()); ok && !needsServer {
		b = append(b, s.own.Bench) // a benchmark of the engine alone: no server needed
	}
	return append(b, k.Back, withHelp(k.Quit, "quit"))
}

func (s *serveScreen) FullHelp() [][]key.Binding {
	if s.running || s.benching {
		return [][]key.Binding{s.ShortHelp(), scrollHelp(s.Keys)}
	}
	return [][]key.Binding{s.ShortHelp()}
}

// serveTrack is the track the backend serves (the demo's differs).
func (s *serveScreen) serveTrack() string {
	if s.setup != nil {
		return s.setup.Track
	}
	return s.track
}

func (s *serveScreen) Update(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case serveSetupMsg:
		s.setupErr = msg.err
		if msg.err == nil {
			s.setup = msg.setup
			s.req = ServeRequest{Track: s.track, Model: msg.setup.Model, Context: msg.setup.Context, Util: msg.setup.Util, Port: msg.setup.Port}
			s.replan()
		}
	case serveStartedMsg:
		cmd = s.started(msg)
	case serveEventsMsg:
		cmd = s.serverEvents(eventsMsg(msg))
	case benchStartedMsg:
		cmd = s.benchStarted(msg)
	case benchEventsMsg:
		cmd = s.benchEvents(eventsMsg(msg))
	case benchReportMsg:
		s.bench.report, s.bench.err = msg.report, msg.err
	case tea.KeyPressMsg:
		cmd = s.onKey(msg)
	}
	s.relayout()
	return cmd
}

func (s *serveScreen) onKey(k tea.KeyPressMsg) tea.Cmd {
	if s.edit.IsOpen() {
		return s.editKey(k)
	}
	keys := s.Keys
	switch {
	case key.Matches(k, s.own.Stop) && s.running:
		s.serving.Stop()
		return nil
	case key.Matches(k, keys.Copy) && s.running && s.run.ready != nil:
		// The two commands as a shell reads them, one a line: pasted,
		// they run as printed, however the screen wrapped them.
		s.copied = true
		return tea.SetClipboard(strings.Join(s.run.ready.Commands(), "\n") + "\n")
	case key.Matches(k, s.own.Bench) && !s.benching && (s.run.ready != nil || (!s.running && s.setup != nil)):
		return s.startBench()
	case s.running || s.benching:
		if scrollBy(keys, k, &s.offset, s.h) {
			s.offset = clampOffset(s.offset, len(s.lines), s.h)
		}
		return nil
	case key.Matches(k, keys.Back):
		return closeScreen
	case s.setup == nil:
		return nil
	case key.Matches(k, keys.Enter):
		return s.start()
	case key.Matches(k, keys.Up):
		s.focus = (s.focus + len(serveFields) - 1) % len(serveFields)
	case key.Matches(k, keys.Down), key.Matches(k, keys.Tab):
		s.focus = (s.focus + 1) % len(serveFields)
	case key.Matches(k, s.own.Less):
		s.adjust(-1)
	case key.Matches(k, s.own.More):
		s.adjust(1)
	case key.Matches(k, s.own.Edit):
		s.edit.SetValue(s.fieldValue(s.focus))
		return s.edit.Open()
	}
	return nil
}

// adjust steps the focused number: the context halves or doubles, the
// utilisation moves by 0.05, the port by one.
func (s *serveScreen) adjust(dir int) {
	switch serveFields[s.focus] {
	case "context":
		c := s.req.Context
		if c == 0 && s.launch.Fit != nil {
			c = s.launch.Fit.Context
		}
		if dir > 0 {
			c = max(c*2, 256)
		} else {
			c = max(c/2, 256)
		}
		s.req.Context = c
	case "util":
		u := s.req.Util
		if u == 0 {
			u = serve.UnifiedUtilCap
		}
		s.req.Util = min(max(u+float64(dir)*0.05, 0.05), 1)
	case "port":
		s.req.Port = min(max(s.req.Port+dir, 1), 65535)
	default:
		return
	}
	s.replan()
}

func (s *serveScreen) editKey(k tea.KeyPressMsg) tea.Cmd {
	res, cmd := s.edit.Key(k, s.Keys)
	if res != promptSubmitted {
		return cmd
	}
	v := strings.TrimSpace(s.edit.Value())
	switch serveFields[s.focus] {
	case "model":
		s.req.Model = v
	case "context":
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			s.planErr = fmt.Errorf("context: a whole number of tokens, got %q", v)
			return nil
		}
		s.req.Context = n
	case "util":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > 1 {
			s.planErr = fmt.Errorf("util: a share between 0 and 1, got %q", v)
			return nil
		}
		s.req.Util = f
	case "port":
		n, err := strconv.Atoi(v)
		if err != nil {
			s.planErr = fmt.Errorf("port: a number, got %q", v)
			return nil
		}
		s.req.Port = n
	}
	s.edit.Close()
	s.replan()
	return nil
}

func (s *serveScreen) fieldValue(i int) string {
	switch serveFields[i] {
	case "model":
		return s.req.Model
	case "context":
		if s.req.Context == 0 {
			return ""
		}
		return strconv.FormatUint(s.req.Context, 10)
	case "util":
		if s.req.Util == 0 {
			return ""
		}
		return strconv.FormatFloat(s.req.Util, 'f', 2, 64)
	}
	return strconv.Itoa(s.req.Port)
}

// replan asks the backend for the launch of the form's values: the live fit.
func (s *serveScreen) replan() {
	s.launch, s.planErr = s.server.PlanServe(s.req)
}

// start starts the server when the estimate lets it.
func (s *serveScreen) start() tea.Cmd {
	if s.planErr != nil {
		return nil
	}
	if s.launch.Fit != nil && !s.launch.Fit.Fits {
		s.planErr = fmt.Errorf("%s", s.launch.Fit.Advice)
		return nil
	}
	s.run = serverRun{started: true, phases: serve.PhasesOf(s.launch.Engine), reached: map[serve.PhaseID]serve.StartupPhase{}}
	s.bench = benchRun{}
	s.running = true
	b, ctx, req := s.server, s.context(), s.req
	return func() tea.Msg {
		sv, err := b.Serve(ctx, req)
		return serveStartedMsg{serving: sv, err: err}
	}
}

func (s *serveScreen) started(msg serveStartedMsg) tea.Cmd {
	if msg.err != nil {
		s.running, s.run.err = false, msg.err
		return nil
	}
	s.serving = msg.serving
	return waitServe(s.serving.Events())
}

func waitServe(ch <-chan runner.Event) tea.Cmd {
	return func() tea.Msg { return serveEventsMsg(waitEvents(ch)().(eventsMsg)) }
}

func waitBench(ch <-chan runner.Event) tea.Cmd {
	return func() tea.Msg { return benchEventsMsg(waitEvents(ch)().(eventsMsg)) }
}

// serverEvents folds a batch of the server's events.
func (s *serveScreen) serverEvents(msg eventsMsg) tea.Cmd {
	for _, e := range msg.events {
		switch e := e.(type) {
		case serve.StartupPhase:
			if e.Warning != "" {
				s.run.warnings = append(s.run.warnings, e.Warning)
				continue
			}
			s.run.reached[e.Phase], s.run.current = e, e.Phase
		case runner.Lines:
			s.run.tail = keepTail(s.run.tail, e.Text)
		case serve.Ready:
			s.run.ready = &e
			s.run.current = serve.PhaseReady
		case serve.Smoke:
			s.run.smoke = &e
		case serve.Checking:
			s.run.checking = e.What
		case serve.Checked:
			s.run.answers, s.run.checking = &e, ""
		case runner.Found:
			s.run.found = append(s.run.found, e.Finding)
		case runner.StepFinished:
			s.run.finished = &e
		}
	}
	if msg.closed {
		s.running = false
		return nil
	}
	return waitServe(s.serving.Events())
}

// startBench runs the track's benchmark.
func (s *serveScreen) startBench() tea.Cmd {
	s.benching, s.bench = true, benchRun{started: true}
	b, ctx, req := s.server, s.context(), s.req
	return func() tea.Msg {
		ch, err := b.Bench(ctx, req)
		return benchStartedMsg{ch: ch, err: err}
	}
}

func (s *serveScreen) benchStarted(msg benchStartedMsg) tea.Cmd {
	if msg.err != nil {
		s.benching, s.bench.err = false, msg.err
		return nil
	}
	s.benchCh = msg.ch
	return waitBench(s.benchCh)
}

func (s *serveScreen) benchEvents(msg eventsMsg) tea.Cmd {
	for _, e := range msg.events {
		switch e := e.(type) {
		case runner.Lines:
			s.bench.tail = keepTail(s.bench.tail, e.Text)
		case runner.StepFinished:
			s.bench.engine = e.Times[serve.EngineTime]
		case runner.RunFinished:
			s.bench.status, s.bench.runDir = e.Status, e.RunDir
		}
	}
	if !msg.closed {
		return waitBench(s.benchCh)
	}
	s.benching = false
	if s.bench.status != steps.OutcomeSucceeded {
		s.bench.err = fmt.Errorf("the benchmark %s; its log is in %s", s.bench.status, s.bench.runDir)
		return nil
	}
	b, dir := s.server, s.bench.runDir
	return func() tea.Msg {
		rep, err := b.BenchReport(dir)
		return benchReportMsg{report: rep, err: err}
	}
}

// pathTail keeps the end of a path that is wider than w cells, where its
// file name is, after "…": /a/long/dir/models/m.gguf → …/models/m.gguf.
func pathTail(p string, w int) string {
	if ansi.StringWidth(p) <= w || w < 8 {
		return p
	}
	tail := ansi.TruncateLeft(p, ansi.StringWidth(p)-(w-1), "")
	if i := strings.Index(tail, "/"); i > 0 {
		tail = tail[i:] // start at a directory, not inside a name
	}
	return "…" + tail
}

// keepTail keeps the last engineTailLines lines.
func keepTail(tail, lines []string) []string {
	tail = append(tail, lines...)
	if len(tail) > engineTailLines {
		tail = append([]string(nil), tail[len(tail)-engineTailLines:]...)
	}
	return tail
}

func (s *serveScreen) View() string {
	visible, _ := window(s.lines, s.offset, s.h)
	return strings.Join(visible, "\n")
}

// relayout renders the whole screen at the current width; View windows it.
func (s *serveScreen) relayout() {
	s.lines = strings.Split(s.render(), "\n")
	if s.resultEnd >= 0 && s.resultEnd != s.shownResult {
		// A new result line (ready, the first answer, the stop): scroll
		// just enough to show it, whatever the terminal's height.
		s.shownResult = s.resultEnd
		if s.h > 0 && s.resultEnd >= s.offset+s.h {
			s.offset = s.resultEnd - s.h + 1
		}
	}
	s.offset = clampOffset(s.offset, len(s.lines), s.h)
}

func (s *serveScreen) render() string {
	st := s.Styles
	var b strings.Builder
	switch {
	case s.setupErr != nil:
		var nb *serve.NotBuiltError
		if errors.As(s.setupErr, &nb) {
			// Nothing ran: say what is missing and how to build it.
			b.WriteString(st.Fail.Render(wrapHard("✗ "+nb.Why+": nothing was started.", s.w)) + "\n")
			b.WriteString(wrap("Build it first, in your terminal (esc goes back):", s.w) + "\n")
			b.WriteString(strings.Join(commandLines(nb.Next, s.w, 2), "\n") + "\n")
			return b.String()
		}
		b.WriteString(st.Fail.Render("✗ cannot serve "+s.track+": "+s.setupErr.Error()) + "\n")
		return b.String()
	case s.setup == nil:
		b.WriteString(st.Subtle.Render("Reading the track and this machine's memory…"))
		return b.String()
	}
	fmt.Fprintf(&b, "%s %s\n", st.Bold.Render("Serve and measure"), st.Subtle.Render("· "+s.setup.Track+" · "+s.setup.Engine))
	if s.setup.Note != "" {
		b.WriteString(st.Warn.Render(wrap(s.setup.Note, s.w)) + "\n")
	}
	s.resultEnd = -1
	if s.run.started && s.run.err == nil {
		// Once the server starts, the form folds into two lines, so that
		// the start-up and its result fit an 80x24 terminal.
		b.WriteString("\n" + s.launchSummary())
	} else {
		b.WriteString("\n" + s.formView() + "\n")
		b.WriteString(s.fitView())
	}
	if s.run.started || s.run.err != nil {
		b.WriteString("\n")
		run, resultEnd := s.runView()
		if resultEnd >= 0 {
			s.resultEnd = strings.Count(b.String(), "\n") + resultEnd
		}
		b.WriteString(run)
	}
	if s.bench.started || s.bench.err != nil {
		b.WriteString("\n" + s.benchView())
		if s.bench.report != nil || s.bench.err != nil {
			// The benchmark's verdict is the newest result: in view too.
			s.resultEnd = strings.Count(strings.TrimRight(b.String(), "\n"), "\n")
		}
	}
	// Every line was wrapped to the width above; the cut only guards the
	// screen against a line that was not (the engine's own log lines).
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	for i, l := range lines {
		lines[i] = ansiCut(l, s.w)
	}
	return strings.Join(lines, "\n")
}

// launchSummary is the form and its fit in two lines, while the server runs.
func (s *serveScreen) launchSummary() string {
	st := s.Styles
	l := s.launch
	parts := []string{filepath.Base(l.Model)}
	if f := l.Fit; f != nil {
		parts = append(parts, fmt.Sprintf("ctx %d", f.Context), fmt.Sprintf("util %.2f", f.Util))
	}
	parts = append(parts, "port "+strconv.Itoa(l.Port))
	var b strings.Builder
	b.WriteString(strings.Join(hangLines("model    "+strings.Join(parts, " · "), s.w, 9), "\n") + "\n")
	if f := l.Fit; f != nil {
		verdict := st.OK.Render("fits")
		if !f.Fits {
			verdict = st.Fail.Render("does not fit")
		}
		line := fmt.Sprintf("fit      %s  %s of %s usable", verdict, text.Bytes(int64(f.NeedBytes)), text.Bytes(int64(f.UsableBytes)))
		b.WriteString(strings.Join(hangLines(line, s.w, 9), "\n") + "\n")
	}
	for _, w := range l.Warnings { // what serve prints as warning: lines
		for _, line := range hangLines("! "+w, s.w-9, 2) {
			b.WriteString("         " + st.Warn.Render(line) + "\n")
		}
	}
	return b.String()
}

// formView is the four fields, the focused one marked.
func (s *serveScreen) formView() string {
	st := s.Styles
	var b strings.Builder
	hints := map[string]string{"context": "←/→ halve/double", "util": "←/→ ∓0.05 (at most 0.90 on the APU)", "port": "←/→ ∓1"}
	for i, f := range serveFields {
		mark, label := "  ", padRight(f, 9)
		if i == s.focus && !s.running {
			mark, label = st.Key.Render("› "), st.Selected.Render(padRight(f, 9))
		}
		value := s.fieldValue(i)
		if value == "" {
			value = st.Subtle.Render("(the model's own)")
			if f == "util" {
				value = st.Subtle.Render("(default " + strconv.FormatFloat(serve.UnifiedUtilCap, 'f', 2, 64) + ")")
			}
		}
		if f == "model" {
			value = pathTail(value, s.w-11)
		}
		if i == s.focus && s.edit.IsOpen() {
			value = s.edit.View()
		}
		line := mark + label + value
		if i == s.focus && !s.running && !s.edit.IsOpen() && hints[f] != "" {
			line += "   " + st.Subtle.Render(hints[f])
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// fitView is the live estimate and the command it would run.
func (s *serveScreen) fitView() string {
	st := s.Styles
	var b strings.Builder
	if s.planErr != nil {
		b.WriteString(st.Fail.Render("✗ "+s.planErr.Error()) + "\n")
		return b.String()
	}
	l := s.launch
	switch f := l.Fit; {
	case f != nil:
		bar := fitBar(f.NeedBytes, f.UsableBytes, 24)
		verdict := st.OK.Render("fits")
		if !f.Fits {
			verdict = st.Fail.Render("does not fit")
		}
		line := fmt.Sprintf("fit      %s %s  %s of %s usable", bar, verdict,
			text.Bytes(int64(f.NeedBytes)), text.Bytes(int64(f.UsableBytes)))
		// the share of the limit reads as one unit: on a row of its own
		// when the line does not fit
		share := fmt.Sprintf("(%.2f × %s)", f.Util, text.Bytes(int64(f.LimitBytes)))
		if ansi.StringWidth(line)+1+len([]rune(share)) <= s.w {
			b.WriteString(line + " " + share + "\n")
		} else {
			b.WriteString(strings.Join(append(hangLines(line, s.w, 9), "         "+share), "\n") + "\n")
		}
		sizes := fmt.Sprintf("weights %s + KV cache %s (ctx %d) + overhead %s",
			text.Bytes(int64(f.WeightsBytes)), text.Bytes(int64(f.KVBytes)), f.Context, text.Bytes(int64(f.OverheadBytes)))
		for _, l := range hangLines(sizes, s.w-9, 0) {
			b.WriteString("         " + st.Subtle.Render(l) + "\n")
		}
		for _, l := range hangLines(s.ceilingSource(), s.w-9, 0) {
			b.WriteString("         " + st.Subtle.Render(l) + "\n")
		}
		if !f.Fits {
			b.WriteString(indent(st.Warn.Render(wrap(f.Advice, s.w-9)), "         ") + "\n")
		}
	case l.FitNote != "":
		for i, line := range hangLines("unknown: "+l.FitNote, s.w-9, 0) {
			lead := "         "
			if i == 0 {
				lead = "fit      "
			}
			b.WriteString(lead + st.Subtle.Render(line) + "\n")
		}
	}
	// The command wraps between its words (commandLines), never inside a
	// path or a flag, so it can be read and copied whole.
	for i, line := range commandLines(serve.QuoteCommand(l.Command), s.w, 9) {
		if i == 0 {
			line = "command  " + strings.TrimPrefix(line, "         ")
		}
		b.WriteString(line + "\n")
	}
	for _, w := range l.Warnings {
		for _, line := range hangLines("! "+w, s.w-9, 2) {
			b.WriteString("         " + st.Warn.Render(line) + "\n")
		}
	}
	return b.String()
}

func (s *serveScreen) ceilingSource() string {
	if s.setup.Ceiling.Source == "" {
		return "ceiling unknown"
	}
	return "ceiling: " + s.setup.Ceiling.Source
}

// indent puts prefix before every line of text.
func indent(text, prefix string) string {
	return prefix + strings.ReplaceAll(text, "\n", "\n"+prefix)
}

// fitBar draws need against usable in width cells.
func fitBar(need, usable uint64, width int) string {
	if usable == 0 {
		return "[" + strings.Repeat("?", width) + "]"
	}
	n := int(float64(need) / float64(usable) * float64(width))
	if need > 0 && n == 0 {
		n = 1
	}
	if n > width {
		return "[" + strings.Repeat("█", width) + "]+"
	}
	return "[" + strings.Repeat("█", n) + strings.Repeat("░", width-n) + "]"
}

// runView is the start-up phase by phase, then readiness and the timings.
func (s *serveScreen) runView() (string, int) {
	st := s.Styles
	r := s.run
	var b strings.Builder
	resultEnd := -1
	if r.err != nil {
		b.WriteString(st.Fail.Render(wrap("✗ not started: "+r.err.Error(), s.w)) + "\n")
		return b.String(), strings.Count(b.String(), "\n") - 1
	}
	b.WriteString(st.Bold.Render("Start-up") + "\n")
	now := -1
	for i, ph := range r.phases {
		if ph.ID == r.current {
			now = i
		}
	}
	for i, ph := range r.phases {
		p, seen := r.reached[ph.ID]
		var mark, when string
		switch {
		case ph.ID == serve.PhaseReady && r.ready != nil:
			mark, when = st.OK.Render("✓"), text.Duration(r.ready.Elapsed)
		case seen && i < now:
			mark, when = st.OK.Render("✓"), text.Duration(p.Elapsed)
		case seen && s.running:
			mark, when = st.Running.Render("◆"), text.Duration(p.Elapsed)+st.Subtle.Render(" · stalls after "+text.Duration(p.Budget)+" of silence")
		case seen:
			mark, when = st.Fail.Render("■"), text.Duration(p.Elapsed)
		default:
			mark = st.Skip.Render("·")
		}
		fmt.Fprintf(&b, "  %s %s %s\n", mark, padRight(ph.Title, 42), when)
	}
	for _, w := range r.warnings {
		b.WriteString("  " + st.Warn.Render("! "+w) + "\n")
	}
	// The result in the words `haloforge serve` prints (the events' own
	// sentences), so the screen and the command line say the same.
	if r.ready != nil {
		b.WriteString(st.OK.Render("✓") + " " + strings.Join(hangLines(r.ready.Sentence(), s.w-2, 2), "\n") + "\n")
		resultEnd = strings.Count(b.String(), "\n") - 1
	}
	if sm := r.smoke; sm != nil {
		if sm.Err != "" {
			b.WriteString(st.Fail.Render("✗") + " " + strings.Join(hangLines(sm.Sentence(), s.w-2, 2), "\n") + "\n")
		} else {
			b.WriteString(st.OK.Render("✓") + " " + strings.Join(hangLines(sm.Sentence(), s.w-2, 2), "\n") + "\n")
			if sm.Text != "" {
				b.WriteString(strings.Join(hangLines(st.Subtle.Render("  answer: ")+sm.Text, s.w, 10), "\n") + "\n")
			}
		}
		resultEnd = strings.Count(b.String(), "\n") - 1
	}
	// The answers check, in the words line mode prints (Sentence).
	if r.checking != "" && s.running {
		b.WriteString(st.Running.Render("◆") + " " + strings.Join(hangLines(r.checking, s.w-2, 2), "\n") + "\n")
	}
	if a := r.answers; a != nil {
		mark := st.Warn.Render("!")
		switch {
		case a.Wrong():
			mark = st.Fail.Render("✗")
		case a.Result != nil && a.Result.Verdict == verify.Right:
			mark = st.OK.Render("✓")
		}
		b.WriteString(mark + " " + strings.Join(hangLines(a.Sentence(), s.w-2, 2), "\n") + "\n")
		b.WriteString(strings.Join(hangLines(st.Subtle.Render("  check: ")+a.How, s.w, 9), "\n") + "\n")
		resultEnd = strings.Count(b.String(), "\n") - 1
	}
	// How to use it, while it serves and unless its answers were found wrong.
	if r.ready != nil && r.finished == nil && (r.answers == nil || !r.answers.Wrong()) {
		b.WriteString(s.usageView(*r.ready))
		resultEnd = strings.Count(b.String(), "\n") - 1
	}
	for _, f := range r.found {
		b.WriteString(strings.Join(hangLines(st.HintTitle.Render(f.Family)+" "+f.Summary, s.w, 2), "\n") + "\n")
		if r.answers != nil && r.answers.Finding != nil && f.Family == r.answers.Finding.Family {
			for _, l := range strings.Split(f.Fix, "\n") {
				b.WriteString(st.Subtle.Render(strings.Join(hardLines("    "+l, s.w, 6, plainText), "\n")) + "\n")
			}
		}
	}
	if f := r.finished; f != nil {
		mark := st.OK.Render("■ server stopped")
		if f.Status == steps.OutcomeFailed {
			mark = st.Fail.Render("✗ server failed")
		}
		b.WriteString(strings.Join(hangLines(mark+st.Subtle.Render(": "+f.Why), s.w, 2), "\n") + "\n")
		if f.Status == steps.OutcomeFailed {
			b.WriteString(st.Subtle.Render(strings.Join(hardLines("  log: "+f.Log, s.w, 7, plainText), "\n")) + "\n")
		}
		resultEnd = strings.Count(b.String(), "\n") - 1
	}
	// The engine's last lines while it starts; once it is ready the
	// result takes their place (the whole log is in the run's serve.log).
	if s.running && r.ready == nil && len(r.tail) > 0 {
		b.WriteString(st.Subtle.Render("engine log") + "\n")
		for _, l := range r.tail {
			b.WriteString(st.Subtle.Render("  │ ") + l + "\n")
		}
	}
	return b.String(), resultEnd
}

// usageView says how to point a client at the ready server: its OpenAI
// base URL, then the export and the curl (the words line mode prints),
// each wrapped between shell words so that a mouse copy runs too; c puts
// both on the clipboard whole.
func (s *serveScreen) usageView(r serve.Ready) string {
	st := s.Styles
	title := "Use it · c copies the export and the curl"
	if s.Demo {
		// a recording: nothing listens at its address
		title = "Use it on a real server (the demo serves nothing) · c copies the export and the curl"
	}
	if s.copied {
		title = "Use it · copied the export and the curl (OSC 52: the terminal must allow it)"
	}
	var b strings.Builder
	b.WriteString(st.Bold.Render(wrap(title, s.w)) + "\n")
	u := r.Usage()
	b.WriteString(strings.Join(hangLines("  "+u[0], s.w, 4), "\n") + "\n")
	for _, c := range u[1:] {
		b.WriteString(strings.Join(commandLines(c, s.w, 2), "\n") + "\n")
	}
	return b.String()
}
