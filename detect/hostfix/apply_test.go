package hostfix

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	securejoin "github.com/cyphar/filepath-securejoin"
)

// simulatedTools stands in for the system's tools in the unit tests: it
// records every command and imitates update-grub, kernel-install, usermod,
// gpasswd, install and rm on the test root. The real tools run in
// scripts/tests/hostfix-chroot.sh, in real Debian chroots.
type simulatedTools struct {
	root  string
	ran   [][]string
	fail  string // a tool name that fails
	grubs int    // update-grub runs
}

func (s *simulatedTools) Argv(argv []string, asRoot bool) []string { return argv }

func (s *simulatedTools) Run(_ context.Context, argv []string, asRoot bool, out io.Writer) error {
	s.ran = append(s.ran, argv)
	args := argv
	if len(args) > 2 && args[0] == "chroot" {
		if args[1] != s.root {
			return fmt.Errorf("chroot into %s, want %s", args[1], s.root)
		}
		args = args[2:]
	}
	if args[0] == s.fail {
		return fmt.Errorf("%s failed (simulated)", args[0])
	}
	// As chroot resolves paths: a link in the tree leads inside the root.
	at := func(p string) string {
		full, err := securejoin.SecureJoin(s.root, p)
		if err != nil {
			panic(err)
		}
		return full
	}
	switch args[0] {
	case "update-grub":
		s.grubs++
		ev, err := FromRoot(s.root)
		if err != nil {
			return err
		}
		cfg := &grubConfig{}
		for _, p := range DetectBoot(ev).Config {
			f, err := parseGrubFile(p, ev.Files[p])
			if err != nil {
				return err
			}
			cfg.files = append(cfg.files, f)
		}
		os.MkdirAll(at("/boot/grub"), 0o755)
		return os.WriteFile(at("/boot/grub/grub.cfg"), []byte("linux /vmlinuz root=/dev/x ro "+tokensText(cfg.effective())+"\n"), 0o444)
	case "update-initramfs":
		return nil
	case "kernel-install":
		data, err := os.ReadFile(at(kernelCmdlinePath))
		if err != nil { // kernel-install's fallback: /proc/cmdline without BOOT_IMAGE= and initrd=
			proc, _ := os.ReadFile(at("/proc/cmdline"))
			data = []byte(newKernelCmdline(nil, false, string(proc)).text)
		}
		return os.WriteFile(at("/efi/loader/entries/mid-"+args[2]+".conf"), []byte("version "+args[2]+"\noptions "+strings.TrimSpace(string(data))+"\n"), 0o644)
	case "usermod", "gpasswd":
		g, _ := os.ReadFile(at("/etc/group"))
		lines := strings.Split(strings.TrimSuffix(string(g), "\n"), "\n")
		for i, l := range lines {
			f := strings.Split(l, ":")
			var members []string
			if f[3] != "" {
				members = strings.Split(f[3], ",")
			}
			switch {
			case args[0] == "usermod" && slices.Contains(strings.Split(args[2], ","), f[0]) && !slices.Contains(members, args[3]):
				members = append(members, args[3])
			case args[0] == "gpasswd" && f[0] == args[3]:
				members = slices.DeleteFunc(members, func(m string) bool { return m == args[2] })
			}
			f[3] = strings.Join(members, ",")
			lines[i] = strings.Join(f, ":")
		}
		return os.WriteFile(at("/etc/group"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	case "install":
		mode, _ := strconv.ParseUint(args[2], 8, 32)
		data, err := os.ReadFile(args[len(args)-2])
		if err != nil {
			return err
		}
		os.MkdirAll(filepath.Dir(args[len(args)-1]), 0o755)
		return os.WriteFile(args[len(args)-1], data, fs.FileMode(mode))
	case "rm":
		return os.Remove(args[len(args)-1])
	case "cat":
		data, err := os.ReadFile(args[len(args)-1])
		out.Write(data)
		return err
	}
	return fmt.Errorf("unexpected command %q", argv)
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := fs.FileMode(0o644)
		if strings.Contains(p, "/sbin/") || strings.Contains(p, "/bin/") {
			mode = 0o755
		}
		if err := os.WriteFile(full, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// treeSums is every file under root with its checksum and mode.
func treeSums(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, _ := os.ReadFile(p)
		st, _ := d.Info()
		h := sha256.Sum256(data)
		rel, _ := filepath.Rel(root, p)
		out[rel] = hex.EncodeToString(h[:8]) + " " + st.Mode().String()
		return nil
	})
	return out
}

// grubRoot is a Debian-like root with GRUB, modprobe.d and groups.
func grubRoot(t *testing.T) string {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"etc/default/grub":              debianGrub,
		"etc/default/grub.d/amdgpu.cfg": amdgpuDropIn,
		"etc/modprobe.d/strix.conf":     "options amdgpu gttsize=120000\noptions ttm pages_limit=31457280\n",
		"etc/group":                     "root:x:0:\nvideo:x:44:\nrender:x:105:\nalice:x:1000:\n",
		"etc/os-release":                "ID=debian\nVERSION_ID=12\n",
		"usr/sbin/update-grub":          "#!/bin/sh\n",
		"usr/sbin/update-initramfs":     "#!/bin/sh\n",
		"usr/sbin/usermod":              "#!/bin/sh\n",
	})
	// grub.cfg as update-grub made it before haloforge came.
	if err := (&simulatedTools{root: root}).Run(context.Background(), []string{"update-grub"}, true, io.Discard); err != nil {
		t.Fatal(err)
	}
	return root
}

