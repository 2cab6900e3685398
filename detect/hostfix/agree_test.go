package hostfix

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/haloforge/haloforge/detect"
)

// agreeBundles are every real machine's bundle the tests hold.
func agreeBundles(t *testing.T) []string {
	t.Helper()
	dirs, _ := filepath.Glob("../testdata/holdout/*")
	more, _ := filepath.Glob("../testdata/bundles/*")
	dirs = append(append(dirs, more...), "../../tui/demo/bundle")
	if len(dirs) < 30 {
		t.Fatalf("only %d bundles", len(dirs))
	}
	return dirs
}

// TestDoctorAndPlanAgree runs doctor and --plan over every bundle and
// compares them: each warning or failure is in the plan as the changes its
// remedy names (every kernel argument, group and step) or as a skip with the
// remedy's own reason; each change the plan makes answers a flagged check
// whose remedy names it; and doctor's fix prints every argument the plan sets.
func TestDoctorAndPlanAgree(t *testing.T) {
	for _, dir := range agreeBundles(t) {
		name := strings.TrimPrefix(strings.TrimPrefix(dir, "../testdata/"), "../../tui/")
		t.Run(name, func(t *testing.T) {
			b, r := readBundle(t, dir)
			p, err := Build(r, grubEvidence(b), Options{Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range p.Notes {
				if strings.Contains(n, "does not place") {
					t.Errorf("a remedy asks for an argument the plan refuses: %s", n)
				}
			}
			byCheck := map[detect.CheckID]detect.Check{}
			for _, c := range r.Checks {
				byCheck[c.ID] = c
			}
			for _, c := range r.Checks {
				if !c.Flagged() {
					continue
				}
				if status(r, detect.CheckGPU) == detect.StatusFail {
					if !slices.ContainsFunc(p.Skipped, func(s Skipped) bool { return s.Check == c.ID && s.Reason != "" }) {
						t.Errorf("no AMD GPU: %s must be skipped with a reason: %+v", c.ID, p.Skipped)
					}
					continue
				}
				skipped := slices.ContainsFunc(p.Skipped, func(s Skipped) bool { return s.Check == c.ID && s.Reason == c.Remedy.Manual })
				if !c.Remedy.Changes() || c.Remedy.Manual != "" {
					if !skipped && !slices.ContainsFunc(p.Skipped, func(s Skipped) bool { return s.Check == c.ID }) {
						t.Errorf("%s (%s) has no host change, and the plan does not say why", c.ID, c.Status)
					} else if !skipped {
						t.Errorf("%s: the plan's reason is not the remedy's %q: %+v", c.ID, c.Remedy.Manual, p.Skipped)
					}
					continue
				}
				for _, a := range c.Remedy.Args {
					if a.Arg.Op == OpRemove && slices.ContainsFunc(c.Remedy.Args, func(o detect.ArgChange) bool { return o.Arg.Op == OpSet && o.Arg.Key == a.Arg.Key }) {
						continue // replaced by the new value
					}
					if !slices.ContainsFunc(p.Target.Args, func(t KernelArg) bool { return t.Key == a.Arg.Key && t.Op == a.Arg.Op }) {
						t.Errorf("%s asks for %s; the plan's target lacks it: %v", c.ID, a.Arg, p.Target.Args)
					}
				}
				for _, s := range c.Remedy.Steps {
					if !slices.ContainsFunc(p.Actions, func(a Action) bool { return a.ID == s.ID && a.Advice }) {
						t.Errorf("%s asks for step %s; the plan lacks it", c.ID, s.ID)
					}
				}
				if len(c.Remedy.Groups) > 0 && p.Target.User == "" && !slices.ContainsFunc(p.Notes, func(n string) bool { return strings.Contains(n, "groups is unknown") }) {
					t.Errorf("%s asks for groups %v; the plan neither adds them nor says why", c.ID, c.Remedy.Groups)
				}
			}
			for _, a := range p.Actions {
				c, ok := byCheck[a.Check]
				if !ok || !c.Flagged() {
					t.Errorf("action %s answers %s, which doctor does not flag", a.ID, a.Check)
					continue
				}
				switch a.Kind {
				case KindKernelArg:
					named := slices.ContainsFunc(c.Remedy.Args, func(x detect.ArgChange) bool { return x.Arg.Key == a.Arg.Key && x.Arg.Op == a.Arg.Op })
					if !named && !strings.Contains(a.Change, "in the boot configuration for the next boot") {
						t.Errorf("action %s is not in %s's remedy", a.ID, c.ID)
					}
					if a.Arg.Op == OpSet && !strings.Contains(c.Fix, a.Arg.String()) {
						t.Errorf("the plan sets %s; doctor's fix for %s does not print it:\n%s", a.Arg, c.ID, c.Fix)
					}
				case KindPackage, KindFirmware:
					if !slices.ContainsFunc(c.Remedy.Steps, func(s detect.Step) bool { return s.ID == a.ID }) {
						t.Errorf("advice %s is not a step of %s's remedy", a.ID, c.ID)
					}
				case KindGroup:
					for _, g := range a.Group.Groups {
						if !slices.Contains(c.Remedy.Groups, g) {
							t.Errorf("group %s is not in %s's remedy", g, c.ID)
						}
					}
				}
			}
		})
	}
}

// TestBundleVerdictsAndPlanArgs: the held bundles and those assembled from
// real machine snapshots (Ubuntu HWE and OEM kernels, the 6.12 LTS,
// amdgpu-dkms, CWSR off through modprobe.d) as doctor's verdicts on the
// kernel and CWSR, and the kernel arguments --plan sets or removes: a kernel
// with the fixes, or one doctor cannot judge, gets no stop-gap.
func TestBundleVerdictsAndPlanArgs(t *testing.T) {
	tests := []struct {
		dir          string
		kernel, cwsr detect.Status
		args         []string // the plan's target, in order
		kernelAdvice bool     // the plan advises a new kernel
	}{
		{"bundles/gfx1151-hwe-mint", detect.StatusOK, detect.StatusOK, nil, false},
		{"bundles/gfx1151-no-devkfd", detect.StatusOK, detect.StatusOK, nil, false},
		{"bundles/gfx1151-oem-1018", detect.StatusOK, detect.StatusOK, nil, false},
		{"bundles/gfx1151-oem-6.17", detect.StatusSkip, detect.StatusSkip, nil, false},
		{"bundles/gfx1151-lts-6.12.74", detect.StatusOK, detect.StatusOK, nil, false},
		{"holdout/rocm-6143", detect.StatusSkip, detect.StatusSkip,
			[]string{"remove amdgpu.gttsize=98304", "set amdttm.pages_limit=25000000", "set amdttm.page_pool_size=25000000"}, false},
		{"bundles/gfx1151-modprobe-cwsr", detect.StatusWarn, detect.StatusOK, nil, true},
		{"bundles/gfx1151-fw20251125", detect.StatusWarn, detect.StatusWarn, []string{"set amdgpu.cwsr_enable=0"}, true},
		{"bundles/gfx1151-kernel72-fw20260810", detect.StatusOK, detect.StatusOK, nil, false},
		{"bundles/gfx1151-sysfs-transcript", detect.StatusSkip, detect.StatusSkip, []string{"remove amdgpu.gttsize"}, false},
		{"../../tui/demo/bundle", detect.StatusOK, detect.StatusOK, []string{"set ttm.pages_limit=30670848", "set ttm.page_pool_size=30670848"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			dir := tc.dir
			if !strings.HasPrefix(dir, "../") {
				dir = "../testdata/" + dir
			}
			b, r := readBundle(t, dir)
			for id, want := range map[detect.CheckID]detect.Status{detect.CheckKernelVersion: tc.kernel, detect.CheckCWSR: tc.cwsr} {
				if c, _ := r.Check(id); c.Status != want {
					t.Errorf("%s = %s (%s), want %s", id, c.Status, c.Summary, want)
				}
			}
			ev := grubEvidence(b)
			ev.OSRelease = map[string]string{"ID": "ubuntu", "ID_LIKE": "debian", "VERSION_ID": "24.04"}
			p, err := Build(r, ev, Options{Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range p.Target.Args {
				got = append(got, a.Op+" "+a.String())
			}
			if strings.Join(got, ", ") != strings.Join(tc.args, ", ") {
				t.Errorf("plan's kernel arguments %q, want %q", got, tc.args)
			}
			i := slices.IndexFunc(p.Actions, func(a Action) bool { return a.ID == "package:kernel" })
			if (i >= 0) != tc.kernelAdvice {
				t.Fatalf("kernel advice %v, want %v", i >= 0, tc.kernelAdvice)
			}
			if i >= 0 && p.Actions[i].Command != "sudo apt update && sudo apt install linux-oem-24.04d" {
				t.Errorf("Ubuntu 24.04's kernel advice: %q", p.Actions[i].Command)
			}
		})
	}
}

// TestPlanReasonsAreCurrent: the plan's reasons are the remedies' own: the
// watchdog's names both defaults (2 s from Linux 6.19, 10 s before), and the
// CWSR stop-gap is dropped once the kernel has the fix, not "on 7.0 with
// ROCm 7.2.1".
func TestPlanReasonsAreCurrent(t *testing.T) {
	b := detect.NewBundle()
	for k, v := range map[string]string{
		"lspci.txt":   "c5:00.0 Display controller [0380]: Advanced Micro Devices, Inc. [AMD/ATI] Strix Halo [Radeon 8060S Graphics] [1002:1586] (rev c1)\n",
		"uname.txt":   "6.16.0-1-mainline\n",
		"cmdline.txt": "ro quiet\n",
		"dmesg.txt":   "[  884.792885] [drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring comp_1.0.0 timeout, signaled seq=3, emitted seq=4\n",
	} {
		if err := b.Set(k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Build(detect.Analyse(b), &Evidence{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{
		"set:amdgpu.lockup_timeout": "set amdgpu.lockup_timeout=20000,20000 (long prompts can outlast the GPU watchdog, 2 s from Linux 6.19 and 10 s before",
		"set:amdgpu.cwsr_enable":    "until the kernel has the gfx1151 CWSR fix",
	} {
		i := slices.IndexFunc(p.Actions, func(a Action) bool { return a.ID == id })
		if i < 0 || !strings.Contains(p.Actions[i].Change, want) || strings.Contains(p.Actions[i].Change, "7.2.1") {
			t.Errorf("%s: %+v, want %q", id, p.Actions, want)
		}
	}
}
