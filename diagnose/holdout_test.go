package diagnose

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// heldOut are sets of real logs from public issues that are not in the
// shared corpus, each row with its source. The rules were written from
// testdata/FAILURES.md and the corpus; these sets measure how they generalise.
// Rows whose family is "none" are healthy or noisy output, or failures of
// other stacks, and must stay quiet. Each set's first run was blind; what
// it missed then is recorded here, and the rule changes it led to are
// commented in rules.go with their source. Over the three sets the blind
// recall was 51/61 (83.6 %), with 27/27 healthy or unrelated rows quiet and
// one false family.
// Blind rounds (measured before rules were changed from them):
// holdout/blind/blind3 51/61 (83.6 %), blind4 31/37 (83.8 %), blind5 26/37
// (70.3 %), blind6 29/35 (82.9 %), blind7 23/32 (71.9 %), blind8 23/32
// (71.9 %), blind9 15/21 (71.4 %), blind10 18/21 (85.7 %), blind11 23/24
// (95.8 %, after the signatures mined from the tools' own messages):
// 239/300 (79.7 %) over all blind rounds. False alarms: one healthy row in
// blind4 (n07, CMake 3.x's deprecation warning, since fixed), none in
// blind5 to blind11 (79/79 healthy rows quiet), and three of blind8's
// traps, other causes printing a family's exact message.
var heldOut = []struct {
	path, firstRun string
}{
	{"testdata/holdout.jsonl", "34/37 recognised (91.9 %), 17/17 quiet, one unrelated extra family " +
		`(a "(out)" double free taken for the amdsmi one); missed: old rocBLAS wording, clang ≤ 11 "Unsupported", ` +
		"an undefined symbol from another ROCm release"},
	{"testdata/blind.jsonl", "6/10 recognised (60 %), 5/5 quiet, no extra family; missed: podman's capitalised " +
		`"Unable to find group render", and three ways flash attention says it is unavailable`},
	{"testdata/blind3.jsonl", "11/14 recognised (78.6 %), 5/5 quiet, no extra family; missed: uv's wording of an " +
		"unsatisfiable requirement (twice), and TensorFlow's loader wording of a missing libMIOpen"},
}

func TestHoldout(t *testing.T) {
	var allFailing, allHit int
	for _, set := range heldOut {
		t.Run(strings.TrimSuffix(strings.TrimPrefix(set.path, "testdata/"), ".jsonl"), func(t *testing.T) {
			failing, hit := checkHeldOut(t, set.path, nil)
			allFailing += failing
			allHit += hit
			t.Logf("first blind run: %s", set.firstRun)
		})
	}
	recall := float64(allHit) / float64(allFailing)
	t.Logf("held-out recall over all sets: %d/%d (%.1f%%)", allHit, allFailing, 100*recall)
	if recall < 0.9 {
		t.Errorf("held-out recall %.1f%% below 90%%", 100*recall)
	}
}

// checkHeldOut runs one set and returns its failing rows and how many of
// them were recognised (their family or a documented sibling). A healthy
// or unrelated row that yields a family fails the test unless knownFalse
// names it, with why.
func checkHeldOut(t *testing.T, path string, knownFalse map[string]string) (failing, hit int) {
	rows := loadSamples(t, path)
	var exact, close, quiet, healthy int
	var misses []string
	for _, row := range rows {
		got := familiesOf(t, row.Log)
		if row.Family == "none" {
			healthy++
			switch why, known := knownFalse[row.ID]; {
			case len(got) == 0:
				quiet++
			case known:
				t.Logf("known false alarm on %s (%s): %v, %s", row.ID, row.Source, got, why)
			default:
				t.Errorf("%s (%s): healthy or unrelated output yields %v", row.ID, row.Source, got)
			}
			continue
		}
		failing++
		e, c := recognised(row.Family, got)
		switch {
		case e:
			exact++
		case c:
			close++
		default:
			misses = append(misses, row.ID+" "+row.Family+" got "+strings.Join(got, ","))
		}
		if x := extras(row.Family, row.Also, got); len(x) > 0 {
			t.Errorf("%s (%s): unrelated families %v besides %s", row.ID, row.Source, x, row.Family)
		}
	}
	t.Logf("recall: %d/%d (%.1f%%: %d exact, %d documented sibling); quiet on %d/%d healthy or unrelated",
		exact+close, failing, 100*float64(exact+close)/float64(failing), exact, close, quiet, healthy)
	for _, m := range misses {
		t.Logf("missed: %s", m)
	}
	return failing, exact + close
}

// TestHeldOutSize keeps the main held-out set at the size the issue asks.
func TestHeldOutSize(t *testing.T) {
	failing, healthy := countRows(loadSamples(t, "testdata/holdout.jsonl"))
	if failing < 25 || healthy < 8 {
		t.Errorf("holdout too small: %d failing, %d healthy or unrelated (want ≥ 25 and ≥ 8)", failing, healthy)
	}
}

