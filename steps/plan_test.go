package steps

import (
	"bytes"
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	haloforge "github.com/haloforge/haloforge"
	"github.com/haloforge/haloforge/pins"
)

// designTrackIDs are the track IDs docs/ids.md promises: a contract, so each must stay.
// A new track needs no edit here.
var designTrackIDs = []string{"therock-toolbox", "vllm-image", "source-stable", "nightly-spoof", "locked-spoof",
	"llamacpp-vulkan", "ollama", "therock-aotriton", "legacy-gfx803", "llamacpp-rocm", "llamacpp-distro"}

func TestCatalogueIsConsistent(t *testing.T) {
	if err := Validate(Catalogue()); err != nil {
		t.Fatal(err)
	}
	ids := TrackIDs()
	for _, id := range designTrackIDs {
		if !slices.Contains(ids, id) {
			t.Errorf("track %s (docs/ids.md) is not in the catalogue", id)
		}
	}
	if ids[0] != "therock-toolbox" {
		t.Errorf("the picker starts with %s, want the main track therock-toolbox", ids[0])
	}
	for _, tr := range Catalogue() {
		if tr.Title == "" || len(tr.Description) < 100 || len(tr.GFX) == 0 || len(tr.Requires) == 0 || tr.Source == "" {
			t.Errorf("%s: title, description (a paragraph), gfx, requirements and source are all required", tr.ID)
		}
		switch tr.Status {
		case StatusRecommended, StatusStable, StatusExperimental, StatusBlockedUpstream:
			if tr.History != "" {
				t.Errorf("%s: a history note on a %s track", tr.ID, tr.Status)
			}
		case StatusHistory:
			if len(tr.History) < 60 {
				t.Errorf("%s: a history track says why it is kept (History), got %q", tr.ID, tr.History)
			}
			if tr.RecommendWhen != nil {
				t.Errorf("%s: history is never recommended", tr.ID)
			}
		default:
			t.Errorf("%s: status %q", tr.ID, tr.Status)
		}
		for _, s := range tr.Steps {
			for _, p := range s.Pins {
				if _, ok := pins.Lookup(p); !ok {
					t.Errorf("%s/%s reads unknown pin %s", tr.ID, s.ID, p)
				}
			}
			if s.Optional && s.Why == "" {
				t.Errorf("%s/%s is optional without a reason", tr.ID, s.ID)
			}
			for _, n := range s.Needs {
				if !slices.Contains(s.Pins, n) {
					t.Errorf("%s/%s needs %s but does not read it (Pins)", tr.ID, s.ID, n)
				}
			}
		}
	}
}

// TestPickOrder: every track has its place in pickOrder, once; what is kept
// as history comes after everything an owner should pick today, and
// Offered leaves it out unless asked for by name.
func TestPickOrder(t *testing.T) {
	seen := map[string]bool{}
	for _, id := range pickOrder {
		if seen[id] {
			t.Errorf("%s twice in pickOrder", id)
		}
		seen[id] = true
		if _, err := Lookup(id); err != nil {
			t.Error(err)
		}
	}
	if len(seen) != len(catalogue) {
		t.Errorf("pickOrder names %d tracks, the catalogue has %d", len(seen), len(catalogue))
	}
	history := false
	for _, tr := range Catalogue() {
		if tr.Status == StatusHistory {
			history = true
		} else if history {
			t.Errorf("%s comes after a history track", tr.ID)
		}
	}
	offered := Offered(Catalogue())
	for _, tr := range offered {
		if tr.Status == StatusHistory {
			t.Errorf("Offered lists %s", tr.ID)
		}
	}
	if len(offered) == len(catalogue) || len(offered) == 0 {
		t.Errorf("Offered kept %d of %d tracks", len(offered), len(catalogue))
	}
	asked := Offered(Catalogue(), "locked-spoof")
	if len(asked) != len(offered)+1 || !slices.ContainsFunc(asked, func(tr Track) bool { return tr.ID == "locked-spoof" }) {
		t.Errorf("asked for locked-spoof: %v", trackIDsOf(asked))
	}
}

// trackIDsOf lists the IDs of some tracks, for test messages.
func trackIDsOf(ts []Track) []string {
	out := make([]string, len(ts))
	for i, tr := range ts {
		out[i] = tr.ID
	}
	return out
}

// TestMissingInputs: the ladder of llamacpp-rocm cannot run without a model,
// so an empty LLAMA_MODEL is missing there and nowhere else.
func TestMissingInputs(t *testing.T) {
	tr, err := Lookup("llamacpp-rocm")
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.MissingInputs(map[string]string{"LLAMA_MODEL": ""}); !slices.Equal(got, []string{"LLAMA_MODEL"}) {
		t.Errorf("MissingInputs(empty) = %v, want [LLAMA_MODEL]", got)
	}
	if got := tr.MissingInputs(map[string]string{"LLAMA_MODEL": "/m.gguf"}); len(got) != 0 {
		t.Errorf("MissingInputs(set) = %v, want none", got)
	}
	vk, _ := Lookup("llamacpp-vulkan")
	if got := vk.MissingInputs(map[string]string{}); len(got) != 0 {
		t.Errorf("llamacpp-vulkan runs without a model, yet MissingInputs = %v", got)
	}
}

