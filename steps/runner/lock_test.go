package runner

import (
	"strings"
	"testing"

	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
)

func lockSnapshot(t *testing.T, text string) *pins.File {
	t.Helper()
	pf, err := pins.Parse("pins.env", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return pf
}

// TestLockLocksOnlyWhatTheStepsThatReadAPinAgreeOn: a fact counts for the
// pins its step reads; two steps that got two commits for one ref lock
// nothing; a fact of another repository does not lock the ref.
func TestLockLocksOnlyWhatTheStepsThatReadAPinAgreeOn(t *testing.T) {
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	rep := &Report{RunID: "20261124-101500-a1b2c3", Track: "fx", Status: steps.OutcomeSucceeded, Steps: []StepReport{
		{ID: "one", Status: steps.OutcomeSucceeded, Pins: map[string]string{"VLLM_REF": "main", "AITER_REF": "main"},
			Resolved: &Resolved{Git: []ResolvedGit{{Repo: "https://g/vllm.git", Ref: "main", SHA: a}}}},
		{ID: "two", Status: steps.OutcomeSucceeded, Pins: map[string]string{"VLLM_REF": "main"},
			Resolved: &Resolved{Git: []ResolvedGit{{Repo: "https://g/vllm.git", Ref: "main", SHA: b}}}},
		{ID: "three", Status: steps.OutcomeSucceeded, Pins: map[string]string{"FLASH_ATTENTION_REF": "main", "FLASH_ATTENTION_REPO": "https://g/fa.git"},
			Resolved: &Resolved{Git: []ResolvedGit{{Repo: "https://g/other.git", Ref: "main", SHA: a}}}},
	}}
	snap := lockSnapshot(t, "VLLM_REF='main'\nAITER_REF='main'\nFLASH_ATTENTION_REF='main'\nFLASH_ATTENTION_REPO='https://g/fa.git'\n")
	res, err := Lock(LockInput{Report: rep, Snapshot: snap})
	if err != nil {
		t.Fatal(err)
	}
	pf := lockSnapshot(t, string(res.Data))
	for name, want := range map[string]string{"VLLM_REF": "main", "AITER_REF": a, "FLASH_ATTENTION_REF": "main"} {
		if p, _ := pf.Get(name); p.Value != want {
			t.Errorf("%s=%s, want %s:\n%s", name, p.Value, want, res.Data)
		}
	}
	// main is a branch: what stays main still floats.
	if strings.Join(res.Floating, ",") != "VLLM_REF,FLASH_ATTENTION_REF" {
		t.Errorf("floating %v, want VLLM_REF and FLASH_ATTENTION_REF", res.Floating)
	}
}

// TestLockPinsPyTorchsBranchToItsCommit: the aotriton step records the
// upstream commit TheRock checked out for PYTORCH_REF=release/2.11; TheRock
// fetches a commit as well as a name, so the lock writes the commit (a
// clone --branch pin such as LLAMACPP_REF keeps its name).
func TestLockPinsPyTorchsBranchToItsCommit(t *testing.T) {
	c, d := strings.Repeat("c", 40), strings.Repeat("d", 40)
	rep := &Report{RunID: "20261124-101500-a1b2c3", Track: "fx", Status: steps.OutcomeSucceeded, Steps: []StepReport{
		{ID: "aotriton", Status: steps.OutcomeSucceeded, Pins: map[string]string{"PYTORCH_REF": "release/2.11", "PYTORCH_REPO": "https://github.com/ROCm/pytorch.git"},
			Resolved: &Resolved{Git: []ResolvedGit{{Repo: "https://github.com/ROCm/pytorch.git", Ref: "release/2.11", SHA: c}}}},
		{ID: "vulkan", Status: steps.OutcomeSucceeded, Pins: map[string]string{"LLAMACPP_REF": "b6000"},
			Resolved: &Resolved{Git: []ResolvedGit{{Repo: "https://github.com/ggml-org/llama.cpp.git", Ref: "b6000", SHA: d}}}},
	}}
	snap := lockSnapshot(t, "PYTORCH_REPO='https://github.com/ROCm/pytorch.git'\nPYTORCH_REF='release/2.11'\nLLAMACPP_REF='b6000'\n")
	res, err := Lock(LockInput{Report: rep, Snapshot: snap})
	if err != nil {
		t.Fatal(err)
	}
	pf := lockSnapshot(t, string(res.Data))
	for name, want := range map[string]string{"PYTORCH_REF": c, "LLAMACPP_REF": "b6000"} {
		if p, _ := pf.Get(name); p.Value != want {
			t.Errorf("%s=%s, want %s:\n%s", name, p.Value, want, res.Data)
		}
	}
}

func FuzzFactLine(f *testing.F) {
	for _, s := range []string{
		"image\tdocker.io/x:1\tsha256:" + strings.Repeat("a", 64),
		"wheel\ttorch==2.11.0+rocm7.14.0\thttps://x/t.whl\t" + strings.Repeat("c", 64),
		"git\t/src/r\tv1\t" + strings.Repeat("b", 40),
		"git\thttps://u:p@x/r\tmain\t" + strings.Repeat("b", 40),
		"\x1b]0;x\x07\t\t\t",
		"time\tengine\t1216",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		var sf stepFacts
		if err := sf.add(line); err != nil {
			return
		}
		// Whatever was accepted is safe to write into a pins comment and a
		// report: no control characters, no quote that ends a value.
		strs := factStrings(sf.resolved)
		for name, d := range sf.times {
			strs = append(strs, name)
			if d < 0 {
				t.Errorf("accepted a negative time: %q", line)
			}
		}
		for _, s := range []string{strings.Join(strs, "")} {
			if strings.ContainsAny(s, "\x00\x1b\x07\n\r'\"`$\\ ") {
				t.Errorf("accepted %q", line)
			}
		}
	})
}

func factStrings(r Resolved) []string {
	var out []string
	for _, x := range r.Images {
		out = append(out, x.Ref, x.Digest)
	}
	for _, x := range r.Wheels {
		out = append(out, x.Name, x.Version, x.URL, x.SHA256)
	}
	for _, x := range r.Git {
		out = append(out, x.Repo, x.Ref, x.SHA)
	}
	return out
}