// countRows splits a set's rows into failure excerpts and healthy or
// unrelated ones (family "none").
func countRows(rows []sample) (failing, healthy int) {
	for _, row := range rows {
		if row.Family == "none" {
			healthy++
		} else {
			failing++
		}
	}
	return failing, healthy
}

var issueRef = regexp.MustCompile(`([\w.-]+/[\w.-]+)#(\d+)`)

// threadRefs normalises a source to repo#number keys; ROCm/ROCm and
// ROCm/legacy-rocm-build share issue numbers, so both count as one thread.
func threadRefs(source string) []string {
	var out []string
	for _, m := range issueRef.FindAllStringSubmatch(source, -1) {
		repo := strings.ToLower(m[1])
		if repo == "rocm/legacy-rocm-build" {
			repo = "rocm/rocm"
		}
		out = append(out, repo+"#"+m[2])
	}
	return out
}

// checkFresh keeps a blind set blind: every row names a thread, no thread
// appears twice, none is in an earlier set, and the set holds at least
// minFailing failure excerpts and minHealthy healthy or noisy ones.
func checkFresh(t *testing.T, path string, earlierSets []string, minFailing, minHealthy int) {
	t.Helper()
	earlier := map[string]string{}
	for _, p := range earlierSets {
		for _, row := range loadSamples(t, p) {
			for _, ref := range threadRefs(row.Source) {
				earlier[ref] = p
			}
		}
	}
	seen := map[string]string{}
	rows := loadSamples(t, path)
	for _, row := range rows {
		refs := threadRefs(row.Source)
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
	}
	failing, healthy := countRows(rows)
	if failing < minFailing || healthy < minHealthy {
		t.Errorf("%s too small: %d failing, %d healthy or noisy (want ≥ %d and ≥ %d)", path, failing, healthy, minFailing, minHealthy)
	}
}

// wordingCase is a log excerpt and the families it must yield: another
// wording of a known failure, or a near miss that must stay quiet (nil).
type wordingCase struct {
	name string
	log  []string
	want []string
}

// checkWordings runs each case through the matcher as one log.
func checkWordings(t *testing.T, cases []wordingCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got := familiesOf(t, strings.Join(tt.log, "\n"))
			if !slices.Equal(got, tt.want) {
				t.Errorf("families %v, want %v", got, tt.want)
			}
		})
	}
}

// blindSet is a blind round measured with checkHeldOut: its file, what its
// first run found (its file's comment tells the misses), the recall its
// rules reached afterwards (it may rise, it must not silently fall), its
// documented false alarms, and the size it was measured at.
type blindSet struct {
	path                   string
	firstRun               string
	minRecognised          int
	knownFalse             map[string]string
	minFailing, minHealthy int
}

// blindSets are the rounds from blind4 on, in the order they were
// collected. blind4 was once held to the issue's 90 %; the recall it
// reached since is the stricter bound.
var blindSets = []blindSet{
	{blind4Path, blind4FirstRun, 36, nil, 25, 8},
	{blind5Path, blind5FirstRun, 32, nil, 30, 10},
	{blind6Path, blind6FirstRun, 35, nil, 30, 10},
	{blind7Path, blind7FirstRun, 32, nil, 30, 10},
	{blind8Path, blind8FirstRun, 29, blind8KnownFalseAlarms, 30, 10},
	{blind9Path, blind9FirstRun, 18, nil, 20, 10},
	{blind10Path, blind10FirstRun, 20, nil, 20, 10},
	{blind11Path, blind11FirstRun, 24, nil, 20, 10},
}

// earlierThanBlind4 are the sets collected before blind4.
var earlierThanBlind4 = []string{"testdata/corpus.jsonl", "testdata/holdout.jsonl", "testdata/blind.jsonl",
	"testdata/blind3.jsonl"}

func setName(path string) string {
	return strings.TrimSuffix(strings.TrimPrefix(path, "testdata/"), ".jsonl")
}

// TestBlindSets runs each round: healthy rows quiet (or documented), no
// failing row with an unrelated family, recall at least what it reached.
func TestBlindSets(t *testing.T) {
	for _, set := range blindSets {
		t.Run(setName(set.path), func(t *testing.T) {
			failing, hit := checkHeldOut(t, set.path, set.knownFalse)
			t.Logf("first blind run: %s", set.firstRun)
			if hit < set.minRecognised {
				t.Errorf("recall %d/%d fell below the %d reached after generalising", hit, failing, set.minRecognised)
			}
		})
	}
}

// TestBlindSetsFresh keeps each round blind to every set before it.
func TestBlindSetsFresh(t *testing.T) {
	earlier := slices.Clone(earlierThanBlind4)
	for _, set := range blindSets {
		t.Run(setName(set.path), func(t *testing.T) {
			checkFresh(t, set.path, earlier, set.minFailing, set.minHealthy)
		})
		earlier = append(earlier, set.path)
	}
}
