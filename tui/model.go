package tui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/haloforge/haloforge/steps"
)

// Model is the wizard's root: it owns the stack of screens, global keys
// (help, quit), the frame, and moves from one screen to the next. It asks
// screens about themselves (the screen contract) and never reads their
// fields.
type Model struct {
	common  *common
	ctx     context.Context
	backend Backend
	opts    Options
	help    help.Model

	detect   *detectScreen // the first screen: detection arrives after it opens
	picker   *pickerScreen // kept to go back to after a plan error
	run      *runScreen    // the current run, also while another screen is on top
	stack    []screen      // the screens in the order they were opened
	det      *Detection
	confirm  bool // the quit question is up (only while a step runs)
	quitting bool // quit once the run has stopped
	errNote  string
	result   Result
	needs    []string // the last plan's empty values it cannot run without
}

// New builds the wizard's root model.
func New(ctx context.Context, b Backend, opts Options) *Model {
	c := &common{Styles: DefaultStyles(), Keys: DefaultKeyMap(), Demo: opts.Demo, ctx: ctx, backend: b,
		commands: opts.Commands, pager: opts.Pager}
	m := &Model{common: c, ctx: ctx, backend: b, opts: opts, help: help.New()}
	m.help.Styles.ShortKey = c.Styles.Key
	m.help.Styles.FullKey = c.Styles.Key
	m.detect = newDetectScreen(c, opts.DemoCmd != nil)
	m.stack = []screen{m.detect}
	m.result.Demo = opts.Demo
	if opts.Plan != nil {
		m.result.Track = opts.Plan.Track.ID
		m.run = newRunScreen(c, opts.Plan, false)
		m.stack = []screen{m.run}
	}
	return m
}

// drain waits, up to d, for a run that the program left behind (a signal
// ended it) to close its events, so that the stopped step is recorded.
func (m *Model) drain(d time.Duration) {
	if m.run != nil {
		m.run.Drain(d)
	}
}

// Result says how the session ended, once the program returned: the run's
// outcome and the commands for the recap.
func (m *Model) Result() Result {
	res := m.result
	if m.run != nil {
		m.run.fillResult(&res)
	}
	if res.Track != "" && m.common.commands != nil {
		c := Command{Track: res.Track, Sets: slices.Clone(m.common.sets)}
		for _, n := range m.needs {
			c.Sets = append(c.Sets, n+"="+steps.InputExample(n)) // the user puts theirs
		}
		res.Build = m.common.commands(c)
		if t, err := steps.Lookup(res.Track); err == nil {
			for _, ch := range steps.FailingChecks(t, m.det.report()) {
				res.Blocked = append(res.Blocked, string(ch.ID))
			}
		}
		if len(res.Blocked) > 0 {
			c.IgnoreChecks = true
			res.BuildAnyway = m.common.commands(c)
		}
	}
	return res
}

// Init starts detection right away; the first frame does not wait for it.
func (m *Model) Init() tea.Cmd {
	if m.opts.Plan != nil {
		return m.run.Start(false)
	}
	b, ctx := m.backend, m.ctx
	detect := func() tea.Msg {
		det, err := b.Detect(ctx)
		return detectedMsg{det: det, err: err}
	}
	return tea.Batch(detect, m.detect.Init())
}

func (m *Model) top() screen { return m.stack[len(m.stack)-1] }

// open puts a screen on top and starts it.
func (m *Model) open(s screen) tea.Cmd {
	m.stack = append(m.stack, s)
	m.layout()
	if i, ok := s.(initer); ok {
		return i.Init()
	}
	return nil
}

// Update handles what is global and hands the rest to the top screen, or
// to the screen a message belongs to.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.common.Width, m.common.Height = msg.Width, msg.Height
		m.layout()
		return m, nil
	case tea.KeyPressMsg:
		return m, m.onKey(msg)
	case detectedMsg:
		m.det = msg.det
		return m, m.detect.Update(msg)
	case spinner.TickMsg:
		return m, m.tick(msg)
	case runStartedMsg, eventsMsg, retryPreparedMsg, shellDoneMsg:
		if m.run == nil {
			return m, nil
		}
		return m, m.run.Update(msg)
	case execDoneMsg:
		if msg.err != nil {
			m.errNote = msg.what + ": " + msg.err.Error()
		}
		return m, nil
	}
	return m, m.route(msg)
}

