package tui

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	shexpand "mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/detect/hostfix"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/tui/demo"
)

func init() {
	screenExamples["host fixes"] = func(c *common) screen { return newHostFixScreen(c) }
}

// refuseRunner runs nothing: a preview of GRUB and modprobe.d edits reads
// files only.
type refuseRunner struct{}

func (refuseRunner) Run(_ context.Context, argv []string, _ bool, _ io.Writer) error {
	return errors.New("refuseRunner: " + strings.Join(argv, " "))
}

// grubHostFix is the real plan and preview for the demo's machine booting
// like a Debian root with GRUB, a modprobe.d GTT option and no render group
// membership: kernel arguments, a modprobe.d edit, update-grub.
func grubHostFix(t *testing.T) *HostFix {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"etc/default/grub":          "GRUB_DEFAULT=0\nGRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\nGRUB_CMDLINE_LINUX=\"\"\n",
		"etc/modprobe.d/strix.conf": "options amdgpu gttsize=120000\n",
		"etc/group":                 "root:x:0:\nvideo:x:44:\nrender:x:105:\n",
		"etc/os-release":            "ID=debian\nVERSION_ID=13\n",
		"usr/sbin/update-grub":      "#!/bin/sh\n",
	}
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := demo.Bundle()
	if err != nil {
		t.Fatal(err)
	}
	ev, err := hostfix.FromRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	p, err := hostfix.Build(detect.Analyse(b), ev, hostfix.Options{Source: "fake: a Debian root with GRUB", Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	text, changes, err := hostfix.Preview(context.Background(), p, &hostfix.Host{Root: root, Runner: refuseRunner{}})
	if err != nil || !changes {
		t.Fatalf("preview: %v (changes %v)", err, changes)
	}
	return &HostFix{Plan: p, Changes: text, Applicable: true}
}

// inPlace runs a command handed the terminal right away, as tea.Exec would
// between releasing and restoring the terminal.
func inPlace(term io.Writer) func(tea.ExecCommand, tea.ExecCallback) tea.Cmd {
	return func(c tea.ExecCommand, fn tea.ExecCallback) tea.Cmd {
		return func() tea.Msg {
			c.SetStdout(term)
			return fn(c.Run())
		}
	}
}

// newHostFixFor opens the screen at w×h on the fake's plan, the plan made.
func newHostFixFor(t *testing.T, f *fakeBackend, w, h int) *hostFixScreen {
	t.Helper()
	s := newHostFixScreen(testCommonOn(f))
	s.SetSize(w, h)
	s.exec = inPlace(io.Discard)
	s.Update(msgOf(s.Init()))
	return s
}

func typeText(s screen, text string) {
	for _, r := range text {
		s.Update(press(string(r)))
	}
}

func TestHostFixScreenShowsThePlan(t *testing.T) {
	f := newFakeBackend(t)
	f.hostFix = grubHostFix(t)
	s := newHostFixScreen(testCommonOn(f))
	s.SetSize(100, 200)
	if v := ansi.Strip(s.View()); !strings.Contains(v, "Planning the host fixes") {
		t.Errorf("before the plan:\n%s", v)
	}
	s.Update(msgOf(s.Init()))
	v := ansi.Strip(s.View())
	for _, want := range []string{
		"Host fixes for fake: a Debian root with GRUB",
		"Bootloader: grub",
		" 1. set ttm.pages_limit=30670848",
		"kernel-arg · check GTT size (gtt-size)",
		"modprobe · check amdgpu.gttsize (gttsize-deprecated)",
		"What APPLY changes now",
		"--- /etc/default/grub",
		`+GRUB_CMDLINE_LINUX_DEFAULT="quiet splash ttm.pages_limit=30670848`,
		"-options amdgpu gttsize=120000",
		"Commands, as root:",
		"update-grub",
		"A reboot is needed",
		"a: apply these changes (you type APPLY)",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("the plan lacks %q:\n%s", want, v)
		}
	}
	if k := helpKeys(s.ShortHelp()); !slices.Contains(k, "a") {
		t.Errorf("help %v lacks the apply key", k)
	}
}

