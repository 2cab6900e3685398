package diagnose

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// coveragePath is the wordings corpus: real excerpts, each with its thread
// and date, of the families added for 2026's field failures and of other
// tools', drivers' and releases' words for older families, with the healthy
// or other-cause lines that resemble them (family "none"). Unlike the blind
// sets, the rules were written from it, so it must read 100 %: it holds
// every new pattern to a real excerpt and every trap to silence.
//
// Measured when it was collected, with the rules before these families
// (commit 335dfdc): 6 of its 38 failure rows recognised (10 counting the
// kernel's ring reset for the lost Vulkan device, its documented sibling),
// 9 of its 14 traps quiet: CUDA's words on NVIDIA cards were taken for
// three HIP families, and uv's verdict on vLLM's torch pin for an
// unreachable index. After: 38/38 and 14/14.
const coveragePath = "testdata/coverage.jsonl"

// newFamilies are the families this corpus introduced: each needs real
// excerpts from at least two threads.
var newFamilies = []string{"vulkan-device-lost", "ggml-rpc-worker-crashed", "bundled-engine-crash-gfx1151",
	"wrong-output-junk-tokens", "wrong-output-perplexity", "wrong-output-repeated-token"}

var threadURL = regexp.MustCompile(`^https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+$`)

func TestCoverage(t *testing.T) {
	rows := loadSamples(t, coveragePath)
	var failing, hit, traps, quiet int
	for _, row := range rows {
		t.Run(row.ID+"-"+row.Family, func(t *testing.T) {
			if !threadURL.MatchString(row.Source) || row.Date == "" {
				t.Errorf("source %q and date %q: want a thread's address and the date of the excerpt", row.Source, row.Date)
			}
			got := familiesOf(t, row.Log)
			if row.Family == "none" {
				traps++
				if len(got) > 0 {
					t.Errorf("trap from %s yields %v (%s)", row.Source, got, row.Note)
					return
				}
				quiet++
				return
			}
			failing++
			if x := extras(row.Family, row.Also, got); len(x) > 0 {
				t.Errorf("%s: unrelated families %v besides %s", row.Source, x, row.Family)
			}
			if _, ok := recognised(row.Family, got); !ok {
				t.Errorf("%s: want %s, got %v (%s)", row.Source, row.Family, got, row.Note)
				return
			}
			hit++
		})
	}
	t.Logf("coverage corpus: %d/%d failure rows recognised, %d/%d traps quiet", hit, failing, quiet, traps)
}

// TestNewFamiliesHaveTwoThreads keeps each new family backed by real
// excerpts from at least two threads.
func TestNewFamiliesHaveTwoThreads(t *testing.T) {
	threads := map[string]map[string]bool{}
	for _, row := range loadSamples(t, coveragePath) {
		if threads[row.Family] == nil {
			threads[row.Family] = map[string]bool{}
		}
		threads[row.Family][row.Source] = true
	}
	for _, f := range newFamilies {
		t.Run(f, func(t *testing.T) {
			if _, ok := RuleByID(f); !ok {
				t.Fatalf("no rule %s", f)
			}
			if n := len(threads[f]); n < 2 {
				t.Errorf("%d thread(s) with an excerpt, want 2 or more", n)
			}
		})
	}
}