// route handles the flow's navigation and passes anything else to the
// top. A screen off the flow comes as an openMsg from the screen that
// offers it.
func (m *Model) route(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case openPickerMsg:
		m.picker = newPickerScreen(m.common, m.backend.Tracks(), cmp.Or(m.opts.Track, msg.preselect), m.det)
		return m.open(m.picker)
	case trackChosenMsg:
		return m.planFor(msg.track)
	case planMsg:
		return m.planReady(msg)
	case setPinMsg:
		return m.setPin(msg)
	case startRunMsg:
		return m.startRun(msg)
	case runDemoMsg:
		return m.runDemo()
	case runEndedMsg:
		return m.runEnded(msg)
	case openSummaryMsg:
		return m.open(m.run.Summary())
	case openMsg:
		return m.open(msg.s)
	case closeScreenMsg:
		m.pop()
		return nil
	case noteMsg:
		m.errNote = string(msg)
		return nil
	}
	return m.top().Update(msg)
}

func (m *Model) tick(msg spinner.TickMsg) tea.Cmd {
	if m.run != nil && m.run.Running() {
		return m.run.Update(msg)
	}
	return m.detect.Update(msg)
}

// runEnded records the outcome; a clean finish opens the summary, a
// failure stays on the run with its hint panel.
func (m *Model) runEnded(msg runEndedMsg) tea.Cmd {
	m.result.Status = msg.status
	if msg.interrupted {
		m.result.Interrupted = true
	}
	switch {
	case m.quitting:
		return tea.Quit
	case !msg.clean:
		return nil
	case m.top() == m.run:
		return m.open(m.run.Summary())
	}
	return nil
}

func (m *Model) onKey(k tea.KeyPressMsg) tea.Cmd {
	keys := m.common.Keys
	if m.confirm {
		return m.confirmKey(k)
	}
	if key.Matches(k, keys.ForceQuit) {
		return m.interrupt()
	}
	if m.top().TakesText() {
		return m.top().Update(k)
	}
	switch {
	case key.Matches(k, m.helpKey()):
		m.help.ShowAll = !m.help.ShowAll
		m.layout()
		return nil
	case key.Matches(k, keys.Quit):
		if m.running() {
			m.confirm = true // a step runs: stopping it is worth a question
			m.layout()
			return nil
		}
		return tea.Quit
	}
	return m.top().Update(k)
}

func (m *Model) confirmKey(k tea.KeyPressMsg) tea.Cmd {
	keys := m.common.Keys
	switch {
	case key.Matches(k, keys.Yes), key.Matches(k, keys.Quit), key.Matches(k, keys.ForceQuit):
		m.confirm = false
		m.layout()
		return m.quitNow()
	case key.Matches(k, keys.No):
		m.confirm = false
		m.layout()
	}
	return nil
}

func (m *Model) running() bool { return m.run != nil && m.run.Running() }

// interrupt is Ctrl-C: it stops a running step and quits, at once and
// without a question (gum's convention). The session ends as interrupted
// (exit 130) unless a run already ended, whose own outcome then stands.
func (m *Model) interrupt() tea.Cmd {
	if m.running() || m.run == nil || !m.run.Ended() {
		m.result.Interrupted = true
	}
	return m.quitNow()
}

// quitNow quits, after stopping the running step cleanly when there is one.
func (m *Model) quitNow() tea.Cmd {
	if m.running() {
		m.quitting = true
		m.result.Interrupted = true
		m.run.Stop()
		return nil
	}
	return tea.Quit
}

// runDemo hands the terminal to `haloforge demo` and comes back.
func (m *Model) runDemo() tea.Cmd {
	if m.opts.DemoCmd == nil {
		return nil
	}
	return tea.ExecProcess(m.opts.DemoCmd(), func(err error) tea.Msg { return execDoneMsg{what: "demo", err: err} })
}

