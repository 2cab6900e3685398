package tui

import (
	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/haloforge/haloforge/diagnose"
)

// screen is the contract every screen meets (soft-serve's Component): it
// updates itself, renders a string for the root to frame, takes its size,
// says which keys apply, and answers the root's questions about itself, so
// that the root never reads a screen's fields.
//
// To add a screen: one file with its type, its constructor and, when it
// needs the engine for something new, the role it asks for (common's
// role); the screen that offers it opens it with open(newXScreen(…)).
// ARCHITECTURE.md ("A screen") has the whole list.
type screen interface {
	help.KeyMap
	Update(msg tea.Msg) tea.Cmd
	// View renders the screen; it only reads: scroll clamping and layout
	// happen in Update and SetSize.
	View() string
	SetSize(width, height int)
	// Crumb is the screen's name in the header's breadcrumb; a name that is
	// not a step of the flow (flowCrumbs) is shown on its own.
	Crumb() string
	// TakesText is true while the screen types text, so that letters reach
	// it instead of being global keys (q, ?, t).
	TakesText() bool
}

// Optional parts of a screen, which Model.open and Model.pop look for.
type (
	// initer starts what a screen needs when it opens (focus, a command).
	initer interface{ Init() tea.Cmd }
	// revealer is told when the screen above it closed and it is on top again.
	revealer interface{ Revealed() }
	// helpKeyer has a help key of its own, where the root's ? means
	// something else (the run screen's ? searches backwards, as in less).
	helpKeyer interface{ HelpKey() key.Binding }
)

// flowCrumbs are the steps of the wizard's flow, shown left to right in the
// header with the current one in bold.
var flowCrumbs = []string{"detect", "track", "plan", "run", "summary"}

// Messages between screens and the root. Errors travel as messages too.
type (
	detectedMsg struct {
		det *Detection
		err error
	}
	// openPickerMsg opens the track picker with a track preselected.
	openPickerMsg struct{ preselect string }
	// trackChosenMsg asks for the plan of the picked track.
	trackChosenMsg struct{ track string }
	planMsg        struct {
		plan *Plan
		err  error
		set  string // the pin set before this plan was made (NAME=VALUE)
	}
	// startRunMsg starts a run of the reviewed plan; ignoreChecks says the
	// user chose to run despite failing blocking checks.
	startRunMsg struct {
		plan         *Plan
		ignoreChecks bool
	}
	// setPinMsg asks the backend to set a pin the plan needs, then plans
	// the track again.
	setPinMsg struct{ track, assign string }
	// runDemoMsg runs `haloforge demo` in the terminal and comes back.
	runDemoMsg struct{}
	// execDoneMsg is the end of a program the wizard handed the terminal
	// to (the demo, a pager); what names it for an error note.
	execDoneMsg struct {
		what string
		err  error
	}
	// runEndedMsg is how a run ended, sent by the run screen once its
	// events are closed (a skip that restarts the run is not an end).
	runEndedMsg struct {
		status      string // steps.Outcome* of the run
		interrupted bool   // the user stopped it
		clean       bool   // every required step succeeded: the summary is next
	}
	diagnosedMsg struct {
		path     string
		findings []diagnose.Finding
		suspects []diagnose.Suspect // when nothing is known: lines that look like the error
		err      error
	}
	// openMsg puts a screen on top, which the screen offering it made: a
	// screen off the flow needs no case of its own in Model.route.
	openMsg        struct{ s screen }
	openSummaryMsg struct{}
	closeScreenMsg struct{}
	noteMsg        string
)

// Commands for the messages that carry no data (huh's nextGroup).

// closeScreen closes the top screen.
func closeScreen() tea.Msg { return closeScreenMsg{} }

// openSummary opens the summary of the run.
func openSummary() tea.Msg { return openSummaryMsg{} }

// open puts s on top of the screens.
func open(s screen) tea.Cmd { return send(openMsg{s: s}) }

// send returns a command that delivers msg.
func send(msg tea.Msg) tea.Cmd { return func() tea.Msg { return msg } }
