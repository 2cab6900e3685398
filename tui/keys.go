package tui

import "charm.land/bubbles/v2/key"

// KeyMap holds the keys more than one screen uses: moving, choosing,
// leaving, help, and the keys that open a screen wherever it is offered.
// A key of one screen alone is in that screen's own keys, in its file
// (huh's nested KeyMap, kept with the screen), and so is a key that means
// something else there: the run screen's / searches its log where the
// picker's filters, its x hides the hint where the serve screen's stops
// the server, its s opens a shell where the summary's serves, and ←/→
// step the serve form's numbers. So a key means one thing on a screen, as
// its help lists it (TestKeysMeanOneThingPerScreen); its short help lists
// the keys that work in its state, with what they do there.
type KeyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom, Left, Right key.Binding
	Enter, Back, Tab                                     key.Binding
	Help, Quit, ForceQuit, Yes, No                       key.Binding
	// Copy puts a fix on the clipboard (the run's hint, troubleshooting);
	// Troubleshoot and Apply open their screen from each screen that
	// offers it.
	Copy, Troubleshoot, Apply key.Binding
}

// DefaultKeyMap is the wizard's key layout (help on `?`, or `h`).
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "b"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "space"), key.WithHelp("pgdn", "page down")),
		Top:      key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g", "top")),
		Bottom:   key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G", "bottom")),
		Left:     key.NewBinding(key.WithKeys("left"), key.WithHelp("←/→", "scroll sideways")),
		Right:    key.NewBinding(key.WithKeys("right")),
		Enter:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "continue")),
		Back:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Tab:      key.NewBinding(key.WithKeys("tab", "shift+tab"), key.WithHelp("tab", "steps/log")),
		// Copy puts a fix on the clipboard (OSC 52, which tmux and most
		// terminals pass on): the command arrives whole, however it wraps.
		Copy:         key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "copy the fix")),
		Troubleshoot: key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "troubleshoot")),
		Help:         key.NewBinding(key.WithKeys("?", "h"), key.WithHelp("?", "help")),
		Quit:         key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		ForceQuit:    key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
		Yes:          key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "yes")),
		No:           key.NewBinding(key.WithKeys("n", "N", "esc"), key.WithHelp("n", "no")),
		Apply:        key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "apply host fixes")),
	}
}
