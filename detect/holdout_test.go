package detect

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// TestHoldout is the "Done when" evaluation: bundles built from real
// outputs of machines that are not in the shared fixtures (each has a SOURCE
// and an expected.json of the facts a human reads off the text). It prints
// the share of facts right, wants at least 90 %, and fails on any invented
// fact: one that expected.json says is absent (null) but Analyse filled in.
func TestHoldout(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/holdout/*")
	if len(dirs) < 8 {
		t.Fatalf("want at least 8 held-out machines, have %d", len(dirs))
	}
	right, total := 0, 0
	for _, dir := range dirs {
		raw, err := os.ReadFile(filepath.Join(dir, "expected.json"))
		if err != nil {
			t.Fatal(err)
		}
		var want map[string]any
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		b, err := ReadBundle(dir)
		if err != nil {
			t.Fatal(err)
		}
		got := holdoutFacts(Analyse(b))
		for _, k := range sortedAnyKeys(want) {
			total++
			g, w := got[k], want[k]
			if factEqual(g, w) {
				right++
				continue
			}
			if w == nil {
				t.Errorf("%s: %s invented: got %v, the input does not say", filepath.Base(dir), k, g)
				continue
			}
			t.Logf("%s: %s = %v, want %v", filepath.Base(dir), k, g, w)
		}
	}
	share := float64(right) / float64(total)
	t.Logf("held-out facts right: %d/%d = %.1f%%", right, total, 100*share)
	fmt.Printf("held-out facts right: %d/%d = %.1f%%\n", right, total, 100*share)
	if share < 0.9 {
		t.Errorf("only %.1f%% of held-out facts right, want >= 90%%", 100*share)
	}
}

// holdoutFacts flattens a report into the fact names expected.json uses,
// as JSON values (numbers as float64) so they compare with the decoded file.
func holdoutFacts(r *Report) map[string]any {
	var out map[string]any
	m := map[string]any{
		"gpu_count": len(r.GPUs), "kernel_release": r.Kernel.Release, "ttm_module": r.Kernel.TTMModule,
		"amdgpu_dkms": r.Kernel.AMDGPUDKMS, "cmdline": r.Kernel.Cmdline,
	}
	if len(r.GPUs) == 0 {
		m["gpu_count"] = nil
	}
	if g := r.Primary(); g != nil {
		m["gfx"], m["pci_id"], m["pci_slot"], m["compute_units"] = g.GFX, g.PCIID, g.PCISlot, g.ComputeUnits
		m["integrated"], m["vram_bytes"], m["gtt_bytes"] = g.Integrated, g.VRAMBytes, g.GTTBytes
	}
	var wf []CheckID
	for _, c := range r.Checks {
		if c.Status == StatusWarn || c.Status == StatusFail {
			wf = append(wf, c.ID)
		}
	}
	m["warn_fail"] = wf
	raw, _ := json.Marshal(m)
	_ = json.Unmarshal(raw, &out)
	if out["warn_fail"] == nil {
		out["warn_fail"] = []any{}
	}
	return out
}

func factEqual(got, want any) bool {
	if ws, ok := want.([]any); ok {
		gs, _ := got.([]any)
		a, b := fmt.Sprint(ws), fmt.Sprint(gs)
		sa, sb := toStrings(ws), toStrings(gs)
		slices.Sort(sa)
		slices.Sort(sb)
		return a == b || slices.Equal(sa, sb)
	}
	return reflect.DeepEqual(got, want)
}

func toStrings(v []any) []string {
	out := make([]string, 0, len(v))
	for _, x := range v {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func sortedAnyKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
