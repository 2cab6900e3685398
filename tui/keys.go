package tui

import "charm.land/bubbles/v2/key"

// KeyMap holds the keys every screen shares: moving, choosing, leaving,
// help, and the keys that open a screen wherever it is offered. A key
// that means something else on one screen is not here but in that
// screen's own keys, in its file (huh's nested KeyMap, kept with the
// screen): the run screen's / searches its log where the picker's filters,
// its x hides the hint where the serve screen's stops the server, its s
// opens a shell where the summary's serves, ←/→ step the serve form's
// numbers. So a key means one thing on a screen, as its help lists it
// (TestKeysMeanOneThingPerScreen); a binding that only works in some
// states is disabled in the others, and help leaves it out.
type KeyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom, Left, Right key.Binding
	Enter, Back, Tab                                     key.Binding
	Help, Quit, ForceQuit, Yes, No                       key.Binding
	// Copy puts a fix on the clipboard; Troubleshoot, Open, Demo, Apply,
	// Sets and Use open or act on another screen where it is offered.
	Copy, Troubleshoot, Open, Demo, Apply, Sets, Use key.Binding
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
		Open:         key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "open another")),
		Demo:         key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "run the demo")),
		Help:         key.NewBinding(key.WithKeys("?", "h"), key.WithHelp("?", "help")),
		Quit:         key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		ForceQuit:    key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
		Yes:          key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "yes")),
		No:           key.NewBinding(key.WithKeys("n", "N", "esc"), key.WithHelp("n", "no")),
		Apply:        key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "apply host fixes")),
		Sets:         key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pin sets")),
		Use:          key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "use this set")),
	}
}
