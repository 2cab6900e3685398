package hostfix

import (
	"encoding/json"
	"strings"
	"testing"
)

// validPlan is a small plan with one action of each applicable kind.
func validPlan() *Plan {
	a := set("ttm.pages_limit", "30670848")
	return &Plan{Version: PlanVersion, CreatedBy: "haloforge test", Bootloader: BootGRUB,
		Boot:   Boot{Name: BootGRUB, Tool: "update-grub", Config: []string{"/etc/default/grub"}, Update: [][]string{{"update-grub"}}, Reason: "GRUB"},
		Reboot: true,
		Actions: []Action{
			{ID: "set:ttm.pages_limit", Kind: KindKernelArg, Check: "gtt-size", Change: "set it", Command: "sudo sed …", Arg: &a},
			{ID: "modprobe:/etc/modprobe.d/x.conf:amdgpu.gttsize", Kind: KindModprobe, Check: "gttsize-deprecated",
				Modprobe: &ModprobeEdit{File: "/etc/modprobe.d/x.conf", Module: "amdgpu", Param: "gttsize", Value: "120000"}},
			{ID: "group:alice", Kind: KindGroup, Check: "render-groups", Group: &GroupChange{User: "alice", Groups: []string{"render", "video"}}},
			{ID: "package:kernel", Kind: KindPackage, Check: "kernel-version", Change: "install a kernel", Advice: true},
		},
		Script: []string{"sudo update-grub"}, Files: []FileDiff{{Path: "/etc/default/grub", Diff: "--- a\n+++ b\n"}},
		Target: Target{Args: []KernelArg{a}, TTMModule: "ttm", PagesLimit: 30670848, GTTBytes: 30670848 * 4096, User: "alice", Groups: []string{"render", "video"}},
	}
}

