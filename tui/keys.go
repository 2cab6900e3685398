package tui

import "charm.land/bubbles/v2/key"

// KeyMap holds every binding of the wizard; screens show the ones that
// apply to them through their own help.KeyMap.
type KeyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Enter, Back, Tab                        key.Binding
	Search, NextMatch, PrevMatch, Follow    key.Binding
	Shell, Retry, Skip, Troubleshoot, Open  key.Binding
	Help, Quit, ForceQuit, Yes, No          key.Binding
	// Host fixes and pin sets (tui/hostfix.go, tui/sets.go).
	Apply, Sets, Use                     key.Binding
	Serve, Bench, Stop, Edit, Less, More key.Binding
}

// DefaultKeyMap is the wizard's key layout (help on `?`).
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:           key.NewBinding(key.WithKeys("up"), key.WithHelp("↑", "up")),
		Down:         key.NewBinding(key.WithKeys("down"), key.WithHelp("↓", "down")),
		PageUp:       key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "page up")),
		PageDown:     key.NewBinding(key.WithKeys("pgdown", "space"), key.WithHelp("pgdn", "page down")),
		Top:          key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g", "top")),
		Bottom:       key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G", "bottom")),
		Enter:        key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "continue")),
		Back:         key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Tab:          key.NewBinding(key.WithKeys("tab", "shift+tab"), key.WithHelp("tab", "switch pane")),
		Search:       key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "search log")),
		NextMatch:    key.NewBinding(key.WithKeys("n"), key.WithHelp("n/N", "next/prev match")),
		PrevMatch:    key.NewBinding(key.WithKeys("N")),
		Follow:       key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "follow/pause")),
		Shell:        key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "shell in toolbox")),
		Retry:        key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "retry failed step")),
		Skip:         key.NewBinding(key.WithKeys("k"), key.WithHelp("k", "skip optional step")),
		Troubleshoot: key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "troubleshoot")),
		Open:         key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "open another")),
		Help:         key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:         key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		ForceQuit:    key.NewBinding(key.WithKeys("ctrl+c")),
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
