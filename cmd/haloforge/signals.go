package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/haloforge/haloforge/internal/text"
)

// stopSignals stop a build, the wizard or the demo as Ctrl-C does: the step
// is stopped with everything it started, the run is recorded as interrupted,
// and --resume continues it. SIGHUP is among them because a closed terminal
// (a closed window, tmux kill-window, a dropped SSH session) sends it, and
// its default action would end haloforge with state.json saying "running".
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// onInterrupt turns the first of stopSignals into a clean stop of what
// (SIGTERM, grace, then SIGKILL: stop) and any later one into an immediate
// kill. build, bench --track and serve share it, so a closed terminal
// stops a server as cleanly as a build. The returned func stops listening.
func onInterrupt(out io.Writer, what string, grace time.Duration, stop, kill func()) func() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, stopSignals...)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-done:
				return
			case <-sigs:
				n++
				if n == 1 {
					fmt.Fprintf(out, "\nstopping %s (SIGTERM, then SIGKILL after %s); press Ctrl-C again to kill it now\n", what, text.Duration(grace))
					stop()
				} else {
					kill()
				}
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}
