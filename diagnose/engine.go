package diagnose

import (
	"fmt"
	"regexp"
	"slices"
)

// minLiteral is the shortest literal a pattern may use: the literal set's
// window, hence its longest jump, is the shortest literal's length.
const minLiteral = 14

// ruleEngine is every rule's patterns compiled once: one literal set for
// all anchors and context literals, and for each literal what it means.
type ruleEngine struct {
	set     *literalSet
	litPats [][]int // by literal: indexes into pats anchored on it
	litCtx  []int   // by literal: context index, or -1
	pats    []compiled
	ctxIDs  map[string]int
}

func compileEngine(rs []Rule) *ruleEngine {
	e := &ruleEngine{ctxIDs: map[string]int{}}
	litIDs := map[string]int{}
	var lits []string
	litID := func(s string) int {
		if id, ok := litIDs[s]; ok {
			return id
		}
		id := len(lits)
		litIDs[s] = id
		lits = append(lits, s)
		e.litPats = append(e.litPats, nil)
		e.litCtx = append(e.litCtx, -1)
		return id
	}
	for ri, r := range rs {
		for _, p := range r.pats {
			c := compiled{pat: p, rule: ri}
			for _, n := range p.not {
				c.nots = append(c.nots, []byte(n))
			}
			if p.re != "" {
				c.re = regexp.MustCompile(p.re)
			}
			if len(p.lit) < minLiteral {
				panic(fmt.Sprintf("diagnose: rule %s: literal %q shorter than %d bytes", r.ID, p.lit, minLiteral))
			}
			id := litID(p.lit)
			e.litPats[id] = append(e.litPats[id], len(e.pats))
			e.pats = append(e.pats, c)
			for _, a := range slices.Concat(p.after, p.unless) {
				if len(a) < minLiteral {
					panic(fmt.Sprintf("diagnose: rule %s: context %q shorter than %d bytes", r.ID, a, minLiteral))
				}
				e.context(litID(a), a)
			}
		}
	}
	for s := range impliedContext {
		for _, lit := range impliedContext[s] {
			e.context(litID(lit), lit)
		}
	}
	e.set = newLiteralSet(lits)
	return e
}

func (e *ruleEngine) context(lit int, s string) {
	if e.litCtx[lit] >= 0 {
		return
	}
	e.litCtx[lit] = len(e.ctxIDs)
	e.ctxIDs[s] = len(e.ctxIDs)
}

// impliedContext lists context literals a track's environment already
// sets, whether or not the log prints them: the spoof tracks run with
// HSA_OVERRIDE_GFX_VERSION.
var impliedContext = map[string][]string{
	"nightly-spoof": {"HSA_OVERRIDE_GFX_VERSION"},
	"locked-spoof":  {"HSA_OVERRIDE_GFX_VERSION"},
}
