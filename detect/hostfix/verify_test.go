package hostfix

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haloforge/haloforge/detect"
)

// snapshot builds a bundle from files of testdata/verify, at bundle paths.
func snapshot(t *testing.T, files map[string]string) *detect.Bundle {
	t.Helper()
	b := detect.NewBundle()
	for name, src := range files {
		data, err := os.ReadFile(filepath.Join("testdata/verify", src))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Set(name, data); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func items(v *VerifyReport) map[string]VerifyItem {
	out := map[string]VerifyItem{}
	for _, it := range v.Items {
		out[it.What] = it
	}
	return out
}

func gttPlan(gib int64, args ...KernelArg) *Plan {
	pages := gib * detect.PagesPerGiB
	return &Plan{Target: Target{Args: args, TTMModule: "ttm", PagesLimit: pages, GTTBytes: pages * 4096}}
}

func TestVerifySnapshots(t *testing.T) {
	const pagesFile = "sys/module/ttm/parameters/pages_limit"
	const gttFile = "sys/class/drm/card0/device/mem_info_gtt_total"
	p96 := &Plan{Target: Target{Args: []KernelArg{set("ttm.pages_limit", "25165824"), set("ttm.page_pool_size", "25165824"), del("amdgpu.gttsize")}}}
	tests := []struct {
		name  string
		plan  *Plan
		files map[string]string
		want  map[string]string // item -> status
		ok    bool
	}{
		{
			name: "before: an untuned command line", plan: p96,
			files: map[string]string{"cmdline.txt": "strix-cmdline-1.txt", "dmesg.txt": "gfx1151-dmesg-gtt-auto-1.txt"},
			want: map[string]string{"cmdline: ttm.pages_limit=25165824": VerifyFail, "cmdline: ttm.page_pool_size=25165824": VerifyFail,
				"cmdline: no amdgpu.gttsize": VerifyOK, "kernel log (dmesg)": VerifyOK},
		},
		{
			name: "after: 96 GiB set the supported way (ROG Flow Z13, kernel 7.1)", plan: p96,
			files: map[string]string{"cmdline.txt": "strix-cmdline-4.txt", "dmesg.txt": "gfx1151-dmesg-gtt-auto-1.txt"},
			want: map[string]string{"cmdline: ttm.pages_limit=25165824": VerifyOK, "cmdline: ttm.page_pool_size=25165824": VerifyOK,
				"cmdline: no amdgpu.gttsize": VerifyOK, "kernel log (dmesg)": VerifyOK},
			ok: true,
		},
		{
			name: "the misspelt gtt_size is still there", plan: &Plan{Target: Target{Args: []KernelArg{del("amdgpu.gtt_size")}}},
			files: map[string]string{"cmdline.txt": "strix-cmdline-3.txt", "dmesg.txt": "gfx1151-dmesg-gttsize-deprecated-1.txt"},
			want:  map[string]string{"cmdline: no amdgpu.gtt_size": VerifyFail, "dmesg: GTT setting the kernel complains about": VerifyFail},
		},
		{
			// The apellegr machine: pages_limit 100 GiB, but amdgpu.gttsize=117760
			// still made GTT 115 GiB. A 100 GiB plan catches it.
			name: "pages_limit right, GTT not (gttsize left behind)", plan: gttPlan(100),
			files: map[string]string{pagesFile: "gfx1151-ttm-pages-limit-transcript-1.txt", gttFile: "gfx1151-sysfs-gtt-transcript-1.txt",
				"dmesg.txt": "gfx1151-dmesg-gtt-auto-1.txt"},
			want: map[string]string{"/sys/module/ttm/parameters/pages_limit": VerifyOK, "GTT size": VerifyFail},
		},
		{
			name: "GTT right for 115 GiB, pages_limit not", plan: gttPlan(115),
			files: map[string]string{pagesFile: "gfx1151-ttm-pages-limit-transcript-1.txt", gttFile: "gfx1151-sysfs-gtt-transcript-1.txt",
				"dmesg.txt": "gfx1151-dmesg-gtt-auto-1.txt"},
			want: map[string]string{"/sys/module/ttm/parameters/pages_limit": VerifyFail, "GTT size": VerifyOK},
		},
		{
			name: "the untuned default pages_limit", plan: gttPlan(100),
			files: map[string]string{pagesFile: "ttm-pages-limit-default-1.txt", "dmesg.txt": "gfx1151-dmesg-gtt-auto-1.txt"},
			want:  map[string]string{"/sys/module/ttm/parameters/pages_limit": VerifyFail, "GTT size": VerifyFail},
		},
		{
			name: "MES hang, ring timeout and GPU reset in this boot", plan: &Plan{},
			files: map[string]string{"dmesg.txt": "dmesg-f058-amdgpu-mes-hang.txt"},
			want:  map[string]string{"dmesg: MES or ring timeout": VerifyFail, "dmesg: GPU reset": VerifyFail},
		},
		{
			name: "a GPU page fault", plan: &Plan{},
			files: map[string]string{"dmesg.txt": "dmesg-f062-gpu-page-fault.txt"},
			want:  map[string]string{"dmesg: GPU page fault": VerifyFail},
		},
		{
			name: "no kernel log: not verified", plan: p96,
			files: map[string]string{"cmdline.txt": "strix-cmdline-4.txt"},
			want:  map[string]string{"kernel log (dmesg)": VerifyUnknown, "cmdline: ttm.pages_limit=25165824": VerifyOK},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := snapshot(t, tt.files)
			v := Verify(tt.plan, VerifyInput{Report: detect.Analyse(b), Bundle: b})
			got := items(v)
			for what, status := range tt.want {
				if got[what].Status != status {
					t.Errorf("%s: %q (%s), want %q\nall: %+v", what, got[what].Status, got[what].Detail, status, v.Items)
				}
			}
			if v.OK != tt.ok {
				t.Errorf("ok = %v, want %v: %+v", v.OK, tt.ok, v.Items)
			}
		})
	}
}

// TestVerifyDmesgAdviceKeepsTheFlags: without a kernel log the advice to
// save one repeats the verify as the user typed it (Again), so that its
// --state-dir and --root come along; without Again, the plain command.
func TestVerifyDmesgAdviceKeepsTheFlags(t *testing.T) {
	b, r := readBundle(t, "../../tui/demo/bundle")
	p, err := Build(r, grubEvidence(b), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = b.Set("dmesg.txt", nil)
	for _, tc := range []struct{ name, again, want string }{
		{"the user's flags", "haloforge doctor --verify --state-dir /s", "and haloforge doctor --verify --state-dir /s --dmesg dmesg.txt"},
		{"none given", "", "and haloforge doctor --verify --dmesg dmesg.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Verify(p, VerifyInput{Report: r, Bundle: b, Again: tc.again})
			if d := items(v)["kernel log (dmesg)"].Detail; !strings.HasSuffix(d, tc.want) {
				t.Errorf("dmesg advice %q, want it to end %q", d, tc.want)
			}
		})
	}
}

func TestVerifyDemoPlanOnTheDemoMachine(t *testing.T) {
	b, r := readBundle(t, "../../tui/demo/bundle")
	p, err := Build(r, grubEvidence(b), Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := Verify(p, VerifyInput{Report: r, Bundle: b})
	var sb strings.Builder
	v.WriteText(&sb)
	for _, want := range []string{
		"[✗] cmdline: ttm.pages_limit=30670848: missing",
		"[?] /sys/module/ttm/parameters/pages_limit: not readable here",
		"[✗] GTT size: 62.5 GiB, the plan set 117 GiB",
		"[✓] MES firmware: 0x00000080",
		"[✓] kernel log (dmesg): no MES or ring timeout",
		"Not verified",
	} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("missing %q in:\n%s", want, sb.String())
		}
	}
}

