package main

// End-to-end tests of the real binary in a real terminal: tmux runs
// `haloforge demo` at 120×40 and the test reads the screen with capture-pane,
// as a person would. They need tmux (apt-get install tmux) and skip without it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/pins/sets"
	"github.com/haloforge/haloforge/pins/upstream"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/tui"
	"github.com/haloforge/haloforge/tui/demo"
	"github.com/haloforge/haloforge/tui/session"
)

// keyGap is how long tmux and the TUI get to take in one key: about 0.3 s
// each was enough on the 2-core test machines.
const keyGap = 300 * time.Millisecond

// tmuxSession is one detached tmux session on a private server, so that the
// test never touches the user's own tmux.
type tmuxSession struct {
	t      *testing.T
	socket string
	name   string
}

// newTmux starts `command` (run by sh) in a detached width×height session.
func newTmux(t *testing.T, width, height int, command string) *tmuxSession {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed: apt-get install tmux (the Makefile's e2e target does)")
	}
	s := &tmuxSession{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock"), name: "hf"}
	s.run("-f", "/dev/null", "new-session", "-d", "-s", s.name,
		"-x", fmt.Sprint(width), "-y", fmt.Sprint(height), command)
	// Keep the pane after the command exits, so its last screen can be read.
	s.run("set-option", "-t", s.name, "remain-on-exit", "on")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last screen:\n%s", strings.TrimRight(s.screen(), "\n "))
		}
		_ = exec.Command("tmux", "-S", s.socket, "kill-server").Run()
	})
	return s
}

func (s *tmuxSession) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screen is the visible pane as plain text.
func (s *tmuxSession) screen() string {
	out, err := exec.Command("tmux", "-S", s.socket, "capture-pane", "-p", "-t", s.name).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(capture-pane: %v: %s)", err, out)
	}
	return string(out)
}

// waitFor polls the screen until it contains text; it returns how long that took.
// startRun goes from the detection screen through the picker to the plan,
// waits for the plan (planText) to be drawn, then starts the run: the plan
// takes its Enter once it is on screen, since a key sent while the picker
// hands over can land on the picker instead.
func (s *tmuxSession) startRun(planText string) {
	s.t.Helper()
	s.keys("Enter", "Enter")
	s.waitFor(planText, 20*time.Second)
	s.keys("Enter")
}

