package diagnose

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Rule recognises one failure family (docs/ids.md) and says what to do.
type Rule struct {
	ID      string   // stable public code (the family ID, docs/ids.md)
	Title   string   // short human title
	Summary string   // one line: what the log shows and what it means
	Cause   string   // why it happens
	Fix     string   // exact commands and variables, one per line
	Links   []string // public issues where it was reported or solved
	// Steps and Tracks say where the rule applies; empty means everywhere.
	// A matcher created for a step or track outside them ignores the rule.
	Steps, Tracks []string
	// ExceptSteps are steps where the signature is normal output.
	ExceptSteps []string
	// Signals are the log lines the rule looks for, for people to read.
	Signals []string
	Stall   bool // a hang family: found by the stall rules, not by one line
	Seed    bool // built from the design notes' signature, no public excerpt yet
	// Ladder is the walkthrough of a hang family: a hang has no error line
	// to fix, so the user climbs from the cheapest check to the fallback,
	// stopping at the first rung that works. Nil for other families.
	Ladder []Rung
	pats   []pat
}

// Rung is one thing to try on a hang, with how to try it.
type Rung struct {
	Try string `json:"try"`
	How string `json:"how"`
}

// LadderTitle introduces a ladder wherever it is shown.
const LadderTitle = "A hang has no error line: climb the ladder, stop at the first rung that works"

// Ladder returns the walkthrough of a family, nil when it has none.
func Ladder(family string) []Rung {
	r, ok := RuleByID(family)
	if !ok {
		return nil
	}
	return r.Ladder
}

// LadderLines renders a family's ladder as numbered plain lines
// ("1. Try: how"), for line mode and `diagnose`; nil when it has none.
func LadderLines(family string) []string {
	l := Ladder(family)
	if len(l) == 0 {
		return nil
	}
	out := make([]string, 0, len(l))
	for i, r := range l {
		out = append(out, fmt.Sprintf("%d. %s: %s", i+1, r.Try, r.How))
	}
	return out
}

// pat is one way a rule recognises a line. The literal is searched in bulk;
// the rest is only checked on the few lines that contain it.
type pat struct {
	lit    string   // required substring of the clean line (case-sensitive, ≥ minLiteral bytes)
	re     string   // optional regexp the clean line must match too
	not    []string // the line must not contain any of these
	after  []string // context literals, one of which must have appeared before…
	within int      // …at most this many lines before (0: anywhere before)
	// unless are context literals that veto the pattern when one appeared
	// before, at most unlessWithin lines before (0: anywhere before): the
	// same words from another cause (a device lost right after a failed
	// allocation is out of memory) or another vendor's stack (a CUDA error
	// after an NVIDIA device banner is not a HIP failure).
	unless       []string
	unlessWithin int
	marker       bool // a hang-prone marker for the stall rules, not a finding
}

// compiled is a pat ready to check a line.
type compiled struct {
	pat
	rule int
	re   *regexp.Regexp
	nots [][]byte
}

// applies reports whether the rule is active for a stream of the given
// track and step (empty: unknown, so every rule is).
func (r Rule) applies(track, step string) bool {
	if step != "" {
		if len(r.Steps) > 0 && !slices.Contains(r.Steps, step) {
			return false
		}
		if slices.Contains(r.ExceptSteps, step) {
			return false
		}
	}
	return track == "" || len(r.Tracks) == 0 || slices.Contains(r.Tracks, track)
}

// check reports whether a clean line that holds c.lit is a match.
func (c *compiled) check(line []byte) bool {
	for _, n := range c.nots {
		if bytes.Contains(line, n) {
			return false
		}
	}
	return c.re == nil || c.re.Match(line)
}

// Rules returns every rule, in the taxonomy's order (testdata/FAILURES.md). The slice is a copy.
func Rules() []Rule {
	out := make([]Rule, len(rules))
	copy(out, rules)
	return out
}

// RuleByID returns the rule with the given family ID.
func RuleByID(id string) (Rule, bool) {
	i, ok := ruleIndex[id]
	if !ok {
		return Rule{}, false
	}
	return rules[i], true
}

var (
	ruleIndex = indexRules(rules)
	engine    = compileEngine(rules)
)

func indexRules(rs []Rule) map[string]int {
	idx := make(map[string]int, len(rs))
	for i, r := range rs {
		if _, dup := idx[r.ID]; dup {
			panic("diagnose: duplicate rule " + r.ID)
		}
		idx[r.ID] = i
	}
	return idx
}

// issue turns "owner/repo#123" into the issue's address (GitHub redirects
// to the pull request when the number is one).
func issue(ref string) string {
	repo, num, _ := strings.Cut(ref, "#")
	return "https://github.com/" + repo + "/issues/" + num
}

func issues(refs ...string) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = issue(r)
	}
	return out
}