// TestTheRockToolboxContract pins the step IDs, scripts and graph docs/ids.md promises.
func TestTheRockToolboxContract(t *testing.T) {
	tr, err := Lookup("therock-toolbox")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ id, script string }{
		{"toolbox", "00-setup-toolbox.sh"}, {"tools", "01-install-tools.sh"}, {"rocm", "02-install-rocm.sh"},
		{"aiter", "03-build-aiter.sh"}, {"flash-attention", "04-build-fa.sh"}, {"vllm", "05-build-vllm.sh"}, {"verify", "06-verify.sh"},
	}
	if len(tr.Steps) != len(want) {
		t.Fatalf("%d steps, want %d", len(tr.Steps), len(want))
	}
	for i, w := range want {
		if s := tr.Steps[i]; s.ID != w.id || s.Script != w.script || s.Optional != (w.id == "aiter") {
			t.Errorf("step %d = %s %s optional=%v, want %s %s", i, s.ID, s.Script, s.Optional, w.id, w.script)
		}
	}
	deps := map[string][]string{"toolbox": nil, "tools": {"toolbox"}, "rocm": {"tools"}, "aiter": {"rocm"},
		"flash-attention": {"rocm"}, "vllm": {"rocm"}, "verify": {"aiter", "flash-attention", "vllm"}}
	for id, d := range deps {
		s, _ := tr.Step(id)
		if !slices.Equal(s.DependsOn, d) {
			t.Errorf("%s depends on %v, want %v", id, s.DependsOn, d)
		}
	}
}

func TestDownstream(t *testing.T) {
	tr, _ := Lookup("therock-toolbox")
	tests := []struct {
		changed, want []string
	}{
		{[]string{"vllm"}, []string{"vllm", "verify"}},
		{[]string{"rocm"}, []string{"rocm", "aiter", "flash-attention", "vllm", "verify"}},
		{[]string{"toolbox"}, tr.StepIDs()},
		{[]string{"verify"}, []string{"verify"}},
		{nil, nil},
	}
	for _, tc := range tests {
		if got := tr.Downstream(tc.changed); !slices.Equal(got, tc.want) {
			t.Errorf("Downstream(%v) = %v, want %v", tc.changed, got, tc.want)
		}
	}
}

func scriptsFor(tr Track) fstest.MapFS {
	m := fstest.MapFS{}
	for _, s := range tr.Steps {
		m[tr.ScriptPath(s)] = &fstest.MapFile{Data: []byte("#!/bin/bash\necho " + s.ID + "\n"), Mode: 0o755}
	}
	m["lib/common.sh"] = &fstest.MapFile{Data: []byte("run() { \"$@\"; }\n")}
	m[tr.ID+"/patch-vllm.sh"] = &fstest.MapFile{Data: []byte("echo patch\n")}
	m["vllm-image/container.sh"] = &fstest.MapFile{Data: []byte("echo other\n")}
	m[tr.ID+"/tests/x.bats"] = &fstest.MapFile{Data: []byte("@test x { true; }\n")}
	return m
}

func pinsWith(t *testing.T, sets ...string) *pins.File {
	t.Helper()
	pf, err := pins.Load("../versions.env")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sets {
		if err := pf.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	return pf
}

// succeedAll records every step of p as succeeded, as the runner would.
func succeedAll(p *Plan) *State {
	st := NewState()
	for _, s := range p.Steps {
		st.RecordSuccess(p.Track.ID, s, "run-1", time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), time.Minute)
	}
	return st
}

func runningSteps(p *Plan) []string {
	var out []string
	for _, s := range p.Steps {
		if s.WillRun {
			out = append(out, s.ID)
		}
	}
	return out
}

