package main

import (
	"os"
	"syscall"
)

// stopSignals stop a build, the wizard or the demo as Ctrl-C does: the step
// is stopped with everything it started, the run is recorded as interrupted,
// and --resume continues it. SIGHUP is among them because a closed terminal
// (a closed window, tmux kill-window, a dropped SSH session) sends it, and
// its default action would end haloforge with state.json saying "running".
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}
