package runner

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A step that waits for an answer on its terminal (a sudo password, a
// [y/N], git asking for a user name) would hang silently: nobody types into
// its pty. The stream's processor watches for it:
// once the step has printed nothing for Options.InputQuiet, it looks for a
// process of the step blocked in read(2) on the step's terminal
// (/proc/PID/syscall, readable by haloforge as the processes' ancestor),
// and at the line the step left open, which is where a prompt waits. Either
// is enough: sudo runs as root, and its read cannot be seen, but its prompt
// can. It announces the wait once per silence with WaitingForInput; the
// step's next output ends it.
const (
	DefaultInputQuiet = 2 * time.Second        // silence before the terminal is looked at
	inputCheck        = 500 * time.Millisecond // how often, during a silence
	maxPrompt         = 200                    // bytes of a prompt in the event
)

// promptShape matches the end of a line that asks the user something.
var promptShape = regexp.MustCompile(`(?i)(` +
	`pass(word|phrase)[^:]*:\s*$` + // [sudo] password for ann:, Password:, Enter passphrase for key '…':
	`|username for '[^']*':\s*$` + // git: Username for 'https://github.com':
	`|^\s*(user ?name|login):\s*$` +
	`|\[(y/n|y/N|Y/n|yes/no)\]\s*[:?]?\s*$` + // apt's [Y/n], [y/N]
	`|\((y/n|yes/no)(/\[[^\]]*\])?\)\s*[:?]?\s*$` + // ssh: (yes/no/[fingerprint])?
	`|press (enter|return|any key)[^.]*$` +
	`)`)

// looksLikePrompt says whether text ends the way a question to the user does.
func looksLikePrompt(text string) bool { return promptShape.MatchString(text) }

// ErrNotWaiting is Input's answer when no step waits for input.
var ErrNotWaiting = errors.New("no step is waiting for input")

// Waiting reports whether the running step waits for input (it was
// announced with WaitingForInput and has printed nothing since), and
// whether its terminal echoes what is typed (false for a password).
func (r *Runner) Waiting() (waiting, echo bool) {
	st := r.current.Load()
	if st == nil || !st.waiting.Load() {
		return false, false
	}
	return true, st.echo()
}

// Input hands what the user typed to the running step's terminal, only
// while the step waits for input: a key pressed at another time must never
// answer a question nobody saw (apt's [Y/n] takes a bare Enter as yes).
func (r *Runner) Input(p []byte) error {
	st := r.current.Load()
	if st == nil || !st.waiting.Load() {
		return ErrNotWaiting
	}
	st.masterMu.Lock()
	defer st.masterMu.Unlock()
	if st.masterShut {
		return ErrNotWaiting
	}
	for len(p) > 0 {
		n, err := unix.Write(int(st.master.Fd()), p)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// echo says whether the step's terminal echoes input; a pty master reports
// the slave's modes (TCGETS on the master acts on the slave).
func (st *stream) echo() bool {
	st.masterMu.Lock()
	defer st.masterMu.Unlock()
	if st.masterShut {
		return true
	}
	t, err := unix.IoctlGetTermios(int(st.master.Fd()), unix.TCGETS)
	return err != nil || t.Lflag&unix.ECHO != 0
}

// shut closes the pty's master once nothing may write to it any more: the
// user's input (Input) takes the same lock, so it never reaches a
// descriptor number that a later file has taken over.
func (st *stream) shut() {
	st.masterMu.Lock()
	defer st.masterMu.Unlock()
	if !st.masterShut {
		st.masterShut = true
		st.master.Close()
	}
}

// checkInput runs on the processor's goroutine during a silence: it
// announces a step that waits for input, once per silence.
func (st *stream) checkInput(pending string) {
	last := st.lastWrite.Load()
	quiet := time.Since(time.Unix(0, last))
	if quiet < st.r.o.InputQuiet || st.askedAt == last {
		return
	}
	prompt := strings.TrimSpace(pending)
	if prompt == "" && st.tailN > 0 {
		prompt = strings.TrimSpace(st.tail[(st.tailN-1)%tailLines])
	}
	shaped := looksLikePrompt(prompt)
	if !shaped && !st.readingTerminal() {
		return
	}
	if !shaped && !strings.HasSuffix(prompt, ":") && !strings.HasSuffix(prompt, "?") {
		prompt = "" // the last line says nothing about the question
	}
	if len(prompt) > maxPrompt {
		prompt = "…" + strings.ToValidUTF8(prompt[len(prompt)-maxPrompt:], "")
	}
	st.askedAt = last
	st.waiting.Store(true)
	st.r.send(WaitingForInput{Step: st.step.ID, Prompt: prompt, Echo: st.echo(), Quiet: quiet})
}

// readingTerminal says whether a process of the step sleeps in read(2) on
// the step's terminal.
func (st *stream) readingTerminal() bool {
	if st.supervisor == 0 {
		return false
	}
	for _, pid := range Descendants(st.supervisor) {
		fd, ok := readingFD(pid)
		if !ok {
			continue
		}
		target, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", strconv.Itoa(fd)))
		if err == nil && (target == st.slave || target == "/dev/tty") {
			return true
		}
	}
	return false
}

// readingFD returns the descriptor a process is blocked reading from, from
// /proc/PID/syscall ("NR ARG0 …", or "running"); ok is false for any
// other state or syscall.
func readingFD(pid int) (fd int, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "syscall"))
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil || nr != unix.SYS_READ {
		return 0, false
	}
	arg, err := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 32)
	if err != nil {
		return 0, false
	}
	return int(arg), true
}
