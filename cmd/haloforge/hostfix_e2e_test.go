package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/haloforge/haloforge/detect/hostfix"
)

// fakeUpdateGrub is a static program that stands in for update-grub in a
// --root tree (chroot runs it there): with /sleep in the root it starts a
// child and both wait, as grub-mkconfig and its /etc/grub.d scripts would,
// writing their pids to /tool.pids; without it, it writes grub.cfg from
// /etc/default/grub and ends.
const fakeUpdateGrub = `package main

import (
	"os"
	"os/exec"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		time.Sleep(300 * time.Second)
		return
	}
	if _, err := os.Stat("/sleep"); err == nil {
		c := exec.Command("/usr/sbin/update-grub", "child")
		c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr // the root has no /dev/null
		if err := c.Start(); err != nil {
			os.Exit(3)
		}
		os.WriteFile("/tool.pids", []byte(strconv.Itoa(os.Getpid())+"\n"+strconv.Itoa(c.Process.Pid)+"\n"), 0o644)
		time.Sleep(300 * time.Second)
		return
	}
	data, err := os.ReadFile("/etc/default/grub")
	if err != nil {
		os.Exit(1)
	}
	os.MkdirAll("/boot/grub", 0o755)
	if err := os.WriteFile("/boot/grub/grub.cfg", append([]byte("# from /etc/default/grub\n"), data...), 0o444); err != nil {
		os.Exit(1)
	}
}
`

// buildFakeUpdateGrub builds fakeUpdateGrub static, so that chroot can
// run it in a tree without libraries.
func buildFakeUpdateGrub(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "main.go"), []byte(fakeUpdateGrub), 0o644)
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module fake\n\ngo 1.22\n"), 0o644)
	bin := filepath.Join(src, "update-grub")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build the fake update-grub: %v\n%s", err, out)
	}
	return bin
}

// grubTree is a --root tree booting with GRUB whose update-grub is the
// fake one.
func grubTree(t *testing.T, dir, fake string) string {
	t.Helper()
	root := filepath.Join(dir, "root")
	for _, d := range []string{"etc/default", "usr/sbin", "boot/grub"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	data, err := os.ReadFile(fake)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "usr/sbin/update-grub"), data, 0o755)
	grub := "GRUB_DEFAULT=0\nGRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\nGRUB_CMDLINE_LINUX=\"\"\n"
	os.WriteFile(filepath.Join(root, "etc/default/grub"), []byte(grub), 0o644)
	os.WriteFile(filepath.Join(root, "etc/os-release"), []byte("ID=debian\nVERSION_ID=12\n"), 0o644)
	// as the fake update-grub makes it, so that a rollback regenerates it the same
	os.WriteFile(filepath.Join(root, "boot/grub/grub.cfg"), []byte("# from /etc/default/grub\n"+grub), 0o444)
	return root
}

// rootState is every file under root with its content and mode.
func rootState(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, _ := os.ReadFile(p)
		st, _ := d.Info()
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(&b, "%s %v %x\n", rel, st.Mode(), sha256.Sum256(data))
		return nil
	})
	return b.String()
}

// printedLine is the command after prefix on a line of out.
func printedLine(t *testing.T, out, prefix string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, prefix); i >= 0 {
			return strings.TrimSpace(l[i+len(prefix):])
		}
	}
	t.Fatalf("no %q line in:\n%s", prefix, out)
	return ""
}

