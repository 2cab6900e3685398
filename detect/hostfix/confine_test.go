package hostfix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// outsideTree is a directory outside the root holding what a link planted
// in the root could lead to: a GRUB default, a drop-in, modprobe.d, a
// grub.cfg and a kernel command line. Nothing may ever change in it.
func outsideTree(t *testing.T) string {
	out := t.TempDir()
	writeTree(t, out, map[string]string{
		"default/grub":              debianGrub + "# " + outsideMark + "\n",
		"default/grub.d/amdgpu.cfg": amdgpuDropIn + "# " + outsideMark + "\n",
		"modprobe.d/strix.conf":     "options amdgpu gttsize=120000\n# " + outsideMark + "\n",
		"grub/grub.cfg":             outsideMark + ": never copied, never changed\n",
		"kernel/cmdline":            outsideMark + "\n",
		"precious":                  outsideMark + " precious bytes\n",
	})
	return out
}

// outsideMark is in every file of outsideTree: a backup holding it copied
// a file from outside the root.
const outsideMark = "OUTSIDE-7f3a9c"

// plantLink replaces root/rel (a file or a directory) with a symbolic link
// to target.
func plantLink(t *testing.T, root, rel, target string) {
	t.Helper()
	full := filepath.Join(root, rel)
	if err := os.RemoveAll(full); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, full); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies the files of src to dst, making dst, with their modes.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		st, _ := d.Info()
		return os.WriteFile(target, data, st.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// copyInto copies root/from to root/to (to may be absolute: it is then
// that path inside the root).
func copyInto(t *testing.T, root, from, to string) {
	copyTree(t, filepath.Join(root, from), filepath.Join(root, to))
}

// TestApplyStaysInsideTheRoot plants links in a root as an image may hold
// them (absolute links, "..", links in the last element, loops) and
// applies and rolls back through them: whatever the link, not a byte
// outside the root changes or is copied into a backup, and a change goes
// where chroot would put it or is refused with the link named.
func TestApplyStaysInsideTheRoot(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// plant changes the root; out is the tree outside it.
		plant func(t *testing.T, root, out string)
		// planAfter makes the plan from the root with the link in it (as
		// the user would); otherwise the plan is from before (the link
		// appeared between plan and apply).
		planAfter bool
		want      string // a refusal's words; "" applies
		edited    string // when it applies: the file in the root that must carry the new arguments
		shared    bool   // the root's file is the outside one (a hard link): its backup holds it
	}{
		{"an absolute directory link out of the root, made before the plan", func(t *testing.T, root, out string) {
			plantLink(t, root, "etc/default", filepath.Join(out, "default"))
		}, false, "boots with unknown", "", false},
		{"an absolute directory link out of the root, planned through", func(t *testing.T, root, out string) {
			plantLink(t, root, "etc/default", filepath.Join(out, "default"))
		}, true, "", "", false},
		{"an absolute directory link whose target the root holds too", func(t *testing.T, root, out string) {
			copyInto(t, root, "etc/default", filepath.Join(out, "default"))
			plantLink(t, root, "etc/default", filepath.Join(out, "default"))
		}, true, "", "{out}/default/grub", false},
		{"a relative link climbing past the root", func(t *testing.T, root, out string) {
			plantLink(t, root, "etc/default", strings.Repeat("../", 20)+strings.TrimPrefix(filepath.Join(out, "default"), "/"))
		}, false, "boots with unknown", "", false},
		{"a relative link climbing past the root, the root holding its target", func(t *testing.T, root, out string) {
			copyInto(t, root, "etc/default", filepath.Join(out, "default"))
			plantLink(t, root, "etc/default", strings.Repeat("../", 20)+strings.TrimPrefix(filepath.Join(out, "default"), "/"))
		}, true, "", "{out}/default/grub", false},
		{"a relative link inside the root", func(t *testing.T, root, out string) {
			copyInto(t, root, "etc/default", "usr/share/grub-defaults")
			plantLink(t, root, "etc/default", "../usr/share/grub-defaults")
		}, true, "", "usr/share/grub-defaults/grub", false},
		{"an absolute link inside the root", func(t *testing.T, root, out string) {
			copyInto(t, root, "etc/default", "usr/share/grub-defaults")
			plantLink(t, root, "etc/default", "/usr/share/grub-defaults")
		}, true, "", "usr/share/grub-defaults/grub", false},
		{"the last element a link out of the root", func(t *testing.T, root, out string) {
			plantLink(t, root, "etc/default/grub", filepath.Join(out, "default", "grub"))
		}, false, "boots with unknown", "", false},
		{"the last element a link inside the root", func(t *testing.T, root, out string) {
			writeTree(t, root, map[string]string{"usr/share/grub/default/grub": debianGrub})
			plantLink(t, root, "etc/default/grub", "/usr/share/grub/default/grub")
		}, true, "/etc/default/grub is a symbolic link to /usr/share/grub/default/grub: haloforge edits only regular files", "", false},
		{"a drop-in directory linked out of the root", func(t *testing.T, root, out string) {
			plantLink(t, root, "etc/default/grub.d", filepath.Join(out, "default", "grub.d"))
			// The image as it is: its grub.cfg made without the drop-ins.
			if err := (&simulatedTools{root: root}).Run(context.Background(), []string{"update-grub"}, true, io.Discard); err != nil {
				t.Fatal(err)
			}
		}, true, "", "etc/default/grub", false},
		{"modprobe.d linked out of the root", func(t *testing.T, root, out string) {
			plantLink(t, root, "etc/modprobe.d", filepath.Join(out, "modprobe.d"))
		}, true, "", "etc/default/grub", false},
		{"a modprobe.d file linked out of the root after the plan", func(t *testing.T, root, out string) {
			plantLink(t, root, "etc/modprobe.d/strix.conf", filepath.Join(out, "modprobe.d", "strix.conf"))
		}, false, "/etc/modprobe.d/strix.conf is a symbolic link to {out}/modprobe.d/strix.conf", "", false},
		{"boot/grub linked out of the root (the backup would copy its grub.cfg)", func(t *testing.T, root, out string) {
			plantLink(t, root, "boot/grub", filepath.Join(out, "grub"))
		}, true, "/boot/grub is a symbolic link to {out}/grub, which does not exist inside", "", false},
		{"/boot linked out of the root", func(t *testing.T, root, out string) {
			plantLink(t, root, "boot", out)
		}, true, "/boot is a symbolic link to {out}, which does not exist inside", "", false},
		{"all of /etc linked out of the root", func(t *testing.T, root, out string) {
			plantLink(t, root, "etc", out)
		}, false, "boots with unknown", "", false},
		{"a link loop", func(t *testing.T, root, out string) {
			plantLink(t, root, "etc/default", "/etc/default")
		}, false, "boots with unknown", "", false},
		{"a link through /proc/self/root", func(t *testing.T, root, out string) {
			plantLink(t, root, "etc/default", "/proc/self/root"+filepath.Join(out, "default"))
		}, false, "boots with unknown", "", false},
		{"a hard link to a file outside (replaced, not written through)", func(t *testing.T, root, out string) {
			os.Remove(filepath.Join(root, "etc/default/grub"))
			if err := os.Link(filepath.Join(out, "default", "grub"), filepath.Join(root, "etc/default/grub")); err != nil {
				t.Skip(err)
			}
		}, true, "", "etc/default/grub", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, out := grubRoot(t), outsideTree(t)
			want := strings.ReplaceAll(tt.want, "{out}", out)
			edited := strings.ReplaceAll(tt.edited, "{out}", out)
			outside := treeSums(t, out)
			var p *Plan
			if !tt.planAfter {
				p = grubPlan(t, root)
			}
			tt.plant(t, root, out)
			if tt.planAfter {
				p = grubPlan(t, root)
			}
			planted := treeSums(t, root)
			state := t.TempDir()
			tools := &simulatedTools{root: root}
			var log bytes.Buffer
			h := &Host{Root: root, Out: &log, Runner: tools}
			dir, err := Apply(ctx, p, h, ApplyOptions{StateDir: state, Confirm: confirmWith("APPLY")})
			if d := treeSums(t, out); fmt.Sprint(d) != fmt.Sprint(outside) {
				t.Fatalf("a file outside the root changed:\nbefore %v\nafter  %v", outside, d)
			}
			if !tt.shared {
				assertNoOutsideCopy(t, state)
			}
			if want != "" {
				if err == nil || !strings.Contains(err.Error(), want) || !IsUsage(err) {
					t.Fatalf("apply: %v, want a refusal (exit 2) saying %q\n%s", err, want, log.String())
				}
				if fmt.Sprint(treeSums(t, root)) != fmt.Sprint(planted) {
					t.Error("a refused apply changed the root")
				}
				return
			}
			if err != nil {
				t.Fatalf("apply: %v\n%s", err, log.String())
			}
			if edited != "" {
				rel := strings.TrimPrefix(edited, "/")
				data, _ := os.ReadFile(filepath.Join(root, rel))
				if !strings.Contains(string(data), "ttm.pages_limit=30670848") {
					t.Errorf("%s in the root does not carry the change: %q", rel, data)
				}
			}
			if dir == "" {
				return
			}
			if _, err := Rollback(ctx, dir, h, ApplyOptions{StateDir: state, Confirm: confirmWith("ROLLBACK")}); err != nil {
				t.Fatalf("rollback: %v\n%s", err, log.String())
			}
			if d := treeSums(t, root); fmt.Sprint(d) != fmt.Sprint(planted) {
				t.Errorf("rollback did not restore the root byte for byte:\nbefore %v\nafter  %v", planted, d)
			}
			if d := treeSums(t, out); fmt.Sprint(d) != fmt.Sprint(outside) {
				t.Fatalf("the rollback changed a file outside the root")
			}
		})
	}
}

