package diagnose

import (
	"slices"
	"strings"
	"testing"
)

// blind10 is a tenth held-out set, collected after a second layer of
// broader same-line signatures had landed (commit 6685ec1), from less-known
// repositories: 21 failure excerpts and 10 healthy ones, none from a thread
// in any earlier set (TestBlind10Fresh).
//
// First run (rules.go as of commit 6685ec1): 18/21 recognised (85.7 %),
// 10/10 healthy quiet, no extra family. The same 18 were recognised by the
// rules before either broader layer (commit b332bb1): the layers caught
// nothing here either; this round's wordings were simply more common.
// Misses:
//   - k06 hip-invalid-image: HIP's "invalid kernel file"
//     (hipErrorInvalidKernelFile) for gfx1201 kernels on a gfx1200
//     (danielblnc/DLSS-NR-on-AMD#29);
//   - k22 hip-oom-apu-gtt: old ggml's "CUDA error: out of memory" on ROCm,
//     told apart from NVIDIA's only by the "hipMalloc(…)" call on the next
//     line (ollama/ollama#738);
//   - k23 vulkan-device-memory-limit: RADV's "Not enough memory for command
//     submission" (leejet/stable-diffusion.cpp#2015).
//
// After generalising: 20/21. k22 stays missed: the only ROCm mark comes
// after the error, and the matcher reads no line ahead.
const blind10FirstRun = "18/21 recognised (85.7 %), 10/10 healthy quiet, no extra family; missed: HIP \"invalid kernel file\", " +
	"ggml \"CUDA error: out of memory\" on ROCm, RADV \"Not enough memory for command submission\""

const blind10Path = "testdata/blind10.jsonl"

// blind10MinRecognised is the recall reached after generalising.
const blind10MinRecognised = 20

// TestBlind10 runs the matcher over blind10.
func TestBlind10(t *testing.T) {
	failing, hit := checkHeldOut(t, blind10Path, nil)
	t.Logf("first blind run: %s", blind10FirstRun)
	if hit < blind10MinRecognised {
		t.Errorf("blind10 recall %d/%d fell below the %d reached after generalising", hit, failing, blind10MinRecognised)
	}
}

// TestBlind10Fresh keeps blind10 blind to every set before it.
func TestBlind10Fresh(t *testing.T) {
	checkFresh(t, blind10Path, []string{"testdata/corpus.jsonl", "testdata/holdout.jsonl", "testdata/blind.jsonl",
		"testdata/blind3.jsonl", "testdata/blind4.jsonl", blind5Path, blind6Path, blind7Path, blind8Path, blind9Path}, 20, 10)
}

// TestBlind10Generalised checks the signatures learnt from blind10's misses
// on other wordings and near misses.
func TestBlind10Generalised(t *testing.T) {
	tests := []struct {
		name string
		log  []string
		want []string
	}{
		{"hipModuleLoad of a file for another target", []string{
			"hipModuleLoad(&module, \"kernels.hsaco\") failed: hipErrorInvalidKernelFile",
		}, []string{"hip-invalid-image"}},
		{"a kernel file loaded", []string{
			"loaded kernel file kernels_gfx1151.hsaco (42 kernels)",
		}, nil},
		{"RADV out of memory for a submission", []string{
			"radv/amdgpu: Not enough memory for command submission.",
		}, []string{"vulkan-device-memory-limit"}},
		{"RADV submits", []string{
			"radv/amdgpu: command submission 1234 done in 3 ms",
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := familiesOf(t, strings.Join(tt.log, "\n"))
			if !slices.Equal(got, tt.want) {
				t.Errorf("families %v, want %v", got, tt.want)
			}
		})
	}
}