func planJSON(t *testing.T, p *Plan) string {
	t.Helper()
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestParsePlanRefuses: a plan file is input; everything that is not what
// haloforge itself would plan is refused.
func TestParsePlanRefuses(t *testing.T) {
	if _, err := ParsePlan(strings.NewReader(planJSON(t, validPlan()))); err != nil {
		t.Fatalf("valid plan refused: %v", err)
	}
	tests := []struct {
		name   string
		mutate func(p *Plan)
		raw    string
		want   string
	}{
		{name: "unknown kind", mutate: func(p *Plan) { p.Actions[3].Kind = "shell" }, want: "unknown kind"},
		{name: "shell in a value", mutate: func(p *Plan) { p.Actions[0].Arg.Value = "1; rm -rf /" }, want: "not allowed"},
		{name: "command substitution in a value", mutate: func(p *Plan) { p.Actions[0].Arg.Value = "$(id)" }, want: "not allowed"},
		{name: "unknown kernel argument", mutate: func(p *Plan) { p.Actions[0].Arg.Key = "init"; p.Actions[0].Arg.Value = "/bin/sh" }, want: "not one haloforge manages"},
		{name: "page count out of range", mutate: func(p *Plan) { p.Actions[0].Arg.Value = "9999999999" }, want: "page count"},
		{name: "remove-only key set", mutate: func(p *Plan) {
			p.Actions[0].Arg = &KernelArg{Op: OpSet, Key: "nomodeset"}
			p.Actions[0].ID = "set:nomodeset"
		}, want: "only be removed"},
		{name: "unknown op", mutate: func(p *Plan) { p.Actions[0].Arg.Op = "append" }, want: "unknown operation"},
		{name: "id not matching the argument", mutate: func(p *Plan) { p.Actions[0].ID = "set:amdgpu.cwsr_enable" }, want: "does not match"},
		{name: "modprobe file outside modprobe.d", mutate: func(p *Plan) {
			p.Actions[1].Modprobe.File = "/etc/sudoers"
			p.Actions[1].ID = "modprobe:/etc/sudoers:amdgpu.gttsize"
		}, want: "not allowed"},
		{name: "modprobe path traversal", mutate: func(p *Plan) {
			p.Actions[1].Modprobe.File = "/etc/modprobe.d/../x.conf"
		}, want: "not allowed"},
		{name: "modprobe unknown option", mutate: func(p *Plan) { p.Actions[1].Modprobe.Param = "install" }, want: "not allowed"},
		{name: "group for root", mutate: func(p *Plan) { p.Actions[2].Group.User = "root"; p.Actions[2].ID = "group:root" }, want: "not allowed"},
		{name: "group wheel", mutate: func(p *Plan) { p.Actions[2].Group.Groups = []string{"wheel"} }, want: "not allowed"},
		{name: "user with shell", mutate: func(p *Plan) { p.Actions[2].Group.User = "a;b" }, want: "not allowed"},
		{name: "advice that carries a change", mutate: func(p *Plan) { p.Actions[3].Arg = p.Actions[0].Arg }, want: "advice only"},
		{name: "kernel-arg marked advice", mutate: func(p *Plan) { p.Actions[0].Advice = true }, want: "exactly its own change"},
		{name: "two changes in one action", mutate: func(p *Plan) { p.Actions[0].Group = p.Actions[2].Group }, want: "exactly its own change"},
		{name: "duplicate id", mutate: func(p *Plan) { p.Actions = append(p.Actions, p.Actions[0]) }, want: "duplicate"},
		{name: "unknown bootloader", mutate: func(p *Plan) { p.Bootloader, p.Boot.Name = "lilo", "lilo" }, want: "unknown bootloader"},
		{name: "unknown tool", mutate: func(p *Plan) { p.Boot.Tool = "sh" }, want: "unknown bootloader tool"},
		{name: "old version", mutate: func(p *Plan) { p.Version = 0 }, want: "version"},
		{name: "escape sequence in a text", mutate: func(p *Plan) { p.Actions[0].Change = "\x1b]52;c;evil\x07" }, want: "control character"},
		{name: "too many actions", mutate: func(p *Plan) {
			for i := 0; i < 70; i++ {
				p.Actions = append(p.Actions, Action{ID: "package:x" + strings.Repeat("y", i), Kind: KindPackage, Check: "x", Advice: true})
			}
		}, want: "at most"},
		{name: "target user", mutate: func(p *Plan) { p.Target.User = "$(x)" }, want: "not allowed"},
		{raw: `{"version":1,"bootloader":"grub","boot":{"name":"grub","reason":""},"actions":[],"script":[],"files":[],"target":{"args":[]},"run":"sh"}`, name: "unknown field", want: "unknown field"},
		{raw: planJSON(t, validPlan()) + `{}`, name: "two documents", want: "more than one"},
		{raw: `{"version":1,` + strings.Repeat(" ", MaxPlanSize) + `}`, name: "too large", want: "larger than"},
		{raw: `[1,2]`, name: "not an object", want: "plan file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := tt.raw
			if tt.mutate != nil {
				p := validPlan()
				tt.mutate(p)
				raw = planJSON(t, p)
			}
			_, err := ParsePlan(strings.NewReader(raw))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
			if err != nil && !IsUsage(err) {
				t.Errorf("a bad plan is bad input (exit 2): %v", err)
			}
		})
	}
}

func FuzzParsePlan(f *testing.F) {
	f.Add(`{"version":1,"bootloader":"unknown","boot":{"name":"unknown","reason":"x"},"actions":[],"script":[],"files":[],"target":{"args":[]}}`)
	p := validPlan()
	data, _ := json.Marshal(p)
	f.Add(string(data))
	f.Add(`{"version":1,"actions":[{"id":"set:ttm.pages_limit","kind":"kernel-arg","check":"gtt-size","arg":{"op":"set","key":"ttm.pages_limit","value":"1; reboot"}}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePlan(strings.NewReader(s))
		if err != nil {
			return
		}
		// Whatever parses is what haloforge could have planned: every value
		// that reaches a command is on the allow-lists, free of shell syntax.
		for _, a := range p.Actions {
			if a.Arg != nil {
				if err := ValidateArg(*a.Arg); err != nil || strings.ContainsAny(a.Arg.String(), " ;|&$`'\"\\\n<>(){}*?") {
					t.Fatalf("accepted %+v", a.Arg)
				}
			}
			if a.Group != nil && (a.Group.User == "root" || strings.ContainsAny(a.Group.User, " ;|&$`'\"\\/")) {
				t.Fatalf("accepted user %q", a.Group.User)
			}
			if a.Modprobe != nil && (strings.Contains(a.Modprobe.File, "..") || !strings.HasPrefix(a.Modprobe.File, "/etc/modprobe.d/")) {
				t.Fatalf("accepted file %q", a.Modprobe.File)
			}
		}
	})
}
