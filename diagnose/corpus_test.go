package diagnose

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// excerpt of a public thread, as stored in testdata/*.jsonl.
type sample struct {
	ID      string `json:"id"`
	Family  string `json:"family"`
	Source  string `json:"source"`
	Date    string `json:"date"` // when the excerpt was posted (the wordings corpus)
	Log     string `json:"log"`
	Trigger string `json:"trigger"`
	Fix     string `json:"fix"`
	Note    string `json:"note"`
	// Also lists other families the excerpt really shows (a report that
	// quotes two failures); finding them is not a false alarm.
	Also []string `json:"also"`
}

func loadSamples(t testing.TB, path string) []sample {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []sample
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var s sample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func familiesOf(t testing.TB, log string) []string {
	t.Helper()
	fs, err := Scan(strings.NewReader(log), MatcherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		out = append(out, f.Family)
	}
	return out
}

// siblings are families that may stand in for an expected one, with why.
var siblings = map[string][]string{
	// testdata/FAILURES.md files the gen_ai ck header error under fbgemm-genai-link;
	// the corpus calls it fbgemm-genai-rocm-build. Same fix (USE_FBGEMM_GENAI=0).
	"fbgemm-genai-rocm-build": {"fbgemm-genai-link"},
	"fbgemm-genai-link":       {"fbgemm-genai-rocm-build"},
	// Both stall families end in the same busy-wait; the fix ladder overlaps.
	"llamacpp-rocm-load-hang-sdma":     {"llamacpp-rocm-graph-reserve-hang"},
	"llamacpp-rocm-graph-reserve-hang": {"llamacpp-rocm-load-hang-sdma"},
	// "Unable to open /dev/kfd" under a container is either family; the
	// container one names the group mapping as the cause.
	"distrobox-podman-device-group": {"kfd-permission-no-gpu"},
	"kfd-permission-no-gpu":         {"distrobox-podman-device-group"},
	// The loader's "no code object" and the launch's "invalid device
	// function" are two reports of one missing arch, often in one log.
	"hip-no-binary-for-gpu":       {"hip-invalid-device-function"},
	"hip-invalid-device-function": {"hip-no-binary-for-gpu"},
	// AITER's fp8 builtins fail with both messages on the same line.
	"aiter-fp8-conversion-insts-gfx11": {"gfx11-inline-asm-unsupported"},
	"gfx11-inline-asm-unsupported":     {"aiter-fp8-conversion-insts-gfx11"},
	// Kernels of a spoofed arch crash as an illegal instruction or as a
	// memory access fault; both hints say to remove the spoof.
	"hsa-override-spoof-crash": {"gpu-memory-access-fault"},
	"gpu-memory-access-fault":  {"hsa-override-spoof-crash"},
	// A ring timeout is the kernel's view of the hang the runtime reports
	// as "HW Exception … GPU Hang"; both hints lead to a kernel with the KFD fixes.
	"amdgpu-mes-hang": {"gpu-hang-cwsr"},
	"gpu-hang-cwsr":   {"amdgpu-mes-hang"},
	// The kernel's reset of a job past the watchdog and the Vulkan driver's
	// lost device are two views of one event; both hints raise the watchdog.
	"gpu-ring-timeout-lockup": {"vulkan-device-lost"},
	"vulkan-device-lost":      {"gpu-ring-timeout-lockup"},
	// A runtime that crashes while it opens the GPU, seen from rocminfo or
	// torch, or from an engine that bundles it: one crash, two places to fix.
	"hsa-runtime-segfault-init":    {"bundled-engine-crash-gfx1151"},
	"bundled-engine-crash-gfx1151": {"hsa-runtime-segfault-init"},
}

// extras returns the families in got that are neither want, one of its
// documented siblings nor one the excerpt also shows: false alarms.
func extras(want string, also, got []string) []string {
	var out []string
	for _, g := range got {
		if g != want && !slices.Contains(siblings[want], g) && !slices.Contains(also, g) {
			out = append(out, g)
		}
	}
	return out
}

// recognised reports whether got holds want itself (exact) or a documented
// sibling (close).
func recognised(want string, got []string) (exact, close bool) {
	if slices.Contains(got, want) {
		return true, true
	}
	for _, s := range siblings[want] {
		if slices.Contains(got, s) {
			return false, true
		}
	}
	return false, false
}

// unmatchable are corpus rows whose excerpt holds no failure text at all:
// the failure is only named in the title. Matching them would
// need a rule that fires on healthy text. They must stay quiet instead.
var unmatchable = map[string]string{
	"f080": "the excerpt is the launch banner and the first frames of a traceback; 'No HIP GPUs are available' is only in the issue title",
}

func TestCorpus(t *testing.T) {
	rows := loadSamples(t, "testdata/corpus.jsonl")
	var failing, hit int
	for _, row := range rows {
		t.Run(row.ID+"-"+row.Family, func(t *testing.T) {
			got := familiesOf(t, row.Log)
			if row.Family == "none" {
				if len(got) > 0 {
					t.Errorf("healthy excerpt from %s yields %v", row.Source, got)
				}
				return
			}
			if why, ok := unmatchable[row.ID]; ok {
				if len(got) > 0 {
					t.Errorf("unmatchable row (%s) yields %v: a rule fires on unrelated text", why, got)
				}
				return
			}
			failing++
			if x := extras(row.Family, row.Also, got); len(x) > 0 {
				t.Errorf("%s (%s): unrelated families %v besides %s", row.ID, row.Source, x, row.Family)
			}
			if _, ok := recognised(row.Family, got); !ok {
				t.Errorf("%s (%s): want %s, got %v\ntrigger: %s", row.ID, row.Source, row.Family, got, row.Trigger)
				return
			}
			hit++
		})
	}
	t.Logf("corpus recall: %d/%d failure rows (%.1f%%), %d documented unmatchable", hit, failing, 100*float64(hit)/float64(failing), len(unmatchable))
	if hit != failing {
		t.Errorf("corpus recall below 100%%")
	}
}