// TestHostFixScreenFitsAndScrolls: no line is wider than the screen at any
// width, and the keys scroll to the end and back.
func TestHostFixScreenFitsAndScrolls(t *testing.T) {
	f := newFakeBackend(t)
	f.hostFix = grubHostFix(t)
	for _, w := range []int{80, 100, 120} {
		s := newHostFixFor(t, f, w, 20)
		for _, l := range s.lines {
			if ansi.StringWidth(l) > w {
				t.Errorf("width %d: line of %d cells: %q", w, ansi.StringWidth(l), ansi.Strip(l))
			}
		}
		top := ansi.Strip(s.View())
		if !strings.Contains(top, "↑/↓ 1–18 of") {
			t.Errorf("width %d: no scroll position:\n%s", w, top)
		}
		s.Update(press("down"))
		if v := ansi.Strip(s.View()); !strings.Contains(v, "↑/↓ 2–19 of") {
			t.Errorf("width %d: down did not scroll:\n%s", w, v)
		}
		s.Update(press("G"))
		if v := ansi.Strip(s.View()); !strings.Contains(v, "A reboot is needed") {
			t.Errorf("width %d: G does not reach the end:\n%s", w, v)
		}
		s.Update(press("g"))
		if ansi.Strip(s.View()) != top {
			t.Errorf("width %d: g does not go back to the top", w)
		}
	}
}

// TestCommandLinesKeepTheCommand: a command broken over lines at the width
// is, for a shell, the same command: the same words.
func TestCommandLinesKeepTheCommand(t *testing.T) {
	fix := grubHostFix(t)
	var cmds []string
	for _, a := range fix.Plan.Actions {
		cmds = append(cmds, strings.Split(a.Command, "\n")...)
	}
	cmds = append(cmds, fix.Plan.Script...)
	cmds = append(cmds, `printf '%s\n' 'options amdgpu "x y"' | sudo tee /etc/modprobe.d/a\ b.conf >/dev/null`)
	for _, cmd := range cmds {
		want := argv(t, cmd)
		for _, w := range []int{40, 80, 200} {
			lines := commandLines(cmd, w, 6)
			for _, l := range lines {
				if ansi.StringWidth(l) > w {
					t.Errorf("width %d: %q is wider", w, l)
				}
			}
			if longestWord(cmd)+10 > w {
				continue // a word wider than the screen is cut: shown, not pasteable
			}
			if got := argv(t, strings.Join(lines, "\n")); !slices.Equal(got, want) {
				t.Errorf("width %d: %q\nreads as %q\nwant     %q", w, lines, got, want)
			}
		}
	}
}

// argv is what a shell runs for cmd: the words of every simple command.
func argv(t *testing.T, cmd string) []string {
	t.Helper()
	f, err := syntax.NewParser().Parse(strings.NewReader(cmd), "")
	if err != nil {
		t.Fatalf("%q: %v", cmd, err)
	}
	var out []string
	syntax.Walk(f, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.CallExpr); ok {
			words, err := shexpand.Fields(nil, c.Args...)
			if err != nil {
				t.Fatal(err)
			}
			out = append(append(out, words...), ";")
		}
		return true
	})
	return out
}

func longestWord(cmd string) int {
	n := 0
	for _, w := range text.ShellWords(cmd) {
		n = max(n, len(w))
	}
	return n
}

// TestHostFixApplyAsksForAPPLY: a is the question; a wrong word applies
// nothing and asks again; APPLY hands the terminal to the apply, which gets
// exactly the changes shown; the result says what was done and what next.
func TestHostFixApplyAsksForAPPLY(t *testing.T) {
	f := newFakeBackend(t)
	f.hostFix = grubHostFix(t)
	s := newHostFixFor(t, f, 100, 30)
	var term strings.Builder
	s.exec = inPlace(&term)

	s.Update(press("a"))
	if !s.TakesText() || !strings.Contains(ansi.Strip(s.View()), "Type APPLY to make these changes:") {
		t.Fatalf("a did not ask:\n%s", ansi.Strip(s.View()))
	}
	typeText(s, "apply")
	if cmd := s.Update(press("enter")); cmd != nil || len(f.applied) != 0 {
		t.Fatal("a wrong word applied")
	}
	if v := ansi.Strip(s.View()); !strings.Contains(v, "Type APPLY in capitals") || !s.TakesText() {
		t.Errorf("a wrong word: the prompt closed or said nothing:\n%s", v)
	}
	// Scrolling while the prompt is open types nothing.
	s.Update(press("down"))
	if s.confirm.Value() != "" || s.offset != 1 {
		t.Errorf("down typed %q or did not scroll (offset %d)", s.confirm.Value(), s.offset)
	}
	typeText(s, "APPLY")
	msg := msgOf(s.Update(press("enter")))
	if _, ok := msg.(hostFixAppliedMsg); !ok {
		t.Fatalf("APPLY gave %#v, not an apply", msg)
	}
	if len(f.applied) != 1 || f.applied[0].Changes != f.hostFix.Changes {
		t.Fatalf("applied %d times, or other changes than those shown", len(f.applied))
	}
	if !strings.Contains(term.String(), "sudo may ask for your password") {
		t.Errorf("the terminal was not told what happens:\n%s", term.String())
	}
	s.Update(msg)
	v := ansi.Strip(s.View())
	for _, want := range []string{"✓ Host fixes applied. Nothing was rebooted.", "Backup: /state/host-backups/fake",
		"write /etc/default/grub", "Next: reboot, then run haloforge doctor --verify",
		"haloforge doctor --rollback /state/host-backups/fake", "What the apply printed:", "Running update-grub"} {
		if !strings.Contains(v, want) {
			t.Errorf("the result lacks %q:\n%s", want, v)
		}
	}
	if s.canConfirm() || s.TakesText() {
		t.Error("the result still offers to apply")
	}
	if _, ok := msgOf(s.Update(press("esc"))).(closeScreenMsg); !ok {
		t.Error("esc does not go back")
	}
}