// assertNoOutsideCopy fails when a backup in state holds a file of the
// outside tree (their contents say "outside").
func assertNoOutsideCopy(t *testing.T, state string) {
	t.Helper()
	filepath.WalkDir(state, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, _ := os.ReadFile(p); bytes.Contains(data, []byte(outsideMark)) {
				t.Errorf("the backup %s holds a file from outside the root: %q", p, data)
			}
		}
		return nil
	})
}

// TestApplyRefusesLinksSwappedIn swaps a link into the root at the worst
// moments: while the APPLY prompt waits, and again and again while an
// apply runs. Nothing outside changes, whichever way each run ends.
func TestApplyRefusesLinksSwappedIn(t *testing.T) {
	ctx := context.Background()
	t.Run("a directory swapped for a link out of the root during the prompt", func(t *testing.T) {
		root, out := grubRoot(t), outsideTree(t)
		p := grubPlan(t, root)
		// The outside holds the root's files, so only the link differs.
		os.RemoveAll(filepath.Join(out, "default"))
		copyTree(t, filepath.Join(root, "etc/default"), filepath.Join(out, "default"))
		outside := treeSums(t, out)
		var log bytes.Buffer
		_, err := Apply(ctx, p, &Host{Root: root, Out: &log, Runner: &simulatedTools{root: root}}, ApplyOptions{StateDir: t.TempDir(),
			Confirm: func(string) error {
				os.Rename(filepath.Join(root, "etc/default"), filepath.Join(root, "etc/default.real"))
				return os.Symlink(filepath.Join(out, "default"), filepath.Join(root, "etc/default"))
			}})
		if !errors.Is(err, ErrLink) {
			t.Errorf("apply: %v, want the link refused", err)
		}
		if d := treeSums(t, out); fmt.Sprint(d) != fmt.Sprint(outside) {
			t.Fatal("a file outside the root changed")
		}
	})
	t.Run("a directory swapped for a link inside the root, same files, during the prompt", func(t *testing.T) {
		root, out := grubRoot(t), outsideTree(t)
		outside := treeSums(t, out)
		copyInto(t, root, "etc/default", "srv/alt-default")
		p := grubPlan(t, root)
		var log bytes.Buffer
		_, err := Apply(ctx, p, &Host{Root: root, Out: &log, Runner: &simulatedTools{root: root}}, ApplyOptions{StateDir: t.TempDir(),
			Confirm: func(string) error {
				os.RemoveAll(filepath.Join(root, "etc/default"))
				return os.Symlink("/srv/alt-default", filepath.Join(root, "etc/default"))
			}})
		if err != nil {
			t.Fatalf("apply: %v\n%s", err, log.String())
		}
		if data, _ := os.ReadFile(filepath.Join(root, "srv/alt-default/grub")); !strings.Contains(string(data), "ttm.pages_limit=30670848") {
			t.Errorf("the change did not go where chroot resolves /etc/default/grub: %q", data)
		}
		if d := treeSums(t, out); fmt.Sprint(d) != fmt.Sprint(outside) {
			t.Fatal("a file outside the root changed")
		}
	})
	t.Run("a directory flipping between itself and a link out of the root while applies run", func(t *testing.T) {
		root, out := grubRoot(t), outsideTree(t)
		// The outside holds the same files as the root, so that a read
		// through the link would go unnoticed.
		os.RemoveAll(filepath.Join(out, "default"))
		copyTree(t, filepath.Join(root, "etc/default"), filepath.Join(out, "default"))
		if err := os.Symlink(filepath.Join(out, "default"), filepath.Join(root, "etc/default.link")); err != nil {
			t.Fatal(err)
		}
		outside := treeSums(t, out)
		p := grubPlan(t, root)
		stop := make(chan struct{})
		var flips atomic.Int64
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			etc := filepath.Join(root, "etc")
			for {
				select {
				case <-stop:
					return
				default:
				}
				// exchange etc/default and etc/default.link atomically
				if unix.Renameat2(unix.AT_FDCWD, filepath.Join(etc, "default"), unix.AT_FDCWD, filepath.Join(etc, "default.link"), unix.RENAME_EXCHANGE) == nil {
					flips.Add(1)
				}
			}
		}()
		results := map[string]int{}
		deadline := time.Now().Add(3 * time.Second)
		for i := 0; i < 200 && time.Now().Before(deadline); i++ {
			_, err := Apply(ctx, p, &Host{Root: root, Out: io.Discard, Runner: &simulatedTools{root: root}}, ApplyOptions{StateDir: t.TempDir(), Confirm: confirmWith("APPLY")})
			switch {
			case err == nil:
				results["applied"]++
			case errors.Is(err, ErrLink), errors.Is(err, ErrMismatch), errors.Is(err, ErrChanged):
				results["refused"]++
			default:
				results["other: "+strings.SplitN(err.Error(), "\n", 2)[0]]++
			}
		}
		close(stop)
		wg.Wait()
		if d := treeSums(t, out); fmt.Sprint(d) != fmt.Sprint(outside) {
			t.Fatalf("after %d flips and %v, a file outside the root changed", flips.Load(), results)
		}
		t.Logf("%d flips; applies: %v", flips.Load(), results)
	})
}

