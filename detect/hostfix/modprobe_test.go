package hostfix

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haloforge/haloforge/detect"
)

// modprobeCommands are the module-option lines of doctor's fix for a
// remedy, made to run on dir instead of /etc/modprobe.d and without sudo.
func modprobeCommands(t *testing.T, m *detect.Remedy, dir string) string {
	t.Helper()
	text := m.Text("")
	_, block, ok := strings.Cut(text, "Or as module options")
	if !ok {
		t.Fatalf("no module options in:\n%s", text)
	}
	var cmds []string
	for _, l := range strings.Split(block, "\n")[2:] {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "sudo sed") && !strings.HasPrefix(l, "echo") {
			continue
		}
		l = strings.ReplaceAll(l, "sudo ", "")
		cmds = append(cmds, strings.ReplaceAll(l, "/etc/modprobe.d/", dir+"/"))
	}
	return strings.Join(cmds, "\n")
}

func runShell(t *testing.T, script string) {
	t.Helper()
	if out, err := exec.Command("bash", "-euc", script).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s\n%s", err, out, script)
	}
}

// TestModprobeFixesMatchThePlansEdit: doctor's by-hand modprobe.d commands,
// run by a real shell on real files, take out exactly what the plan's own
// edit (removeModOption) takes out: one param=value, a line only when
// nothing is left on it; and following two fixes one after the other
// appends both to haloforge's file, overwriting nothing.
func TestModprobeFixesMatchThePlansEdit(t *testing.T) {
	files := map[string]string{
		"strix.conf": "# Maximize GTT for LLM usage on 128GB UMA system\noptions amdgpu gttsize=120000\noptions ttm pages_limit=31457280\n",
		"mixed.conf": "options amdgpu gttsize=98304 cwsr_enable=0\noptions amdgpu  lockup_timeout=10000  gttsize=1  dcdebugmask=0x600 # kept\n",
		"note.conf":  "options amdgpu gttsize=1 # only this\noptions amdgpu-foo gttsize=1\nblacklist radeon\n",
	}
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	remove := &detect.Remedy{Args: []detect.ArgChange{{Arg: detect.KernelArg{Op: detect.OpRemove, Key: "amdgpu.gttsize"}}}}
	runShell(t, modprobeCommands(t, remove, dir))
	for name, data := range files {
		want, _ := removeModOption(name, []byte(data), "amdgpu", "gttsize")
		got, _ := os.ReadFile(filepath.Join(dir, name))
		if string(got) != string(want) {
			t.Errorf("%s: doctor's command left\n%q\nthe plan's edit leaves\n%q", name, got, want)
		}
	}

	// Two fixes followed one after the other: both settings stay, in
	// haloforge's own file; an older value of the same parameter elsewhere goes.
	before, _ := os.ReadFile(filepath.Join(dir, "mixed.conf"))
	runShell(t, modprobeCommands(t, &detect.Remedy{Args: []detect.ArgChange{{Arg: detect.KernelArg{Op: detect.OpSet, Key: "amdgpu.cwsr_enable", Value: "0"}}}}, dir))
	runShell(t, modprobeCommands(t, &detect.Remedy{Args: []detect.ArgChange{{Arg: detect.KernelArg{Op: detect.OpSet, Key: "amdgpu.lockup_timeout", Value: "20000,20000"}}}}, dir))
	own, _ := os.ReadFile(filepath.Join(dir, "haloforge-amdgpu.conf"))
	if string(own) != "options amdgpu cwsr_enable=0\noptions amdgpu lockup_timeout=20000,20000\n" {
		t.Errorf("haloforge-amdgpu.conf = %q, want both fixes", own)
	}
	want, _ := removeModOption("mixed.conf", before, "amdgpu", "cwsr_enable")
	want, _ = removeModOption("mixed.conf", want, "amdgpu", "lockup_timeout")
	if got, _ := os.ReadFile(filepath.Join(dir, "mixed.conf")); string(got) != string(want) {
		t.Errorf("mixed.conf = %q, want %q (each old value out, the rest kept)", got, want)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "strix.conf")); !strings.Contains(string(got), "options ttm pages_limit=31457280") {
		t.Errorf("another module's options were touched: %q", got)
	}
}