func TestHostFixApplyErrorsAreShown(t *testing.T) {
	f := newFakeBackend(t)
	f.hostFix = grubHostFix(t)
	f.applyErr = errors.New("sudo -- update-grub: exit status 1\nNothing more was changed. To undo what was: haloforge doctor --rollback /state/host-backups/x")
	s := newHostFixFor(t, f, 100, 40)
	s.Update(press("a"))
	typeText(s, "APPLY")
	s.Update(msgOf(s.Update(press("enter"))))
	v := ansi.Strip(s.View())
	for _, want := range []string{"✗ Applying the host fixes failed: sudo -- update-grub: exit status 1", "doctor --rollback /state/host-backups/x", "Running update-grub"} {
		if !strings.Contains(v, want) {
			t.Errorf("the failure lacks %q:\n%s", want, v)
		}
	}
}

// TestHostFixChangedSystemPlansAgain: when the system changed after the
// user looked, nothing is applied and the screen shows the changes now.
func TestHostFixChangedSystemPlansAgain(t *testing.T) {
	f := newFakeBackend(t)
	f.hostFix = grubHostFix(t)
	f.applyErr = hostfix.ErrChanged
	s := newHostFixFor(t, f, 100, 40)
	s.Update(press("a"))
	typeText(s, "APPLY")
	replan := s.Update(msgOf(s.Update(press("enter"))))
	if replan == nil {
		t.Fatal("no new plan was asked for")
	}
	s.Update(msgOf(replan))
	v := ansi.Strip(s.View())
	if f.planned != 2 || !strings.Contains(v, "The system changed since you looked") || !strings.Contains(v, "What APPLY changes now") || !s.canConfirm() {
		t.Errorf("planned %d times; view:\n%s", f.planned, v)
	}
}

// TestHostFixDemoRefuses: the demo shows the plan, takes APPLY and says
// that nothing is applied.
func TestHostFixDemoRefuses(t *testing.T) {
	f := newFakeBackend(t)
	fix := grubHostFix(t)
	fix.Changes, fix.Applicable, fix.Refusal = "", false, "demo: nothing is applied."
	f.hostFix = fix
	s := newHostFixFor(t, f, 100, 60)
	if v := ansi.Strip(s.View()); !strings.Contains(v, "Bootloader: grub") || !strings.Contains(v, "demo: nothing is applied.") {
		t.Errorf("the demo's plan:\n%s", v)
	}
	s.Update(press("a"))
	typeText(s, "APPLY")
	if cmd := s.Update(press("enter")); cmd != nil {
		t.Errorf("the demo started something: %#v", msgOf(cmd))
	}
	if len(f.applied) != 0 || s.TakesText() {
		t.Errorf("applied %d, prompt open %v", len(f.applied), s.TakesText())
	}
	if v := ansi.Strip(s.View()); !strings.Contains(v, "demo: nothing is applied.") {
		t.Errorf("no refusal:\n%s", v)
	}
}