func grubPlan(t *testing.T, root string) *Plan {
	t.Helper()
	b, r := readBundle(t, "../../tui/demo/bundle")
	_ = b
	user := "alice"
	r.Host.User, r.Host.Groups = &user, []string{"alice"}
	flagGroups(r)
	ev, err := FromRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(r, ev, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func confirmWith(word string) func(string) error {
	return func(w string) error {
		if w != word {
			return ErrDeclined
		}
		return nil
	}
}

func TestApplyRollbackGRUB(t *testing.T) {
	root := grubRoot(t)
	state := t.TempDir()
	p := grubPlan(t, root)
	before := treeSums(t, root)
	tools := &simulatedTools{root: root}
	var out bytes.Buffer
	h := &Host{Root: root, Out: &out, Runner: tools}
	o := ApplyOptions{StateDir: state, Version: "test", Confirm: confirmWith("APPLY"), Now: func() time.Time { return time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC) }}

	dir, err := Apply(context.Background(), p, h, o)
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, out.String())
	}
	cfg, _ := os.ReadFile(filepath.Join(root, "boot/grub/grub.cfg"))
	for _, want := range []string{"ttm.pages_limit=30670848", "ttm.page_pool_size=30670848"} {
		if strings.Count(string(cfg), want) != 1 {
			t.Errorf("grub.cfg %q lacks %s", cfg, want)
		}
	}
	if regexp.MustCompile(`[ "]ttm\.pages?_[a-z_]+=32768000`).Match(cfg) {
		t.Errorf("the drop-in's old ttm.pages_limit is still there: %q", cfg)
	}
	mp, _ := os.ReadFile(filepath.Join(root, "etc/modprobe.d/strix.conf"))
	if len(mp) != 0 {
		t.Errorf("modprobe.d still sets GTT: %q", mp)
	}
	g, _ := os.ReadFile(filepath.Join(root, "etc/group"))
	if !strings.Contains(string(g), "video:x:44:alice") || !strings.Contains(string(g), "render:x:105:alice") {
		t.Errorf("/etc/group: %q", g)
	}
	wantRan := [][]string{{"chroot", root, "update-grub"}, {"chroot", root, "update-initramfs", "-u", "-k", "all"}, {"chroot", root, "usermod", "-aG", "render,video", "alice"}}
	if !slices.EqualFunc(tools.ran, wantRan, slices.Equal) {
		t.Errorf("ran %q, want %q", tools.ran, wantRan)
	}
	if !strings.Contains(out.String(), "--- /etc/default/grub") || !strings.Contains(out.String(), "Nothing was rebooted") {
		t.Errorf("output:\n%s", out.String())
	}
	m, err := LoadBackup(dir)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range m.Files {
		paths = append(paths, f.Role+" "+f.Path)
	}
	wantPaths := []string{"source /etc/default/grub", "source /etc/default/grub.d/amdgpu.cfg", "source /etc/modprobe.d/strix.conf",
		"generated /etc/group", "generated /etc/gshadow", "generated /boot/grub/grub.cfg", "side-effect /etc/group-", "side-effect /etc/gshadow-"}
	if !slices.Equal(paths, wantPaths) || m.State != "done" || m.BootCmdline == "" || len(m.Groups) != 1 {
		t.Errorf("manifest: %v state %s boot cmdline %q groups %v", paths, m.State, m.BootCmdline, m.Groups)
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("backup dir mode %v", st.Mode())
	}

	// Applying again changes nothing and makes no backup.
	tools.ran = nil
	out.Reset()
	again, err := Apply(context.Background(), p, h, o)
	if err != nil || again != "" || len(tools.ran) != 0 {
		t.Errorf("second apply: %v %q ran %q\n%s", err, again, tools.ran, out.String())
	}
	if !strings.Contains(out.String(), "Nothing to change") {
		t.Errorf("second apply output:\n%s", out.String())
	}

	// Rollback puts every byte back.
	out.Reset()
	tools.ran = nil
	o.Confirm = confirmWith("ROLLBACK")
	o.Now = func() time.Time { return time.Date(2026, 11, 24, 10, 5, 0, 0, time.UTC) }
	if _, err := Rollback(context.Background(), dir, h, o); err != nil {
		t.Fatalf("rollback: %v\n%s", err, out.String())
	}
	after := treeSums(t, root)
	for p, s := range before {
		if after[p] != s {
			t.Errorf("%s: %s after rollback, %s before", p, after[p], s)
		}
	}
	if len(after) != len(before) {
		t.Errorf("files before %d, after %d", len(before), len(after))
	}
	if !slices.ContainsFunc(tools.ran, func(a []string) bool {
		return slices.Equal(a, []string{"chroot", root, "gpasswd", "-d", "alice", "render"})
	}) {
		t.Errorf("rollback ran %q", tools.ran)
	}
	if last, err := LastApplied(state); err == nil {
		t.Errorf("after the rollback, LastApplied = %s; want none", last)
	}
}

