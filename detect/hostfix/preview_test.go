package hostfix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPreviewIsWhatApplyShows: the preview is, to the byte, the text Apply
// shows before it asks, and it changes nothing.
func TestPreviewIsWhatApplyShows(t *testing.T) {
	ctx := context.Background()
	root := grubRoot(t)
	p := grubPlan(t, root)
	before := treeSums(t, root)
	tools := &simulatedTools{root: root}
	h := &Host{Root: root, Runner: tools}
	text, changes, err := Preview(ctx, p, h)
	if err != nil || !changes {
		t.Fatalf("preview: changes %v, err %v", changes, err)
	}
	for _, want := range []string{"--- /etc/default/grub", "+GRUB_CMDLINE_LINUX_DEFAULT=", "Commands, as root:", "usermod -aG render,video alice"} {
		if !strings.Contains(text, want) {
			t.Errorf("preview lacks %q:\n%s", want, text)
		}
	}
	if len(tools.ran) != 0 || fmt.Sprint(treeSums(t, root)) != fmt.Sprint(before) {
		t.Errorf("the preview ran %q or changed files", tools.ran)
	}
	var out bytes.Buffer
	h.Out = &out
	_, err = Apply(ctx, p, h, ApplyOptions{StateDir: t.TempDir(), Confirm: func(string) error {
		if out.String() != text {
			t.Errorf("Apply showed something else than the preview:\n%s\nwant:\n%s", out.String(), text)
		}
		return ErrDeclined
	}})
	if !errors.Is(err, ErrDeclined) {
		t.Errorf("err = %v", err)
	}
}

// TestPreviewNothingToChange: a system that already matches the plan has
// nothing to confirm.
func TestPreviewNothingToChange(t *testing.T) {
	ctx := context.Background()
	root := grubRoot(t)
	p := grubPlan(t, root)
	h := &Host{Root: root, Runner: &simulatedTools{root: root}}
	if _, err := Apply(ctx, p, h, ApplyOptions{StateDir: t.TempDir(), Confirm: confirmWith("APPLY")}); err != nil {
		t.Fatal(err)
	}
	text, changes, err := Preview(ctx, p, h)
	if err != nil || changes {
		t.Errorf("after applying: changes %v, err %v\n%s", changes, err, text)
	}
}

// TestApplyConfirmed: a preview confirmed elsewhere applies without asking;
// once the system changed in between, nothing is changed and nothing asked.
func TestApplyConfirmed(t *testing.T) {
	ctx := context.Background()
	root := grubRoot(t)
	p := grubPlan(t, root)
	h := &Host{Root: root, Runner: &simulatedTools{root: root}}
	text, _, err := Preview(ctx, p, h)
	if err != nil {
		t.Fatal(err)
	}
	asked := func(string) error { t.Error("Apply asked although the changes were confirmed"); return ErrDeclined }

	// Someone edits the kernel command line after the preview was shown.
	grub := filepath.Join(root, "etc/default/grub")
	data, _ := os.ReadFile(grub)
	data = bytes.Replace(data, []byte(`DEFAULT="quiet"`), []byte(`DEFAULT="quiet splash"`), 1)
	if err := os.WriteFile(grub, data, 0o644); err != nil {
		t.Fatal(err)
	}
	edited := treeSums(t, root)
	state := t.TempDir()
	_, err = Apply(ctx, p, h, ApplyOptions{StateDir: state, Confirmed: text, Confirm: asked})
	if !errors.Is(err, ErrChanged) || IsUsage(err) {
		t.Errorf("changed system: err = %v", err)
	}
	if fmt.Sprint(treeSums(t, root)) != fmt.Sprint(edited) {
		t.Error("files changed although the changes were not the confirmed ones")
	}
	if _, err := os.Stat(backupsDir(state)); err == nil {
		t.Error("a refused apply made a backup")
	}

	// A fresh preview, confirmed, applies.
	text, _, err = Preview(ctx, p, h)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := Apply(ctx, p, h, ApplyOptions{StateDir: state, Confirmed: text, Confirm: asked})
	if err != nil || dir == "" {
		t.Fatalf("confirmed apply: %q, %v", dir, err)
	}
	if cfg, _ := os.ReadFile(grub); !strings.Contains(string(cfg), "ttm.pages_limit=") {
		t.Errorf("/etc/default/grub not changed:\n%s", cfg)
	}
}

// TestApplyWithoutConfirm: no way to confirm is no terminal, never a yes.
func TestApplyWithoutConfirm(t *testing.T) {
	root := grubRoot(t)
	_, err := Apply(context.Background(), grubPlan(t, root), &Host{Root: root, Runner: &simulatedTools{root: root}}, ApplyOptions{StateDir: t.TempDir()})
	if !errors.Is(err, ErrNoTerminal) {
		t.Errorf("err = %v", err)
	}
}

// TestHostileFileTextNeverReachesTheTerminal: a configuration file is text
// from outside. A right-to-left override, a C1 CSI and an escape sequence
// in /etc/default/grub (on the line haloforge changes and around it) reach
// neither the plan, nor the preview, nor what Apply shows: the diffs go
// through the one sanitiser.
func TestHostileFileTextNeverReachesTheTerminal(t *testing.T) {
	ctx := context.Background()
	root := grubRoot(t)
	grub := filepath.Join(root, "etc/default/grub")
	data, _ := os.ReadFile(grub)
	data = bytes.Replace(data, []byte(`GRUB_CMDLINE_LINUX_DEFAULT="quiet"`),
		[]byte("# \u202eevil\u009b2J \x1b]0;title\x07comment\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\" # \u202e\u2066x\u009b"), 1)
	if err := os.WriteFile(grub, data, 0o644); err != nil {
		t.Fatal(err)
	}
	p := grubPlan(t, root)
	h := &Host{Root: root, Runner: &simulatedTools{root: root}}
	preview, _, err := Preview(ctx, p, h)
	if err != nil {
		t.Fatal(err)
	}
	var plan, applied bytes.Buffer
	if err := p.WriteText(&plan); err != nil {
		t.Fatal(err)
	}
	h.Out = &applied
	_, err = Apply(ctx, p, h, ApplyOptions{StateDir: t.TempDir(), Confirm: func(string) error { return ErrDeclined }})
	if !errors.Is(err, ErrDeclined) {
		t.Fatalf("apply: %v", err)
	}
	for name, out := range map[string]string{"preview": preview, "plan": plan.String(), "apply": applied.String()} {
		if !strings.Contains(out, "evil") && name != "plan" {
			t.Errorf("%s does not show the changed file's lines:\n%s", name, out)
		}
		if i := strings.IndexFunc(out, func(r rune) bool {
			return r == 0x1b || (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
		}); i >= 0 {
			t.Errorf("%s: %q reaches the terminal: %q", name, []rune(out[i:])[0], out[max(0, i-40):min(len(out), i+40)])
		}
	}
}
