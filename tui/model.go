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
)

// Model is the wizard's root: it owns the stack of screens, global keys
// (help, quit with confirmation), the frame, and moves from one screen to
// the next. It asks screens about themselves (the screen contract) and
// never reads their fields.
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
	confirm  bool // the quit question is up
	quitting bool // quit once the run has stopped
	errNote  string
	result   Result
}

// New builds the wizard's root model.
func New(ctx context.Context, b Backend, opts Options) *Model {
	c := &common{Styles: DefaultStyles(), Keys: DefaultKeyMap(), Demo: opts.Demo}
	m := &Model{common: c, ctx: ctx, backend: b, opts: opts, help: help.New()}
	m.detect = newDetectScreen(c)
	m.stack = []screen{m.detect}
	if opts.Plan != nil {
		m.result.Track = opts.Plan.Track.ID
		m.run = newRunScreen(ctx, c, b, opts.Plan)
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

// Result says how the session ended, once the program returned.
func (m *Model) Result() Result { return m.result }

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
	}
	return m, m.route(msg)
}

// route handles navigation messages and passes anything else to the top.
// A new screen adds one case here that opens it.
func (m *Model) route(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case openPickerMsg:
		m.picker = newPickerScreen(m.common, m.backend.Tracks(), cmp.Or(m.opts.Track, msg.preselect))
		return m.open(m.picker)
	case trackChosenMsg:
		return m.planFor(msg.track)
	case planMsg:
		return m.planReady(msg)
	case startRunMsg:
		return m.startRun(msg.plan)
	case runEndedMsg:
		return m.runEnded(msg)
	case openSummaryMsg:
		return m.open(m.run.Summary())
	case openTroubleshootMsg:
		return m.open(newTroubleshootScreen(m.common, m.backend, msg.path, msg.findings))
	case openHostFixMsg:
		return m.open(newHostFixScreen(m.ctx, m.common, m.backend))
	case openSetsMsg:
		return m.open(newSetsScreen(m.common, m.backend, msg.track))
	case openServeMsg:
		return m.open(newServeScreen(m.ctx, m.common, m.backend, msg.track))
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

// runEnded records the outcome; a clean finish opens the summary (or ends
// a build session), a failure stays on the run with its hint panel.
func (m *Model) runEnded(msg runEndedMsg) tea.Cmd {
	m.result.Status, m.result.Interrupted = msg.status, msg.interrupted
	switch {
	case m.quitting:
		return tea.Quit
	case !msg.clean:
		return nil
	case m.opts.Plan != nil:
		return tea.Quit
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
		return m.quitNow()
	}
	if m.top().TakesText() {
		return m.top().Update(k)
	}
	switch {
	case key.Matches(k, keys.Help):
		m.help.ShowAll = !m.help.ShowAll
		m.layout()
		return nil
	case key.Matches(k, keys.Quit):
		m.confirm = true
		return nil
	}
	return m.top().Update(k)
}

func (m *Model) confirmKey(k tea.KeyPressMsg) tea.Cmd {
	keys := m.common.Keys
	switch {
	case key.Matches(k, keys.Yes), key.Matches(k, keys.Quit), key.Matches(k, keys.ForceQuit):
		m.confirm = false
		return m.quitNow()
	case key.Matches(k, keys.No):
		m.confirm = false
	}
	return nil
}

// quitNow quits, after stopping the running step cleanly when there is one.
func (m *Model) quitNow() tea.Cmd {
	if m.run != nil && m.run.Running() {
		m.quitting = true
		m.run.Stop()
		return nil
	}
	return tea.Quit
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
		m.picker.Reset()
		m.layout()
		return m.picker.Init()
	}
	m.errNote = ""
	return m.open(newPlanScreen(m.common, msg.plan, m.det))
}

func (m *Model) startRun(p *Plan) tea.Cmd {
	if m.run != nil && m.run.Running() {
		return nil
	}
	m.run = newRunScreen(m.ctx, m.common, m.backend, p)
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
	f := m.help.View(m.top())
	if m.errNote != "" {
		f = m.common.Styles.Fail.Render(ansiCut(m.errNote, m.common.Width)) + "\n" + f
	}
	return f
}

func (m *Model) confirmText() string {
	st := m.common.Styles
	q := "Quit haloforge?"
	if m.run != nil && m.run.Running() {
		q = "Quit? The running step is stopped cleanly and can be resumed later."
	}
	return st.Warn.Render(q) + "  " + st.Key.Render("y") + " yes  " + st.Key.Render("n") + " no"
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
		return tooSmall(w, h)
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

// tooSmall is shown instead of a cramped layout.
func tooSmall(w, h int) string {
	return fmt.Sprintf("haloforge needs a terminal of at least %d×%d; this one is %d×%d.\nEnlarge the window, or run `haloforge --plain` for line mode.", MinWidth, MinHeight, w, h)
}