// TestHostfixE2E drives doctor --apply and --rollback as a user would,
// with the real binary: the commands they print run as printed, and a
// signal while the boot tool runs stops it and leaves a rollback that
// works.
func TestHostfixE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	fake := buildFakeUpdateGrub(t)
	t.Setenv("PATH", filepath.Dir(bin)+":"+os.Getenv("PATH"))
	bundle, _ := filepath.Abs("../../tui/demo/bundle")

	// The next and undo commands carry --root and --state-dir as given,
	// quoted, and run as printed (the undo one typed at its prompt).
	t.Run("printed commands run as printed", func(t *testing.T) {
		work := t.TempDir()
		root := filepath.Join(work, "root")
		state := filepath.Join(work, "state dir's")
		os.MkdirAll(filepath.Join(root, "etc/modprobe.d"), 0o755)
		orig := "options amdgpu gttsize=120000\noptions ttm pages_limit=31457280\n"
		os.WriteFile(filepath.Join(root, "etc/modprobe.d/strix.conf"), []byte(orig), 0o644)
		plan, err := exec.Command(bin, "doctor", "--plan", "--json", "--bundle", bundle, "--root", root).Output()
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(work, "plan.json"), plan, 0o644)
		out, err := exec.Command(bin, "doctor", "--apply", filepath.Join(work, "plan.json"), "--root", root, "--state-dir", state, "--confirm", "APPLY").CombinedOutput()
		if err != nil {
			t.Fatalf("apply: %v\n%s", err, out)
		}
		next := printedLine(t, string(out), "Next: reboot, then run ")
		undo := printedLine(t, string(out), "To undo: ")
		if !strings.Contains(undo, "--root "+root) || !strings.Contains(undo, `--state-dir '`+strings.ReplaceAll(state, "'", `'\''`)+`'`) {
			t.Errorf("the undo command lacks the flags given: %s", undo)
		}
		v := exec.Command("sh", "-c", next+" --bundle "+shellQuote(bundle))
		vout, err := v.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 1) || !strings.Contains(string(vout), "[✗] cmdline") {
			t.Errorf("%s: %v\n%s", next, err, vout)
		}
		shown, code := ptyRun(t, "ROLLBACK", "sh", "-c", undo)
		if code != 0 || !strings.Contains(shown, "ok  /etc/modprobe.d/strix.conf: as before") {
			t.Fatalf("%s: exit %d\n%s", undo, code, shown)
		}
		if data, _ := os.ReadFile(filepath.Join(root, "etc/modprobe.d/strix.conf")); string(data) != orig {
			t.Errorf("not restored: %q", data)
		}
	})

	// A signal while the boot tool runs: the tool's process group is
	// stopped and waited for, the manifest says interrupted, exit 130 with
	// the rollback command, which then restores every byte.
	for _, tc := range []struct {
		name string
		stop func(t *testing.T, cmd *exec.Cmd, tty *os.File)
	}{
		{"SIGINT to haloforge", func(t *testing.T, cmd *exec.Cmd, _ *os.File) { cmd.Process.Signal(syscall.SIGINT) }},
		{"SIGTERM to haloforge", func(t *testing.T, cmd *exec.Cmd, _ *os.File) { cmd.Process.Signal(syscall.SIGTERM) }},
		{"SIGHUP to haloforge", func(t *testing.T, cmd *exec.Cmd, _ *os.File) { cmd.Process.Signal(syscall.SIGHUP) }},
		{"Ctrl-C on its terminal", func(t *testing.T, cmd *exec.Cmd, tty *os.File) { tty.Write([]byte{3}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if os.Geteuid() != 0 {
				t.Skip("chroot needs root")
			}
			work := t.TempDir()
			root := grubTree(t, work, fake)
			state := filepath.Join(work, "state")
			before := rootState(t, root)
			plan, err := exec.Command(bin, "doctor", "--plan", "--json", "--bundle", bundle, "--root", root).Output()
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(work, "plan.json"), plan, 0o644)
			os.WriteFile(filepath.Join(root, "sleep"), nil, 0o644)
			cmd := exec.Command(bin, "doctor", "--apply", filepath.Join(work, "plan.json"), "--root", root, "--state-dir", state, "--confirm", "APPLY")
			cmd.Env = append(os.Environ(), "NO_COLOR=1")
			tty, err := pty.Start(cmd)
			if err != nil {
				t.Fatal(err)
			}
			defer tty.Close()
			var shown bytes.Buffer
			read := make(chan struct{})
			go func() { defer close(read); shown.ReadFrom(tty) }()
			var pids []int
			deadline := time.Now().Add(30 * time.Second)
			for len(pids) < 2 {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("the boot tool never started")
				}
				time.Sleep(20 * time.Millisecond)
				data, _ := os.ReadFile(filepath.Join(root, "tool.pids"))
				pids = nil
				for _, f := range strings.Fields(string(data)) {
					if n, err := strconv.Atoi(f); err == nil {
						pids = append(pids, n)
					}
				}
			}
			tc.stop(t, cmd, tty)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var werr error
			select {
			case werr = <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatal("haloforge did not end within 20 s of the signal")
			}
			<-read
			out := shown.String()
			var ee *exec.ExitError
			if !errors.As(werr, &ee) || ee.ExitCode() != exitInterrupted {
				t.Errorf("exit: %v, want %d\n%s", werr, exitInterrupted, out)
			}
			for _, pid := range pids {
				if hostfix.ProcessRuns(pid) {
					t.Errorf("process %d of the boot tool still runs", pid)
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			undo := printedLine(t, strings.ReplaceAll(out, "\r", ""), "To undo what it changed: ")
			if !strings.Contains(undo, "--root "+root+" --state-dir "+state) {
				t.Errorf("the rollback command lacks the flags given: %s", undo)
			}
			dir := regexp.MustCompile(`--rollback (\S+)`).FindStringSubmatch(undo)[1]
			var m struct {
				State string `json:"state"`
			}
			data, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
			if json.Unmarshal(data, &m) != nil || m.State != "interrupted" {
				t.Errorf("manifest state %q, want interrupted", m.State)
			}
			os.Remove(filepath.Join(root, "sleep"))
			os.Remove(filepath.Join(root, "tool.pids"))
			rb := exec.Command("sh", "-c", undo+" --confirm ROLLBACK")
			if rout, err := rb.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", undo, err, rout)
			}
			if after := rootState(t, root); after != before {
				t.Errorf("rollback did not restore the tree:\nbefore\n%s\nafter\n%s", before, after)
			}
		})
	}

	// net/http's logger wrote "Unsolicited response received on idle HTTP
	// channel" with a date on stderr when a server sent bytes after its
	// answer; nothing from a library's logger reaches stderr.
	t.Run("no library log line on stderr", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func(c net.Conn) {
					defer c.Close()
					r := bufio.NewReader(c)
					for {
						l, err := r.ReadString('\n')
						if err != nil || l == "\r\n" {
							break
						}
					}
					body := `{"id":"Qwen/Qwen3-0.6B","sha":"` + strings.Repeat("a", 40) + `"}`
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
					c.Write([]byte("HTTP/1.1 200 OK\r\n\r\nunsolicited"))
					time.Sleep(2 * time.Second)
				}(c)
			}
		}()
		work := t.TempDir()
		os.WriteFile(filepath.Join(work, "versions.env"), []byte("VERIFY_MODEL=Qwen/Qwen3-0.6B\n"), 0o644)
		cmd := exec.Command(bin, "pins", "status", "--pins", filepath.Join(work, "versions.env"), "--state-dir", filepath.Join(work, "state"))
		cmd.Env = append(os.Environ(), "HF_ENDPOINT=http://"+ln.Addr().String(), "NO_COLOR=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, _ := cmd.Output()
		time.Sleep(100 * time.Millisecond)
		if strings.Contains(stderr.String(), "Unsolicited") || regexp.MustCompile(`(?m)^\d{4}/\d\d/\d\d \d\d:`).MatchString(stderr.String()) {
			t.Errorf("a library's log line on stderr:\n%s", stderr.String())
		}
		if !strings.Contains(string(out), "VERIFY_MODEL") {
			t.Errorf("pins status said:\n%s\n%s", out, stderr.String())
		}
	})
}
