package hostfix

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/haloforge/haloforge/detect"
)

func readBundle(t *testing.T, dir string) (*detect.Bundle, *detect.Report) {
	t.Helper()
	b, err := detect.ReadBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	return b, detect.Analyse(b)
}

// bootedParams are the parameters the machine booted with (cmdline.txt or
// dmesg's "Command line:"), without what a bootloader adds itself.
func bootedParams(b *detect.Bundle) string {
	c, ok := cmdlineOf(b)
	if !ok {
		return ""
	}
	var out []string
	for _, p := range c.Params {
		if slices.Contains([]string{"BOOT_IMAGE", "initrd", "root", "ro", "rw"}, p.Key) {
			continue
		}
		s := p.Key
		if p.Value != "" {
			s += "=" + p.Value
		}
		if strings.ContainsAny(s, "\"'$\\`") {
			continue
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// grubEvidence is a Debian machine whose GRUB configuration holds what the
// bundle's kernel booted with: the usual case, where the command line came
// from /etc/default/grub.
func grubEvidence(b *detect.Bundle) *Evidence {
	grub := strings.Replace(debianGrub, `GRUB_CMDLINE_LINUX_DEFAULT="quiet"`, `GRUB_CMDLINE_LINUX_DEFAULT="`+bootedParams(b)+`"`, 1)
	return &Evidence{Root: "/", Tools: map[string]string{"update-grub": "/usr/sbin/update-grub", "update-initramfs": "/usr/sbin/update-initramfs"},
		Markers: map[string]bool{}, Files: map[string][]byte{"/etc/default/grub": []byte(grub)}, Groups: map[string][]string{"render": nil, "video": nil},
		OSRelease: map[string]string{"ID": "debian", "VERSION_ID": "13"}}
}

func actionIDs(p *Plan) []string {
	out := []string{}
	for _, a := range p.Actions {
		out = append(out, a.ID)
	}
	return out
}

// TestPlanPerBundle is the plan for every held-out machine and every bundle
// built from the shared real-machine fixtures, on a GRUB machine that booted
// with the bundle's command line.
func TestPlanPerBundle(t *testing.T) {
	want := map[string][]string{
		"holdout/freeze-notes-70725043048": {"set:ttm.pages_limit", "set:ttm.page_pool_size", "remove:amdgpu.gttsize"},
		// amdgpu-dkms on 6.12.74: the kernel's number is not the driver's, so no stop-gap and no kernel advice.
		"holdout/rocm-6143":                   {"remove:amdgpu.gttsize", "set:amdttm.pages_limit", "set:amdttm.page_pool_size", "firmware:bios-carveout"},
		"bundles/gfx1151-amdttm-wrapped":      {"set:ttm.pages_limit", "set:ttm.page_pool_size", "remove:amdgpu.gttsize"},
		"bundles/gfx1151-carveout-96g":        {"firmware:bios-carveout"},
		"bundles/gfx1151-gttsize-deprecated":  {"remove:amdgpu.gtt_size"},
		"bundles/gfx1151-modprobe-cwsr":       {"package:kernel"},
		"demo":                                {"set:ttm.pages_limit", "set:ttm.page_pool_size"},
		"holdout/rocm-5180-zw963":             {"firmware:kernel-pair"},
		"bundles/gfx1151-fw20251125":          {"set:amdgpu.cwsr_enable", "package:kernel", "firmware:kernel-pair"},
		"bundles/gfx1151-kernel72-fw20260810": {"firmware:kernel-pair"},
	}
	skipped := map[string][]string{
		"holdout/aura-gpu-2":         {"gfx-support"},
		"holdout/aura-gpu-5":         {"gfx-support"},
		"holdout/hyprland-wiki-1041": {"gpu"},
		"holdout/vulkanxmrminer-6":   {"gfx-support"},
		"bundles/gfx1151-no-devkfd":  {"kfd-access"},
		"bundles/gfx1151-override":   {"hsa-override"},
		"bundles/gfx803":             {"gfx-support", "build-memory"},
		"bundles/gfx900-7gpus":       {"gfx-support"},
		"bundles/no-kfd":             {"gpu", "kfd-access"},
		"bundles/nvidia-only":        {"gpu"},
		"bundles/nvidia-h100-sysfs":  {"gpu", "container-engine", "distrobox"}, // no AMD GPU: no install advice, only why
	}
	dirs, _ := filepath.Glob("../testdata/holdout/*")
	more, _ := filepath.Glob("../testdata/bundles/*")
	dirs = append(append(dirs, more...), "../../tui/demo/bundle")
	if len(dirs) < 30 {
		t.Fatalf("only %d bundles", len(dirs))
	}
	for _, dir := range dirs {
		name := strings.TrimPrefix(dir, "../testdata/")
		if strings.HasSuffix(dir, "demo/bundle") {
			name = "demo"
		}
		t.Run(name, func(t *testing.T) {
			b, r := readBundle(t, dir)
			p, err := Build(r, grubEvidence(b), Options{Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			w := want[name]
			if w == nil {
				w = []string{}
			}
			if d := cmp.Diff(w, actionIDs(p)); d != "" {
				t.Errorf("actions (-want +got):\n%s", d)
			}
			var sk []string
			for _, s := range p.Skipped {
				sk = append(sk, string(s.Check))
			}
			if d := cmp.Diff(skipped[name], sk); d != "" {
				t.Errorf("skipped (-want +got):\n%s", d)
			}
			hasKernel := slices.ContainsFunc(p.Actions, func(a Action) bool { return a.Kind == KindKernelArg })
			if p.Reboot != hasKernel {
				t.Errorf("reboot = %v with kernel-arg actions %v", p.Reboot, hasKernel)
			}
			// Every plan passes its own strict reading.
			data, _ := json.Marshal(p)
			if _, err := ParsePlan(strings.NewReader(string(data))); err != nil {
				t.Errorf("the plan does not parse back: %v", err)
			}
		})
	}
}

// TestPlanValues pins the numbers and texts that matter for two machines.
func TestPlanValues(t *testing.T) {
	b, r := readBundle(t, "../../tui/demo/bundle")
	p, err := Build(r, grubEvidence(b), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Bootloader != BootGRUB || p.Boot.Tool != "update-grub" {
		t.Errorf("boot = %+v", p.Boot)
	}
	wantScript := []string{
		`sudo sed -i -e 's|^GRUB_CMDLINE_LINUX_DEFAULT="quiet splash crashkernel=2G-4G:320M,4G-32G:512M,32G-64G:1024M,64G-128G:2048M,128G-:4096M"$|GRUB_CMDLINE_LINUX_DEFAULT="quiet splash crashkernel=2G-4G:320M,4G-32G:512M,32G-64G:1024M,64G-128G:2048M,128G-:4096M ttm.pages_limit=30670848"|' /etc/default/grub`,
		`sudo sed -i -e 's|^GRUB_CMDLINE_LINUX_DEFAULT="quiet splash crashkernel=2G-4G:320M,4G-32G:512M,32G-64G:1024M,64G-128G:2048M,128G-:4096M ttm\.pages_limit=30670848"$|GRUB_CMDLINE_LINUX_DEFAULT="quiet splash crashkernel=2G-4G:320M,4G-32G:512M,32G-64G:1024M,64G-128G:2048M,128G-:4096M ttm.pages_limit=30670848 ttm.page_pool_size=30670848"|' /etc/default/grub`,
		"sudo update-grub",
	}
	if d := cmp.Diff(wantScript, p.Script); d != "" {
		t.Errorf("script (-want +got):\n%s", d)
	}
	// The system under --root: the by-hand commands edit its files and run
	// its tools inside it with chroot, as --apply does, never this machine's.
	ev := grubEvidence(b)
	ev.Root = "/mnt/sys"
	pr, err := Build(r, ev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantRoot := []string{
		strings.Replace(wantScript[0], " /etc/default/grub", " /mnt/sys/etc/default/grub", 1),
		strings.Replace(wantScript[1], " /etc/default/grub", " /mnt/sys/etc/default/grub", 1),
		"sudo chroot /mnt/sys update-grub",
	}
	if d := cmp.Diff(wantRoot, pr.Script); d != "" {
		t.Errorf("--root script (-want +got):\n%s", d)
	}
	for _, a := range pr.Actions {
		if strings.Contains(a.Command, " /etc/") {
			t.Errorf("--root action %s acts on this machine: %s", a.ID, a.Command)
		}
	}
	if p.Target.PagesLimit != 30670848 || p.Target.GTTBytes != 30670848*4096 || p.Target.TTMModule != "ttm" {
		t.Errorf("target = %+v (117 GiB on the 125.1 GiB demo machine)", p.Target)
	}
	p96, err := Build(r, grubEvidence(b), Options{GTTGiB: 96})
	if err != nil || p96.Target.PagesLimit != 25165824 {
		t.Errorf("--gtt-gib 96: %v %+v (96 GiB = 25165824 pages)", err, p96.Target)
	}
	if _, err := Build(r, grubEvidence(b), Options{GTTGiB: 124}); err == nil {
		t.Error("--gtt-gib 124 on 125.1 GiB RAM leaves the OS nothing; want an error")
	}

	b, r = readBundle(t, "../testdata/holdout/rocm-6143")
	p, _ = Build(r, grubEvidence(b), Options{})
	if p.Target.TTMModule != "amdttm" || p.Target.PagesLimit != 25000000 {
		t.Errorf("rocm-6143 (amdgpu-dkms, ttm.pages_limit=25000000): target %+v", p.Target)
	}
	if !strings.Contains(p.Files[0].Diff, `+GRUB_CMDLINE_LINUX_DEFAULT="quiet splash ttm.pages_limit=25000000 iommu=pt amdttm.pages_limit=25000000 amdttm.page_pool_size=25000000"`) {
		t.Errorf("diff:\n%s", p.Files[0].Diff)
	}
}

// TestPlanPerBootloader pins the exact commands for each bootloader,
// including those that cannot be installed here (grubby, rpm-ostree,
// kernelstub, NixOS): they are tested as text.
func TestPlanPerBootloader(t *testing.T) {
	b, r := readBundle(t, "../testdata/holdout/rocm-6143")
	booted := bootedParams(b)
	entry := "title Fedora Linux (6.12.74)\nversion 6.12.74\nlinux /vmlinuz-6.12.74\noptions root=UUID=1 ro " + booted + "\n"
	tests := []struct {
		name    string
		ev      *Evidence
		boot    string
		script  []string
		command map[string]string // action id -> command
	}{
		{
			name: "grubby", boot: BootGrubby,
			ev:     &Evidence{Tools: map[string]string{"grubby": "/usr/sbin/grubby"}, Files: map[string][]byte{"/boot/loader/entries/abc-6.12.74.conf": []byte(entry)}},
			script: []string{`sudo grubby --update-kernel=ALL --remove-args="amdgpu.gttsize" --args="amdttm.pages_limit=25000000 amdttm.page_pool_size=25000000"`},
			command: map[string]string{
				"remove:amdgpu.gttsize":  `sudo grubby --update-kernel=ALL --remove-args="amdgpu.gttsize"`,
				"set:amdttm.pages_limit": `sudo grubby --update-kernel=ALL --args="amdttm.pages_limit=25000000"`,
			},
		},
		{
			name: "rpm-ostree", boot: BootRPMOstree,
			ev:     &Evidence{Tools: map[string]string{"rpm-ostree": "/usr/bin/rpm-ostree"}, Markers: map[string]bool{"/run/ostree-booted": true}},
			script: []string{"sudo rpm-ostree kargs --delete=amdgpu.gttsize=98304 --append=amdttm.pages_limit=25000000 --append=amdttm.page_pool_size=25000000"},
			command: map[string]string{
				"remove:amdgpu.gttsize":     "sudo rpm-ostree kargs --delete=amdgpu.gttsize=98304",
				"set:amdttm.page_pool_size": "sudo rpm-ostree kargs --append=amdttm.page_pool_size=25000000",
			},
		},
		{
			name: "nixos", boot: BootNixOS,
			ev: &Evidence{OSRelease: map[string]string{"ID": "nixos"}},
			script: []string{"# in /etc/nixos/configuration.nix (or your flake):",
				`boot.kernelParams = [ "amdttm.pages_limit=25000000" "amdttm.page_pool_size=25000000" ];`,
				`# and remove "amdgpu.gttsize=98304" from boot.kernelParams`, "sudo nixos-rebuild boot"},
			command: map[string]string{"set:amdttm.pages_limit": `boot.kernelParams = [ "amdttm.pages_limit=25000000" ];`},
		},
		{
			name: "kernelstub", boot: BootSystemdBoot,
			ev: &Evidence{Tools: map[string]string{"kernelstub": "/usr/bin/kernelstub"}},
			script: []string{"sudo kernelstub -d amdgpu.gttsize=98304",
				"sudo kernelstub -a amdttm.pages_limit=25000000", "sudo kernelstub -a amdttm.page_pool_size=25000000"},
		},
		{
			name: "systemd-boot with kernel-install", boot: BootSystemdBoot,
			ev: &Evidence{Tools: map[string]string{"kernel-install": "/usr/bin/kernel-install"},
				Markers: map[string]bool{"/efi/loader/loader.conf": true},
				Kernels: []Kernel{{"6.12.74+deb13+1-amd64", "/boot/vmlinuz-6.12.74+deb13+1-amd64"}},
				Files: map[string][]byte{"/etc/kernel/cmdline": []byte("root=UUID=1 ro " + booted + "\n"),
					"/efi/loader/entries/abc-6.12.74+deb13+1-amd64.conf": []byte("version 6.12.74+deb13+1-amd64\noptions x\n")}},
			script: []string{
				`sudo sed -i -e 's|^root=UUID=1 ro quiet splash amdgpu\.gttsize=98304 ttm\.pages_limit=25000000 iommu=pt$|root=UUID=1 ro quiet splash ttm.pages_limit=25000000 iommu=pt|' /etc/kernel/cmdline`,
				`sudo sed -i -e 's|^root=UUID=1 ro quiet splash ttm\.pages_limit=25000000 iommu=pt$|root=UUID=1 ro quiet splash ttm.pages_limit=25000000 iommu=pt amdttm.pages_limit=25000000|' /etc/kernel/cmdline`,
				`sudo sed -i -e 's|^root=UUID=1 ro quiet splash ttm\.pages_limit=25000000 iommu=pt amdttm\.pages_limit=25000000$|root=UUID=1 ro quiet splash ttm.pages_limit=25000000 iommu=pt amdttm.pages_limit=25000000 amdttm.page_pool_size=25000000|' /etc/kernel/cmdline`,
				"sudo kernel-install add 6.12.74+deb13+1-amd64 /boot/vmlinuz-6.12.74+deb13+1-amd64",
			},
		},
		{
			name: "unknown", boot: BootUnknown,
			ev: &Evidence{},
			script: []string{"# add to the kernel command line with your bootloader's tool: amdttm.pages_limit=25000000 amdttm.page_pool_size=25000000",
				"# remove from the kernel command line: amdgpu.gttsize=98304"},
			command: map[string]string{"set:amdttm.pages_limit": "amdttm.pages_limit=25000000", "remove:amdgpu.gttsize": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.ev.Tools == nil {
				tt.ev.Tools = map[string]string{}
			}
			if tt.ev.Markers == nil {
				tt.ev.Markers = map[string]bool{}
			}
			p, err := Build(r, tt.ev, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Bootloader != tt.boot {
				t.Fatalf("bootloader %s (%s), want %s", p.Bootloader, p.Boot.Reason, tt.boot)
			}
			if d := cmp.Diff(tt.script, p.Script); d != "" {
				t.Errorf("script (-want +got):\n%s", d)
			}
			for id, c := range tt.command {
				i := slices.IndexFunc(p.Actions, func(a Action) bool { return a.ID == id })
				if i < 0 {
					t.Errorf("no action %s", id)
					continue
				}
				if p.Actions[i].Command != c {
					t.Errorf("%s command = %q, want %q", id, p.Actions[i].Command, c)
				}
			}
		})
	}
}

func TestPlanGroupsAndModprobe(t *testing.T) {
	b, r := readBundle(t, "../../tui/demo/bundle")
	user := "alice"
	r.Host.User, r.Host.Groups = &user, []string{"alice", "video"}
	flagGroups(r)
	ev := grubEvidence(b)
	ev.Groups = map[string][]string{"render": {}, "video": {"alice"}}
	ev.Files["/etc/modprobe.d/strix.conf"] = []byte("# Maximize GTT for LLM usage on 128GB UMA system\noptions amdgpu gttsize=120000\noptions ttm pages_limit=31457280\noptions ttm page_pool_size=15728640\n")
	p, err := Build(r, ev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"set:ttm.pages_limit", "set:ttm.page_pool_size",
		"modprobe:/etc/modprobe.d/strix.conf:amdgpu.gttsize", "modprobe:/etc/modprobe.d/strix.conf:ttm.pages_limit",
		"modprobe:/etc/modprobe.d/strix.conf:ttm.page_pool_size", "group:alice"}
	if d := cmp.Diff(want, actionIDs(p)); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
	g := p.Actions[len(p.Actions)-1]
	if g.Command != "sudo usermod -aG render alice" || !slices.Equal(p.Target.Groups, []string{"render", "video"}) {
		t.Errorf("group action %q, target %v (alice is in video already)", g.Command, p.Target.Groups)
	}
	if !slices.Contains(p.Script, "sudo update-initramfs -u -k all") {
		t.Errorf("modprobe.d edits rebuild the initramfs: %q", p.Script)
	}
	if !slices.Contains(p.Script, `sudo sed -i -e '\|^options amdgpu gttsize=120000$|d' /etc/modprobe.d/strix.conf`) {
		t.Errorf("script: %q", p.Script)
	}
}

// flagGroups makes the report's render-groups check warn, with the remedy
// the check gives a user outside render and video.
func flagGroups(r *detect.Report) {
	for i := range r.Checks {
		if r.Checks[i].ID == detect.CheckRenderGroups {
			r.Checks[i].Status = detect.StatusWarn
			r.Checks[i].Remedy = &detect.Remedy{Groups: []string{"render", "video"}}
		}
	}
}

// A check with no host change is explained in the plan as the check's
// remedy explains it: one place (detect) knows why, never words of the plan's own.
func TestSkippedChecksUseTheRemedysReason(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		id    detect.CheckID
		want  string
	}{
		{"driver not loaded", map[string]string{"dev.txt": "/dev/kfd missing\n"}, detect.CheckKFDAccess, "the amdgpu driver is not loaded"},
		{"nodes not mapped", map[string]string{"rocminfo.txt": "ROCk module is loaded\nUnable to open /dev/kfd read-write: No such file or directory\n"}, detect.CheckKFDAccess, "not mapped"},
		{"environment", map[string]string{"sys/class/kfd/kfd/topology/nodes/1/properties": "gfx_target_version 110501\nsimd_count 80\nsimd_per_cu 2\n", "env.txt": "HSA_OVERRIDE_GFX_VERSION=11.0.0\n"}, detect.CheckHSAOverride, "an environment variable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := detect.NewBundle()
			for k, v := range tc.files {
				if err := b.Set(k, []byte(v)); err != nil {
					t.Fatal(err)
				}
			}
			r := detect.Analyse(b)
			c, _ := r.Check(tc.id)
			p, err := Build(r, &Evidence{}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(p.Skipped, func(s Skipped) bool { return s.Check == tc.id })
			if i < 0 || c.Remedy == nil || p.Skipped[i].Reason != c.Remedy.Manual || !strings.Contains(p.Skipped[i].Reason, tc.want) {
				t.Errorf("skipped = %+v, want %s's remedy reason (%q)", p.Skipped, tc.id, tc.want)
			}
		})
	}
}
