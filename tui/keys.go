package tui

import "charm.land/bubbles/v2/key"

// KeyMap holds every binding of the wizard; screens show the ones that
// apply to them through their own help.KeyMap.
type KeyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom, Left, Right key.Binding
	Enter, Back, Tab                                     key.Binding
	Search, SearchBack, NextMatch, PrevMatch, Follow     key.Binding
	Wrap, Pager, HideHint, Filter, Copy                  key.Binding
	Shell, Retry, Skip, Troubleshoot, Open, Demo         key.Binding
	Help, LogHelp, Quit, ForceQuit, Yes, No              key.Binding
	// Host fixes and pin sets (tui/hostfix.go, tui/sets.go).
	Apply, Sets, Use key.Binding
	// The serve screen (tui/serve.go).
	Serve, Bench, Stop, Edit, Less, More key.Binding
}

// DefaultKeyMap is the wizard's key layout (help on `?`, or `h`). The log
// keys follow less: j/k, g/G, / and ? to search forward and backward, n
// and N to repeat, ←/→ to scroll sideways.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:         key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:       key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:     key.NewBinding(key.WithKeys("pgup", "b"), key.WithHelp("pgup", "page up")),
		PageDown:   key.NewBinding(key.WithKeys("pgdown", "space"), key.WithHelp("pgdn", "page down")),
		Top:        key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g", "top")),
		Bottom:     key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G", "bottom")),
		Left:       key.NewBinding(key.WithKeys("left"), key.WithHelp("←/→", "scroll sideways")),
		Right:      key.NewBinding(key.WithKeys("right")),
		Enter:      key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "continue")),
		Back:       key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Tab:        key.NewBinding(key.WithKeys("tab", "shift+tab"), key.WithHelp("tab", "steps/log")),
		Search:     key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "search")),
		SearchBack: key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "search back")),
		NextMatch:  key.NewBinding(key.WithKeys("n"), key.WithHelp("n/N", "next/prev match")),
		PrevMatch:  key.NewBinding(key.WithKeys("N")),
		Follow:     key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "follow/pause")),
		Wrap:       key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "wrap lines")),
		Pager:      key.NewBinding(key.WithKeys("v"), key.WithHelp("v", "open log in $PAGER")),
		HideHint:   key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "hide/show hint")),
		Filter:     key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		// Copy puts a fix on the clipboard (OSC 52, which tmux and most
		// terminals pass on): the command arrives whole, however it wraps.
		Copy:         key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "copy the fix")),
		Shell:        key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "shell in the box")),
		Retry:        key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "retry")),
		Skip:         key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "skip optional step")),
		Troubleshoot: key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "troubleshoot")),
		Open:         key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "open another")),
		Demo:         key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "run the demo")),
		Help:         key.NewBinding(key.WithKeys("?", "h"), key.WithHelp("?", "help")),
		LogHelp:      key.NewBinding(key.WithKeys("h"), key.WithHelp("h", "help")),
		Quit:         key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		ForceQuit:    key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
		Yes:          key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "yes")),
		No:           key.NewBinding(key.WithKeys("n", "N", "esc"), key.WithHelp("n", "no")),
		// Host fixes and pin sets.
		Apply: key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "apply host fixes")),
		Sets:  key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pin sets")),
		Use:   key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "use this set")),
		Serve: key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "serve a model")),
		Bench: key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "benchmark")),
		Stop:  key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "stop the server")),
		Edit:  key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "edit")),
		Less:  key.NewBinding(key.WithKeys("left"), key.WithHelp("←/→", "less/more")),
		More:  key.NewBinding(key.WithKeys("right")),
	}
}
