package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haloforge/haloforge/steps"
)

// tagged lists the live processes whose command line holds tag.
func tagged(tag string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, state, ok := procStat(pid); !ok || state == 'Z' || state == 'X' {
			continue
		}
		if b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); strings.Contains(string(b), tag) {
			out = append(out, pid)
		}
	}
	return out
}

// daemonTag is a tag for daemon.sh's processes, unique to the test; they
// are all killed when the test ends, whatever it found.
func daemonTag(t *testing.T) string {
	tag := fmt.Sprintf("hfrr-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), os.Getpid())
	t.Setenv("FX_TAG", tag)
	t.Cleanup(func() {
		for _, pid := range tagged(tag) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return tag
}

// eventually polls cond for up to limit.
func eventually(limit time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(limit); ; time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

func finishedOf(evs []Event, step string) StepFinished {
	for _, e := range evs {
		if f, ok := e.(StepFinished); ok && f.Step == step {
			return f
		}
	}
	return StepFinished{}
}

// checkLeftovers says whether left names the six daemons of tag, each with
// the fate want, and returns what is wrong.
func checkLeftovers(left []Leftover, tag, want string) []string {
	var problems []string
	names := map[string]bool{}
	for _, l := range left {
		for _, n := range []string{"plain", "nohup", "setsid-pty", "setsid", "doublefork", "ignterm"} {
			if strings.Contains(l.Command, tag+"-"+n) {
				names[n] = true
				break
			}
		}
		if l.PID <= 0 || l.Command == "" || l.Fate != want {
			problems = append(problems, fmt.Sprintf("%+v (want fate %q)", l, want))
		}
	}
	// The plain & job may die of the pty's hang-up before it is listed.
	for _, n := range []string{"nohup", "setsid-pty", "setsid", "doublefork", "ignterm"} {
		if !names[n] {
			problems = append(problems, "not listed: "+tag+"-"+n)
		}
	}
	return problems
}

// TestLeftoversOfAFailedStepAreKilledAndListed: a
// step that fails leaves a nohup, a setsid, a double-forked and a
// TERM-ignoring daemon; they are listed in the step's summary, report and
// log, and none survives the run.
func TestLeftoversOfAFailedStepAreKilledAndListed(t *testing.T) {
	tag := daemonTag(t)
	t.Setenv("FX_EXIT", "1")
	dir := t.TempDir()
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "daemon", script: "daemon.sh"}), fxPins, "testdata/scripts", dir), dir)
	rep, evs := run(t, o, nil)
	if rep.Steps[0].Status != steps.OutcomeFailed || rep.Steps[0].ExitCode != 1 {
		t.Fatalf("step %+v", rep.Steps[0])
	}
	if alive := tagged(tag); len(alive) > 0 {
		t.Errorf("after the run, alive: %v", alive)
	}
	f := finishedOf(evs, "daemon")
	for _, p := range checkLeftovers(f.Leftovers, tag, FateKilled) {
		t.Error(p)
	}
	if !slices.EqualFunc(f.Leftovers, rep.Steps[0].Leftovers, func(a, b Leftover) bool { return a == b }) {
		t.Errorf("report leftovers %+v, event %+v", rep.Steps[0].Leftovers, f.Leftovers)
	}
	onDisk, err := ReadReport(filepath.Dir(filepath.Dir(rep.RunDir)), rep.RunID)
	if err != nil || len(onDisk.Steps[0].Leftovers) != len(f.Leftovers) {
		t.Errorf("report.json leftovers %+v, %v", onDisk.Steps[0].Leftovers, err)
	}
	log, _ := os.ReadFile(f.Log)
	if !strings.Contains(string(log), "haloforge: the step ended and left") || !strings.Contains(string(log), tag+"-nohup ("+FateKilled+")") {
		t.Errorf("the log does not list the leftovers:\n%s", log)
	}
}

// TestLeftoversOfASucceededStepLiveUntilTheRunEnds: a later step of
// the run may use what an earlier one started, and nothing survives the run.
func TestLeftoversOfASucceededStepLiveUntilTheRunEnds(t *testing.T) {
	tag := daemonTag(t)
	dir := t.TempDir()
	track := fxTrack(fx{id: "daemon", script: "daemon.sh"}, fx{id: "count", script: "count.sh"})
	o := fxOptions(fxPlan(t, track, fxPins, "testdata/scripts", dir), dir)
	rep, evs := run(t, o, nil)
	if rep.Status != steps.OutcomeSucceeded {
		t.Fatalf("run %s: %+v", rep.Status, rep.Steps)
	}
	got := lines(evs, "count")
	if len(got) != 1 || !strings.HasPrefix(got[0], "alive=") {
		t.Fatalf("count printed %q", got)
	}
	if n, _ := strconv.Atoi(strings.TrimPrefix(got[0], "alive=")); n < 5 {
		t.Errorf("the next step saw %d of the daemons, want at least 5", n)
	}
	if !eventually(2*time.Second, func() bool { return len(tagged(tag)) == 0 }) {
		t.Errorf("after the run, alive: %v", tagged(tag))
	}
	for _, p := range checkLeftovers(finishedOf(evs, "daemon").Leftovers, tag, FateRunEnd) {
		t.Error(p)
	}
}

