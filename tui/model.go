package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// Model is the wizard's root: it owns the screens, global keys (help, quit
// with confirmation), the frame, and moves from one screen to the next.
type Model struct {
	common  *common
	ctx     context.Context
	backend Backend
	opts    Options
	help    help.Model

	detect   *detectScreen
	picker   *pickerScreen
	plan     *planScreen
	run      *runScreen
	summary  *summaryScreen
	trouble  *troubleshootScreen
	stack    []screen // the screens in the order they were opened
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
		m.run = newRunScreen(c, ctx, b, opts.Plan)
		m.stack = []screen{m.run}
	}
	return m
}

// drain waits, up to d, for a run that the program left behind (a signal
// ended it) to close its events, so that the stopped step is recorded.
func (m *Model) drain(d time.Duration) {
	if m.run == nil || m.run.ch == nil {
		return
	}
	m.run.Stop()
	deadline := time.After(d)
	for {
		select {
		case e, ok := <-m.run.ch:
			if !ok {
				m.run.running = false
				return
			}
			m.run.rs.Apply(e)
		case <-deadline:
			return
		}
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
	return tea.Batch(detect, m.detect.spinner.Tick)
}

func (m *Model) top() screen { return m.stack[len(m.stack)-1] }

func (m *Model) push(s screen) {
	m.stack = append(m.stack, s)
	m.layout()
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
		return m, m.runMsg(msg)
	}
	return m, m.route(msg)
}

