package hostfix

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

var fuzzKeyRe = regexp.MustCompile(`^[A-Za-z0-9._-]{1,40}$`)

// FuzzGrubFile: whatever /etc/default/grub holds, an edit either is refused
// at parse time or leaves a file that parses again, has what was asked, keeps
// every line that is not an assignment, and changes nothing when repeated.
func FuzzGrubFile(f *testing.F) {
	f.Add(debianGrub, "ttm.pages_limit", "123", true)
	f.Add(amdgpuDropIn, "amdgpu.cwsr_enable", "0", false)
	f.Add("GRUB_CMDLINE_LINUX_DEFAULT='a b'\nexport GRUB_CMDLINE_LINUX=x # c\n", "nomodeset", "", false)
	f.Add("GRUB_CMDLINE_LINUX_DEFAULT=\"${X:+$X }k=1 $Y\"", "k", "2", true)
	f.Fuzz(func(t *testing.T, content, key, value string, isSet bool) {
		if !fuzzKeyRe.MatchString(key) || !oldValueRe.MatchString(value) {
			return // keys and values are allow-listed before any edit (ValidateArg)
		}
		a := KernelArg{Op: OpRemove, Key: key}
		if isSet && value == "" {
			return // a set always has a value (ValidateArg)
		}
		if isSet {
			a = KernelArg{Op: OpSet, Key: key, Value: value}
		}
		g, err := parseGrubFile("/etc/default/grub", []byte(content))
		if err != nil {
			return
		}
		c := &grubConfig{files: []*grubFile{g}}
		beforeLines := splitLinesKeep(content)
		assigned := map[int]bool{}
		for _, as := range g.assigns {
			assigned[as.line] = true
		}
		c.apply(a)
		out := string(c.files[0].bytes())
		g2, err := parseGrubFile("/etc/default/grub", []byte(out))
		if err != nil {
			t.Fatalf("edit made an unreadable file: %v\n%q", err, out)
		}
		if !satisfied((&grubConfig{files: []*grubFile{g2}}).effective(), a) {
			t.Fatalf("after apply %v the command line is %q", a, tokensText(c.effective()))
		}
		afterLines := splitLinesKeep(out)
		for i, l := range beforeLines {
			if assigned[i] {
				continue
			}
			if i >= len(afterLines) || strings.TrimSuffix(afterLines[i], "\n") != strings.TrimSuffix(l, "\n") {
				t.Fatalf("line %d changed: %q", i+1, l)
			}
		}
		if ch := c.apply(a); len(ch) != 0 {
			t.Fatalf("second apply changed %+v", ch)
		}
	})
}

// FuzzCmdlineEdit: removing a key leaves every other parameter in order;
// appending adds exactly one.
func FuzzCmdlineEdit(f *testing.F) {
	f.Add("root=UUID=1 ro quiet amdgpu.gttsize=1 splash", "amdgpu.gttsize")
	f.Add(`a k="x y" k b`, "k")
	f.Add("k\nk=2\n\tk=3 ", "k")
	f.Fuzz(func(t *testing.T, s, key string) {
		if key == "" || strings.ContainsAny(key, " \t\n\r\"=") || strings.Count(s, `"`)%2 == 1 {
			return // an unbalanced quote is refused before any edit (check)
		}
		var others []string
		for _, tk := range scanTokens(s, false) {
			if tk.key != key {
				others = append(others, s[tk.start:tk.end])
			}
		}
		r := removeKey(s, key, false)
		var got []string
		for _, tk := range scanTokens(r, false) {
			if tk.key == key {
				t.Fatalf("removeKey(%q, %q) = %q still has it", s, key, r)
			}
			got = append(got, r[tk.start:tk.end])
		}
		if !slices.Equal(got, others) {
			t.Fatalf("removeKey(%q, %q) = %q: others %q, want %q", s, key, r, got, others)
		}
		ap := appendArg(r, key+"=1")
		if n := len(scanTokens(ap, false)); n != len(got)+1 {
			t.Fatalf("appendArg(%q) = %q: %d tokens", r, ap, n)
		}
	})
}

// FuzzModprobe: removing an option leaves no such option for the module and
// every line that is not an options line of it as it was.
func FuzzModprobe(f *testing.F) {
	f.Add("options amdgpu gttsize=120000\noptions ttm pages_limit=1 page_pool_size=2 # x\n", "ttm", "pages_limit")
	f.Add("blacklist radeon\noptions amd-gpu gttsize=1 \\\n", "amd_gpu", "gttsize")
	f.Fuzz(func(t *testing.T, s, module, param string) {
		if module == "" || param == "" || strings.ContainsAny(module+param, " \t\n=#\\") {
			return
		}
		out, changes := removeModOption("/etc/modprobe.d/x.conf", []byte(s), moduleName(module), param)
		for _, o := range modprobeOptions("x", out) {
			if o.module == moduleName(module) && o.param == param {
				t.Fatalf("still has %s %s: %q", module, param, out)
			}
		}
		if len(changes) == 0 && string(out) != s {
			t.Fatalf("no change reported but the file changed: %q", out)
		}
	})
}

// FuzzParseManifest: a manifest either parses with every path one haloforge
// may touch and every backup name in its own directory, or is refused.
func FuzzParseManifest(f *testing.F) {
	f.Add(`{"format":"haloforge-host-backup","version":1,"kind":"apply","state":"done","bootloader":"grub","tool":"update-grub","root":"/","files":[{"path":"/etc/default/grub","role":"source","existed":true,"sha256":"` + strings.Repeat("a", 64) + `","size":1,"mode":"0644","backup":"files/0001"}],"commands":[]}`)
	f.Add(`{"format":"haloforge-host-backup","version":1,"kind":"apply","state":"done","bootloader":"grub","tool":"update-grub","root":"/","files":[{"path":"/etc/shadow","role":"source","existed":true,"backup":"../../x"}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseManifest(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, mf := range m.Files {
			if !allowedBackupPath(mf.Path) || strings.Contains(mf.Backup, "..") {
				t.Fatalf("accepted %+v", mf)
			}
		}
	})
}