// TestKeepsRunningReleasesAService: a step that starts a service on purpose
// says so (steps.Step.KeepsRunning); what it leaves is listed and kept.
func TestKeepsRunningReleasesAService(t *testing.T) {
	tag := daemonTag(t)
	dir := t.TempDir()
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "daemon", script: "daemon.sh", keeps: true}), fxPins, "testdata/scripts", dir), dir)
	rep, evs := run(t, o, nil)
	if rep.Status != steps.OutcomeSucceeded {
		t.Fatalf("run %s", rep.Status)
	}
	if n := len(tagged(tag)); n < 5 {
		var cmds []string
		for _, pid := range tagged(tag) {
			cmds = append(cmds, procCmdline(pid))
		}
		t.Errorf("%d of the service's processes alive after the run, want at least 5: %q", n, cmds)
	}
	for _, p := range checkLeftovers(finishedOf(evs, "daemon").Leftovers, tag, FateKept) {
		t.Error(p)
	}
}

// TestContainerRuntimeIsLeftToPodman runs a real container from a step
// (podman run -d: conmon double-forks out of the script, below the
// supervisor): it is reported as the container runtime's and left running,
// for podman to manage, even though the step did not declare a service.
func TestContainerRuntimeIsLeftToPodman(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for podman with private storage (CI and make test run as root)")
	}
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("podman is not installed")
	}
	store, err := os.MkdirTemp("", "hfrr-") // podman wants a short run root
	if err != nil {
		t.Fatal(err)
	}
	podman := []string{"--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"),
		"--storage-driver", "vfs", "--events-backend", "none", "--tmpdir", filepath.Join(store, "tmp")}
	name := fmt.Sprintf("hfrr-sleeper-%d", os.Getpid())
	t.Cleanup(func() {
		_ = exec.Command("podman", append(podman, "rm", "-f", "-t", "0", name)...).Run()
		_ = exec.Command("podman", append(podman, "rmi", "-a", "-f")...).Run()
		os.RemoveAll(store)
	})
	image := importSleeper(t, podman)
	t.Setenv("FX_PODMAN", strings.Join(podman, " "))
	t.Setenv("FX_IMAGE", image)
	t.Setenv("FX_NAME", name)
	dir := t.TempDir()
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "container", script: "container.sh"}), fxPins, "testdata/scripts", dir), dir)
	rep, evs := run(t, o, nil)
	if rep.Status != steps.OutcomeSucceeded {
		t.Fatalf("run %s: %q", rep.Status, lines(evs, "container"))
	}
	left := finishedOf(evs, "container").Leftovers
	sawConmon := false
	for _, l := range left {
		if !l.Container || l.Fate != FateContainer {
			t.Errorf("leftover %+v: want the container runtime's, kept", l)
		}
		sawConmon = sawConmon || strings.HasPrefix(l.Command, "/usr/bin/conmon ") || strings.HasPrefix(l.Command, "conmon ")
	}
	if !sawConmon {
		t.Errorf("conmon is not among the leftovers: %+v", left)
	}
	out, err := exec.Command("podman", append(podman, "inspect", "--format", "{{.State.Running}}", name)...).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "true" {
		t.Errorf("the container is not running after the run: %v %s", err, out)
	}
}

// importSleeper makes an image whose one file is a static binary that
// sleeps (built here: no image comes from a network).
func importSleeper(t *testing.T, podman []string) string {
	t.Helper()
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "go.mod"), "module sleeper\n\ngo 1.22\n")
	writeFile(t, filepath.Join(src, "main.go"), "package main\n\nimport \"time\"\n\nfunc main() { time.Sleep(time.Hour) }\n")
	rootfs := filepath.Join(src, "rootfs")
	build := exec.Command("go", "build", "-o", filepath.Join(rootfs, "sleeper"), ".")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	image := "localhost/hfrr-sleeper:1"
	tar := exec.Command("tar", "-C", rootfs, "-c", ".")
	imp := exec.Command("podman", append(podman, "import", "-", image)...)
	var err error
	if imp.Stdin, err = tar.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := tar.Start(); err != nil {
		t.Fatal(err)
	}
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("podman import: %v\n%s", err, out)
	}
	_ = tar.Wait()
	return image
}

// TestAChildOnItsWayOutIsNotALeftover is what CI's real distrobox run hit: a
// step's child that ends a few milliseconds after the script (sudo's
// monitor process after `sudo podman exec`) was listed and killed as left
// running, and its lines came after the step's own last line. A child
// that ends within leftoverSettle is not a leftover; one that outlives it
// still is.
func TestAChildOnItsWayOutIsNotALeftover(t *testing.T) {
	for _, tc := range []struct {
		linger string
		listed bool
	}{
		{"0.05", false},
		{"30", true},
	} {
		t.Run("linger="+tc.linger, func(t *testing.T) {
			tag := daemonTag(t)
			t.Setenv("FX_LINGER", tc.linger)
			dir := t.TempDir()
			o := fxOptions(fxPlan(t, fxTrack(fx{id: "lingering", script: "lingering.sh"}), fxPins, "testdata/scripts", dir), dir)
			rep, evs := run(t, o, nil)
			if rep.Steps[0].ExitCode != 3 {
				t.Fatalf("step %+v", rep.Steps[0])
			}
			f := finishedOf(evs, "lingering")
			if got := len(f.Leftovers) > 0; got != tc.listed {
				t.Errorf("leftovers %+v, want listed=%v", f.Leftovers, tc.listed)
			}
			log, _ := os.ReadFile(f.Log)
			lines := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
			last := lines[len(lines)-1]
			if !tc.listed && !strings.Contains(last, "the reason, as the step's last line") {
				t.Errorf("the log's last line is %q, want the step's own", last)
			}
			if alive := tagged(tag); tc.listed && len(alive) > 0 {
				t.Errorf("after the run, alive: %v", alive)
			}
		})
	}
}