func TestVerifyKernelLogPatterns(t *testing.T) {
	tests := []struct {
		name, log, item string
	}{
		// The firmware loader's format, "Direct firmware load for %s failed
		// with error %d" (drivers/base/firmware_loader/main.c), with a gfx1151 blob.
		{"missing firmware", "[    3.1] amdgpu 0000:c5:00.0: Direct firmware load for amdgpu/gc_11_5_1_mes_2.bin failed with error -2\n", "dmesg: firmware load failure"},
		{"init failed", "[    3.2] amdgpu 0000:c5:00.0: amdgpu: Fatal error during GPU init\n", "dmesg: firmware load failure"},
		{"optional PSP TA blob is fine", "[    3.1] amdgpu 0000:19:00.0: Direct firmware load for amdgpu/vega20_ta.bin failed with error -2\n", "kernel log (dmesg)"},
		{"an earlier boot does not count", string(mustRead(t, "dmesg-f058-amdgpu-mes-hang.txt")) +
			"[    0.000000] Linux version 6.18.9-200.fc43.x86_64 (mockbuild@fedora)\n" + string(mustRead(t, "gfx1151-dmesg-gtt-auto-1.txt")) +
			"[    0.000000] Linux version 7.1.3-100.fc43.x86_64 (mockbuild@fedora)\n" + string(mustRead(t, "gfx1151-dmesg-gtt-auto-1.txt")),
			"kernel log (dmesg)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := detect.NewBundle()
			b.Set("dmesg.txt", []byte(tt.log))
			v := Verify(&Plan{}, VerifyInput{Report: detect.Analyse(b), Bundle: b})
			it, ok := items(v)[tt.item]
			if !ok {
				t.Fatalf("no item %q: %+v", tt.item, v.Items)
			}
			wantOK := tt.item == "kernel log (dmesg)"
			if (it.Status == VerifyOK) != wantOK {
				t.Errorf("%s: %+v", tt.item, it)
			}
		})
	}
}