func (s *tmuxSession) waitFor(text string, limit time.Duration) time.Duration {
	s.t.Helper()
	start := time.Now()
	for {
		if strings.Contains(s.screen(), text) {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			s.t.Fatalf("%q not on screen after %v", text, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// keys sends tmux key names (Enter, Down, q, …), one at a time.
func (s *tmuxSession) keys(names ...string) {
	s.t.Helper()
	for _, k := range names {
		s.run("send-keys", "-t", s.name, k)
		time.Sleep(keyGap)
	}
}

// paneDead reports whether the command in the pane has exited, and its status.
func (s *tmuxSession) paneDead() (bool, string) {
	out := strings.TrimSpace(s.run("display-message", "-p", "-t", s.name, "#{pane_dead} #{pane_dead_status}"))
	dead, status, _ := strings.Cut(out, " ")
	return dead == "1", status
}

// buildBinary builds haloforge once per test binary run.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "haloforge")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestTmuxDemo is the "done when": in tmux at 120×40, gfx1151 shows
// within a few seconds, three Enters start the run, the hint panel shows
// therock-amdsmi-double-free, `r` applies the fix and retries, and the run
// reaches the summary.
func TestTmuxDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and drives it in tmux")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed: apt-get install tmux (the Makefile's e2e target does)")
	}
	bin := buildBinary(t)
	state := t.TempDir()
	cmd := fmt.Sprintf("env XDG_STATE_HOME=%s HALOFORGE_DEMO_SPEED=20 %s demo",
		shellQuote(state), shellQuote(bin))
	tm := newTmux(t, 120, 40, cmd)

	took := tm.waitFor("gfx1151", 5*time.Second)
	t.Logf("gfx1151 on screen after %v", took.Round(time.Millisecond))

	tm.startRun("steps run")
	took = tm.waitFor("therock-amdsmi-double-free", 60*time.Second)
	t.Logf("hint panel after %v", took.Round(time.Millisecond))
	if scr := tm.screen(); !strings.Contains(scr, "rtld_global") && !strings.Contains(scr, "amdsmi") {
		t.Errorf("the hint panel shows no fix:\n%s", scr)
	}

	// r only retries once the step has ended: wait for its ✗ in the step list.
	tm.waitFor("✗ rocm", 30*time.Second)
	tm.keys("r")
	tm.waitFor("Results", 90*time.Second)
	scr := tm.screen()
	for _, want := range []string{"verify", "vllm"} {
		if !strings.Contains(scr, want) {
			t.Errorf("summary lacks %q:\n%s", want, scr)
		}
	}

	tm.keys("q")
	if dead, _ := tm.paneDead(); !dead {
		tm.keys("y", "Enter") // a confirmation, when the wizard asks for one
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		dead, status := tm.paneDead()
		if dead {
			t.Logf("demo exited with status %s", status)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("demo still running 5 s after q:\n%s", tm.screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTmuxDemoLineMode: without a tty the demo tells the same story in line
// mode, with step-prefixed lines and the family code.
func TestTmuxDemoLineMode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	cmd := exec.Command(bin, "demo")
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir(), "HALOFORGE_DEMO_SPEED=1000", "NO_COLOR=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"gfx1151", "therock-amdsmi-double-free", "double free or corruption (!prev)"} {
		if !strings.Contains(text, want) {
			t.Errorf("line-mode demo output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\x1b[?1049h") {
		t.Error("line mode switched to the alternate screen")
	}
}

// perfEnv turns on TestTmuxThroughput: it streams 200 MB, which takes a while
// on a shared machine.
const perfEnv = "HALOFORGE_PERF"

// writeBigLog writes about size bytes of real log lines (the demo's replays,
// repeated) to a file.
func writeBigLog(t *testing.T, size int) string {
	t.Helper()
	logs, err := filepath.Glob("../../tui/demo/scripts/logs/*.log")
	if err != nil || len(logs) == 0 {
		t.Fatalf("no demo logs to repeat: %v", err)
	}
	var chunk bytes.Buffer
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		chunk.Write(data)
	}
	path := filepath.Join(t.TempDir(), "big.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for written := 0; written < size; written += chunk.Len() {
		if _, err := f.Write(chunk.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// writePerfScripts writes a scripts tree for the vllm-image track whose first
// step cats the big file and whose other steps do nothing.
func writePerfScripts(t *testing.T, big string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "vllm-image")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	scripts := map[string]string{
		"00-pull-image.sh":     "cat " + shellQuote(big),
		"01-write-launcher.sh": "true",
		"02-verify.sh":         "true",
	}
	for name, body := range scripts {
		text := "#!/usr/bin/env bash\nset -Eeuo pipefail\n" + body + "\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// runReport is the part of report.json the throughput test reads.
type runReport struct {
	Status string `json:"status"`
	Steps  []struct {
		ID       string        `json:"id"`
		Status   string        `json:"status"`
		Duration time.Duration `json:"duration_ns"`
		Bytes    int64         `json:"bytes"`
	} `json:"steps"`
}

// waitReport polls the state dir until a run's report.json says it ended.
func waitReport(t *testing.T, state string, limit time.Duration) runReport {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		paths, _ := filepath.Glob(filepath.Join(state, "runs", "*", "report.json"))
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			var r runReport
			if json.Unmarshal(data, &r) == nil && r.Status != "" && r.Status != "running" {
				return r
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no finished report.json under %s after %v", state, limit)
	return runReport{}
}

// TestTmuxThroughput is the wizard's performance bar: under tmux,
// a step that streams 200 MB keeps at least half the raw pty throughput
// (`script` running `cat`, output to /dev/null), and the run screen answers a
// key while it streams.
func TestTmuxThroughput(t *testing.T) {
	if os.Getenv(perfEnv) == "" {
		t.Skipf("set %s=1 to stream 200 MB through the wizard under tmux", perfEnv)
	}
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script(1) not installed (util-linux)")
	}
	bin := buildBinary(t)
	const size = 200 << 20
	big := writeBigLog(t, size)
	root := writePerfScripts(t, big)

	start := time.Now()
	raw := exec.Command("script", "-qfec", "cat "+shellQuote(big), "/dev/null")
	if err := raw.Run(); err != nil { // stdout is /dev/null
		t.Fatalf("script: %v", err)
	}
	rawTime := time.Since(start)

	state := t.TempDir()
	tm := newTmux(t, 120, 40, fmt.Sprintf("%s --track vllm-image --scripts %s --state-dir %s",
		shellQuote(bin), shellQuote(root), shellQuote(state)))
	tm.waitFor("Checks", 10*time.Second) // detection done
	tm.startRun("steps run")
	for range 10 {
		scr := tm.screen()
		if strings.Contains(scr, "pull log") {
			break
		}
		if strings.Contains(scr, "run anyway") {
			tm.keys("Enter") // no GPU here: the plan asks once more before it runs
		}
		time.Sleep(keyGap)
	}
	tm.waitFor("pull log", 10*time.Second)

	// f pauses the log's follow mode; the header says so at once.
	tm.run("send-keys", "-t", tm.name, "f")
	answered := tm.waitFor("paused", 5*time.Second)
	tm.run("send-keys", "-t", tm.name, "f")
	t.Logf("f answered after %v while streaming", answered.Round(time.Millisecond))

	r := waitReport(t, state, 20*rawTime+time.Minute)
	if len(r.Steps) == 0 || r.Steps[0].ID != "pull" {
		t.Fatalf("report has no pull step: %+v", r)
	}
	pull := r.Steps[0]
	if pull.Status != "succeeded" || pull.Bytes < size {
		t.Fatalf("pull: %s with %d bytes, want succeeded with >= %d", pull.Status, pull.Bytes, size)
	}
	ratio := rawTime.Seconds() / pull.Duration.Seconds()
	t.Logf("200 MB: raw pty %v (%.0f MB/s); in the wizard under tmux %v (%.0f MB/s): %.2f× raw",
		rawTime.Round(time.Millisecond), float64(size>>20)/rawTime.Seconds(),
		pull.Duration.Round(time.Millisecond), float64(size>>20)/pull.Duration.Seconds(), ratio)
	if ratio < 0.5 {
		t.Errorf("throughput %.2f× raw, want >= 0.5×", ratio)
	}
	if answered > time.Second {
		t.Errorf("f was answered after %v, want at once (< 1 s)", answered)
	}
}

// TestTutorialCommandsAreReal checks every `$ haloforge …` line of
// TUTORIAL.md against the real command tree: the subcommand exists and
// every flag parses, so the tutorial cannot drift from the CLI.
func TestTutorialCommandsAreReal(t *testing.T) {
	data, err := os.ReadFile("../../TUTORIAL.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, line := range strings.Split(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, "$ haloforge")
		if !ok || (rest != "" && rest[0] != ' ') {
			continue
		}
		if before, _, found := strings.Cut(rest, " #"); found {
			rest = before
		}
		if before, _, found := strings.Cut(rest, " |"); found {
			rest = before
		}
		if before, _, found := strings.Cut(rest, " >"); found {
			rest = before // a shell redirection, not an argument
		}
		args := strings.Fields(rest)
		cmd, flags, err := newRoot().Find(args)
		if err != nil {
			t.Errorf("TUTORIAL.md:%d: %q: %v", i+1, line, err)
			continue
		}
		if err := cmd.ParseFlags(flags); err != nil {
			t.Errorf("TUTORIAL.md:%d: %q: %v", i+1, line, err)
		} else if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
			t.Errorf("TUTORIAL.md:%d: %q: %v", i+1, line, err)
		}
		n++
	}
	if n < 20 {
		t.Errorf("only %d haloforge command lines found in TUTORIAL.md", n)
	}
}

// newDemoTmux builds haloforge and starts `haloforge demo` in tmux, with
// a state dir of its own.
func newDemoTmux(t *testing.T, width, height int) *tmuxSession {
	t.Helper()
	bin := buildBinary(t)
	return newTmux(t, width, height, fmt.Sprintf("env XDG_STATE_HOME=%s %s demo", shellQuote(t.TempDir()), shellQuote(bin)))
}

// TestTmuxDemoHostFixes: in the demo at 80×24, the detection screen offers
// the host fixes; a opens them: the demo's bundle does not say how it
// boots, so the screen says the bootloader could not be identified and
// what to set by hand first, then each action, scrolled with the
// arrows; haloforge would change nothing there, so a asks for no APPLY.
func TestTmuxDemoHostFixes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and drives it in tmux")
	}
	tm := newDemoTmux(t, 80, 24)
	tm.waitFor("a: show the 2 host fixes (by hand)", 10*time.Second)

	tm.keys("a")
	tm.waitFor("Bootloader: could not be identified", 5*time.Second)
	scr := tm.screen()
	for _, want := range []string{"host fixes", "Set them by hand:", "ttm.pages_limit=30670848 ttm.page_pool_size=30670848", "sudo update-grub",
		"Nothing for haloforge to change here."} {
		if !strings.Contains(scr, want) {
			t.Errorf("the host-fix screen lacks %q:\n%s", want, scr)
		}
	}
	tm.waitFor("↑/↓ 1–", 2*time.Second)
	tm.keys("Down", "Down")
	tm.waitFor("↑/↓ 3–", 2*time.Second)
	tm.keys("G")
	tm.waitFor("kernel-arg · check GTT size (gtt-size)", 2*time.Second)
	tm.waitFor("demo: nothing is applied", 2*time.Second)

	tm.keys("a")
	time.Sleep(300 * time.Millisecond)
	if scr := tm.screen(); strings.Contains(scr, "Host fixes applied") || strings.Contains(scr, "Type APPLY") {
		t.Errorf("the demo asked for APPLY with nothing haloforge would change:\n%s", scr)
	}

	tm.keys("Escape")
	tm.waitFor("Recommended track", 2*time.Second)
	tm.keys("q", "y")
	deadline := time.Now().Add(5 * time.Second)
	for dead, _ := tm.paneDead(); !dead; dead, _ = tm.paneDead() {
		if time.Now().After(deadline) {
			t.Fatalf("the demo still runs after q, y:\n%s", tm.screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// hostRootEnv names the system the helper wizard plans its host fixes for.
const hostRootEnv = "HALOFORGE_TEST_HOST_ROOT"

// TestHelperHostFixWizard is not a test on its own: TestTmuxHostFixSudo runs
// this test binary in tmux as an unprivileged user, and here it is the wizard
// on the demo machine's facts, planning host fixes for the system under
// $HALOFORGE_TEST_HOST_ROOT and applying them with the real runner (sudo).
func TestHelperHostFixWizard(t *testing.T) {
	root := os.Getenv(hostRootEnv)
	if root == "" {
		t.Skip("run by TestTmuxHostFixSudo")
	}
	e := &session.Engine{Workspace: steps.Workspace{StateDir: os.Getenv("HALOFORGE_TEST_STATE")}, HostRoot: root, Version: "test",
		Source: "the demo's facts, booting like " + root,
		Detector: func(context.Context) (*detect.Report, error) {
			b, err := demo.Bundle()
			if err != nil {
				return nil, err
			}
			return detect.Analyse(b), nil
		}}
	if _, err := tui.Run(context.Background(), e, tui.Options{Input: os.Stdin, Output: os.Stdout}); err != nil {
		t.Fatal(err)
	}
}

// TestTmuxHostFixSudo: the apply the wizard starts after APPLY really gets
// the terminal. As an unprivileged user, changing root's files goes through
// sudo, whose password prompt shows in the pane and reads what is typed;
// after three wrong passwords sudo gives up, the wizard takes the screen
// back and says that the apply failed, and the file is as it was. (A right
// password would need a sudoer with a known password on this machine.)
func TestTmuxHostFixSudo(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the wizard and sudo in tmux")
	}
	for _, tool := range []string{"tmux", "sudo", "runuser"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the wizard as another user (runuser)")
	}
	// Everything the user nobody runs or reads lives under one 0755 dir.
	top, err := os.MkdirTemp("", "hfwx-sudo-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	if err := os.Chmod(top, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(top, "wizard.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	root, state := filepath.Join(top, "root"), filepath.Join(top, "state")
	conf := filepath.Join(root, "etc/modprobe.d/strix.conf")
	orig := "options amdgpu gttsize=120000\noptions ttm pages_limit=31457280\n"
	if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte(orig), 0o644); err != nil { // root's, read-only to nobody
		t.Fatal(err)
	}
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(state, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	cmd := fmt.Sprintf("runuser -u nobody -- env HOME=%s %s=%s HALOFORGE_TEST_STATE=%s %s -test.run '^TestHelperHostFixWizard$'",
		shellQuote(state), hostRootEnv, shellQuote(root), shellQuote(state), shellQuote(bin))
	// 40 rows: the by-hand commands name the files under the root (two
	// rows each at 100 columns), and what APPLY changes follows them.
	tm := newTmux(t, 100, 40, cmd)

	tm.waitFor("a: apply these fixes", 15*time.Second)
	tm.keys("a")
	tm.waitFor("What APPLY changes now", 5*time.Second)
	tm.keys("a")
	tm.run("send-keys", "-t", tm.name, "-l", "APPLY")
	tm.keys("Enter")
	tm.waitFor("[sudo] password for nobody:", 10*time.Second)
	if scr := tm.screen(); !strings.Contains(scr, "sudo may ask for your password") {
		t.Errorf("the handed-over terminal does not say what runs:\n%s", scr)
	}
	// Each try waits for its prompt: sudo echoes what is typed while it
	// checks the last password.
	prompt := "[sudo] password for nobody:"
	for try := 1; try <= 3; try++ {
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(tm.screen(), prompt) < try {
			if time.Now().After(deadline) {
				t.Fatalf("no prompt for try %d:\n%s", try, tm.screen())
			}
			time.Sleep(100 * time.Millisecond)
		}
		tm.run("send-keys", "-t", tm.name, "-l", "not-the-password")
		tm.keys("Enter")
	}
	if scr := tm.screen(); strings.Contains(scr, "not-the-password") {
		t.Errorf("the password was echoed:\n%s", scr)
	}
	tm.waitFor("Applying the host fixes failed", 30*time.Second)
	scr := tm.screen()
	for _, want := range []string{"sudo", "host fixes", "doctor --rollback"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the failure lacks %q:\n%s", want, scr)
		}
	}
	if got, _ := os.ReadFile(conf); string(got) != orig {
		t.Errorf("%s changed without sudo: %q", conf, got)
	}
	tm.keys("q", "y")
}

// TestTmuxPlanPinSets: the real wizard, in a directory with a versions.env
// and a `pins status` of ten days ago that found ROCM_VERSION retired. The
// plan warns (with the status's age), p opens the known-good sets, u on
// rocm-7.14 (the previous set) asks y/N, y writes versions.env with a backup, and enter plans
// the track again from the new pins, without the warning.
func TestTmuxPlanPinSets(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and drives it in tmux")
	}
	bin := buildBinary(t)
	work := t.TempDir()
	orig, err := os.ReadFile("../../versions.env")
	if err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(work, "versions.env")
	if err := os.WriteFile(envFile, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	pf, err := pins.Load(envFile)
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(work, "state")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	rep := &upstream.Report{CheckedAt: time.Now().Add(-10 * 24 * time.Hour), Pins: []upstream.Result{
		{Name: "ROCM_VERSION", Value: pf.Values()["ROCM_VERSION"], State: upstream.Retired, Detail: "no torch wheel for it any more"}}}
	data, err := upstream.NewCache(rep, envFile, nil).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(upstream.CachePath(state), data, 0o644); err != nil {
		t.Fatal(err)
	}
	tm := newTmux(t, 100, 30, fmt.Sprintf("cd %s && %s --track therock-toolbox --state-dir %s",
		shellQuote(work), shellQuote(bin), shellQuote(state)))
	tm.waitFor("Checks", 15*time.Second)
	tm.keys("Enter", "Enter")
	tm.waitFor("1 pin is gone or moved upstream (pins status, checked 10 days ago)", 5*time.Second)
	if scr := tm.screen(); !strings.Contains(scr, "ROCM_VERSION=") || !strings.Contains(scr, "p shows the known-good sets") {
		t.Errorf("the warning lacks the pin or the key:\n%s", scr)
	}

	tm.keys("p")
	tm.waitFor("Known-good pin sets", 5*time.Second)
	for i := 0; i < 6 && !strings.Contains(tm.screen(), "› rocm-7.14"); i++ {
		tm.keys("Down")
	}
	tm.waitFor("haloforge pins use rocm-7.14 changes", 2*time.Second)
	if scr := tm.screen(); !regexp.MustCompile(`therock-toolbox +rocm, aiter`).MatchString(scr) || !strings.Contains(scr, "Steps to re-run:") {
		t.Errorf("no rebuild set:\n%s", scr)
	}
	tm.keys("u")
	tm.waitFor("Write 6 changed pins into versions.env, keeping a backup? y yes  N no", 2*time.Second)
	tm.keys("y")
	tm.waitFor("✓ Wrote", 5*time.Second)

	now, err := pins.Load(envFile)
	if err != nil {
		t.Fatal(err)
	}
	set, err := sets.Lookup("rocm-7.14")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := now.Values()["ROCM_VERSION"], set.Values()["ROCM_VERSION"]; got != want {
		t.Errorf("versions.env has ROCM_VERSION=%s, want %s", got, want)
	}
	backups, _ := filepath.Glob(envFile + ".bak-*")
	if len(backups) != 1 {
		t.Fatalf("backups %v", backups)
	}
	if b, _ := os.ReadFile(backups[0]); !bytes.Equal(b, orig) {
		t.Error("the backup is not the old versions.env")
	}

	tm.keys("Enter")
	tm.waitFor("enter: start the run", 5*time.Second)
	if scr := tm.screen(); strings.Contains(scr, "gone or moved upstream") || !strings.Contains(scr, "ROCM_VERSION="+set.Values()["ROCM_VERSION"]) {
		t.Errorf("the new plan warns, or does not read the new ROCM_VERSION:\n%s", scr)
	}
	tm.keys("q", "y")
}

// TestTmuxDemoPinSets: in the demo, the plan's p shows the sets, and u
// says that the demo writes nothing.
func TestTmuxDemoPinSets(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and drives it in tmux")
	}
	tm := newDemoTmux(t, 80, 24)
	tm.waitFor("gfx1151", 10*time.Second)
	tm.keys("Enter", "Enter")
	tm.waitFor("p pin sets", 5*time.Second)
	tm.keys("p")
	tm.waitFor("Known-good pin sets", 5*time.Second)
	for i := 0; i < 6 && !strings.Contains(tm.screen(), "changes (as pins diff shows it)"); i++ {
		tm.keys("Down")
	}
	tm.keys("u")
	tm.waitFor("demo: nothing is written", 2*time.Second)
	if strings.Contains(tm.screen(), "y yes  N no") {
		t.Errorf("the demo asks to write:\n%s", tm.screen())
	}
	tm.keys("Escape")
	tm.waitFor("enter: start the run", 2*time.Second)
	tm.keys("q", "y")
}