func TestCacheKeysAndWillRun(t *testing.T) {
	tr, _ := Lookup("therock-toolbox")
	scripts := scriptsFor(tr)
	base, err := NewPlan(tr, pinsWith(t), scripts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := runningSteps(base); !slices.Equal(got, tr.StepIDs()) {
		t.Fatalf("without history everything runs; got %v", got)
	}
	st := succeedAll(base)
	again, _ := NewPlan(tr, pinsWith(t), scripts, st)
	if got := runningSteps(again); len(got) != 0 {
		t.Fatalf("same inputs after success: %v run again", got)
	}

	tests := []struct {
		name   string
		sets   []string
		touch  string // script whose bytes change
		want   []string
		reason string // expected in the first running step's reason
	}{
		{"vllm pin", []string{"VLLM_REF=0123456789abcdef0123456789abcdef01234567"}, "", []string{"vllm", "verify"}, "pins changed: VLLM_REF"},
		{"rocm pin", []string{"ROCM_VERSION=7.15.0"}, "", []string{"rocm", "aiter", "flash-attention", "vllm", "verify"}, "pins changed: ROCM_VERSION, TORCHAUDIO_VERSION, TORCHVISION_VERSION, TORCH_VERSION"},
		{"toolbox image", []string{"TOOLBOX_IMAGE=registry.fedoraproject.org/fedora-toolbox:43"}, "", tr.StepIDs(), "pins changed: TOOLBOX_IMAGE"},
		{"flash-attention script", nil, "therock-toolbox/04-build-fa.sh", []string{"flash-attention", "verify"}, "script changed"},
		{"shared lib", nil, "lib/common.sh", tr.StepIDs(), "helper scripts changed (scripts/lib or the track's own helpers)"},
		{"track helper", nil, "therock-toolbox/patch-vllm.sh", tr.StepIDs(), "helper scripts changed (scripts/lib or the track's own helpers)"},
		{"another track's helper", nil, "vllm-image/container.sh", nil, ""},
		{"a test file", nil, "therock-toolbox/tests/x.bats", nil, ""},
		{"unrelated pin", []string{"OLLAMA_PORT=11435"}, "", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := scriptsFor(tr)
			if tc.touch != "" {
				s[tc.touch] = &fstest.MapFile{Data: []byte("#!/bin/bash\necho changed\n")}
			}
			p, err := NewPlan(tr, pinsWith(t, tc.sets...), s, st)
			if err != nil {
				t.Fatal(err)
			}
			got := runningSteps(p)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("will run %v, want %v", got, tc.want)
			}
			for _, ps := range p.Steps {
				if ps.WillRun == (ps.CacheKey == base.Steps[indexOf(base, ps.ID)].CacheKey) {
					t.Errorf("%s: will_run=%v but key changed=%v", ps.ID, ps.WillRun, ps.CacheKey != base.Steps[indexOf(base, ps.ID)].CacheKey)
				}
			}
			if len(got) > 0 {
				first, _ := p.Step(got[0])
				if first.Reason != tc.reason {
					t.Errorf("reason = %q, want %q", first.Reason, tc.reason)
				}
			}
		})
	}
}

func indexOf(p *Plan, id string) int {
	for i, s := range p.Steps {
		if s.ID == id {
			return i
		}
	}
	return -1
}

func TestPlanMissingScriptsAndPins(t *testing.T) {
	tr, _ := Lookup("therock-toolbox")
	s := scriptsFor(tr)
	delete(s, "therock-toolbox/05-build-vllm.sh")
	p, err := NewPlan(tr, pinsWith(t), s, nil)
	mse, ok := err.(*MissingScriptError)
	if !ok || p == nil || !slices.Equal(mse.Paths, []string{"therock-toolbox/05-build-vllm.sh"}) {
		t.Fatalf("err = %v, plan nil: %v", err, p == nil)
	}
	pf, _ := pins.Parse("short.env", []byte("GPU_TARGET=gfx1151\n"))
	if _, err := NewPlan(tr, pf, scriptsFor(tr), nil); err == nil {
		t.Fatal("a pins file without the track's pins was accepted")
	}
}

func TestStateSaveLoadAtomic(t *testing.T) {
	dir := t.TempDir()
	st := NewState()
	st.Track("therock-toolbox").Steps["rocm"] = &StepState{Status: OutcomeInterrupted, ExitCode: 130}
	if err := st.Save(dir); err != nil {
		t.Fatal(err)
	}
	got, err := LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tracks["therock-toolbox"].Steps["rocm"].Status != OutcomeInterrupted {
		t.Fatalf("round trip lost the state: %+v", got.Tracks["therock-toolbox"])
	}
	if empty, err := LoadState(t.TempDir()); err != nil || len(empty.Tracks) != 0 {
		t.Fatalf("missing state must load empty: %v", err)
	}
}

// TestEveryStepHasItsScript: each step's script is in the scripts tree the
// binary embeds, so a new track fails here rather than at `build`.
func TestEveryStepHasItsScript(t *testing.T) {
	for _, tr := range Catalogue() {
		for _, s := range tr.Steps {
			data, err := fs.ReadFile(haloforge.Scripts, "scripts/"+tr.ScriptPath(s))
			if err != nil {
				t.Errorf("%s/%s: %v", tr.ID, s.ID, err)
				continue
			}
			if !bytes.HasPrefix(data, []byte("#!/usr/bin/env bash\n")) {
				t.Errorf("%s/%s: %s is not a bash script", tr.ID, s.ID, s.Script)
			}
		}
	}
}
