package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
)

// helperEnv names the state dir of helperBuild.
const helperEnv = "FX_HELPER_BUILD_STATE"

// helperBuild is what `haloforge build` does, on a fixture track, in a
// process of its own that a test can kill -9.
func helperBuild() int {
	dir := os.Getenv(helperEnv)
	track := fxTrack(fx{id: "hello", script: "hello.sh"}, fx{id: "stubborn", script: "stubborn.sh"})
	if os.Getenv("FX_FILE") != "" {
		track = fxTrack(fx{id: "cat", script: "cat.sh"})
	}
	if os.Getenv("FX_TAG") != "" {
		track = fxTrack(fx{id: "daemon", script: "daemon.sh"}, fx{id: "stubborn", script: "stubborn.sh"})
	}
	pf, err := pins.Parse("fx.env", []byte(fxPins))
	if err != nil {
		return 2
	}
	st, err := steps.LoadState(dir)
	if err != nil {
		return 2
	}
	p, err := steps.NewPlan(track, pf, os.DirFS("testdata/scripts"), st)
	if err != nil {
		return 2
	}
	r, err := New(Options{Plan: p, Workspace: steps.Workspace{StateDir: dir, ScriptsDir: "testdata/scripts"}, Grace: 300 * time.Millisecond})
	if err != nil {
		return 2
	}
	done := make(chan struct{})
	go func() { printLines(io.Discard, r.Events()); close(done) }()
	_, err = r.Run(context.Background())
	<-done
	if err != nil {
		return 1
	}
	// The peak resident set of this process, for TestPeakRSSStaysBounded.
	status, _ := os.ReadFile("/proc/self/status")
	_ = os.WriteFile(filepath.Join(dir, "status"), status, 0o644)
	return 0
}

// printLines writes each step line with its prefix, as line mode does
// (tui/linemode imports this package, so its tests cannot use it).
func printLines(w io.Writer, events <-chan Event) {
	bw := bufio.NewWriterSize(w, 64<<10)
	for e := range events {
		if l, ok := e.(Lines); ok {
			for _, text := range l.Text {
				bw.WriteString("[" + l.Step + "] ")
				bw.WriteString(text)
				bw.WriteByte('\n')
			}
		}
	}
	bw.Flush()
}

// waitFor polls until ok or the timeout, reporting whether ok happened.
func waitFor(timeout time.Duration, ok func() bool) bool {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if ok() {
			return true
		}
	}
	return ok()
}

func TestKill9OfHaloforgeLeavesNothingRunning(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var runDir string
	if !waitFor(30*time.Second, func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "runs", "*", "ready"))
		if len(m) == 1 {
			runDir = filepath.Dir(m[0])
		}
		return runDir != ""
	}) {
		_ = cmd.Process.Kill()
		t.Fatal("the step never got ready")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	b, err := os.ReadFile(filepath.Join(runDir, "supervisor"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runDir, "pids"), append(b, mustRead(t, filepath.Join(runDir, "pids"))...), 0o644); err != nil {
		t.Fatal(err)
	}
	var alive []int
	if !waitFor(10*time.Second, func() bool {
		_, alive = pidsAlive(t, filepath.Join(runDir, "pids"))
		return len(alive) == 0
	}) {
		for _, pid := range alive {
			_ = syscall.Kill(pid, syscall.SIGKILL) // do not leave them to the next test
		}
		t.Fatalf("still running after kill -9 of haloforge: %v", alive)
	}

	st, err := steps.LoadState(dir)
	if err != nil {
		t.Fatalf("state.json after kill -9: %v", err)
	}
	ts := st.Tracks["fx"]
	if ts.Steps["hello"].Status != steps.OutcomeSucceeded || ts.Steps["stubborn"].Status != steps.OutcomeRunning {
		t.Errorf("state after kill -9: hello %s, stubborn %s", ts.Steps["hello"].Status, ts.Steps["stubborn"].Status)
	}
	var rep Report
	if err := json.Unmarshal(mustRead(t, filepath.Join(runDir, ReportFile)), &rep); err != nil {
		t.Errorf("report.json after kill -9: %v", err)
	}
}

// TestKill9LeavesNoLeftoverOfAFinishedStep: what a succeeded step left
// running waits, under its supervisor, for the run's end; a kill -9 of
// haloforge before it ends them all the same.
func TestKill9LeavesNoLeftoverOfAFinishedStep(t *testing.T) {
	tag := daemonTag(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(30*time.Second, func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "runs", "*", "ready"))
		return len(m) == 1
	}) {
		_ = cmd.Process.Kill()
		t.Fatal("the step never got ready")
	}
	if n := len(tagged(tag)); n < 5 {
		t.Errorf("only %d of the first step's daemons run during the second", n)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !waitFor(15*time.Second, func() bool { return len(tagged(tag)) == 0 }) {
		t.Errorf("still running after kill -9 of haloforge: %v", tagged(tag))
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
