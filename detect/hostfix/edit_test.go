package hostfix

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func set(k, v string) KernelArg { return KernelArg{Op: OpSet, Key: k, Value: v} }
func del(k string) KernelArg    { return KernelArg{Op: OpRemove, Key: k} }

func TestRemoveKeyAndAppend(t *testing.T) {
	tests := []struct {
		name, in, key, want string
	}{
		{"middle", "quiet nomodeset splash", "nomodeset", "quiet splash"},
		{"first", "nomodeset quiet", "nomodeset", "quiet"},
		{"last", "quiet nomodeset", "nomodeset", "quiet"},
		{"only", "nomodeset", "nomodeset", ""},
		{"with value", "quiet amdgpu.gttsize=98304 splash", "amdgpu.gttsize", "quiet splash"},
		{"twice in a row", "a=1 k=1 k=2 b", "k", "a=1 b"},
		{"keeps other spacing", "quiet  k=1\tsplash", "k", "quiet  splash"},
		{"not a prefix match", "kk=1 k2=3 k", "k", "kk=1 k2=3"},
		{"trailing blanks kept", "quiet k=1  ", "k", "quiet  "},
		{"quoted value", `a k="x y" b`, "k", "a b"},
		{"last on a line of several", "a k\nb\n", "k", "a\nb\n"},
		{"absent", "quiet splash", "k", "quiet splash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := removeKey(tt.in, tt.key, false); got != tt.want {
				t.Errorf("removeKey(%q, %q) = %q, want %q", tt.in, tt.key, got, tt.want)
			}
		})
	}
	appends := []struct{ in, want string }{
		{"quiet", "quiet k=1"},
		{"", "k=1"},
		{"quiet splash\n", "quiet splash k=1\n"},
		{"  ", "k=1  "},
		{"quiet  ", "quiet k=1  "},
	}
	for _, tt := range appends {
		if got := appendArg(tt.in, "k=1"); got != tt.want {
			t.Errorf("appendArg(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestScanTokensExpansions(t *testing.T) {
	s := `${GRUB_CMDLINE_LINUX:+$GRUB_CMDLINE_LINUX }ttm.pages_limit=32768000 $X amdgpu.cwsr_enable=0`
	var got []string
	for _, tk := range scanTokens(s, true) {
		if tk.expansion != "" {
			got = append(got, "$"+tk.expansionVar())
		} else {
			got = append(got, tk.String())
		}
	}
	want := "$GRUB_CMDLINE_LINUX ttm.pages_limit=32768000 $X amdgpu.cwsr_enable=0"
	if strings.Join(got, " ") != want {
		t.Errorf("tokens = %q, want %q", strings.Join(got, " "), want)
	}
	if r := removeKey(s, "ttm.pages_limit", true); r != `${GRUB_CMDLINE_LINUX:+$GRUB_CMDLINE_LINUX }$X amdgpu.cwsr_enable=0` {
		t.Errorf("removeKey after an expansion = %q", r)
	}
}

// The Debian default file, as grub-pc's postinst installs it (from
// /usr/share/grub/default/grub of grub2-common 2.06-13+deb12u2), cut.
const debianGrub = `# If you change this file, run 'update-grub' afterwards to update
# /boot/grub/grub.cfg.

GRUB_DEFAULT=0
GRUB_TIMEOUT=5
GRUB_DISTRIBUTOR=` + "`lsb_release -i -s 2> /dev/null || echo Debian`" + `
GRUB_CMDLINE_LINUX_DEFAULT="quiet"
GRUB_CMDLINE_LINUX=""

# Uncomment to disable graphical terminal
#GRUB_TERMINAL=console
`

// A real drop-in from ROCm/ROCm#5671 (strix-grub-cmdline-3 fixture).
const amdgpuDropIn = `GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX:+$GRUB_CMDLINE_LINUX }ttm.pages_limit=32768000 ttm.page_pool_size=32768000 amdttm.pages_limit=32768000 amdttm.page_pool_size=32768000 amdgpu.cwsr_enable=0"
`

func grubFrom(t *testing.T, files ...string) *grubConfig {
	t.Helper()
	c := &grubConfig{}
	for i := 0; i < len(files); i += 2 {
		f, err := parseGrubFile(files[i], []byte(files[i+1]))
		if err != nil {
			t.Fatal(err)
		}
		c.files = append(c.files, f)
	}
	return c
}

func TestGrubApply(t *testing.T) {
	tests := []struct {
		name   string
		files  []string
		args   []KernelArg
		want   []string // file contents after, in order
		linux  string   // effective command line after
		change bool
	}{
		{
			name:  "debian default: appended to _DEFAULT, every other byte kept",
			files: []string{"/etc/default/grub", debianGrub},
			args:  []KernelArg{set("ttm.pages_limit", "30670848"), set("ttm.page_pool_size", "30670848")},
			want: []string{strings.Replace(debianGrub, `_DEFAULT="quiet"`,
				`_DEFAULT="quiet ttm.pages_limit=30670848 ttm.page_pool_size=30670848"`, 1)},
			linux: "quiet ttm.pages_limit=30670848 ttm.page_pool_size=30670848", change: true,
		},
		{
			name:  "removed from both variables",
			files: []string{"/etc/default/grub", "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash amdgpu.gttsize=98304 nomodeset\"\nGRUB_CMDLINE_LINUX=\"nomodeset\"\n"},
			args:  []KernelArg{del("amdgpu.gttsize"), del("nomodeset")},
			want:  []string{"GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\nGRUB_CMDLINE_LINUX=\"\"\n"},
			linux: "quiet splash", change: true,
		},
		{
			name:   "already so: nothing changes",
			files:  []string{"/etc/default/grub", "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet ttm.pages_limit=1\"\n"},
			args:   []KernelArg{set("ttm.pages_limit", "1"), del("nomodeset")},
			want:   []string{"GRUB_CMDLINE_LINUX_DEFAULT=\"quiet ttm.pages_limit=1\"\n"},
			linux:  "quiet ttm.pages_limit=1",
			change: false,
		},
		{
			name:  "a value that changes moves to _DEFAULT, the drop-in keeps the rest",
			files: []string{"/etc/default/grub", debianGrub, "/etc/default/grub.d/amdgpu.cfg", amdgpuDropIn},
			args:  []KernelArg{set("ttm.pages_limit", "30670848"), del("amdgpu.cwsr_enable")},
			want: []string{
				strings.Replace(debianGrub, `_DEFAULT="quiet"`, `_DEFAULT="quiet ttm.pages_limit=30670848"`, 1),
				`GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX:+$GRUB_CMDLINE_LINUX }ttm.page_pool_size=32768000 amdttm.pages_limit=32768000 amdttm.page_pool_size=32768000"` + "\n",
			},
			linux: "ttm.page_pool_size=32768000 amdttm.pages_limit=32768000 amdttm.page_pool_size=32768000 quiet ttm.pages_limit=30670848", change: true,
		},
		{
			name:  "no _DEFAULT line: one is added at the end",
			files: []string{"/etc/default/grub", "GRUB_TIMEOUT=5"},
			args:  []KernelArg{set("amdgpu.cwsr_enable", "0")},
			want:  []string{"GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX_DEFAULT=\"amdgpu.cwsr_enable=0\"\n"},
			linux: "amdgpu.cwsr_enable=0", change: true,
		},
		{
			name:  "single quotes and export kept",
			files: []string{"/etc/default/grub", "export GRUB_CMDLINE_LINUX_DEFAULT='quiet'  # mine\n"},
			args:  []KernelArg{set("ttm.pages_limit", "7")},
			want:  []string{"export GRUB_CMDLINE_LINUX_DEFAULT='quiet ttm.pages_limit=7'  # mine\n"},
			linux: "quiet ttm.pages_limit=7", change: true,
		},
		{
			name:  "a bare value gets quotes when it needs them",
			files: []string{"/etc/default/grub", "GRUB_CMDLINE_LINUX_DEFAULT=quiet\n"},
			args:  []KernelArg{set("ttm.pages_limit", "7")},
			want:  []string{"GRUB_CMDLINE_LINUX_DEFAULT=\"quiet ttm.pages_limit=7\"\n"},
			linux: "quiet ttm.pages_limit=7", change: true,
		},
		{
			name:  "the last assignment wins and takes the argument",
			files: []string{"/etc/default/grub", "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\nGRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT splash\"\n"},
			args:  []KernelArg{set("k.p", "1")},
			want:  []string{"GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\nGRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT splash k.p=1\"\n"},
			linux: "quiet splash k.p=1", change: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := grubFrom(t, tt.files...)
			changed := false
			for _, a := range tt.args {
				if len(c.apply(a)) > 0 {
					changed = true
				}
			}
			if changed != tt.change {
				t.Errorf("changed = %v, want %v", changed, tt.change)
			}
			for i, f := range c.files {
				if got := string(f.bytes()); got != tt.want[i] {
					t.Errorf("%s:\n got %q\nwant %q", f.path, got, tt.want[i])
				}
			}
			if got := tokensText(c.effective()); got != tt.linux {
				t.Errorf("effective = %q, want %q", got, tt.linux)
			}
		})
	}
}

func TestGrubTooComplex(t *testing.T) {
	for _, line := range []string{
		`GRUB_CMDLINE_LINUX_DEFAULT="quiet \"x\""`,
		`GRUB_CMDLINE_LINUX_DEFAULT="$(cat /etc/args)"`,
		"GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\n splash\"",
		`GRUB_CMDLINE_LINUX_DEFAULT="a"'b'`,
		`GRUB_CMDLINE_LINUX_DEFAULT="a"; echo hi`,
		"GRUB_CMDLINE_LINUX_DEFAULT=`cat x`",
	} {
		if _, err := parseGrubFile("/etc/default/grub", []byte(line+"\n")); err == nil {
			t.Errorf("%q parsed; want it refused as too complex", line)
		}
	}
}

func TestKernelCmdline(t *testing.T) {
	k := newKernelCmdline([]byte("root=UUID=1 ro quiet amdgpu.gttsize=1\n"), true, "")
	k.apply(set("ttm.pages_limit", "5"))
	k.apply(del("amdgpu.gttsize"))
	if k.text != "root=UUID=1 ro quiet ttm.pages_limit=5\n" {
		t.Errorf("text = %q", k.text)
	}
	if got := k.apply(set("ttm.pages_limit", "5")); got != nil {
		t.Errorf("applying twice changed %v", got)
	}
	made := newKernelCmdline(nil, false, "BOOT_IMAGE=/vmlinuz-6.18 root=UUID=1 ro initrd=\\initrd quiet")
	if made.text != "root=UUID=1 ro quiet\n" {
		t.Errorf("from /proc/cmdline: %q (kernel-install drops BOOT_IMAGE= and initrd=)", made.text)
	}
}

func TestModprobe(t *testing.T) {
	// lhl/strix-halo-testing llm-bench/README.md (strix-modprobe-conf-1).
	conf := "# Maximize GTT for LLM usage on 128GB UMA system\noptions amdgpu gttsize=120000\noptions ttm pages_limit=31457280\noptions ttm page_pool_size=15728640\n"
	opts := modprobeOptions("/etc/modprobe.d/x.conf", []byte(conf))
	if len(opts) != 3 || opts[0].module != "amdgpu" || opts[0].param != "gttsize" || opts[2].value != "15728640" {
		t.Fatalf("options = %+v", opts)
	}
	out, ch := removeModOption("/etc/modprobe.d/x.conf", []byte(conf), "amdgpu", "gttsize")
	want := "# Maximize GTT for LLM usage on 128GB UMA system\noptions ttm pages_limit=31457280\noptions ttm page_pool_size=15728640\n"
	if string(out) != want || len(ch) != 1 || ch[0].after != "" {
		t.Errorf("remove a lone option: %q %+v", out, ch)
	}
	out, _ = removeModOption("x", []byte("options ttm pages_limit=1 page_pool_size=1 # mine\n"), "ttm", "pages_limit")
	if string(out) != "options ttm page_pool_size=1 # mine\n" {
		t.Errorf("remove one of two: %q", out)
	}
	out, _ = removeModOption("x", []byte("options amd-ttm pages_limit=1\n"), "amd_ttm", "pages_limit")
	if string(out) != "" {
		t.Errorf("module names fold - and _: %q", out)
	}
}

// TestSedCommandsDoWhatApplyDoes runs the exact commands a plan prints with
// the real GNU sed and compares the result with haloforge's own edit.
func TestSedCommandsDoWhatApplyDoes(t *testing.T) {
	if _, err := exec.LookPath("sed"); err != nil {
		t.Skip("no sed")
	}
	weird := "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet a|b x#y c&d [x] * ^ $HOME {n} it's\"\n"
	cases := []struct {
		name    string
		content string
		args    []KernelArg
	}{
		{"debian", debianGrub, []KernelArg{set("ttm.pages_limit", "30670848"), set("ttm.page_pool_size", "30670848"), set("amdgpu.cwsr_enable", "0")}},
		{"removals", "GRUB_CMDLINE_LINUX_DEFAULT=\"nomodeset quiet amdgpu.gttsize=98304\"\nGRUB_CMDLINE_LINUX=\"amdgpu.gttsize=1\"\n", []KernelArg{del("amdgpu.gttsize"), del("nomodeset")}},
		{"special characters on the line", weird, []KernelArg{set("ttm.pages_limit", "1"), del("nomodeset")}},
		{"new line appended, no final newline", "GRUB_TIMEOUT=5", []KernelArg{set("ttm.pages_limit", "1"), set("ttm.page_pool_size", "1")}},
		{"drop-in style", amdgpuDropIn, []KernelArg{set("ttm.pages_limit", "2"), del("amdgpu.cwsr_enable")}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "grub")
			if err := os.WriteFile(p, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			c := grubFrom(t, p, tt.content)
			for _, a := range tt.args {
				for _, cmd := range lineCommands("", nil, c.apply(a), nil) {
					out, err := exec.Command("sh", "-c", cmd).CombinedOutput()
					if err != nil {
						t.Fatalf("%s: %v\n%s", cmd, err, out)
					}
				}
			}
			got, _ := os.ReadFile(p)
			if want := string(c.files[0].bytes()); string(got) != want {
				t.Errorf("sed made\n%q\nhaloforge makes\n%q", got, want)
			}
		})
	}
	t.Run("kernel cmdline created then edited", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "cmdline")
		k := newKernelCmdline(nil, false, "BOOT_IMAGE=/b root=UUID=1 ro")
		first := true
		for _, a := range []KernelArg{set("ttm.pages_limit", "3"), set("ttm.page_pool_size", "3")} {
			ch := k.apply(a)
			for i := range ch {
				ch[i].path = p
			}
			var create map[string]string
			if first {
				create, first = map[string]string{p: k.text}, false
			}
			for _, cmd := range lineCommands("", nil, ch, create) {
				if out, err := exec.Command("sh", "-c", cmd).CombinedOutput(); err != nil {
					t.Fatalf("%s: %v\n%s", cmd, err, out)
				}
			}
		}
		got, _ := os.ReadFile(p)
		if string(got) != k.text {
			t.Errorf("shell made %q, haloforge makes %q", got, k.text)
		}
	})
}

