package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haloforge/haloforge/steps"
)

// TestTmuxKillWindowRecordsInterrupted closes the terminal of a TUI build
// (tmux kill-window: the pane's pty hangs up and haloforge gets SIGHUP) while
// a step runs: the step and what it started must stop, and state.json must
// say interrupted, not "running" forever.
func TestTmuxKillWindowRecordsInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and drives it in tmux")
	}
	bin := buildBinary(t)
	work := t.TempDir()
	state := filepath.Join(work, "state")
	scripts, err := filepath.Abs("../../steps/runner/testdata/tracks")
	if err != nil {
		t.Fatal(err)
	}
	cmd := fmt.Sprintf("cd %s && env FX_WAIT=vllm %s build --track therock-toolbox --ignore-checks --scripts %s --state-dir %s",
		shellQuote(work), shellQuote(bin), shellQuote(scripts), shellQuote(state))
	tm := newTmux(t, 120, 40, cmd)
	ready := waitForGlob(t, filepath.Join(state, "runs", "*", "ready"), 60*time.Second)
	runDir := filepath.Dir(ready)
	tm.run("kill-window", "-t", tm.name)

	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := steps.LoadState(state)
		if err == nil && st.Tracks["therock-toolbox"] != nil {
			if ss := st.Tracks["therock-toolbox"].Steps["vllm"]; ss != nil && ss.Status == steps.OutcomeInterrupted {
				break
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(state, steps.StateFile))
			t.Fatalf("state.json 20 s after the window closed:\n%s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var rep struct {
		Status string `json:"status"`
	}
	waitFor(t, 10*time.Second, func() bool {
		b, err := os.ReadFile(filepath.Join(runDir, "report.json"))
		return err == nil && json.Unmarshal(b, &rep) == nil && rep.Status == steps.OutcomeInterrupted
	}, func() string { return "report.json status " + rep.Status })
	pids := readPids(t, filepath.Join(runDir, "pids"))
	waitFor(t, 15*time.Second, func() bool { return len(alive(pids)) == 0 },
		func() string { return fmt.Sprintf("still alive: %v", alive(pids)) })
}

// waitForGlob polls until pattern matches a file and returns it.
func waitForGlob(t *testing.T, pattern string, limit time.Duration) string {
	t.Helper()
	var found string
	waitFor(t, limit, func() bool {
		m, _ := filepath.Glob(pattern)
		if len(m) > 0 {
			found = m[0]
		}
		return found != ""
	}, func() string { return "nothing matches " + pattern })
	return found
}

// waitFor polls ok every 50 ms until it holds; after limit it fails with why().
func waitFor(t *testing.T, limit time.Duration, ok func() bool, why func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", limit, why())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readPids reads the pids a fixture step recorded; whichever is still alive
// when the test ends is killed, so a failure leaves nothing behind.
func readPids(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	t.Cleanup(func() {
		for _, p := range alive(pids) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	})
	return pids
}

// alive lists the pids that are neither gone nor zombies.
func alive(pids []int) []int {
	var out []int
	for _, p := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i > 0 && len(s) > i+2 && (s[i+2] == 'Z' || s[i+2] == 'X') {
			continue
		}
		out = append(out, p)
	}
	return out
}