func TestApplyRefusals(t *testing.T) {
	ctx := context.Background()
	t.Run("no terminal: everything shown, nothing changed", func(t *testing.T) {
		root := grubRoot(t)
		p := grubPlan(t, root)
		before := treeSums(t, root)
		var out bytes.Buffer
		_, err := Apply(ctx, p, &Host{Root: root, Out: &out, Runner: &simulatedTools{root: root}},
			ApplyOptions{StateDir: t.TempDir(), Confirm: func(string) error { return ErrNoTerminal }})
		if !errors.Is(err, ErrNoTerminal) || !IsUsage(err) {
			t.Errorf("err = %v", err)
		}
		if !strings.Contains(out.String(), "+GRUB_CMDLINE_LINUX_DEFAULT=") || !strings.Contains(out.String(), "usermod -aG render,video alice") {
			t.Errorf("the changes were not shown:\n%s", out.String())
		}
		if d := treeSums(t, root); fmt.Sprint(d) != fmt.Sprint(before) {
			t.Error("files changed without confirmation")
		}
	})
	t.Run("declined", func(t *testing.T) {
		root := grubRoot(t)
		state := t.TempDir()
		_, err := Apply(ctx, grubPlan(t, root), &Host{Root: root, Runner: &simulatedTools{root: root}},
			ApplyOptions{StateDir: state, Confirm: confirmWith("something else")})
		if !errors.Is(err, ErrDeclined) || IsUsage(err) {
			t.Errorf("err = %v", err)
		}
		if _, err := os.Stat(backupsDir(state)); err == nil {
			t.Error("a declined apply made a backup")
		}
	})
	t.Run("plan for another bootloader", func(t *testing.T) {
		root := grubRoot(t)
		p := grubPlan(t, root)
		p.Bootloader, p.Boot.Name, p.Boot.Tool = BootGrubby, BootGrubby, "grubby"
		_, err := Apply(ctx, p, &Host{Root: root, Runner: &simulatedTools{root: root}}, ApplyOptions{StateDir: t.TempDir(), Confirm: confirmWith("APPLY")})
		if !errors.Is(err, ErrMismatch) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("a failing tool stops, the backup allows a rollback", func(t *testing.T) {
		root := grubRoot(t)
		before := treeSums(t, root)
		tools := &simulatedTools{root: root, fail: "update-grub"}
		h := &Host{Root: root, Runner: tools}
		state := t.TempDir()
		dir, err := Apply(ctx, grubPlan(t, root), h, ApplyOptions{StateDir: state, Confirm: confirmWith("APPLY")})
		if err == nil || dir == "" || !strings.Contains(err.Error(), "haloforge doctor --rollback "+dir) {
			t.Fatalf("err = %v, dir %q", err, dir)
		}
		m, _ := LoadBackup(dir)
		if m.State != "failed" {
			t.Errorf("state %s", m.State)
		}
		tools.fail = ""
		if _, err := Rollback(ctx, dir, h, ApplyOptions{StateDir: state, Confirm: confirmWith("ROLLBACK")}); err != nil {
			t.Fatal(err)
		}
		if d := treeSums(t, root); fmt.Sprint(d) != fmt.Sprint(before) {
			t.Errorf("rollback after a failure:\n%v\n%v", before, d)
		}
	})
}

func TestRollbackRefusals(t *testing.T) {
	ctx := context.Background()
	root := grubRoot(t)
	state := t.TempDir()
	h := &Host{Root: root, Runner: &simulatedTools{root: root}}
	dir, err := Apply(ctx, grubPlan(t, root), h, ApplyOptions{StateDir: state, Confirm: confirmWith("APPLY")})
	if err != nil {
		t.Fatal(err)
	}
	o := ApplyOptions{StateDir: state, Confirm: confirmWith("ROLLBACK")}
	copyDir := func(t *testing.T) string {
		d := filepath.Join(t.TempDir(), "20261124T100000Z")
		os.MkdirAll(filepath.Join(d, "files"), 0o700)
		entries, _ := os.ReadDir(filepath.Join(dir, "files"))
		for _, e := range entries {
			data, _ := os.ReadFile(filepath.Join(dir, "files", e.Name()))
			os.WriteFile(filepath.Join(d, "files", e.Name()), data, 0o600)
		}
		data, _ := os.ReadFile(filepath.Join(dir, manifestName))
		os.WriteFile(filepath.Join(d, manifestName), data, 0o600)
		return d
	}
	tests := []struct {
		name   string
		mutate func(t *testing.T, d string)
		want   string
	}{
		{"a directory haloforge did not create", func(t *testing.T, d string) { os.Remove(filepath.Join(d, manifestName)) }, "no haloforge backup manifest"},
		{"a tampered backup copy", func(t *testing.T, d string) {
			os.WriteFile(filepath.Join(d, "files", "0001"), []byte("GRUB_CMDLINE_LINUX_DEFAULT=\"init=/bin/sh\"\n"), 0o600)
		}, "does not match its checksum"},
		{"a manifest naming another file", func(t *testing.T, d string) {
			data, _ := os.ReadFile(filepath.Join(d, manifestName))
			os.WriteFile(filepath.Join(d, manifestName), bytes.Replace(data, []byte(`"/etc/default/grub"`), []byte(`"/etc/shadow"`), 1), 0o600)
		}, "not one haloforge touches"},
		{"a manifest of another format", func(t *testing.T, d string) {
			data, _ := os.ReadFile(filepath.Join(d, manifestName))
			os.WriteFile(filepath.Join(d, manifestName), bytes.Replace(data, []byte(manifestFormat), []byte("other"), 1), 0o600)
		}, "not a haloforge host backup"},
		{"a backup of another root", func(t *testing.T, d string) {
			data, _ := os.ReadFile(filepath.Join(d, manifestName))
			os.WriteFile(filepath.Join(d, manifestName), bytes.Replace(data, []byte(`"root": "`+root+`"`), []byte(`"root": "/"`), 1), 0o600)
		}, "backup of the system under /"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := copyDir(t)
			tt.mutate(t, d)
			before := treeSums(t, root)
			_, err := Rollback(ctx, d, h, o)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !IsUsage(err) {
				t.Errorf("err = %v, want %q (exit 2)", err, tt.want)
			}
			if fmt.Sprint(treeSums(t, root)) != fmt.Sprint(before) {
				t.Error("a refused rollback changed files")
			}
		})
	}
}

// sdbootRoot is a systemd-boot machine with kernel-install, one kernel and
// its entry, and no /etc/kernel/cmdline.
func sdbootRoot(t *testing.T) string {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"efi/loader/loader.conf":             "timeout 3\n",
		"efi/loader/entries/mid-6.18.9.conf": "version 6.18.9\noptions root=UUID=1 ro quiet\n",
		"usr/lib/modules/6.18.9/vmlinuz":     "kernel",
		"usr/bin/kernel-install":             "#!/bin/sh\n",
		"proc/cmdline":                       "BOOT_IMAGE=/vmlinuz root=UUID=1 ro quiet\n",
		"etc/os-release":                     "ID=fedora\n",
	})
	return root
}