// TestApplyKeepsAnEditMadeDuringThePrompt: a file edited while the APPLY
// prompt waits (a package upgrade, a second terminal) is not overwritten
// with the text computed before; nothing changes and no backup is left.
func TestApplyKeepsAnEditMadeDuringThePrompt(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		edit func(root string)
	}{
		{"a line appended", func(root string) {
			f, _ := os.OpenFile(filepath.Join(root, "etc/default/grub"), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("GRUB_TIMEOUT=99 # edited during prompt\n")
			f.Close()
		}},
		{"the mode changed", func(root string) { os.Chmod(filepath.Join(root, "etc/default/grub"), 0o600) }},
		{"the modprobe.d file removed", func(root string) { os.Remove(filepath.Join(root, "etc/modprobe.d/strix.conf")) }},
		{"a drop-in rewritten with the same size", func(root string) {
			p := filepath.Join(root, "etc/default/grub.d/amdgpu.cfg")
			data, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(data, []byte("a"), []byte("b"), 1), 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := grubRoot(t)
			p := grubPlan(t, root)
			state := t.TempDir()
			var edited map[string]string
			_, err := Apply(ctx, p, &Host{Root: root, Out: io.Discard, Runner: &simulatedTools{root: root}}, ApplyOptions{StateDir: state,
				Confirm: func(string) error {
					tc.edit(root)
					edited = treeSums(t, root)
					return nil
				}})
			var ce *changedError
			if !errors.As(err, &ce) || !errors.Is(err, ErrChanged) || IsUsage(err) {
				t.Fatalf("apply: %v, want the changed file named (exit 1)", err)
			}
			if fmt.Sprint(treeSums(t, root)) != fmt.Sprint(edited) {
				t.Error("the edit made during the prompt was overwritten")
			}
			if entries, _ := os.ReadDir(filepath.Join(state, backupsDirName)); len(entries) != 0 {
				t.Errorf("a backup was left: %v", entries)
			}
		})
	}
}

