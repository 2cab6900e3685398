package hostfix

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeRoot makes a system under a temporary directory: files by path.
func writeRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.Contains(p, "/sbin/") {
			mode = 0o755
		}
		if err := os.WriteFile(full, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// Every group of facts a plan is made from makes it stale when it changes,
// and names itself; another machine ID or the wrong kind of system is
// refused before the facts are compared. All are ErrWrongMachine (exit 2).
func TestCheckMachine(t *testing.T) {
	base := map[string]string{
		"/etc/machine-id":                             "0123456789abcdef0123456789abcdef\n",
		"/etc/hostname":                               "box-a\n",
		"/etc/default/grub":                           "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n",
		"/etc/group":                                  "render:x:105:alice\nvideo:x:44:\n",
		"/usr/sbin/update-grub":                       "#!/bin/sh\n",
		"/boot/vmlinuz-6.18.0-1-amd64":                "kernel",
		"/usr/lib/modules/6.18.0-1-amd64/modules.dep": "",
		"/proc/cmdline":                               "BOOT_IMAGE=/vmlinuz root=/dev/x quiet\n",
	}
	for _, tc := range []struct {
		name   string
		change map[string]string // files changed after the plan was made
		want   string            // "" passes
		stale  bool
	}{
		{"unchanged", nil, "", false},
		{"boot file edited", map[string]string{"/etc/default/grub": "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\n"}, "the plan is stale: boot files changed", true},
		{"modprobe.d file added", map[string]string{"/etc/modprobe.d/x.conf": "options amdgpu gttsize=1\n"}, "boot files changed", true},
		{"kernel installed", map[string]string{"/boot/vmlinuz-6.19.0-1-amd64": "k", "/usr/lib/modules/6.19.0-1-amd64/modules.dep": ""}, "installed kernels changed", true},
		{"user added to video", map[string]string{"/etc/group": "render:x:105:alice\nvideo:x:44:alice\n"}, "groups changed", true},
		{"another group changed", map[string]string{"/etc/group": "render:x:105:alice\nvideo:x:44:\nwheel:x:10:bob\n"}, "", false},
		{"rebooted with other arguments", map[string]string{"/proc/cmdline": "BOOT_IMAGE=/vmlinuz root=/dev/x quiet ttm.pages_limit=1\n"}, "kernel command line changed", true},
		{"bootloader tool installed", map[string]string{"/usr/sbin/grubby": "#!/bin/sh\n"}, "bootloader tools changed", true},
		{"two at once", map[string]string{"/etc/default/grub": "x\n", "/proc/cmdline": "y\n"}, "boot files and kernel command line changed", true},
		{"another machine", map[string]string{"/etc/machine-id": "fedcba9876543210fedcba9876543210\n", "/etc/hostname": "box-b\n"}, "made on another machine (box-a); the system under /", false},
		{"machine ID gone", map[string]string{"/etc/machine-id": "\n"}, "made on another machine", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeRoot(t, base)
			ev, err := FromRoot(root)
			if err != nil {
				t.Fatal(err)
			}
			p := &Plan{Source: "the system under " + root, Machine: machineOf(ev, false)}
			if p.Machine.Target != TargetRoot || p.Machine.ID == "" || p.Machine.Hostname != "box-a" || len(p.Machine.Facts) != len(factGroups) {
				t.Fatalf("machine %+v", p.Machine)
			}
			for path, content := range tc.change {
				full := filepath.Join(root, path)
				_ = os.MkdirAll(filepath.Dir(full), 0o755)
				if err := os.WriteFile(full, []byte(content), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			err = CheckMachine(p, root)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want %q", err, tc.want)
			case err != nil && (!errors.Is(err, ErrWrongMachine) || !IsUsage(err) || errors.Is(err, ErrStalePlan) != tc.stale):
				t.Fatalf("err %v: wrong kind (stale %v)", err, tc.stale)
			}
		})
	}
}

// Where the facts come from decides where a plan may go.
func TestCheckMachineTargets(t *testing.T) {
	root := writeRoot(t, map[string]string{"/etc/hostname": "box-a\n"})
	ev, err := FromRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		m             Machine
		applyTo, want string
	}{
		{"no machine recorded", Machine{}, root, "the plan records no machine"},
		{"bundle", Machine{Target: TargetBundle}, root, "made from a bundle"},
		{"bundle facts on the live boot files", machineOf(&Evidence{Root: "/"}, true), "/", "made from a bundle"},
		{"bundle evidence", machineOf(&Evidence{}, false), root, "made from a bundle"},
		{"root plan on the machine", machineOf(ev, false), "/", "not for this machine: apply it with --root " + root},
		{"host plan on a root", Machine{Target: TargetHost, Hostname: "h"}, root, "made for the machine itself (h), not for the system under " + root},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckMachine(&Plan{Source: "src", Machine: tc.m}, tc.applyTo)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrWrongMachine) || errors.Is(err, ErrStalePlan) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// Files only root may read (grub.cfg, boot entries on an ESP) do not count:
// a plan made as the user and applied as root is not stale for them.
func TestFingerprintIgnoresRootOnlyOutputs(t *testing.T) {
	ev := &Evidence{Root: "/r", Files: map[string][]byte{"/etc/default/grub": []byte("x")}}
	asRoot := &Evidence{Root: "/r", Files: map[string][]byte{"/etc/default/grub": []byte("x"),
		"/boot/grub2/grub.cfg": []byte("menuentry"), "/efi/loader/entries/a.conf": []byte("options quiet")}}
	if a, b := fingerprint(ev)["boot files"], fingerprint(asRoot)["boot files"]; a != b {
		t.Errorf("root-only outputs changed the fingerprint: %s vs %s", a, b)
	}
}
