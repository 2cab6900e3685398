package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyRun runs the binary on a real pty, answers the prompt with answer, and
// returns everything the terminal showed and the exit code.
func ptyRun(t *testing.T, answer string, argv ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	f, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var mu sync.Mutex
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 4096)
		for {
			n, err := f.Read(b)
			mu.Lock()
			buf.Write(b[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		prompted := strings.Contains(buf.String(), "to go ahead (anything else cancels): ")
		mu.Unlock()
		if prompted {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no prompt; the terminal showed:\n%s", buf.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := f.Write([]byte(answer + "\r")); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	<-done
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return buf.String(), code
}

// TestApplyTypedConfirmation: on a real terminal, --apply asks for APPLY;
// anything else changes nothing.
func TestApplyTypedConfirmation(t *testing.T) {
	bin := buildBinary(t)
	work := t.TempDir()
	root, state := filepath.Join(work, "root"), filepath.Join(work, "state")
	conf := filepath.Join(root, "etc/modprobe.d/strix.conf")
	os.MkdirAll(filepath.Dir(conf), 0o755)
	// lhl/strix-halo-testing llm-bench/README.md (strix-modprobe-conf-1).
	orig := "options amdgpu gttsize=120000\noptions ttm pages_limit=31457280\noptions ttm page_pool_size=15728640\n"
	os.WriteFile(conf, []byte(orig), 0o644)
	plan, err := exec.Command(bin, "doctor", "--plan", "--json", "--bundle", "../../tui/demo/bundle", "--root", root).Output()
	if err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(work, "plan.json")
	os.WriteFile(planFile, plan, 0o644)

	out, code := ptyRun(t, "apply", bin, "doctor", "--apply", planFile, "--root", root, "--state-dir", state)
	if code != 1 || !strings.Contains(out, "not confirmed: nothing was changed") {
		t.Errorf("a wrong word: exit %d\n%s", code, out)
	}
	if data, _ := os.ReadFile(conf); string(data) != orig {
		t.Errorf("changed without APPLY: %q", data)
	}
	out, code = ptyRun(t, "APPLY", bin, "doctor", "--apply", planFile, "--root", root, "--state-dir", state)
	if code != 0 || !strings.Contains(out, "-options amdgpu gttsize=120000") || !strings.Contains(out, "Nothing was rebooted") {
		t.Errorf("APPLY: exit %d\n%s", code, out)
	}
	if data, _ := os.ReadFile(conf); string(data) != "" {
		t.Errorf("after APPLY: %q", data)
	}
	out, code = ptyRun(t, "ROLLBACK", bin, "doctor", "--rollback", "--root", root, "--state-dir", state)
	if code != 0 || !strings.Contains(out, "ok  /etc/modprobe.d/strix.conf: as before") {
		t.Errorf("ROLLBACK: exit %d\n%s", code, out)
	}
	if data, _ := os.ReadFile(conf); string(data) != orig {
		t.Errorf("after ROLLBACK: %q", data)
	}
}
