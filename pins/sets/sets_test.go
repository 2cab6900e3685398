package sets

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/haloforge/haloforge/pins"
)

var now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func TestBuiltinSets(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]Set{}
	recommended := 0
	for _, s := range all {
		ids[s.ID] = s
		if s.Status == Recommended {
			recommended++
		}
		for _, e := range s.Evidence {
			if !strings.HasPrefix(e, "https://") {
				t.Errorf("%s: evidence %q", s.ID, e)
			}
		}
		for _, p := range s.File.Pins {
			if p.Comment == "" {
				t.Errorf("%s: %s has no source comment above it", s.ID, p.Name)
			}
		}
	}
	if recommended != 1 {
		t.Errorf("%d recommended sets; want exactly one", recommended)
	}
	for _, id := range []string{"rocm-7.14", "rocm-10.0", "seed-source-stable", "seed-nightly-2025-12"} {
		if _, ok := ids[id]; !ok {
			t.Errorf("no set %s", id)
		}
	}
	if all[0].ID != "rocm-10.0" || all[0].Status != Recommended {
		t.Errorf("the recommended set, rocm-10.0, comes first; got %s [%s]", all[0].ID, all[0].Status)
	}
	// The ROCm 10 set is the default: the same torch/vLLM/AITER as the 7.14 stack on ROCm 10.0.0
	// from the stable stream's central index; the 7.14 set is kept as previous, with its archive note.
	for id, want := range map[string]map[string]string{
		"rocm-10.0": {"ROCM_VERSION": "10.0.0", "TORCH_VERSION": "2.11.0+rocm10.0.0", "TORCHVISION_VERSION": "0.26.0+rocm10.0.0",
			"TORCHAUDIO_VERSION": "2.11.0+rocm10.0.0", "THEROCK_INDEX_URL": "https://stable.repo.amd.com/rocm/whl-next/",
			"AITER_REF": "31350226161346314b3d8882c8085bd31dce6a34", "VLLM_REF": "6e448d0ea9bf3d88d898b65449ca6dc2aec170ac",
			"PYTHON_VERSION": "3.12", "CK_REF": "rocm-10.0.0"},
		"rocm-7.14": {"ROCM_VERSION": "7.14.0", "TORCH_VERSION": "2.11.0+rocm7.14.0", "TORCHVISION_VERSION": "0.26.0+rocm7.14.0",
			"TORCHAUDIO_VERSION": "2.11.0+rocm7.14.0", "THEROCK_INDEX_URL": "https://repo.amd.com/rocm/whl-multi-arch/",
			"AITER_REF": "31350226161346314b3d8882c8085bd31dce6a34", "VLLM_REF": "6e448d0ea9bf3d88d898b65449ca6dc2aec170ac",
			"PYTHON_VERSION": "3.12", "CK_REF": "rocm-7.14.0"},
	} {
		v := ids[id].Values()
		for name, w := range want {
			if v[name] != w {
				t.Errorf("%s %s = %q, want %q", id, name, v[name], w)
			}
		}
	}
	if s := ids["rocm-7.14"]; s.Status != Previous || !strings.Contains(s.Note, "archives.repo.amd.com") || !strings.Contains(s.Note, "mid-December 2026") {
		t.Errorf("rocm-7.14 is %s with note %q; want previous, with the archive note", s.Status, s.Note)
	}
	if _, err := Lookup("rocm-7.14"); err != nil {
		t.Error(err)
	}
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), "known sets: rocm-10.0, rocm-7.14") {
		t.Errorf("Lookup(nope) = %v", err)
	}
}

func TestParseRejects(t *testing.T) {
	const head = "# id: x\n# title: T\n# status: validated\n# evidence: https://example.org/e\n"
	tests := []struct {
		name, in string
		line     int
		reason   string
	}{
		{"no id", "# title: T\n# status: validated\n# evidence: https://e.org/\n\nGPU_TARGET=gfx1151\n", 1, "header lacks id"},
		{"bad status", "# id: x\n# title: T\n# status: great\n# evidence: https://e.org/\nGPU_TARGET=gfx1151\n", 3, "want one of recommended"},
		{"unknown key", "# id: x\n# author: me\n", 2, "header lines are `# key: value`"},
		{"http evidence", "# id: x\n# title: T\n# status: history\n# evidence: http://e.org/\nGPU_TARGET=gfx1151\n", 4, "want an https URL"},
		{"two ids", "# id: x\n# id: y\n", 2, "want one lower-case id"},
		{"upper-case id", "# id: X\n", 1, "want one lower-case id"},
		{"no pins", head + "\n# only comments\n", 1, "no pins"},
		{"hostile pin", head + "\nVLLM_REF=$(touch /tmp/x)\n", 6, "command substitution"},
		{"unknown pin", head + "NOT_A_PIN=1\n", 5, "unknown name NOT_A_PIN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("s.env", []byte(tc.in))
			var pe *pins.Error
			if err == nil || !errors.As(err, &pe) || pe.Line != tc.line || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("Parse = %v; want s.env:%d: …%s", err, tc.line, tc.reason)
			}
		})
	}
}