// coveredLiterals are the patterns added with this corpus, by family and
// literal: each must match a line of one of its rows on its own (its
// regexp and exclusions, not its context). The <unusedN> runs are one
// pattern per N; one of them stands for all.
var coveredLiterals = []struct{ family, lit string }{
	{"vulkan-device-lost", "ErrorDeviceLost"},
	{"vulkan-device-lost", "vk::DeviceLostError"},
	{"vulkan-device-lost", "device lost on Vulkan"},
	{"vulkan-device-lost", "the context is lost"},
	{"gpu-ring-timeout-lockup", "but soft recovered"},
	{"ggml-rpc-worker-crashed", "returned malformed response"},
	{"ggml-rpc-worker-crashed", "GGML_ASSERT(status) failed"},
	{"ggml-rpc-worker-crashed", "version mismatch: "},
	{"bundled-engine-crash-gfx1151", "llama-server crashed at startup"},
	{"bundled-engine-crash-gfx1151", "at 100000001 ip"},
	{"bundled-engine-crash-gfx1151", "Segmentation fault"},
	{"wrong-output-junk-tokens", "<unused24><unused"},
	{"wrong-output-junk-tokens", "probability tensor contains either"},
	{"wrong-output-perplexity", "Final estimate: PPL = "},
	{"wrong-output-perplexity", `"mean_perplexity"`},
	{"wrong-output-repeated-token", "prediction aborted, token repeat limit reached"},
	{"ray-gcs-unreachable", "Failed to connect to GCS within"},
	{"ray-gcs-unreachable", "Unable to connect to GCS at"},
	{"ray-gcs-unreachable", "Failed to send request to gcs, reconnecting"},
	{"ray-gcs-unreachable", "waiting for GCS to become"},
	{"vllm-torch-version-conflict", "depends on torch=="},
	{"build-oom-killed", "or sacrifice child"},
	{"build-oom-killed", "(signal: 9, SIGKILL: kill)"},
}

func TestCoveredLiteralsHaveExcerpts(t *testing.T) {
	rows := loadSamples(t, coveragePath)
	for _, c := range coveredLiterals {
		t.Run(c.family+"/"+c.lit, func(t *testing.T) {
			ri, ok := ruleIndex[c.family]
			if !ok {
				t.Fatalf("no rule %s", c.family)
			}
			var pats []*compiled
			for i := range engine.pats {
				if p := &engine.pats[i]; p.rule == ri && p.lit == c.lit && !p.marker {
					pats = append(pats, p)
				}
			}
			if len(pats) == 0 {
				t.Fatalf("rule %s has no pattern on %q", c.family, c.lit)
			}
			for _, row := range rows {
				if row.Family != c.family && !slices.Contains(row.Also, c.family) {
					continue
				}
				for _, line := range strings.Split(row.Log, "\n") {
					clean := cleanLine([]byte(line))
					for _, p := range pats {
						if strings.Contains(string(clean), c.lit) && p.check(clean) {
							return
						}
					}
				}
			}
			t.Errorf("no excerpt of %s in %s has a line the pattern on %q matches", c.family, coveragePath, c.lit)
		})
	}
}

// TestVerifierVerdicts reads the failing line `haloforge verify` prints,
// "WRONG OUTPUT: <the evidence>", as its families: junk tokens, one
// ordinary token repeated, or a wrong answer that is neither. The lines
// follow the format of the verify command's own tests; the verdicts of a
// passing or unverified run stay quiet.
func TestVerifierVerdicts(t *testing.T) {
	checkWordings(t, []wordingCase{
		{"all exclamation marks", []string{`WRONG OUTPUT: prompt 2 answered "!!!!!!!!" (one token repeated)`}, []string{"wrong-output-junk-tokens"}},
		{"unused tokens", []string{`WRONG OUTPUT: prompt 1 answered "<unused49><unused49><unused49>" (junk tokens)`}, []string{"wrong-output-junk-tokens"}},
		{"NaN logprobs", []string{`WRONG OUTPUT: prompt 3 has NaN logprobs`}, []string{"wrong-output-junk-tokens"}},
		{"an ordinary token repeated", []string{`WRONG OUTPUT: prompt 1 answered " the the the the" (one token repeated)`}, []string{"wrong-output-repeated-token"}},
		{"a wrong answer against the reference", []string{`WRONG OUTPUT: prompt 4 answered " Berlin" where the reference answers " Paris" (3 of 16 tokens agree)`}, []string{"wrong-output-perplexity"}},
		{"a right answer", []string{`answers right: 5 of 5 prompts agree with the reference`}, nil},
		{"not verified", []string{`not verified: the model answers no known-answer prompt (random weights?)`}, nil},
	})
}