// route handles navigation messages and passes anything else to the top.
func (m *Model) route(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case trackChosenMsg:
		return m.trackChosen(msg.track)
	case planMsg:
		return m.planReady(msg)
	case startRunMsg:
		return m.startRun()
	case openTroubleshootMsg:
		m.openTroubleshoot()
		return m.trouble.Init()
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

func (m *Model) runMsg(msg tea.Msg) tea.Cmd {
	if m.run == nil {
		return nil
	}
	cmd := m.run.Update(msg)
	if _, ok := msg.(eventsMsg); ok && !m.run.Running() {
		return tea.Batch(cmd, m.runEnded())
	}
	m.layout() // the hint panel may have appeared
	return cmd
}

// runEnded records the outcome; a clean finish opens the summary (or ends
// a build session), a failure stays on the run with its hint panel.
func (m *Model) runEnded() tea.Cmd {
	rs := m.run.rs
	m.result.Status, m.result.Interrupted = rs.Status, m.run.stopping
	if m.quitting {
		return tea.Quit
	}
	if !rs.Finished || rs.Failed() != nil || rs.Err != nil || m.run.stopping || m.run.skipping != "" {
		m.layout()
		return nil
	}
	if m.opts.Plan != nil {
		return tea.Quit
	}
	if m.top() == m.run {
		m.openSummary()
	}
	return nil
}

func (m *Model) openSummary() {
	m.summary = newSummaryScreen(m.common, m.run.rs, m.run.plan.Track)
	m.push(m.summary)
}

func (m *Model) onKey(k tea.KeyPressMsg) tea.Cmd {
	keys := m.common.Keys
	if m.confirm {
		return m.confirmKey(k)
	}
	if key.Matches(k, keys.ForceQuit) {
		return m.quitNow()
	}
	if m.typing() {
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
	case key.Matches(k, keys.Troubleshoot) && m.top() == m.run:
		m.openTroubleshoot()
		return m.trouble.Init()
	case key.Matches(k, keys.Enter) && m.top() == m.run && !m.run.Running() && m.run.rs.Finished:
		m.openSummary()
		return nil
	}
	return m.top().Update(k)
}

// typing is true when the top screen takes text, so letters are not keys.
func (m *Model) typing() bool {
	switch s := m.top().(type) {
	case *runScreen:
		return s.searching
	case *troubleshootScreen:
		return s.editing
	}
	return false
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

func (m *Model) trackChosen(track string) tea.Cmd {
	if _, ok := m.top().(*detectScreen); ok {
		pre := track
		if m.opts.Track != "" {
			pre = m.opts.Track
		}
		m.picker = newPickerScreen(m.common, m.backend.Tracks(), pre)
		m.push(m.picker)
		return m.picker.Init()
	}
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
		m.resetPicker()
		return m.picker.Init()
	}
	m.errNote = ""
	m.plan = newPlanScreen(m.common, msg.plan, m.det)
	m.push(m.plan)
	return nil
}

// resetPicker rebuilds the picker (a completed huh form cannot be reused),
// keeping the choice, so that esc from the plan goes back to a live picker.
func (m *Model) resetPicker() {
	if m.picker == nil {
		return
	}
	fresh := newPickerScreen(m.common, m.picker.tracks, m.picker.choice)
	for i, s := range m.stack {
		if s == m.picker {
			m.stack[i] = fresh
		}
	}
	m.picker = fresh
	m.layout()
}

func (m *Model) startRun() tea.Cmd {
	if m.run != nil && m.run.Running() {
		return nil
	}
	m.run = newRunScreen(m.common, m.ctx, m.backend, m.plan.plan)
	m.push(m.run)
	return m.run.Start(false)
}

func (m *Model) openTroubleshoot() {
	var findingsFrom *stepRun
	path := ""
	if m.run != nil {
		if st, _ := m.run.rs.Hint(); st != nil {
			findingsFrom = st
			path = st.Log
		} else if f := m.run.rs.Failed(); f != nil {
			path = f.Log
		}
	}
	m.trouble = newTroubleshootScreen(m.common, m.backend, path, findingsFrom)
	m.push(m.trouble)
}

// pop closes the top screen. The run screen stays while its run is going.
func (m *Model) pop() {
	if len(m.stack) <= 1 || (m.top() == m.run && m.run.Running()) {
		return
	}
	closed := m.top()
	m.stack = m.stack[:len(m.stack)-1]
	if closed == m.plan || closed == m.run {
		m.resetPicker()
	}
	if m.top() == m.picker {
		m.resetPicker()
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
	crumbs := []string{"detect", "track", "plan", "run", "summary"}
	cur := m.crumb()
	var parts []string
	for _, c := range crumbs {
		if c == cur {
			parts = append(parts, st.Bold.Render(c))
		} else {
			parts = append(parts, st.Subtle.Render(c))
		}
	}
	right := strings.Join(parts, st.Subtle.Render(" › "))
	if cur == "troubleshoot" {
		right = st.Bold.Render("troubleshoot")
	}
	gap := m.common.Width - lipgloss.Width(left) - lipgloss.Width(right)
	if gap < 1 {
		return ansiCut(left, m.common.Width)
	}
	return left + strings.Repeat(" ", gap) + right
}

func (m *Model) crumb() string {
	switch m.top().(type) {
	case *detectScreen:
		return "detect"
	case *pickerScreen:
		return "track"
	case *planScreen:
		return "plan"
	case *runScreen:
		return "run"
	case *summaryScreen:
		return "summary"
	default:
		return "troubleshoot"
	}
}

func (m *Model) title() string {
	if m.run == nil || m.run.rs.Total == 0 {
		return "haloforge"
	}
	rs := m.run.rs
	if rs.Finished {
		return "haloforge — " + rs.Track + " " + m.run.outcomeWord()
	}
	return fmt.Sprintf("haloforge — %s %d/%d", nonEmpty(rs.Current, rs.Track), min(rs.Done+1, rs.Total), rs.Total)
}

// progress drives the terminal's own progress bar (OSC 9;4) during a run.
func (m *Model) progress() *tea.ProgressBar {
	if m.run == nil || m.run.rs.Total == 0 {
		return nil
	}
	rs := m.run.rs
	switch {
	case rs.Finished && rs.Failed() == nil && rs.Err == nil:
		return nil
	case rs.Finished:
		return tea.NewProgressBar(tea.ProgressBarError, max(rs.Progress(), 1))
	case len(rs.Steps) > 0 && hasFinding(rs):
		return tea.NewProgressBar(tea.ProgressBarWarning, rs.Progress())
	default:
		return tea.NewProgressBar(tea.ProgressBarDefault, rs.Progress())
	}
}

func hasFinding(rs *runState) bool { _, f := rs.Hint(); return f != nil }

// tooSmall is shown instead of a cramped layout.
func tooSmall(w, h int) string {
	return fmt.Sprintf("haloforge needs a terminal of at least %d×%d; this one is %d×%d.\nEnlarge the window, or run `haloforge --plain` for line mode.", MinWidth, MinHeight, w, h)
}