// planFor asks the backend for the plan of the picked track.
func (m *Model) planFor(track string) tea.Cmd {
	m.result.Track = track
	b := m.backend
	return func() tea.Msg {
		p, err := b.Plan(track)
		return planMsg{plan: p, err: err}
	}
}

func (m *Model) planReady(msg planMsg) tea.Cmd {
	if msg.err != nil {
		m.errNote = "Plan: " + msg.err.Error()
		if m.picker == nil {
			return nil
		}
		return nil // the picker is still live, as the user left it
	}
	m.errNote = ""
	m.result.Planned = true
	m.needs = msg.plan.Needs
	if msg.set != "" {
		m.common.sets = append(m.common.sets, msg.set)
	}
	if p, ok := m.top().(*planScreen); ok && p.plan.Track.ID == msg.plan.Track.ID {
		p.Replan(msg.plan) // a value was set: the same screen, the new plan
		m.layout()
		return nil
	}
	return m.open(newPlanScreen(m.common, msg.plan, m.det))
}

// setPin sets a value the plan needs and plans the track again.
func (m *Model) setPin(msg setPinMsg) tea.Cmd {
	b := m.backend
	return func() tea.Msg {
		if err := b.SetPin(msg.assign); err != nil {
			return noteMsg(err.Error())
		}
		p, err := b.Plan(msg.track)
		return planMsg{plan: p, err: err, set: msg.assign}
	}
}

func (m *Model) startRun(msg startRunMsg) tea.Cmd {
	if m.running() {
		return nil
	}
	m.run = newRunScreen(m.common, msg.plan, msg.ignoreChecks)
	return tea.Batch(m.open(m.run), m.run.Start(false))
}

// pop closes the top screen; the one below is told it is on top again. A
// running run's screen stays.
func (m *Model) pop() {
	if len(m.stack) <= 1 || (m.top() == m.run && m.run.Running()) {
		return
	}
	m.stack = m.stack[:len(m.stack)-1]
	if r, ok := m.top().(revealer); ok {
		r.Revealed()
	}
	m.layout()
}

// frame sizes: one header line, the footer is the help.
func (m *Model) layout() {
	w, h := m.common.Width, m.common.Height
	m.help.SetWidth(w)
	for _, s := range m.stack {
		s.SetSize(w, max(h-2-lineCount(m.footer()), 1))
	}
}

func (m *Model) footer() string {
	if m.confirm {
		return m.confirmText()
	}
	var f string
	if m.help.ShowAll {
		f = m.help.FullHelpView(m.top().FullHelp())
	} else {
		f = fitHelp(m.top().ShortHelp(), m.helpKey(), m.common.Keys, m.common.Width, m.common.Styles, m.top().TakesText())
	}
	if m.errNote != "" {
		f = m.common.Styles.Fail.Render(ansiCut(m.errNote, m.common.Width)) + "\n" + f
	}
	return f
}

// helpKey is the key that shows the help on the top screen: ? or h, or
// the screen's own (the run screen's ? searches its log backwards).
func (m *Model) helpKey() key.Binding {
	if h, ok := m.top().(helpKeyer); ok {
		return h.HelpKey()
	}
	return m.common.Keys.Help
}

// fitHelp renders a screen's short help on one line of width w. The
// screen lists its keys most important first; help and quit always show,
// at the end, and the other keys as many as fit, so that at 80 columns
// the footer still says how to get help and how to leave. They work on
// every screen (Model.onKey), so a screen that does not list them gets
// them all the same; while it takes text (a field is open), q and ? type
// themselves and only Ctrl-C quits.
func fitHelp(bs []key.Binding, help key.Binding, k KeyMap, w int, st Styles, typing bool) string {
	var keep, last []key.Binding
	hasHelp, hasQuit := false, false
	for _, b := range bs {
		if !b.Enabled() {
			continue
		}
		switch b.Help().Key {
		case help.Help().Key:
			hasHelp = true
			last = append(last, b)
		case k.Quit.Help().Key, k.ForceQuit.Help().Key:
			hasQuit = true
			last = append(last, b)
		default:
			keep = append(keep, b)
		}
	}
	switch {
	case typing && !hasQuit:
		last = append(last, k.ForceQuit)
	case !typing:
		if !hasHelp {
			last = append(last, help)
		}
		if !hasQuit {
			last = append(last, k.Quit)
		}
	}
	for n := len(keep); ; n-- {
		line := helpLine(append(slices.Clip(keep[:n]), last...), st)
		if lipgloss.Width(line) <= w || n == 0 {
			return ansiCut(line, w)
		}
	}
}

