package session

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/detect/hostfix"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/tui/demo"
)

// strixConf is a real modprobe.d file (lhl/strix-halo-testing llm-bench
// README, strix-modprobe-conf-1): the deprecated GTT option the plan removes.
const strixConf = "options amdgpu gttsize=120000\noptions ttm pages_limit=31457280\noptions ttm page_pool_size=15728640\n"

// hostEngine is the wizard's engine on the demo machine's facts, planning
// for and applying to a system installed under a temp root, with the real
// runner: the apply writes real files and a real backup.
func hostEngine(t *testing.T) (*Engine, string) {
	t.Helper()
	root := t.TempDir()
	conf := filepath.Join(root, "etc/modprobe.d/strix.conf")
	if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte(strixConf), 0o644); err != nil {
		t.Fatal(err)
	}
	e := &Engine{Workspace: steps.Workspace{StateDir: t.TempDir()}, HostRoot: root, Source: "the system under " + root, Version: "test",
		Detector: func(context.Context) (*detect.Report, error) {
			b, err := demo.Bundle()
			if err != nil {
				return nil, err
			}
			return detect.Analyse(b), nil
		}}
	return e, conf
}

func TestHostFixAppliesOnARoot(t *testing.T) {
	ctx := context.Background()
	e, conf := hostEngine(t)
	if _, err := e.HostFix(ctx); err == nil {
		t.Error("a host-fix plan before any detection")
	}
	d, err := e.Detect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.HostFixes == 0 {
		t.Fatal("the detection offers no host fixes")
	}
	fix, err := e.HostFix(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !fix.Applicable || fix.Refusal != "" || !strings.Contains(fix.Changes, "-options amdgpu gttsize=120000") {
		t.Fatalf("fix: applicable %v refusal %q changes:\n%s\npreview error: %s", fix.Applicable, fix.Refusal, fix.Changes, fix.PreviewErr)
	}
	var out bytes.Buffer
	e.Flags = []string{"--state-dir", e.StateDir}
	res, err := e.ApplyHostFix(ctx, fix, &out)
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, out.String())
	}
	// what it prints runs as printed: on the same system, the same backups
	if want := "To undo: haloforge doctor --rollback " + res.BackupDir + " --root " + e.HostRoot + " --state-dir " + e.StateDir; !strings.Contains(out.String(), want) {
		t.Errorf("the apply's undo lacks the flags, want %q:\n%s", want, out.String())
	}
	if !strings.HasPrefix(res.BackupDir, filepath.Join(e.StateDir, "host-backups")) || !slices.Contains(res.Commands, "write /etc/modprobe.d/strix.conf") {
		t.Errorf("result %+v", res)
	}
	if !strings.HasPrefix(out.String(), fix.Changes) || !strings.Contains(out.String(), "Nothing was rebooted") {
		t.Errorf("the apply's output:\n%s", out.String())
	}
	if data, _ := os.ReadFile(conf); strings.Contains(string(data), "gttsize") {
		t.Errorf("%s still sets gttsize:\n%s", conf, data)
	}

	// Applied: nothing is left to apply.
	again, err := e.HostFix(ctx)
	if err != nil || again.Applicable {
		t.Errorf("after applying: applicable %v, err %v\n%s", again.Applicable, err, again.Changes)
	}
	if _, err := e.ApplyHostFix(ctx, again, &out); err == nil {
		t.Error("applying nothing confirmed did not refuse")
	}

	// The backup is real: rolling it back restores the file byte for byte.
	h := &hostfix.Host{Root: e.HostRoot, Runner: hostfix.NewExecRunner()}
	if _, err := hostfix.Rollback(ctx, res.BackupDir, h, hostfix.ApplyOptions{StateDir: e.StateDir, Confirm: func(string) error { return nil }}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(conf); string(data) != strixConf {
		t.Errorf("after the rollback: %q", data)
	}
}

// TestHostFixRefusesChangedSystem: the apply makes the confirmed changes
// or none.
func TestHostFixRefusesChangedSystem(t *testing.T) {
	ctx := context.Background()
	e, conf := hostEngine(t)
	if _, err := e.Detect(ctx); err != nil {
		t.Fatal(err)
	}
	fix, err := e.HostFix(ctx)
	if err != nil || !fix.Applicable {
		t.Fatalf("%v %+v", err, fix)
	}
	edited := "options amdgpu gttsize=64000\n"
	if err := os.WriteFile(conf, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = e.ApplyHostFix(ctx, fix, &bytes.Buffer{})
	if !errors.Is(err, hostfix.ErrChanged) {
		t.Errorf("err = %v, want ErrChanged", err)
	}
	if data, _ := os.ReadFile(conf); string(data) != edited {
		t.Errorf("changed although not confirmed: %q", data)
	}
}

func TestDemoHostFixShowsAndRefuses(t *testing.T) {
	ctx := context.Background()
	e := newTestDemo(t)
	d, err := e.Detect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fix, err := e.HostFix(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The demo's bundle does not say how it boots: haloforge would place
	// no kernel argument, so the offer is to show them, not to apply them.
	if d.HostFixes != 0 || d.HostFixesByHand == 0 {
		t.Errorf("demo: %d fixes applied, %d by hand; want 0 and some", d.HostFixes, d.HostFixesByHand)
	}
	if fix.Refusal != DemoHostRefusal || fix.Plan.Bootloader != hostfix.BootUnknown || len(fix.Plan.Actions) == 0 {
		t.Errorf("demo: refusal %q, bootloader %s, %d actions", fix.Refusal, fix.Plan.Bootloader, len(fix.Plan.Actions))
	}
	if _, err := e.ApplyHostFix(ctx, fix, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "demo: nothing is applied") {
		t.Errorf("the demo applied: %v", err)
	}
}

// TestPreviewRunnerNeverAsksForRoot: the preview runs while the wizard owns
// the terminal, so what needs sudo is refused, not asked for.
func TestPreviewRunnerNeverAsksForRoot(t *testing.T) {
	r := previewRunner{hostfix.ExecRunner{IsRoot: false}}
	err := r.Run(context.Background(), []string{"cat", "--", "/boot/grub/grub.cfg"}, true, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "doctor --apply") {
		t.Errorf("a root read: %v", err)
	}
	var out bytes.Buffer
	if err := r.Run(context.Background(), []string{"echo", "kargs"}, false, &out); err != nil || out.String() != "kargs\n" {
		t.Errorf("a plain command: %v %q", err, out.String())
	}
	if got := r.Argv([]string{"update-grub"}, true); !slices.Equal(got, []string{"sudo", "--", "update-grub"}) {
		t.Errorf("shown as %q, not as the apply runs it", got)
	}
}
