package cluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nodeScript is the real node.sh, as the binary embeds it.
func nodeScript(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "scripts", "cluster", "node.sh"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// localNode runs node.sh on this machine with its own HOME, as a node's
// login directory: real processes, sessions, pid files and logs.
func localNode(t *testing.T) (Remote, Node, string) {
	t.Helper()
	for _, tool := range []string{"bash", "setsid", "pgrep", "timeout", "tail"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	home := t.TempDir()
	n := Node{Name: "halo1", SSH: "halo1", Address: "127.0.0.1", Role: RoleHead}
	r := Remote{T: Local{Home: map[string]string{"halo1": home}}, Script: nodeScript(t)}
	t.Cleanup(func() { _, _ = r.Run(context.Background(), n, "stop", "--all") })
	return r, n, home
}

func run(t *testing.T, r Remote, n Node, args ...string) Result {
	t.Helper()
	res, err := r.Run(context.Background(), n, args...)
	if err != nil {
		t.Fatalf("node.sh %v: %v", args, err)
	}
	return res
}

// TestNodeLifecycle: start puts a command in its own session with a pid
// file and a log; status sees it and its children; stop ends the whole
// session (a child that ignores nothing and a grandchild included) and
// verifies nothing is left; a second stop and start behave.
func TestNodeLifecycle(t *testing.T) {
	r, n, home := localNode(t)
	// A parent that starts a child and a grandchild, all sleeping.
	res := run(t, r, n, "start", "svc", "--env", "HF_TEST=a b", "--unset", "HOME_X", "--", "bash", "-c", `echo "env=$HF_TEST"; (sleep 300 & sleep 300) & sleep 300`)
	if res.Code != 0 || !strings.Contains(string(res.Stdout), "started=svc pid=") {
		t.Fatalf("start: %d %s %s", res.Code, res.Stdout, res.Stderr)
	}
	dir := filepath.Join(home, ".local", "state", "haloforge", "cluster")
	for _, f := range []string{"svc.pid", "svc.log", "svc.cmd"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if st, _ := os.Stat(dir); st != nil && st.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode %v", st.Mode().Perm())
	}
	time.Sleep(300 * time.Millisecond)
	st := ParseStatus(string(run(t, r, n, "status").Stdout))
	s := st["svc"]
	if s.State != "running" || len(s.Procs) < 4 {
		t.Fatalf("status: %+v (want running with the wrapper, bash and three sleeps)", s)
	}
	if again := run(t, r, n, "start", "svc", "--", "sleep", "1"); again.Code == 0 || !strings.Contains(string(again.Stdout), "already running") {
		t.Errorf("a second start of a running service: %d %s", again.Code, again.Stdout)
	}
	log := run(t, r, n, "log", "svc", "10")
	if !strings.Contains(string(log.Stdout), "| env=a b") {
		t.Errorf("log: %q", log.Stdout)
	}
	stop := run(t, r, n, "stop", "svc")
	if stop.Code != 0 || !strings.Contains(string(stop.Stdout), "stop.svc=stopped pid=") {
		t.Fatalf("stop: %d %s %s", stop.Code, stop.Stdout, stop.Stderr)
	}
	for _, pid := range s.Procs {
		if _, err := os.Stat(filepath.Join("/proc", itoa(pid))); err == nil {
			if b, _ := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat")); !strings.Contains(string(b), ") Z ") {
				t.Errorf("pid %d is still there after stop", pid)
			}
		}
	}
	if got := string(run(t, r, n, "stop", "svc").Stdout); !strings.Contains(got, "stop.svc=not started") {
		t.Errorf("second stop: %q", got)
	}
	if got := run(t, r, n, "status"); strings.TrimSpace(string(got.Stdout)) != "" {
		t.Errorf("status after stop: %q", got.Stdout)
	}
}

// TestNodeStartFailsFast: a command that exits at once is reported with its
// exit code and log; one that is not installed is named.
func TestNodeStartFailsFast(t *testing.T) {
	r, n, _ := localNode(t)
	res := run(t, r, n, "start", "bad", "--", "bash", "-c", "echo Failed to find RPC backend >&2; exit 1")
	out := string(res.Stdout)
	if res.Code != 1 || !strings.Contains(out, "exited=1") || !strings.Contains(out, "| Failed to find RPC backend") {
		t.Errorf("fast exit: %d %q", res.Code, out)
	}
	if s := ParseStatus(string(run(t, r, n, "status").Stdout))["bad"]; s.State != "exited" || s.Code != "1" || len(s.Procs) != 0 {
		t.Errorf("status of an exited service: %+v", s)
	}
	if got := string(run(t, r, n, "stop", "--all").Stdout); !strings.Contains(got, "stop.bad=not running") {
		t.Errorf("stop of an exited service: %q", got)
	}
	res = run(t, r, n, "start", "x", "--", "no-such-engine-haloforge")
	if res.Code == 0 || !strings.Contains(string(res.Stdout), "no-such-engine-haloforge: command not found on this node") {
		t.Errorf("missing command: %d %s", res.Code, res.Stdout)
	}
}

// TestNodeRefusesBadArguments: node.sh checks what it is given again.
func TestNodeRefusesBadArguments(t *testing.T) {
	r, n, _ := localNode(t)
	for _, args := range [][]string{
		{"start", "../x", "--", "sleep", "1"},
		{"start", "x", "--env", "A-B=1", "--", "sleep", "1"},
		{"start", "x", "--", "/bin/sh", "-c", "id"},
		{"start", "x", "--", "$(id)"},
		{"tcp", "a;b", "1", "1"},
		{"tcp", "127.0.0.1", "99999", "1"},
		{"http", "127.0.0.1", "80", "/a b"},
		{"follow", "x", "1;id"},
		{"probe", "--pins", "-x"},
		{"probe", "--tcp", "127.0.0.1:0"},
		{"run", "5", "--", "/usr/bin/id"},
		{"nonsense"},
	} {
		res := run(t, r, n, args...)
		if res.Code != 2 || !strings.Contains(string(res.Stdout), "error=") {
			t.Errorf("%q: exit %d, %q", args, res.Code, res.Stdout)
		}
	}
}

// TestNodeFollowAndTCP: follow prints the log as it grows and the exit
// state; tcp tells open from refused; http fetches.
func TestNodeFollowAndTCP(t *testing.T) {
	r, n, _ := localNode(t)
	run(t, r, n, "start", "talker", "--", "bash", "-c", "for i in 1 2 3; do echo line $i; sleep 0.2; done; exit 3")
	var lines []string
	_, err := r.Stream(context.Background(), n, func(s string) { lines = append(lines, s) }, "follow", "talker", "20")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(lines, "\n")
	if !strings.Contains(got, "| line 1\n| line 2\n| line 3") || !strings.HasSuffix(got, "state=exited 3") {
		t.Errorf("follow: %q", got)
	}
	if got := strings.TrimSpace(string(run(t, r, n, "tcp", "127.0.0.1", "1", "2").Stdout)); got != "tcp=refused" {
		t.Errorf("tcp to a closed port: %q", got)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