// TestVerifyQuotesTheKernelLogSafely: a kernel log line is quoted in the
// verification, never with a bidi override, a C1 code or an escape.
func TestVerifyQuotesTheKernelLogSafely(t *testing.T) {
	b := detect.NewBundle()
	b.Set("dmesg.txt", []byte("[    3.2] amdgpu 0000:c5:00.0: amdgpu: Fatal error during GPU init \u202eevil\u009b2J\x1b]0;t\x07\n"))
	v := Verify(&Plan{}, VerifyInput{Report: detect.Analyse(b), Bundle: b})
	var out strings.Builder
	if err := v.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{"text": out.String(), "json": string(js)} {
		if !strings.Contains(s, "Fatal error during GPU init evil2J") {
			t.Errorf("%s does not quote the line:\n%s", name, s)
		}
		if strings.ContainsAny(s, "\u202e\u009b\x1b") || strings.Contains(s, `\u001b`) {
			t.Errorf("%s: a hostile character reaches the output: %q", name, s)
		}
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata/verify", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestVerifyGroups(t *testing.T) {
	p := &Plan{Target: Target{User: "alice", Groups: []string{"render", "video"}}}
	alice := "alice"
	tests := []struct {
		name       string
		user       *string
		live       []string
		etcGroup   map[string][]string
		wantRender string
	}{
		{"in effect", &alice, []string{"alice", "render", "video"}, nil, VerifyOK},
		{"configured, not logged in again", &alice, []string{"alice", "video"}, map[string][]string{"render": {"alice"}, "video": {"alice"}}, VerifyFail},
		{"configured, checked from another account", nil, nil, map[string][]string{"render": {"alice"}, "video": {"alice"}}, VerifyOK},
		{"not a member", nil, nil, map[string][]string{"render": {"bob"}, "video": {"alice"}}, VerifyFail},
		{"unknown", nil, nil, nil, VerifyUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := detect.NewBundle()
			b.Set("dmesg.txt", mustRead(t, "gfx1151-dmesg-gtt-auto-1.txt"))
			r := detect.Analyse(b)
			r.Host.User, r.Host.Groups = tt.user, tt.live
			v := Verify(p, VerifyInput{Report: r, Bundle: b, Groups: tt.etcGroup})
			if got := items(v)["alice in render"]; got.Status != tt.wantRender {
				t.Errorf("alice in render: %+v, want %s", got, tt.wantRender)
			}
		})
	}
}
