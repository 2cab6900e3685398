package tui

import (
	"io"
	"os"

	"golang.org/x/term"
)

// XTWINOPS title stack (xterm's CSI 22;0 t and CSI 23;0 t, which tmux and
// most terminals support): the wizard sets the window title while it runs,
// and Bubble Tea clears it on exit, which would leave the user's terminal
// with an empty title. Pushing the title before and popping it after gives
// the user back the title they had.
const (
	pushTitleSeq = "\x1b[22;0t"
	popTitleSeq  = "\x1b[23;0t"
)

// pushTitle saves the terminal's title when out is a terminal, and returns
// what restores it; elsewhere (a pipe, a test buffer) it writes nothing.
func pushTitle(out io.Writer) (restore func()) {
	if out == nil {
		out = os.Stdout
	}
	f, ok := out.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return func() {}
	}
	_, _ = io.WriteString(f, pushTitleSeq)
	return func() { _, _ = io.WriteString(f, popTitleSeq) }
}
