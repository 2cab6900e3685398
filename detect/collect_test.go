package detect

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeTools puts real shell scripts named like the collector's commands on
// an otherwise empty PATH, so Collect runs them instead of the machine's.
func fakeTools(t *testing.T, scripts map[string]string) {
	t.Helper()
	bin := t.TempDir()
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
}

// TestCollectSlowCommand is ux-review finding 15: on a busy machine doctor
// dropped its distrobox check. A distrobox that hangs (a real script that
// sleeps, with a child of its own) must yield a distrobox check that says it
// could not be run in time, and leave no process behind.
func TestCollectSlowCommand(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	fakeTools(t, map[string]string{
		"distrobox": "echo $$ >" + pids + "\n/bin/sleep 60 &\necho $! >>" + pids + "\nwait\n",
		"podman":    "echo 'Error: cannot read /etc/containers/storage.conf' >&2\nexit 3\n",
		"rocminfo":  "echo 'ROCk module is NOT loaded, possibly no GPU devices'\nexit 1\n",
	})
	start := time.Now()
	b, err := Collect(t.Context(), CollectOptions{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("Collect waited %s for a command with a 1 s budget", waited)
	}
	m, _ := b.Get("collect.txt")
	if !strings.Contains(m, "distrobox: timed out after 1s") || !strings.Contains(m, "podman: exit: exit status 3") ||
		!strings.Contains(m, "rocminfo: done, exit status 1") || !strings.Contains(m, "docker: not found") {
		t.Errorf("collect.txt:\n%s", m)
	}
	r := Analyse(b)
	c := mustCheck(t, r, "distrobox", StatusWarn)
	if c.Summary != "could not run distrobox --version in 1 s, so this was not checked" || c.Fix == "" {
		t.Errorf("distrobox check %+v", c)
	}
	ce := mustCheck(t, r, "container-engine", StatusWarn)
	if !strings.HasPrefix(ce.Summary, "podman --version failed (exit status 3)") {
		t.Errorf("container-engine %+v", ce)
	}
	// rocminfo answered (no GPU is an answer): no note for it.
	notes := strings.Join(r.Notes, "\n")
	if !strings.Contains(notes, "could not run distrobox --version in 1 s") || strings.Contains(notes, "rocminfo") {
		t.Errorf("notes:\n%s", notes)
	}
	var text strings.Builder
	if err := r.WriteText(&text, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "[!] distrobox: could not run distrobox --version in 1 s") {
		t.Errorf("doctor's summary hides the distrobox check:\n%s", text.String())
	}
	// The script and its sleeping child were killed with their group.
	raw, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(raw)) {
		pid, _ := strconv.Atoi(f)
		// SIGKILL is delivered when the process next runs: give a loaded
		// machine a moment before calling it a stray.
		for end := time.Now().Add(5 * time.Second); running(pid) && time.Now().Before(end); {
			time.Sleep(20 * time.Millisecond)
		}
		if running(pid) {
			t.Errorf("process %d of the timed-out command is still running", pid)
		}
	}
}

// running reports whether a process exists and is not a zombie (a killed
// process whose parent died waits as a zombie for PID 1 to reap it).
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(st), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// TestCollectGrandchildKeepsOutput: a command that exits while a child it
// started keeps running (and keeps the output open) still gives its output
// at once; with a pipe, Wait waited for the child and the output was lost.
func TestCollectGrandchildKeepsOutput(t *testing.T) {
	fakeTools(t, map[string]string{
		"distrobox": "/bin/sleep 30 &\necho 'distrobox: 1.8.1.2'\n",
	})
	start := time.Now()
	b, err := Collect(t.Context(), CollectOptions{Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > 15*time.Second {
		t.Errorf("Collect waited %s for the command's child", waited)
	}
	mustCheck(t, Analyse(b), "distrobox", StatusOK)
}
