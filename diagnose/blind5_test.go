package diagnose

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// blind5 is a fifth held-out set, collected from public issues after the
// rules were generalised, to measure the rules as they are on logs nobody
// has tuned against: 37 failure excerpts over 28 of the 37 FAILURES.md
// families and 12 healthy or noisy excerpts, none from a thread (counting
// ROCm/ROCm and ROCm/legacy-rocm-build numbers as one) or with a log already
// in corpus, holdout, blind, blind3 or blind4 (TestBlind5Fresh checks the
// threads). Labels come from reading each thread, not from what the rules
// report; a thread whose failure fits no family exactly carries the closest
// family whose fix would help, with a note. No rule was changed for it.
//
// First run (rules.go as of 2026-11-22): 26/37 recognised (70.3 %, all
// exact), 12/12 healthy rows quiet, one failing row with an extra family.
// Misses:
//   - b05 ttm-gtt-config: the reporter only says "I saw a “Deprecated”
//     warning"; the kernel's gttsize text is not quoted (kyuz0/amd-strix-halo-toolboxes#39);
//   - b10 rocm-version-mix-undefined-symbol: libMIOpen.so.1 misses a
//     composable_kernel C++ symbol under a self-built /home/…/rocm-install
//     prefix, neither hsa_ nor a /rocm-X.Y path (ROCm/pytorch#2893);
//   - b13 gfx-arch-not-in-allowlist: AITER's "Unknown gfx 'gfx1100' in
//     GPU_ARCHS" is not the "Unknown GPU architecture: gfx" wording, and the
//     quoted "One of GPU archs of ['gfx1100'] is invalid" fires
//     vllm-aiter-arch-invalid instead (ROCm/aiter#4512, see the extra below);
//   - b16 sdpa-flash-attn-not-available: "Flash attention was not compiled
//     for current AMD GPU architecture" is not "not compiled with flash
//     attention" (ROCm/TheRock#1908);
//   - b19 hip-oom-apu-gtt: ds4's own "ROCm tensor alloc failed: out of
//     memory", no HIP/hipMalloc wording (antirez/ds4#475);
//   - b23 hsa-runtime-segfault-init: "SIGSEGV (exit 139), no traceback"
//     after torch.cuda.is_available(), without the words "Segmentation
//     fault" (kyuz0/amd-strix-halo-vllm-toolboxes#61);
//   - b24 hip-invalid-image: "executable_load failed (0x1010)", the HSA
//     status only as a number (Zaneham/Booth#44);
//   - b28 rocm-device-lib-not-found: a reporter's analysis naming
//     --rocm-device-lib-path and missing oclc_*.bc files, no clang error
//     (ROCm/TheRock#5448);
//   - b29 therock-hip-lang-cmake-missing: find_package(hip) cannot find
//     hip-config.cmake with pip-installed ROCm; the rule knows only the
//     hip-lang package (ggml-org/llama.cpp#26060);
//   - b35 vllm-aiter-arch-invalid: prose only, "an error related to aiter
//     not being available for the compute type" (ROCm/aiter#3294);
//   - b36 hsa-override-spoof-crash: a wrong HSA_OVERRIDE_GFX_VERSION crashes
//     the kernel ("KFD node 0 ih_fifo overflow"), not an Illegal instruction
//     (ROCm/rocm-systems#3531).
//
// False alarms on healthy rows: none on the first run.
const blind5FirstRun = "26/37 recognised (70.3 %), 12/12 healthy quiet, 1 extra family (b13); " +
	"missed: quoted-only gttsize warning, CK symbol in a self-built MIOpen, AITER \"Unknown gfx … in GPU_ARCHS\", " +
	"\"Flash attention was not compiled for current AMD GPU architecture\", ds4 \"ROCm tensor alloc failed\", " +
	"SIGSEGV without \"Segmentation fault\", HSA status 0x1010, prose --rocm-device-lib-path, hip-config.cmake, " +
	"prose AITER error, kernel crash under a wrong spoof"

const blind5Path = "testdata/blind5.jsonl"

// blind5MinRecognised is the number of failing rows recognised on the first
// run: recall may rise, it must not silently fall.
const blind5MinRecognised = 26

// blind5KnownFalseAlarms are healthy rows the current rules flag, with why;
// their sub-tests skip so the lead sees them without a failing build. Empty:
// the first run flagged none.
var blind5KnownFalseAlarms = map[string]string{}