func TestHostFixNothingToApply(t *testing.T) {
	f := newFakeBackend(t)
	fix := grubHostFix(t)
	fix.Applicable = false
	fix.Changes = "Changes to this machine (bootloader grub):\nAlready done: set ttm.pages_limit=30670848: already so in the GRUB configuration\n"
	f.hostFix = fix
	s := newHostFixFor(t, f, 100, 60)
	s.Update(press("a"))
	v := ansi.Strip(s.View())
	if s.TakesText() || !strings.Contains(v, "Nothing for haloforge to change here") || !strings.Contains(v, "Already done: set ttm.pages_limit") {
		t.Errorf("nothing to apply, prompt open %v:\n%s", s.TakesText(), v)
	}
}

func TestHostFixPlanErrorAndCancel(t *testing.T) {
	f := newFakeBackend(t) // no plan: HostFix fails
	s := newHostFixFor(t, f, 100, 20)
	if v := ansi.Strip(s.View()); !strings.Contains(v, "Planning the host fixes failed: fake: no host-fix plan") {
		t.Errorf("plan error:\n%s", v)
	}
	f.hostFix = grubHostFix(t)
	s = newHostFixFor(t, f, 100, 20)
	s.Update(press("a"))
	typeText(s, "q")
	if s.confirm.Value() != "q" {
		t.Errorf("q did not type into the prompt: %q", s.confirm.Value())
	}
	s.Update(press("esc"))
	if v := ansi.Strip(s.View()); s.TakesText() || !strings.Contains(v, "Not applied: nothing was changed.") {
		t.Errorf("esc in the prompt:\n%s", v)
	}
}

// TestHostFixHostileText: bytes from files and commands' output never
// reach the terminal as escapes.
func TestHostFixHostileText(t *testing.T) {
	f := newFakeBackend(t)
	fix := grubHostFix(t)
	fix.Plan.Boot.Reason = "GRUB \x1b]0;owned\x07 \x1b[2J"
	fix.Changes += "Already done: \x1b[31mred\x1b[0m \x9b6n\n"
	f.hostFix = fix
	s := newHostFixFor(t, f, 100, 200)
	s.Update(hostFixAppliedMsg{res: &HostFixResult{BackupDir: "/b\x1b[2J"}, output: "update-grub \x1b]52;c;AAAA\x07\n"})
	s.applied = false
	s.layout()
	views := s.View()
	s.applied = true
	s.layout()
	views += s.View()
	for _, bad := range []string{"\x1b]", "\x07", "\x1b[2J", "\x9b", "\x1b[6n"} {
		if strings.Contains(views, bad) {
			t.Errorf("a hostile sequence %q reached the screen", bad)
		}
	}
}

// TestDetectionOffersHostFixes: the detection screen offers the fixes when
// the plan has some, and a opens them in the wizard.
func TestDetectionOffersHostFixes(t *testing.T) {
	// Without a GPU (no plan, no fixes) ? lists neither a nor, on a real
	// machine without the demo, d: only live keys are listed.
	nogpu := &detectScreen{common: testCommon(), det: &Detection{Report: &detect.Report{}}}
	for _, row := range nogpu.FullHelp() {
		for _, b := range row {
			if k := b.Help().Key; k == "a" || k == "d" {
				t.Errorf("? lists %s (%s) where it does nothing", k, b.Help().Desc)
			}
		}
	}

	f := newFakeBackend(t)
	m := newSized(t, f, 100, 30)
	drive(t, m, press("a"))
	if got := m.top().Crumb(); got != "detect" || strings.Contains(plain(m), "apply these fixes") {
		t.Errorf("without host fixes: top %s\n%s", got, plain(m))
	}

	f.hostFixes = 4
	f.hostFix = grubHostFix(t)
	m = newSized(t, f, 100, 30)
	if v := plain(m); !strings.Contains(v, "a: apply these fixes (4 host changes)") {
		t.Errorf("the detection does not offer the fixes:\n%s", v)
	}
	// At 80 columns, next to the demo machine's counts, the offer goes on
	// its own line rather than being cut.
	var checks []detect.Check
	for i, st := range []detect.Status{detect.StatusOK, detect.StatusWarn, detect.StatusFail, detect.StatusSkip} {
		for range []int{13, 1, 1, 6}[i] {
			checks = append(checks, detect.Check{ID: "gpu", Status: st, Summary: "x"})
		}
	}
	ds := &detectScreen{common: testCommon(), det: &Detection{Report: &detect.Report{Checks: checks}, HostFixes: 2}}
	cv := ansi.Strip(ds.checksView(80))
	if !slices.ContainsFunc(strings.Split(cv, "\n"), func(l string) bool {
		return strings.Contains(l, "a: apply these fixes (2 host changes)") && ansi.StringWidth(l) <= 80
	}) {
		t.Errorf("at 80 columns the offer is cut:\n%s", cv)
	}
	// Only changes left to the user: a shows them, and says so.
	ds.det = &Detection{Report: &detect.Report{Checks: checks}, HostFixesByHand: 2}
	if cv := ansi.Strip(ds.checksView(80)); !strings.Contains(cv, "a: show the 2 host fixes (by hand)") || strings.Contains(cv, "apply") {
		t.Errorf("by-hand fixes offered as applied:\n%s", cv)
	}
	if a, ok := ds.hostFixKey(); !ok || a.Help().Desc != "show host fixes (by hand)" {
		t.Errorf("a's help: %q %v", a.Help().Desc, ok)
	}
	drive(t, m, press("a"))
	v := plain(m)
	if m.top().Crumb() != "host fixes" || !strings.Contains(v, "Bootloader: grub") {
		t.Fatalf("a did not open the host fixes:\n%s", v)
	}
	header, _, _ := strings.Cut(v, "\n")
	if !strings.Contains(header, "host fixes") {
		t.Errorf("header %q lacks the crumb", header)
	}
	drive(t, m, press("a"), press("q"))
	if m.confirm {
		t.Error("q in the APPLY prompt asked to quit")
	}
	drive(t, m, press("esc"), press("esc"))
	if m.top().Crumb() != "detect" {
		t.Errorf("esc, esc left %s on top", m.top().Crumb())
	}
}