// TestUnifiedDiffApplies checks the diff with the real patch(1).
func TestUnifiedDiffApplies(t *testing.T) {
	if _, err := exec.LookPath("patch"); err != nil {
		t.Skip("no patch")
	}
	before := debianGrub + strings.Repeat("# filler\n", 12) + "GRUB_CMDLINE_LINUX=\"\"\n"
	after := strings.Replace(strings.Replace(before, `"quiet"`, `"quiet k=1"`, 1), "GRUB_CMDLINE_LINUX=\"\"\n", "GRUB_CMDLINE_LINUX=\"x\"\nNEW=1\n", 1)
	for _, tc := range [][2]string{{before, after}, {"a\nb\nc", "a\nB\nc"}, {"", "x\n"}, {"x\ny\n", ""}} {
		dir := t.TempDir()
		p := filepath.Join(dir, "f")
		os.WriteFile(p, []byte(tc[0]), 0o644)
		d := unifiedDiff("f", tc[0], tc[1], true)
		cmd := exec.Command("patch", "-s", "-p0", "f")
		cmd.Dir, cmd.Stdin = dir, strings.NewReader(d)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("patch: %v\n%s\n%s", err, out, d)
		}
		got, _ := os.ReadFile(p)
		if string(got) != tc[1] {
			t.Errorf("patched %q, want %q\n%s", got, tc[1], d)
		}
	}
	if unifiedDiff("f", "same", "same", true) != "" {
		t.Error("a diff of equal files is not empty")
	}
}