// blind5KnownExtras are failing rows that also gain an unrelated family on
// the first run, reported rather than fixed here.
var blind5KnownExtras = map[string]string{
	"b13": "AITER's own JIT arch assertion \"One of GPU archs of ['gfx1100'] is invalid or not supported\" " +
		"(no vLLM, no VLLM_ROCM_USE_AITER) fires vllm-aiter-arch-invalid, whose hint is to unset VLLM_ROCM_USE_AITER; " +
		"the thread's fix adds the arch to AITER's allow-list (ROCm/aiter#4512)",
}

// TestBlind5Recall measures the rules on blind5's failing rows.
func TestBlind5Recall(t *testing.T) {
	var failing, exact, close int
	for _, row := range loadSamples(t, blind5Path) {
		if row.Family == "none" {
			continue
		}
		failing++
		got := familiesOf(t, row.Log)
		e, c := recognised(row.Family, got)
		switch {
		case e:
			exact++
		case c:
			close++
		default:
			t.Logf("missed: %s %s (%s) got %v", row.ID, row.Family, row.Source, got)
		}
		if x := extras(row.Family, row.Also, got); len(x) > 0 {
			if why, ok := blind5KnownExtras[row.ID]; ok {
				t.Logf("known extra on %s: %v (%s)", row.ID, x, why)
				continue
			}
			t.Errorf("%s (%s): unrelated families %v besides %s", row.ID, row.Source, x, row.Family)
		}
	}
	hit := exact + close
	t.Logf("first blind run: %s", blind5FirstRun)
	t.Logf("blind5 recall now: %d/%d (%.1f%%: %d exact, %d sibling)", hit, failing, 100*float64(hit)/float64(failing), exact, close)
	if hit < blind5MinRecognised {
		t.Errorf("blind5 recall %d/%d fell below the %d measured on the first run", hit, failing, blind5MinRecognised)
	}
}

// TestBlind5Healthy checks that every healthy or noisy row stays quiet.
func TestBlind5Healthy(t *testing.T) {
	for _, row := range loadSamples(t, blind5Path) {
		if row.Family != "none" {
			continue
		}
		t.Run(row.ID, func(t *testing.T) {
			got := familiesOf(t, row.Log)
			if why, ok := blind5KnownFalseAlarms[row.ID]; ok {
				t.Skipf("known false alarm %v, left for the lead: %s", got, why)
			}
			if len(got) > 0 {
				t.Errorf("healthy excerpt from %s yields %v", row.Source, got)
			}
		})
	}
}

var blind5IssueRef = regexp.MustCompile(`([\w.-]+/[\w.-]+)#(\d+)`)

// blind5Refs normalises a source to repo#number keys; ROCm/ROCm and
// ROCm/legacy-rocm-build share issue numbers, so both count as one thread.
func blind5Refs(source string) []string {
	var out []string
	for _, m := range blind5IssueRef.FindAllStringSubmatch(source, -1) {
		repo := strings.ToLower(m[1])
		if repo == "rocm/legacy-rocm-build" {
			repo = "rocm/rocm"
		}
		out = append(out, repo+"#"+m[2])
	}
	return out
}

// TestBlind5Fresh keeps blind5 blind: every row names a thread, no thread
// appears twice, none is already in the corpus or an earlier held-out set,
// and the set stays at the size the measurement was made on.
func TestBlind5Fresh(t *testing.T) {
	earlier := map[string]string{}
	for _, p := range []string{"testdata/corpus.jsonl", "testdata/holdout.jsonl", "testdata/blind.jsonl", "testdata/blind3.jsonl", "testdata/blind4.jsonl"} {
		for _, row := range loadSamples(t, p) {
			for _, ref := range blind5Refs(row.Source) {
				earlier[ref] = p
			}
		}
	}
	seen := map[string]string{}
	var failing, healthy int
	for _, row := range loadSamples(t, blind5Path) {
		refs := blind5Refs(row.Source)
		if len(refs) == 0 {
			t.Errorf("%s: source %q names no owner/repo#number thread", row.ID, row.Source)
		}
		slices.Sort(refs)
		for _, ref := range slices.Compact(refs) {
			if p, ok := earlier[ref]; ok {
				t.Errorf("%s: %s is already in %s", row.ID, ref, p)
			}
			if id, ok := seen[ref]; ok {
				t.Errorf("%s: %s is also row %s", row.ID, ref, id)
			}
			seen[ref] = row.ID
		}
		if row.Family == "none" {
			healthy++
		} else {
			failing++
		}
	}
	if failing < 30 || healthy < 10 {
		t.Errorf("blind5 too small: %d failing, %d healthy or noisy (want ≥ 30 and ≥ 10)", failing, healthy)
	}
}