func TestTailBufferIsBounded(t *testing.T) {
	var b tailBuffer
	line := strings.Repeat("x", 99) + "\n"
	for range 2000 {
		b.Write([]byte(line))
	}
	s := b.String()
	if len(s) > applyOutputKeep || !strings.HasPrefix(s, "x") || !strings.HasSuffix(s, "\n") || len(b.buf) > 2*applyOutputKeep {
		t.Errorf("tail of %d bytes (buffer %d), starts %q", len(s), len(b.buf), s[:10])
	}
}

func helpKeys(bs []key.Binding) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Help().Key)
	}
	return out
}

// The demo's machine: its bundle does not say how it boots. The screen says
// plainly the bootloader could not be identified, lists the arguments to
// set by hand with where the common bootloaders keep them (commands whole),
// and offers no APPLY: there is nothing haloforge would change.
func TestHostFixUnknownBootloaderSaysWhatToDoByHand(t *testing.T) {
	b, err := demo.Bundle()
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := hostfix.FromBundle(b)
	p, err := hostfix.Build(detect.Analyse(b), ev, hostfix.Options{Source: "demo bundle", Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Bootloader != hostfix.BootUnknown {
		t.Fatalf("the demo's bundle now names its bootloader (%s): this test needs one that does not", p.Bootloader)
	}
	f := newFakeBackend(t)
	f.hostFix = &HostFix{Plan: p, Refusal: "demo: nothing is applied."}
	for _, w := range []int{80, 120} {
		s := newHostFixFor(t, f, w, 80)
		v := ansi.Strip(s.View())
		flat := strings.Join(strings.Fields(v), " ")
		for _, want := range []string{
			"Bootloader: could not be identified",
			"haloforge cannot tell which file or tool sets the kernel command line on this machine, so it changes none. Set them by hand:",
			"1. Add to the kernel command line: ttm.pages_limit=30670848 ttm.page_pool_size=30670848",
			"sudo update-grub",
			"sudo grubby --update-kernel=ALL",
			"--args='ttm.pages_limit=30670848 ttm.page_pool_size=30670848'",
			"2. Reboot, then check with: haloforge doctor --verify",
			"Nothing for haloforge to change here.",
		} {
			if !strings.Contains(flat, want) {
				t.Fatalf("width %d: no %q:\n%s", w, want, v)
			}
		}
		if strings.Contains(v, "you type APPLY") || strings.Contains(v, "after you type APPLY") {
			t.Fatalf("width %d: APPLY offered with nothing haloforge would change:\n%s", w, v)
		}
		if s.Update(press("a")); s.TakesText() {
			t.Fatalf("width %d: a opened the APPLY question", w)
		}
	}
}
