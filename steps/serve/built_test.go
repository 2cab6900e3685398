package serve

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/haloforge/haloforge/steps"
)

func TestCheckBuilt(t *testing.T) {
	track := steps.Track{ID: "llamacpp-distro", Steps: []steps.Step{{ID: "toolbox"}, {ID: "packages"}, {ID: "verify"}, {ID: "extra", Optional: true}},
		Serve: &steps.ServeSpec{Engine: EngineLlamaCpp, BoxPin: "LLAMACPP_DISTRO_BOX"}}
	pins := map[string]string{"LLAMACPP_DISTRO_BOX": "hf-box"}
	built := func(ids ...string) *steps.State {
		st := steps.NewState()
		for _, id := range ids {
			st.RecordSuccess(track.ID, steps.PlannedStep{Step: steps.Step{ID: id}, CacheKey: "k-" + id}, "20261124-101500-a1b2c3", time.Now(), time.Second)
		}
		return st
	}
	probe := func(exists, known bool) Probe {
		return func(mode, name string, _ bool) (bool, bool) {
			if mode != steps.ServeInBox || name != "hf-box" {
				t.Errorf("probe asked %s %q, want box hf-box", mode, name)
			}
			return exists, known
		}
	}
	for _, tc := range []struct {
		name          string
		st            *steps.State
		exists, known bool
		want, note    string // want: the error ("" none); note: in the Built note
	}{
		{"nothing ran, no box", steps.NewState(), false, true, "llamacpp-distro is not built yet in state dir /tmp/hf-state; build it first: haloforge build --track llamacpp-distro --state-dir /tmp/hf-state (nothing was started)", ""},
		{"nothing ran, cannot tell", nil, false, false, "llamacpp-distro is not built yet", ""},
		{"partial", built("toolbox", "packages"), false, true, "not fully built in state dir /tmp/hf-state (step verify has not succeeded); build it first: haloforge build --track llamacpp-distro --state-dir /tmp/hf-state (", ""},
		{"partial, cannot tell", built("toolbox"), false, false, "(step packages has not succeeded)", ""},
		{"built, box gone", built("toolbox", "packages", "verify"), false, true, "the box hf-box of llamacpp-distro does not exist (removed since the build?); build it first: haloforge build --track llamacpp-distro --from toolbox --state-dir /tmp/hf-state (", ""},
		{"built, box there", built("toolbox", "packages", "verify"), true, true, "", ""},
		{"built, cannot tell", built("toolbox", "packages", "verify"), false, false, "", ""},
		{"not built, box made by hand", steps.NewState(), true, true, "", "no finished build of llamacpp-distro; its box hf-box exists, so it is served as it is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := CheckBuilt(track, tc.st, Where{StateDir: "/tmp/hf-state", Flags: []string{"--state-dir", "/tmp/hf-state"}}, pins, false, probe(tc.exists, tc.known))
			var nb *NotBuiltError
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("err = %v, want none", err)
			case tc.want != "" && (!errors.As(err, &nb) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want a NotBuiltError with %q", err, tc.want)
			}
			if (tc.note == "") != (b.Note == "") || !strings.Contains(b.Note, tc.note) {
				t.Errorf("note = %q, want %q", b.Note, tc.note)
			}
		})
	}
	// A track haloforge does not serve is Plan's to refuse.
	if _, err := CheckBuilt(steps.Track{ID: "therock-aotriton"}, nil, Where{}, nil, false, probe(false, true)); err != nil {
		t.Errorf("unservable track: %v", err)
	}
}
