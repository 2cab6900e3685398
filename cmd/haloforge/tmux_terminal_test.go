package main

// What only a real terminal shows: build on a terminal (a dry run stays on
// screen, a build ends on its summary, quit and Ctrl-C), the title restored,
// a terminal too small. The real binary in tmux, read with capture-pane, as
// tmux_e2e_test.go does for the demo.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sharedBinary builds haloforge for a test (go's build cache makes every
// build after the first a link), skipping without tmux.
func sharedBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary and drives it in tmux")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed: apt-get install tmux (the Makefile's e2e target does)")
	}
	return buildBinary(t)
}

// tmuxWithStatus starts command in tmux; its exit status goes to a file, which
// tmux 3.3's #{pane_dead_status} does not always report.
func tmuxWithStatus(t *testing.T, w, h int, command string) (*tmuxSession, string) {
	t.Helper()
	status := filepath.Join(t.TempDir(), "status")
	return newTmux(t, w, h, command+"; echo $? > "+shellQuote(status)), status
}

// waitStatus waits for the command to exit and returns its exit status.
func (s *tmuxSession) waitStatus(file string, limit time.Duration) string {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if b, err := os.ReadFile(file); err == nil && len(b) > 0 {
			return strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("still running after %v:\n%s", limit, s.screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// joined is the screen and the lines scrolled off it as words, each row
// a word boundary: the recaps wrap themselves, so a sentence split by the
// terminal inside a word no longer matches.
func (s *tmuxSession) joined() string {
	return strings.Join(strings.Fields(s.run("capture-pane", "-p", "-S", "-50", "-t", s.name)), " ")
}

// gone waits until text is no longer on screen.
func (s *tmuxSession) gone(text string, limit time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	for strings.Contains(s.screen(), text) {
		if time.Now().After(deadline) {
			s.t.Fatalf("%q still on screen after %v", text, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fakeTrack writes a scripts tree in which every step of vllm-image prints
// a line and succeeds: a real build, on the real runner, without a GPU.
func fakeTrack(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "vllm-image")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"00-pull-image.sh", "01-write-launcher.sh", "02-verify.sh"} {
		body := "#!/bin/sh\necho step " + name + "\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestTmuxDryRunStaysOnScreen: on a terminal, build --dry-run
// prints its commands in line mode and they stay there to be read and
// copied; the end says nothing was changed.
func TestTmuxDryRunStaysOnScreen(t *testing.T) {
	bin := sharedBinary(t)
	state := t.TempDir()
	tm, st := tmuxWithStatus(t, 200, 60, fmt.Sprintf("%s build --track vllm-image --dry-run --state-dir %s", shellQuote(bin), shellQuote(state)))
	if status := tm.waitStatus(st, 60*time.Second); status != "0" {
		t.Fatalf("exit %s:\n%s", status, tm.screen())
	}
	scr := tm.screen()
	for _, want := range []string{"[dry-run] podman pull", "dry run done in", "nothing was changed"} {
		if !strings.Contains(scr, want) {
			t.Errorf("after the dry run the terminal lacks %q:\n%s", want, scr)
		}
	}
}

// TestTmuxBuildEndsOnTheSummary: a real successful
// build on a terminal ends on its summary; q leaves the recap with the
// next commands on the normal screen.
func TestTmuxBuildEndsOnTheSummary(t *testing.T) {
	bin := sharedBinary(t)
	state := t.TempDir()
	tm, st := tmuxWithStatus(t, 120, 40, fmt.Sprintf("%s build --track vllm-image --ignore-checks --scripts %s --state-dir %s",
		shellQuote(bin), shellQuote(fakeTrack(t)), shellQuote(state)))
	tm.waitFor("Results", 60*time.Second)
	scr := tm.screen()
	for _, want := range []string{"✓ vllm-image is built", "Next", "start-vllm.sh <model>"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the summary lacks %q:\n%s", want, scr)
		}
	}
	if _, err := os.Stat(st); err == nil {
		t.Fatal("the build left the screen by itself")
	}
	tm.keys("q")
	if status := tm.waitStatus(st, 10*time.Second); status != "0" {
		t.Errorf("exit %s", status)
	}
	scr = tm.joined()
	for _, want := range []string{"✓ vllm-image is built · logs and report.json in " + state, "next: " + state + "/vllm-image/start-vllm.sh <model>"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the recap lacks %q:\n%s", want, scr)
		}
	}
}

// TestTmuxQuitAndInterrupt, in the demo: q on an idle
// screen quits at once (exit 0); Ctrl-C there is an interruption (130);
// q during a step asks, and the recap after the stop says what happened.
func TestTmuxQuitAndInterrupt(t *testing.T) {
	bin := sharedBinary(t)
	demo := func(w, h int) (*tmuxSession, string) {
		return tmuxWithStatus(t, w, h, fmt.Sprintf("env XDG_STATE_HOME=%s HALOFORGE_DEMO_SPEED=4 %s demo", shellQuote(t.TempDir()), shellQuote(bin)))
	}
	tm, st := demo(120, 40)
	tm.waitFor("gfx1151", 10*time.Second)
	tm.keys("q")
	if status := tm.waitStatus(st, 5*time.Second); status != "0" {
		t.Errorf("q on detection: exit %s, want 0 without a question", status)
	}

	tm, st = demo(120, 40)
	tm.waitFor("gfx1151", 10*time.Second)
	tm.keys("C-c")
	if status := tm.waitStatus(st, 5*time.Second); status != "130" {
		t.Errorf("Ctrl-C on detection: exit %s, want 130", status)
	}

	tm, st = demo(120, 40)
	tm.waitFor("gfx1151", 10*time.Second)
	tm.startRun("All 7 steps run")
	tm.waitFor("toolbox log", 20*time.Second)
	tm.keys("q")
	tm.waitFor("Quit? The running step", 5*time.Second)
	tm.keys("y")
	if status := tm.waitStatus(st, 30*time.Second); status != "130" {
		t.Errorf("quit mid-run: exit %s, want 130", status)
	}
	if scr := tm.joined(); !strings.Contains(scr, "demo: therock-toolbox was stopped on sample data") || !strings.Contains(scr, "haloforge demo` starts the story again") {
		t.Errorf("no recap after the quit:\n%s", scr)
	}
}

// TestTmuxTitleIsRestored: the terminal's title before haloforge is its
// title after (XTWINOPS push and pop), whatever the wizard set meanwhile.
func TestTmuxTitleIsRestored(t *testing.T) {
	bin := sharedBinary(t)
	cmd := fmt.Sprintf(`printf '\033]2;before-haloforge\033\\'; env XDG_STATE_HOME=%s %s demo`, shellQuote(t.TempDir()), shellQuote(bin))
	tm, st := tmuxWithStatus(t, 120, 40, cmd)
	tm.waitFor("gfx1151", 10*time.Second)
	tm.startRun("All 7 steps run")
	tm.waitFor("toolbox log", 20*time.Second)
	if title := tm.title(); !strings.HasPrefix(title, "haloforge") {
		t.Errorf("during the run the title is %q, want haloforge's", title)
	}
	tm.keys("C-c")
	tm.waitStatus(st, 30*time.Second)
	if title := tm.title(); title != "before-haloforge" {
		t.Errorf("after haloforge the title is %q, want the one before, before-haloforge", title)
	}
}

// title is the pane's title (set by OSC 2).
func (s *tmuxSession) title() string {
	return strings.TrimSpace(s.run("display-message", "-p", "-t", s.name, "#{pane_title}"))
}

// TestTmuxSmallTerminal, at 80×24: the detection
// screen never breaks a fix command inside a word (a row that goes on
// past the edge says so, and → shows the rest), the picker's Esc clears
// a filter before it goes back, and the footer keeps help and quit.
func TestTmuxSmallTerminal(t *testing.T) {
	bin := sharedBinary(t)
	tm := newTmux(t, 80, 24, fmt.Sprintf("env XDG_STATE_HOME=%s HALOFORGE_DEMO_SPEED=20 %s demo", shellQuote(t.TempDir()), shellQuote(bin)))
	tm.waitFor("gfx1151", 10*time.Second)
	tm.keys("j", "j", "j", "j", "j", "j", "j", "j", "j", "j")
	scr := tm.screen()
	rows := strings.Split(scr, "\n")
	sawSed := false
	for i, r := range rows {
		trimmed := strings.TrimSpace(r)
		prev := ""
		if i > 0 {
			prev = strings.TrimRight(rows[i-1], " ")
		}
		if strings.HasPrefix(trimmed, "/etc/default/grub") && !strings.HasSuffix(prev, `\`) && !strings.HasSuffix(prev, "→") {
			t.Errorf("row %d starts with the end of a command cut off from it:\n%s", i, scr)
		}
		if strings.Contains(r, "sudo sed -i") {
			sawSed = true
			if !strings.HasSuffix(strings.TrimRight(r, " "), `\`) && !strings.HasSuffix(strings.TrimRight(r, " "), "→") {
				t.Errorf("the sed command row ends mid-command: %q", r)
			}
		}
	}
	if !sawSed {
		t.Fatalf("the gtt-size fix is not on screen:\n%s", scr)
	}
	if !strings.Contains(scr, "→") {
		t.Errorf("a row wider than the screen does not say so:\n%s", scr)
	}
	tm.keys("Right")
	if scr := tm.screen(); !strings.Contains(scr, "page_pool_size=30670848 /'") {
		t.Errorf("→ does not show the rest of the sed command:\n%s", scr)
	}
	footer := func() string {
		rows := strings.Split(strings.TrimRight(tm.screen(), "\n "), "\n")
		return rows[len(rows)-1]
	}
	if f := footer(); !strings.Contains(f, "? help") || !strings.HasSuffix(strings.TrimSpace(f), "q quit") {
		t.Errorf("detection footer at 80 columns: %q", f)
	}

	tm.keys("Enter", "/", "o", "l", "l", "Escape")
	tm.waitFor("ollama", 5*time.Second)
	if scr := tm.screen(); strings.Contains(scr, "vllm-image") || !strings.Contains(scr, "/oll") {
		t.Errorf("Esc while typing the filter did not keep it:\n%s", scr)
	}
	tm.keys("Escape")
	tm.waitFor("vllm-image", 5*time.Second)
	if !strings.Contains(tm.screen(), "Pick a track") {
		t.Errorf("Esc with a filter left the picker instead of clearing it:\n%s", tm.screen())
	}
	if f := footer(); !strings.Contains(f, "/ filter") {
		t.Errorf("the picker's footer does not name the filter: %q", f)
	}

	// Esc on a set filter keeps the cursor on its track: on ollama
	// here. Filter to the demo's track the same way, then run it.
	tm.keys("/", "t", "h", "e", "r", "o", "c", "k", "-", "t", "Escape", "Escape")
	tm.waitFor("vllm-image", 5*time.Second)
	tm.keys("Enter", "Enter")
	tm.waitFor("therock-amdsmi-double-free", 60*time.Second)
	tm.waitFor("✗ rocm", 30*time.Second)
	if f := footer(); !strings.Contains(f, "h help") || !strings.HasSuffix(strings.TrimSpace(f), "q quit") || !strings.Contains(f, "r retry") {
		t.Errorf("run footer at 80 columns after the failure: %q", f)
	}
}
