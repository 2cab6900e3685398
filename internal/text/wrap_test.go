package text

import (
	"bytes"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"mvdan.cc/sh/v3/syntax"
)

// gttFix is the gtt-size fix doctor computes for a 125 GiB Strix Halo
// (its Remedy.Text): a fix the detection screen once cut mid-command.
const gttFix = `Let the GPU use 117 GiB (RAM 125.1 GiB minus 8 GiB kept for the OS): ttm.pages_limit=30670848 (= 117 GiB x 262144 pages of 4 KiB).
Fedora (grubby):
  sudo grubby --update-kernel=ALL --args="ttm.pages_limit=30670848 ttm.page_pool_size=30670848"
Ubuntu/Debian (GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub):
  sudo sed -i 's/^GRUB_CMDLINE_LINUX_DEFAULT="/&ttm.pages_limit=30670848 ttm.page_pool_size=30670848 /' /etc/default/grub
  sudo update-grub
Or as module options (any distro; then rebuild the initramfs: sudo dracut -f on Fedora, sudo update-initramfs -u on Ubuntu/Debian):
  echo "options ttm pages_limit=30670848 page_pool_size=30670848" | sudo tee /etc/modprobe.d/ttm.conf
Then reboot.`

// amdsmiFix is a diagnose fix: a command with a trailing comment, and a
// comment holding a $(…) that must stay a comment.
const amdsmiFix = `pip uninstall -y amdsmi   # in the venv that imports torch (vLLM's ROCm build requirements pull it in)
# or stop the global preload: in $(python -c 'import rocm_sdk,os;print(os.path.dirname(rocm_sdk.__file__))')/__init__.py
#   set rtld_global=False in preload_libraries() / initialize_process()`

// parsed is the shell's reading of a script: each simple command's words
// as the shell splits them, in order (pipes and lists included). Two texts
// that read the same run the same commands.
func parsed(t *testing.T, script string) string {
	t.Helper()
	f, err := syntax.NewParser().Parse(strings.NewReader(script), "")
	if err != nil {
		t.Fatalf("not valid shell: %v\n%s", err, script)
	}
	var out []string
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			var words []string
			for _, w := range n.Args {
				var b bytes.Buffer
				if err := syntax.NewPrinter().Print(&b, w); err != nil {
					t.Fatal(err)
				}
				words = append(words, b.String())
			}
			out = append(out, strings.Join(words, " "))
		case *syntax.BinaryCmd:
			out = append(out, n.Op.String())
		}
		return true
	})
	return strings.Join(out, "\n")
}

// TestFixRowsCopyAndRun: at any width, the rows of a fix that
// hold commands, copied as they are on screen (with their indentation),
// run exactly the commands of the fix; no command is cut inside a word or
// a quoted string, and prose wraps without losing a word.
func TestFixRowsCopyAndRun(t *testing.T) {
	for _, fix := range []string{gttFix, amdsmiFix} {
		var commands []string
		for _, l := range strings.Split(fix, "\n") {
			if KindOf(l) != Prose {
				commands = append(commands, l)
			}
		}
		want := parsed(t, strings.Join(commands, "\n"))
		for _, width := range []int{40, 60, 69, 80, 109, 200} {
			rows := FixRows(fix, width)
			var copied []string
			for _, r := range FixLayout(fix, width) {
				if r.Kind != Prose {
					copied = append(copied, r.Text)
				}
			}
			if got := parsed(t, strings.Join(copied, "\n")); got != want {
				t.Errorf("width %d: the copied rows run\n%s\nwant\n%s\nrows:\n%s", width, got, want, strings.Join(rows, "\n"))
			}
			for _, r := range rows {
				if ansi.StringWidth(r) > width && !strings.Contains(r, "'s/^GRUB") && !strings.Contains(r, `"ttm.pages_limit`) &&
					!strings.Contains(r, `"options ttm`) && !strings.Contains(r, "rocm_sdk.__file__") {
					t.Errorf("width %d: row wider than the screen without an unbreakable word: %q", width, r)
				}
			}
			text := strings.Join(strings.Fields(strings.Join(rows, " ")), " ")
			for _, w := range strings.Fields("Let the GPU use 117 GiB (RAM 125.1 GiB minus 8 GiB kept for the OS): Then reboot.") {
				if fix == gttFix && !strings.Contains(text, w) {
					t.Errorf("width %d: prose lost %q", width, w)
				}
			}
		}
	}
}

func TestShellWords(t *testing.T) {
	for in, want := range map[string][]string{
		`sudo sed -i 's/a b/c d/' /etc/x`:       {"sudo", "sed", "-i", `'s/a b/c d/'`, "/etc/x"},
		`echo "x  y" | tee z`:                   {"echo", `"x  y"`, "|", "tee", "z"},
		`a\ b c`:                                {`a\ b`, "c"},
		`pip uninstall -y amdsmi   # a note  x`: {"pip", "uninstall", "-y", "amdsmi", "# a note  x"},
		`x#y z`:                                 {"x#y", "z"},
		`cp a $(brew --prefix)/etc b`:           {"cp", "a", "$(brew --prefix)/etc", "b"},
	} {
		if got := ShellWords(in); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("ShellWords(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLineKind(t *testing.T) {
	for l, want := range map[string]LineKind{
		"  sudo update-grub":                            Command,
		"pip uninstall -y amdsmi   # in the venv":       Command,
		"haloforge build --track legacy-gfx803":         Command,
		"# or stop the global preload":                  Comment,
		"Then reboot.":                                  Prose,
		"that the amdgpu driver binds to it: lspci -nn": Prose,
		"haloforge targets AMD GPUs. Check the BIOS":    Prose,
	} {
		if got := KindOf(l); got != want {
			t.Errorf("KindOf(%q) = %v, want %v", l, got, want)
		}
	}
}

// TestWrapBreaksPathsAtSlashes: prose wraps between words; a word wider
// than a row is broken only after a '/', so that every piece is a whole
// path element, and a word with no '/' stays whole.
func TestWrapBreaksPathsAtSlashes(t *testing.T) {
	const report = "/home/ada/.local/state/haloforge/runs/20261129-062932-1e70a5/report.json"
	for _, tc := range []struct {
		name, in string
		width    int
		want     []string
	}{
		{"fits", "report " + report, 100, []string{"report " + report}},
		{"path on its own row", "see the report " + report, 80, []string{"see the report", "  " + report}},
		{"path wider than a row", "report " + report, 40, []string{
			"report /home/ada/.local/state/haloforge/",
			"  runs/20261129-062932-1e70a5/",
			"  report.json"}},
		{"no slash stays whole", "digest sha256:b8a082f346d069376d35784250e38b23a043efe979408ae3a33d7c6b62ee3276 ok", 30, []string{
			"digest",
			"  sha256:b8a082f346d069376d35784250e38b23a043efe979408ae3a33d7c6b62ee3276",
			"  ok"}},
		{"a trailing slash is no break", "in dir/ here and there", 8, []string{"in dir/", "  here", "  and", "  there"}},
		{"a no-break space holds", "fits 1 GiB (0.90\u00a0×\u00a0124\u00a0GiB)", 16, []string{"fits 1 GiB", "  (0.90\u00a0×\u00a0124\u00a0GiB)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Wrap(tc.in, tc.width, "  ")
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("Wrap(%q, %d) =\n%s\nwant\n%s", tc.in, tc.width, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			for _, r := range got {
				for _, w := range strings.Fields(r) {
					if !strings.Contains(tc.in, w) {
						t.Errorf("row %q holds %q, which is not a piece of the text", r, w)
					}
				}
			}
		})
	}
}