// TestRollbackKeepsAnEditMadeDuringThePrompt: the same for ROLLBACK.
func TestRollbackKeepsAnEditMadeDuringThePrompt(t *testing.T) {
	ctx := context.Background()
	root := grubRoot(t)
	state := t.TempDir()
	h := &Host{Root: root, Out: io.Discard, Runner: &simulatedTools{root: root}}
	dir, err := Apply(ctx, grubPlan(t, root), h, ApplyOptions{StateDir: state, Confirm: confirmWith("APPLY")})
	if err != nil {
		t.Fatal(err)
	}
	var edited map[string]string
	_, err = Rollback(ctx, dir, h, ApplyOptions{StateDir: state, Confirm: func(string) error {
		f, _ := os.OpenFile(filepath.Join(root, "etc/default/grub"), os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString("GRUB_TIMEOUT=7\n")
		f.Close()
		edited = treeSums(t, root)
		return nil
	}})
	if !errors.Is(err, ErrChanged) {
		t.Fatalf("rollback: %v, want ErrChanged", err)
	}
	if fmt.Sprint(treeSums(t, root)) != fmt.Sprint(edited) {
		t.Error("the edit made during the ROLLBACK prompt was overwritten")
	}
	if last, err := LastApplied(state); err != nil || last != dir {
		t.Errorf("LastApplied = %q, %v: the apply must still be the one to roll back", last, err)
	}
}

// blockingTools is simulatedTools whose update-grub, run for real as a
// process group (sh and a child sleep), waits to be stopped: the signal
// cases of --apply.
type blockingTools struct {
	simulatedTools
	started chan int // the tool's pid, once it runs
}

func (b *blockingTools) Run(ctx context.Context, argv []string, asRoot bool, out io.Writer) error {
	args := argv
	if len(args) > 2 && args[0] == "chroot" {
		args = args[2:]
	}
	if args[0] != "update-grub" {
		return b.simulatedTools.Run(ctx, argv, asRoot, out)
	}
	// A real process group: the shell starts a child, as grub-mkconfig
	// starts /etc/grub.d's scripts.
	r := ExecRunner{IsRoot: true}
	pidFile := filepath.Join(b.root, "tool.pids")
	go func() {
		for i := 0; i < 500; i++ {
			if data, err := os.ReadFile(pidFile); err == nil && bytes.Count(data, []byte("\n")) >= 2 {
				var a, c int
				fmt.Sscan(string(data), &a, &c)
				b.started <- c
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return r.Run(ctx, []string{"sh", "-c", `sleep 300 & echo $$ > "$1"; echo $! >> "$1"; wait`, "sh", pidFile}, false, out)
}

// TestApplyInterruptedDuringTheBootTool stops an apply while its boot tool
// runs: the tool's whole process group is stopped and waited for, the
// manifest says interrupted, the error says how to undo with the flags
// given, and a rollback restores every byte.
func TestApplyInterruptedDuringTheBootTool(t *testing.T) {
	root := grubRoot(t)
	before := treeSums(t, root)
	state := t.TempDir()
	tools := &blockingTools{simulatedTools: simulatedTools{root: root}, started: make(chan int, 1)}
	h := &Host{Root: root, Out: io.Discard, Runner: tools}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-tools.started
		cancel()
	}()
	flags := []string{"--root", root, "--state-dir", state + " with space"}
	dir, err := Apply(ctx, grubPlan(t, root), h, ApplyOptions{StateDir: state, Confirm: confirmWith("APPLY"), Flags: flags})
	if !errors.Is(err, ErrInterrupted) || dir == "" {
		t.Fatalf("apply: %v (dir %q), want ErrInterrupted", err, dir)
	}
	want := "To undo what it changed: haloforge doctor --rollback " + dir + " --root " + root + " --state-dir '" + state + " with space'"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q\nlacks %q", err, want)
	}
	data, _ := os.ReadFile(filepath.Join(root, "tool.pids"))
	for _, f := range strings.Fields(string(data)) {
		var pid int
		fmt.Sscan(f, &pid)
		if pid > 0 && ProcessRuns(pid) {
			t.Errorf("process %d of the boot tool still runs", pid)
		}
	}
	m, err := LoadBackup(dir)
	if err != nil || m.State != "interrupted" {
		t.Fatalf("manifest: %v %+v", err, m)
	}
	os.Remove(filepath.Join(root, "tool.pids"))
	if last, err := LastApplied(state); err != nil || last != dir {
		t.Errorf("LastApplied = %q %v", last, err)
	}
	if _, err := Rollback(context.Background(), dir, &Host{Root: root, Out: io.Discard, Runner: &simulatedTools{root: root}}, ApplyOptions{StateDir: state, Confirm: confirmWith("ROLLBACK")}); err != nil {
		t.Fatal(err)
	}
	if d := treeSums(t, root); fmt.Sprint(d) != fmt.Sprint(before) {
		t.Errorf("rollback after the interrupt:\n%v\n%v", before, d)
	}
}

// TestRollbackNeedsRoomFirst: a rollback onto a file system without room
// for its files restores nothing and keeps the backup.
func TestRollbackNeedsRoomFirst(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	ctx := context.Background()
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	root := filepath.Join(mnt, "root")
	copyTree(t, grubRoot(t), root)
	state := t.TempDir()
	h := &Host{Root: root, Out: io.Discard, Runner: &simulatedTools{root: root}}
	dir, err := Apply(ctx, grubPlan(t, root), h, ApplyOptions{StateDir: state, Confirm: confirmWith("APPLY")})
	if err != nil {
		t.Fatal(err)
	}
	applied := treeSums(t, root)
	// Fill the file system.
	f, _ := os.Create(filepath.Join(mnt, "filler"))
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	f.Close()
	_, err = Rollback(ctx, dir, h, ApplyOptions{StateDir: state, Confirm: confirmWith("ROLLBACK")})
	if err == nil || !strings.Contains(err.Error(), "nothing was restored, and the backup "+dir+" is kept") {
		t.Fatalf("rollback onto a full disk: %v", err)
	}
	if fmt.Sprint(treeSums(t, root)) != fmt.Sprint(applied) {
		t.Error("a rollback that had no room changed files")
	}
	if _, err := LoadBackup(dir); err != nil {
		t.Errorf("the backup is not kept whole: %v", err)
	}
	// Room again: the same command finishes it.
	os.Remove(filepath.Join(mnt, "filler"))
	if _, err := Rollback(ctx, dir, h, ApplyOptions{StateDir: state, Confirm: confirmWith("ROLLBACK")}); err != nil {
		t.Fatalf("rollback with room: %v", err)
	}
}

// TestReadOnlyStateDir: with the state dir on a read-only mount (root
// ignores mode bits, a mount it cannot), an apply and a rollback change
// nothing and say the backup could not be made.
func TestReadOnlyStateDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	ctx := context.Background()
	state := t.TempDir()
	if err := unix.Mount("tmpfs", state, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(state, unix.MNT_DETACH) })
	root := grubRoot(t)
	h := &Host{Root: root, Out: io.Discard, Runner: &simulatedTools{root: root}}
	// an apply made while it was writable, for the rollback below
	dir, err := Apply(ctx, grubPlan(t, root), h, ApplyOptions{StateDir: state, Confirm: confirmWith("APPLY")})
	if err != nil {
		t.Fatal(err)
	}
	applied := treeSums(t, root)
	if err := unix.Mount("", state, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Skipf("remount read-only: %v", err)
	}
	_, err = Rollback(ctx, dir, h, ApplyOptions{StateDir: state, Confirm: confirmWith("ROLLBACK")})
	if err == nil || !strings.Contains(err.Error(), "read-only file system") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("rollback with a read-only state dir: %v", err)
	}
	if fmt.Sprint(treeSums(t, root)) != fmt.Sprint(applied) {
		t.Error("a rollback that could not back up changed files")
	}
	root2 := grubRoot(t)
	before := treeSums(t, root2)
	_, err = Apply(ctx, grubPlan(t, root2), &Host{Root: root2, Out: io.Discard, Runner: &simulatedTools{root: root2}}, ApplyOptions{StateDir: state, Confirm: confirmWith("APPLY")})
	if err == nil || !strings.Contains(err.Error(), "read-only file system") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("apply with a read-only state dir: %v", err)
	}
	if fmt.Sprint(treeSums(t, root2)) != fmt.Sprint(before) {
		t.Error("an apply that could not back up changed files")
	}
}

// TestExecRunnerDaemonHoldingOutput: a tool that ends well but leaves a
// process holding its output (a daemon it started) is not a failure; Run
// returns once StopGrace has passed.
func TestExecRunnerDaemonHoldingOutput(t *testing.T) {
	var out bytes.Buffer
	pidFile := filepath.Join(t.TempDir(), "pid")
	err := ExecRunner{IsRoot: true}.Run(context.Background(), []string{"sh", "-c", `sleep 60 & echo $! > "$1"; echo started`, "sh", pidFile}, false, &out)
	if data, _ := os.ReadFile(pidFile); len(data) > 0 {
		var pid int
		fmt.Sscan(string(data), &pid)
		defer unix.Kill(pid, unix.SIGKILL)
	}
	if err != nil || !strings.Contains(out.String(), "started") {
		t.Errorf("Run: %v, output %q", err, out.String())
	}
}