func TestApplyKernelInstallCreatesCmdline(t *testing.T) {
	ctx := context.Background()
	root := sdbootRoot(t)
	before := treeSums(t, root)
	_, r := readBundle(t, "../../tui/demo/bundle")
	ev, _ := FromRoot(root)
	p, err := Build(r, ev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Bootloader != BootSystemdBoot || !strings.HasPrefix(p.Script[0], "printf '%s\\n' 'root=UUID=1 ro quiet ttm.pages_limit=30670848' | sudo tee "+root+"/etc/kernel/cmdline") {
		t.Fatalf("plan: %s %q", p.Bootloader, p.Script)
	}
	state := t.TempDir()
	h := &Host{Root: root, Runner: &simulatedTools{root: root}}
	dir, err := Apply(ctx, p, h, ApplyOptions{StateDir: state, Confirm: confirmWith("APPLY")})
	if err != nil {
		t.Fatal(err)
	}
	entry, _ := os.ReadFile(filepath.Join(root, "efi/loader/entries/mid-6.18.9.conf"))
	if !strings.Contains(string(entry), "options root=UUID=1 ro quiet ttm.pages_limit=30670848 ttm.page_pool_size=30670848\n") {
		t.Errorf("entry: %q", entry)
	}
	m, _ := LoadBackup(dir)
	if m.Files[0].Path != kernelCmdlinePath || m.Files[0].Existed {
		t.Errorf("manifest: %+v", m.Files[0])
	}
	if _, err := Rollback(ctx, dir, h, ApplyOptions{StateDir: state, Confirm: confirmWith("ROLLBACK")}); err != nil {
		t.Fatal(err)
	}
	after := treeSums(t, root)
	if _, ok := after["etc/kernel/cmdline"]; ok {
		t.Error("the /etc/kernel/cmdline haloforge created is still there")
	}
	for p, s := range before {
		if after[p] != s {
			t.Errorf("%s differs after rollback", p)
		}
	}
}

func TestRollbackKeepsAFileChangedSince(t *testing.T) {
	ctx := context.Background()
	root := sdbootRoot(t)
	_, r := readBundle(t, "../../tui/demo/bundle")
	ev, _ := FromRoot(root)
	p, _ := Build(r, ev, Options{})
	state := t.TempDir()
	h := &Host{Root: root, Runner: &simulatedTools{root: root}}
	dir, err := Apply(ctx, p, h, ApplyOptions{StateDir: state, Confirm: confirmWith("APPLY")})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, kernelCmdlinePath), []byte("root=UUID=1 ro mine\n"), 0o644)
	var out bytes.Buffer
	h.Out = &out
	Rollback(ctx, dir, h, ApplyOptions{StateDir: state, Confirm: confirmWith("ROLLBACK")})
	if data, _ := os.ReadFile(filepath.Join(root, kernelCmdlinePath)); string(data) != "root=UUID=1 ro mine\n" {
		t.Errorf("a file the user changed since was deleted or overwritten: %q", data)
	}
	if !strings.Contains(out.String(), "not haloforge's to delete") {
		t.Errorf("output:\n%s", out.String())
	}
}
