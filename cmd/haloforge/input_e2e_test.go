package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// promptTree writes a therock-toolbox scripts tree whose rocm step asks as
// body does and whose other steps do nothing.
func promptTree(t *testing.T, body string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "therock-toolbox")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"00-setup-toolbox.sh", "01-install-tools.sh", "02-install-rocm.sh", "03-build-aiter.sh",
		"04-build-fa.sh", "05-build-vllm.sh", "06-verify.sh"} {
		script := "true"
		if name == "02-install-rocm.sh" {
			script = body
		}
		text := "#!/usr/bin/env bash\nset -Eeuo pipefail\n" + script + "\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestPlainModeSaysAStepWaitsForInput: a step
// prints a sudo prompt and reads its terminal, haloforge's stdin is a pipe
// (`echo typed-by-user | haloforge build --plain`). The wait is announced
// with the question and what to do, the piped text never reaches the step,
// and Ctrl-C stops it.
func TestPlainModeSaysAStepWaitsForInput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	tree := promptTree(t, `printf '[sudo] password for user: '; read -r x; echo "got ${#x} chars"`)
	cmd := exec.Command(bin, "build", "--track", "therock-toolbox", "--plain", "--ignore-checks", "--only", "rocm",
		"--scripts", tree, "--state-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	cmd.Stdin = strings.NewReader("typed-by-user\n")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var seen []string
	next := func(limit time.Duration) (string, bool) {
		select {
		case l, ok := <-lines:
			seen = append(seen, l)
			return l, ok
		case <-time.After(limit):
			return "", false
		}
	}
	for {
		l, ok := next(30 * time.Second)
		if !ok {
			t.Fatalf("no waiting line; output:\n%s", strings.Join(seen, "\n"))
		}
		if l == "? [rocm] waiting for input: [sudo] password for user:" {
			break
		}
	}
	if l, _ := next(5 * time.Second); !strings.HasPrefix(l, "  nothing can answer it here (no terminal): stop with Ctrl-C") {
		t.Errorf("after the waiting line: %q", l)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for {
		if _, ok := next(30 * time.Second); !ok {
			break
		}
	}
	err = cmd.Wait()
	all := strings.Join(seen, "\n")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want 130:\n%s", err, all)
	}
	if strings.Contains(all, "got ") {
		t.Errorf("the piped text reached the step:\n%s", all)
	}
}

// TestPlainModeForwardsAPassword: on a terminal (tmux), plain mode hands
// the line the user types to a step that waits for a password, with the
// echo off as the step asked: the answer reaches the step, never the screen.
func TestPlainModeForwardsAPassword(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and drives it in tmux")
	}
	bin := buildBinary(t)
	tree := promptTree(t, `read -rs -p 'Password: ' x; echo; echo "got ${#x} chars"`)
	command := fmt.Sprintf("env NO_COLOR=1 %s build --track therock-toolbox --plain --ignore-checks --only rocm --scripts %s --state-dir %s; echo EXIT=$?",
		shellQuote(bin), shellQuote(tree), shellQuote(t.TempDir()))
	tm := newTmux(t, 160, 40, command)
	tm.waitFor("? [rocm] waiting for input: Password:", 30*time.Second)
	tm.waitFor("not shown (the step turned the echo off)", 5*time.Second)
	time.Sleep(300 * time.Millisecond) // the forwarder turns the echo off within 100 ms
	tm.run("send-keys", "-t", tm.name, "-l", "hunter2-secret")
	tm.keys("Enter")
	tm.waitFor("EXIT=0", 30*time.Second)
	scr := tm.screen()
	if !strings.Contains(scr, "[rocm] got 14 chars") {
		t.Errorf("the answer did not reach the step:\n%s", scr)
	}
	if strings.Contains(scr, "hunter2") {
		t.Errorf("the password is on the screen:\n%s", scr)
	}
}
