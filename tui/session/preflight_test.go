package session

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"time"

	haloforge "github.com/haloforge/haloforge"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/pins/sets"
	"github.com/haloforge/haloforge/pins/upstream"
	"github.com/haloforge/haloforge/pins/upstream/upstreamtest"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/preflight"
)

// TestPlanScreenAsksUpstream: the wizard's plan screen runs the same check
// as plan and build (steps/preflight) on real simple indexes of wheels pip
// built: with the torch wheel gone it shows the gone pin and the set that
// resolves and refuses to build; with the wheels there it says nothing and
// builds.
func TestPlanScreenAsksUpstream(t *testing.T) {
	next, old := upstreamtest.TheRockStacks(t)
	nextIx, oldIx := upstreamtest.StartIndex(t, next), upstreamtest.StartIndex(t, old)
	set, err := sets.Parse("rocm-7.14.env", []byte("# id: rocm-7.14\n# title: the previous stack\n# status: previous\n# evidence: https://example.org/7.14\n\n"+
		"# index\nTHEROCK_INDEX_URL="+oldIx.URL+"\n# rocm\nROCM_VERSION=7.14.0\n# torch\nTORCH_VERSION=2.11.0+rocm${ROCM_VERSION}\n"+
		"# vision\nTORCHVISION_VERSION=0.26.0+rocm${ROCM_VERSION}\n# audio\nTORCHAUDIO_VERSION=2.11.0+rocm${ROCM_VERSION}\n"))
	if err != nil {
		t.Fatal(err)
	}
	// The shipped pins, with the wheel index on the loopback interface and
	// the other upstreams at an address where nothing listens.
	pf, err := pins.Parse("versions.env", haloforge.VersionsEnv)
	if err != nil {
		t.Fatal(err)
	}
	closed := upstreamtest.ClosedAddr(t)
	for _, kv := range []string{"THEROCK_INDEX_URL=" + nextIx.URL, "TOOLBOX_IMAGE=" + closed + "/library/ubuntu:24.04",
		"AITER_REPO=https://" + closed + "/aiter.git", "FLASH_ATTENTION_REPO=https://" + closed + "/flash-attention.git",
		"VLLM_REPO=https://" + closed + "/vllm.git", "VERIFY_MODEL=" + t.TempDir()} {
		if err := pf.Set(kv); err != nil {
			t.Fatal(err)
		}
	}
	scripts, err := fs.Sub(haloforge.Scripts, "scripts")
	if err != nil {
		t.Fatal(err)
	}
	engine := func() *Engine {
		e := &Engine{Workspace: steps.Workspace{StateDir: t.TempDir(), Scripts: scripts, Pins: pf}}
		e.Preflight = func(ctx context.Context, tr steps.Track, f *pins.File) *preflight.Result {
			// httptest's servers share one certificate: one pool trusts both indexes
			return preflight.Check(ctx, tr, f, preflight.Options{StateDir: e.StateDir, Sets: []sets.Set{set},
				Upstream: upstream.Options{RootCAs: nextIx.Roots, RequestTimeout: 3 * time.Second}})
		}
		return e
	}

	t.Run("live", func(t *testing.T) {
		v, err := engine().Plan("therock-toolbox")
		if err != nil {
			t.Fatal(err)
		}
		if v.ReadOnly != "" || v.PinWarning != nil {
			t.Errorf("live wheels, yet read-only %q, warning %q", v.ReadOnly, v.PinWarning)
		}
	})
	t.Run("retired", func(t *testing.T) {
		upstreamtest.RemoveWheels(t, next, "torch", "amd-torch-device-gfx1151")
		v, err := engine().Plan("therock-toolbox")
		if err != nil {
			t.Fatal(err)
		}
		warning := strings.Join(v.PinWarning, "\n")
		for _, want := range []string{"✗ 1 pin of therock-toolbox gone upstream", "step 3/7 rocm would fail",
			"✗ TORCH_VERSION=2.11.0+rocm10.0.0  retired", "the set that resolves: rocm-7.14 [previous]", "haloforge pins use rocm-7.14"} {
			if !strings.Contains(warning, want) {
				t.Errorf("the plan screen's warning lacks %q:\n%s", want, warning)
			}
		}
		if !strings.Contains(v.ReadOnly, "therock-toolbox needs a pin that is gone upstream (above): step rocm would fail") {
			t.Errorf("the plan screen still builds: read-only %q", v.ReadOnly)
		}
	})
}
