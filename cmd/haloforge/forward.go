package main

import (
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/haloforge/haloforge/steps/runner"
)

// forwardInput lets the user answer a step that waits for input
// (runner.WaitingForInput) in line mode, when stdin is the terminal: while
// the step waits, and only then, each line typed goes to the step's
// terminal (Runner.Input), and the user's terminal echoes it only if the
// step's does (a password is not shown). haloforge reads its terminal only
// while a step waits and it is in the foreground, so a build sent to the
// background is never stopped for reading it. answering says whether it
// forwards; stop restores the terminal.
func forwardInput(in io.Reader, r *runner.Runner) (answering bool, stop func()) {
	f, ok := in.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return false, func() {}
	}
	fd := int(f.Fd())
	saved, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return false, func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		forward(fd, saved, r, done)
	}()
	var once sync.Once
	return true, func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			if foreground(fd) {
				_ = unix.IoctlSetTermios(fd, unix.TCSETS, saved)
			}
		})
	}
}

// forwardPoll is how often the forwarder looks at the step and the terminal.
const forwardPoll = 100 * time.Millisecond

// forward is forwardInput's loop: echo set as the step's terminal has it,
// typed lines handed to the step while it waits.
func forward(fd int, saved *unix.Termios, r *runner.Runner, done <-chan struct{}) {
	echoOn := saved.Lflag&unix.ECHO != 0
	buf := make([]byte, 4096)
	for {
		select {
		case <-done:
			return
		default:
		}
		waiting, stepEcho := r.Waiting()
		if !waiting || !foreground(fd) {
			if !waiting && echoOn != (saved.Lflag&unix.ECHO != 0) && foreground(fd) {
				if unix.IoctlSetTermios(fd, unix.TCSETS, saved) == nil {
					echoOn = saved.Lflag&unix.ECHO != 0
				}
			}
			time.Sleep(forwardPoll)
			continue
		}
		if want := saved.Lflag&unix.ECHO != 0 && stepEcho; want != echoOn {
			t := *saved
			if !want {
				t.Lflag &^= unix.ECHO
			}
			if unix.IoctlSetTermios(fd, unix.TCSETS, &t) == nil {
				echoOn = want
			}
		}
		// poll, not read: a read that outlived the wait would take the
		// next line from the user, and stop a backgrounded haloforge.
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, int(forwardPoll/time.Millisecond)); err != nil || n == 0 || fds[0].Revents&unix.POLLIN == 0 {
			continue
		}
		n, err := unix.Read(fd, buf)
		if err != nil || n <= 0 {
			continue
		}
		_ = r.Input(buf[:n]) // the wait may just have ended: then the line goes nowhere
		if !echoOn {
			// The user's Enter was not echoed either: end the line on screen.
			_, _ = os.Stdout.WriteString("\n")
		}
	}
}

// foreground says whether haloforge's process group owns the terminal: a
// background group reading or setting it would be stopped by the kernel.
func foreground(fd int) bool {
	pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}