func TestLoadRejectsDuplicateIDs(t *testing.T) {
	set := "# id: same\n# title: T\n# status: history\n# evidence: https://e.org/\nGPU_TARGET=gfx1151\n"
	_, err := load(fstest.MapFS{"a.env": {Data: []byte(set)}, "b.env": {Data: []byte(set)}})
	if err == nil || !strings.Contains(err.Error(), "id same is also a.env's") {
		t.Errorf("load = %v", err)
	}
}

func mustSet(t *testing.T, body string) Set {
	t.Helper()
	s, err := Parse("set.env", []byte("# id: test-set\n# title: A test set\n# status: candidate\n# evidence: https://example.org/evidence\n\n"+body))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestApply(t *testing.T) {
	tests := []struct {
		name, file, set, want string
	}{
		{"a changed value keeps its comment and place",
			"# header\n\n# the source of ROCm\nROCM_VERSION=7.14.0\n# vLLM\nVLLM_REF=main\n",
			"ROCM_VERSION=10.0.0\n",
			"# header\n\n# the source of ROCm\nROCM_VERSION=10.0.0\n# vLLM\nVLLM_REF=main\n"},
		{"a reference that comes out right stays",
			"ROCM_VERSION=7.14.0\nTORCH_VERSION=2.11.0+rocm${ROCM_VERSION}\n",
			"ROCM_VERSION=10.0.0\nTORCH_VERSION=2.11.0+rocm10.0.0\n",
			"ROCM_VERSION=10.0.0\nTORCH_VERSION=2.11.0+rocm${ROCM_VERSION}\n"},
		{"a reference that comes out wrong becomes the value",
			"ROCM_VERSION=7.14.0\nTORCH_VERSION=2.11.0+rocm${ROCM_VERSION}\n",
			"ROCM_VERSION=10.0.0\nTORCH_VERSION=2.13.0+rocm10.0.0\n",
			"ROCM_VERSION=10.0.0\nTORCH_VERSION=2.13.0+rocm10.0.0\n"},
		{"quotes, indentation and a trailing comment",
			"  VLLM_IMAGE=\"docker.io/rocm/vllm-dev:nightly\"  # floats\nGPU_TARGET='gfx1151'\n",
			"VLLM_IMAGE=docker.io/rocm/vllm:v1\nGPU_TARGET='gfx1151;gfx1100'\n",
			"  VLLM_IMAGE=docker.io/rocm/vllm:v1  # floats\nGPU_TARGET='gfx1151;gfx1100'\n"},
		{"missing names are appended in one marked block",
			"GPU_TARGET=gfx1151",
			"GPU_TARGET=gfx1151\nTHEROCK_REF=418cd5f63abb7a604bad5874cd7b2e29334e640f\nLLAMA_STALL_TIMEOUT=600\n",
			"GPU_TARGET=gfx1151\n\n# ---- added by `haloforge pins use test-set` on 2026-11-24 ----\n# A test set (https://example.org/evidence)\nTHEROCK_REF=418cd5f63abb7a604bad5874cd7b2e29334e640f\nLLAMA_STALL_TIMEOUT=600\n"},
		{"an empty optional pin the file lacks is already right: no line added",
			"GPU_TARGET=gfx1151\n",
			"GPU_TARGET=gfx1151\nTORCH_INDEX_URL=\n",
			"GPU_TARGET=gfx1151\n"},
		{"an empty optional pin the file sets is cleared in place",
			"TORCH_INDEX_URL=https://example.org/simple/\nGPU_TARGET=gfx1151\n",
			"TORCH_INDEX_URL=\n",
			"TORCH_INDEX_URL=\nGPU_TARGET=gfx1151\n"},
		{"nothing to change leaves every byte",
			"# c\nGPU_TARGET=gfx1151\n\n",
			"GPU_TARGET=gfx1151\n",
			"# c\nGPU_TARGET=gfx1151\n\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Apply("versions.env", []byte(tc.file), mustSet(t, tc.set), now)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	if _, err := Apply("bad.env", []byte("VLLM_REF=$(x)\n"), mustSet(t, "VLLM_REF=main\n"), now); err == nil || !strings.Contains(err.Error(), "bad.env:1:10") {
		t.Errorf("a bad file: %v", err)
	}
}

// TestApplyShippedVersionsEnv: every built-in set writes into the real
// versions.env, keeps every line that is not one of its pins, and gives
// exactly its values.
func TestApplyShippedVersionsEnv(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	orig, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		got, err := Apply("versions.env", orig, s, now)
		if err != nil {
			t.Errorf("%s: %v", s.ID, err)
			continue
		}
		f, err := pins.Parse("versions.env", got)
		if err != nil {
			t.Fatalf("%s: %v", s.ID, err)
		}
		for name, want := range s.Values() {
			if f.Values()[name] != want {
				t.Errorf("%s: %s = %q, want %q", s.ID, name, f.Values()[name], want)
			}
		}
		setNames := map[string]bool{}
		for _, n := range s.Names() {
			setNames[n] = true
		}
		oldLines, newLines := strings.Split(string(orig), "\n"), strings.Split(string(got), "\n")
		if len(newLines) < len(oldLines) {
			t.Fatalf("%s: lines were lost", s.ID)
		}
		for i, l := range oldLines {
			name, _, isPin := strings.Cut(l, "=")
			if isPin && setNames[name] {
				continue
			}
			if newLines[i] != l {
				t.Errorf("%s: line %d changed: %q → %q", s.ID, i+1, l, newLines[i])
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	all, _ := All()
	for _, s := range all {
		data, _ := os.ReadFile(filepath.Base(s.File.Path))
		f.Add(data)
	}
	f.Add([]byte("# id: x\n# title: t\n# status: history\n# evidence: https://a/\nGPU_TARGET=gfx1151\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.env", data)
		if err != nil {
			return
		}
		if s.ID == "" || s.Title == "" || len(s.Evidence) == 0 || len(s.File.Pins) == 0 {
			t.Fatalf("accepted an incomplete set %+v", s)
		}
	})
}

func FuzzApply(f *testing.F) {
	f.Add([]byte("ROCM_VERSION=7.14.0\nTORCH_VERSION=2.11.0+rocm${ROCM_VERSION}  # c\n"))
	f.Add([]byte("  GPU_TARGET='gfx1151' \n"))
	set := Set{ID: "fz", Title: "fuzz", Evidence: []string{"https://e/"}}
	sf, _ := pins.Parse("set.env", []byte("GPU_TARGET='gfx1151;gfx1100'\nROCM_VERSION=10.0.0\nTORCH_VERSION=2.13.0+rocm10.0.0\n"))
	set.File = sf
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := pins.Parse("v.env", data); err != nil {
			return
		}
		got, err := Apply("v.env", data, set, now)
		if err != nil {
			return // refused, with a reason: fine
		}
		f, err := pins.Parse("v.env", got)
		if err != nil {
			t.Fatalf("Apply wrote a file that does not parse: %v\n%q", err, got)
		}
		for n, v := range set.Values() {
			if f.Values()[n] != v {
				t.Fatalf("%s = %q after Apply", n, f.Values()[n])
			}
		}
	})
}

// TestDifferencesAbsentIsEmpty: the scripts read an absent pin as empty, so
// a set that clears an optional pin matches a file without that name, and
// differs from one that sets it.
func TestDifferencesAbsentIsEmpty(t *testing.T) {
	s := mustSet(t, "GPU_TARGET=gfx1151\nTORCH_INDEX_URL=\n")
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"GPU_TARGET=gfx1151\n", nil},
		{"GPU_TARGET=gfx1151\nTORCH_INDEX_URL=\n", nil},
		{"GPU_TARGET=gfx1151\nTORCH_INDEX_URL=https://example.org/simple/\n", []string{"TORCH_INDEX_URL"}},
		{"TORCH_INDEX_URL=\n", []string{"GPU_TARGET"}},
	} {
		f, err := pins.Parse("versions.env", []byte(tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Differences(f); !slices.Equal(got, tc.want) {
			t.Errorf("%q: differences %v, want %v", tc.file, got, tc.want)
		}
	}
}