func helpLine(bs []key.Binding, st Styles) string {
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = st.Key.Render(b.Help().Key) + " " + st.Subtle.Render(b.Help().Desc)
	}
	return strings.Join(parts, st.Subtle.Render(" • "))
}

func (m *Model) confirmText() string {
	st := m.common.Styles
	q := st.Warn.Render(wrap("Quit? The running step "+m.run.rs.Current+" is stopped cleanly.", max(m.common.Width, 20)))
	if c := m.run.resumeCommand(m.run.rs.Current); c != "" {
		q += "\n" + st.Subtle.Render("Resume it later with: ") + c
	}
	return q + "\n" + st.Key.Render("y") + " yes  " + st.Key.Render("n") + " no"
}

// View frames the top screen; below the minimum size it explains instead.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = m.title()
	v.ProgressBar = m.progress()
	return v
}

func (m *Model) render() string {
	w, h := m.common.Width, m.common.Height
	if w == 0 || h == 0 {
		return "haloforge"
	}
	if w < MinWidth || h < MinHeight {
		return tooSmall(w, h, m.running())
	}
	header := m.header()
	footer := m.footer()
	bodyH := max(h-lineCount(header)-lineCount(footer)-1, 1)
	body := clipLines(m.top().View(), bodyH)
	pad := bodyH - lineCount(body)
	return header + "\n\n" + body + strings.Repeat("\n", max(pad, 0)) + "\n" + footer
}

func (m *Model) header() string {
	st := m.common.Styles
	left := st.Title.Render("haloforge")
	if m.opts.Demo {
		left += " " + st.Warn.Render("[demo: sample data, nothing is installed]")
	}
	right := m.breadcrumb()
	gap := m.common.Width - lipgloss.Width(left) - lipgloss.Width(right)
	if gap < 1 {
		return ansiCut(left, m.common.Width)
	}
	return left + strings.Repeat(" ", gap) + right
}

// breadcrumb shows the flow with the top screen's step in bold; a screen
// outside the flow (troubleshooting) shows its own name alone.
func (m *Model) breadcrumb() string {
	st := m.common.Styles
	cur := m.top().Crumb()
	if !slices.Contains(flowCrumbs, cur) {
		return st.Bold.Render(cur)
	}
	parts := make([]string, len(flowCrumbs))
	for i, c := range flowCrumbs {
		if c == cur {
			parts[i] = st.Bold.Render(c)
		} else {
			parts[i] = st.Subtle.Render(c)
		}
	}
	return strings.Join(parts, st.Subtle.Render(" › "))
}

func (m *Model) title() string {
	if m.run == nil {
		return "haloforge"
	}
	return m.run.WindowTitle()
}

// progress drives the terminal's own progress bar (OSC 9;4) during a run.
func (m *Model) progress() *tea.ProgressBar {
	if m.run == nil {
		return nil
	}
	return m.run.ProgressBar()
}

// tooSmall is shown instead of a cramped layout, wrapped to the window so
// that even a tiny one shows all of it. During a run it says the run goes
// on; before, it offers line mode.
func tooSmall(w, h int, running bool) string {
	text := fmt.Sprintf("haloforge needs a terminal of at least %d×%d; this one is %d×%d. Enlarge the window", MinWidth, MinHeight, w, h)
	if running {
		text += ": the run goes on meanwhile."
	} else {
		text += ", or run haloforge with --plain for line mode."
	}
	return clipLines(wrap(text, w), max(h, 1))
}
