package main

// Text on a real terminal: help at the terminal's width, never wrapped by
// the terminal itself; the real binary in tmux, read with capture-pane.

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// history is everything the pane printed (up to lines rows back), each row
// as the terminal shows it, or with the terminal's own wraps joined; blank
// rows left out (-J keeps fewer of them at the end).
func (s *tmuxSession) history(lines int, joinWraps bool) []string {
	args := []string{"capture-pane", "-p", "-S", fmt.Sprint(-lines), "-t", s.name}
	if joinWraps {
		args = append(args, "-J")
	}
	var rows []string
	for _, r := range strings.Split(s.run(args...), "\n") {
		if strings.TrimSpace(r) != "" {
			rows = append(rows, r)
		}
	}
	return rows
}

// TestTmuxHelpFits: every group's help and a leaf's, on a real terminal
// of 80, 120 and 60 columns (the terminal's last column left free): no row reaches the terminal's edge and wraps
// there (capture-pane -J, which joins the rows the terminal wrapped, gives
// the same rows), the rows use the width up to 80 and no more.
func TestTmuxHelpFits(t *testing.T) {
	bin := sharedBinary(t)
	for _, size := range [][2]int{{80, 24}, {120, 40}, {60, 20}} {
		for _, args := range []string{"--help", "pins --help", "cluster --help", "completion --help", "help cluster up", "bench --help"} {
			if size[0] < 80 && args == "bench --help" {
				continue // an example's path is wider than 60 columns: a command is never broken inside a word
			}
			t.Run(fmt.Sprintf("%dx%d/%s", size[0], size[1], args), func(t *testing.T) {
				tm, st := tmuxWithStatus(t, size[0], size[1], shellQuote(bin)+" "+args)
				if status := tm.waitStatus(st, 30*time.Second); status != "0" {
					t.Fatalf("exit %s", status)
				}
				time.Sleep(keyGap)
				rows, joined := tm.history(300, false), tm.history(300, true)
				if len(rows) != len(joined) {
					t.Fatalf("the terminal wrapped %d rows of help at %d columns:\n%s", len(rows)-len(joined), size[0], strings.Join(rows, "\n"))
				}
				widest := 0
				for _, r := range rows {
					widest = max(widest, len([]rune(strings.TrimRight(r, " "))))
				}
				if limit := min(size[0], helpMax); widest > limit || widest < limit-12 {
					t.Errorf("the widest row is %d columns, want at most %d and close to it:\n%s", widest, limit, strings.Join(rows, "\n"))
				}
			})
		}
	}
}

// TestDumbTerminalGetsLineMode: on a real terminal whose TERM is dumb
// (Emacs's M-x shell), the demo and the wizard print line mode: no
// alternate screen, no cursor addressing, no keyboard protocol, no colour;
// the same terminal with TERM=xterm gets the full screen.
func TestDumbTerminalGetsLineMode(t *testing.T) {
	bin := sharedBinary(t)
	for _, tc := range []struct {
		name, term string
		args       []string
		full       bool
		want       string
	}{
		{"demo", "dumb", []string{"demo"}, false, "gfx1151"},
		{"wizard", "dumb", nil, false, "== Detection (this machine)"},
		{"demo on xterm", "xterm-256color", []string{"demo"}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			cmd.Env = append(os.Environ(), "TERM="+tc.term, "XDG_STATE_HOME="+t.TempDir(), "HALOFORGE_DEMO_SPEED=1000")
			ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 80, Rows: 24})
			if err != nil {
				t.Fatal(err)
			}
			defer ptmx.Close()
			var out bytes.Buffer
			done := make(chan struct{})
			go func() { _, _ = io.Copy(&out, ptmx); close(done) }()
			if tc.full {
				time.Sleep(3 * time.Second) // the picker is up
				_, _ = ptmx.Write([]byte("q"))
			}
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("still running:\n%s", out.String())
			}
			_ = cmd.Wait()
			got := out.String()
			full := strings.Contains(got, "\x1b[?1049h")
			if full != tc.full {
				t.Fatalf("TERM=%s: full screen %v, want %v:\n%q", tc.term, full, tc.full, got)
			}
			if tc.full {
				return
			}
			for _, esc := range []string{"\x1b[>1u", "\x1b[?2004h", "\x1b[H", "\x1b[1;1H", "\x1b[3"} {
				if strings.Contains(got, esc) {
					t.Errorf("TERM=dumb got %q:\n%q", esc, got)
				}
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("the line-mode output lacks %q:\n%s", tc.want, got)
			}
		})
	}
}

// TestTmuxRecapCommandsRun: the wizard on this machine (no AMD GPU: its
// blocking checks fail) at 80x24, the plan of the first track reviewed,
// then q: the recap says the checks fail, every command in it runs as
// printed with the --state-dir given, and no row was wrapped by the
// terminal (the recap wraps itself, a command between its words).
func TestTmuxRecapCommandsRun(t *testing.T) {
	bin := sharedBinary(t)
	state := t.TempDir()
	env := append(os.Environ(), "XDG_STATE_HOME="+t.TempDir(), offlineEnv+"=1")
	tm, st := tmuxWithStatus(t, 80, 24, fmt.Sprintf("%s=1 XDG_STATE_HOME=%s %s --state-dir %s", offlineEnv, shellQuote(t.TempDir()), shellQuote(bin), shellQuote(state)))
	tm.waitFor("enter", 60*time.Second)
	time.Sleep(2 * time.Second) // detection done
	tm.keys("Enter")
	tm.waitFor("track", 10*time.Second)
	tm.keys("Enter")
	tm.waitFor("plan", 20*time.Second)
	time.Sleep(time.Second)
	tm.keys("q")
	tm.waitStatus(st, 20*time.Second)
	rows, joined := tm.history(200, false), tm.history(200, true)
	if len(rows) != len(joined) {
		t.Errorf("the terminal wrapped a recap row:\n%s", strings.Join(rows, "\n"))
	}
	recap := strings.Join(rows, "\n")
	if !strings.Contains(recap, "A build stops at the checks that fail here") {
		t.Fatalf("the recap does not say the checks fail:\n%s", recap)
	}
	report, bad, err := checkPrinted(recap, printedCheck{want: 3, carry: [][2]string{{"--state-dir", state}}},
		binaryRunner(bin, t.TempDir(), env), nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, recap)
	}
	t.Logf("%s", report)
	for _, b := range bad {
		t.Error(b)
	}
}
