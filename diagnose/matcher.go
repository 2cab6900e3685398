package diagnose

import (
	"slices"
	"time"
	"unsafe"
)

// DefaultStallTimeout is how long a stream may stay silent after a
// hang-prone marker before the live watchdog reports a stall. Healthy model
// loads on gfx1151 print their next line within seconds to about a minute
// for 100 GB models; three minutes leaves room without wasting an evening.
const DefaultStallTimeout = 3 * time.Minute

// MatcherOptions describe the stream a Matcher reads.
type MatcherOptions struct {
	Track, Step  string        // where the stream comes from; empty: unknown
	File         string        // input name recorded in findings, when known
	StallTimeout time.Duration // silence after a hang-prone marker; 0: DefaultStallTimeout
}

// Matcher recognises failure families in one stream of lines (one step's
// output). It is not safe for concurrent use.
type Matcher struct {
	o        MatcherOptions
	active   []bool // by rule
	ctxSeen  []int  // by context: last line it was seen on, -1 never, 0 implied
	byRule   []int  // by rule: index into findings, or -1
	lastHit  []int  // by rule: last line it counted
	findings []Finding
	queue    []int // new findings not yet returned by Line/Idle/Next
	scratch  []litHit
	litStamp []uint64 // by literal: the stamp of the last line it was seen on
	stamp    uint64   // one per line evaluated

	lines          int   // newline-terminated lines consumed by Scan
	scanned        int64 // bytes searched, checked or handed on: the work, linear in the input
	lastMeaningful int   // line number of the last line with content
	marker         struct {
		line, rule int
		text       string
	}
}

type litHit struct{ id, at int }

// NewMatcher prepares a matcher for one stream.
func NewMatcher(o MatcherOptions) *Matcher {
	if o.StallTimeout <= 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	m := &Matcher{o: o}
	m.active = make([]bool, len(rules))
	m.byRule = make([]int, len(rules))
	m.lastHit = make([]int, len(rules))
	for i, r := range rules {
		m.active[i] = r.applies(o.Track, o.Step)
		m.byRule[i] = -1
	}
	m.litStamp = make([]uint64, len(engine.set.pats))
	m.ctxSeen = make([]int, len(engine.ctxIDs))
	for i := range m.ctxSeen {
		m.ctxSeen[i] = -1
	}
	for _, lit := range impliedContext[o.Track] {
		m.ctxSeen[engine.ctxIDs[lit]] = 0
	}
	m.marker.rule = -1
	return m
}

// Line feeds line n (1-based) of the stream, raw: it may hold escape
// sequences and `\r` redraws. It returns a new Finding the first time a
// family matches in this stream, else nil; later matches only count. When
// one line starts several families at once, the others come out of the
// next calls to Line, Idle or Next.
func (m *Matcher) Line(n int, text string) *Finding {
	// The bytes are only read, never kept or changed: no copy per line.
	clean := cleanLine(unsafe.Slice(unsafe.StringData(text), len(text)))
	m.eval(n, clean)
	if meaningful(clean) {
		m.lastMeaningful = n
	}
	return m.Next()
}

// Next returns a new Finding that Line or Idle found but has not returned
// yet, or nil.
func (m *Matcher) Next() *Finding {
	if len(m.queue) == 0 {
		return nil
	}
	i := m.queue[0]
	m.queue = m.queue[1:]
	f := m.findings[i]
	return &f
}

// Idle is the live watchdog, called with the time since the stream's last
// output. It returns a stall Finding once, when the last line with content
// is a hang-prone marker and the silence has lasted StallTimeout.
func (m *Matcher) Idle(since time.Duration) *Finding {
	if since >= m.o.StallTimeout {
		m.stall()
	}
	return m.Next()
}

// End closes an offline stream: a log whose last line with content is a
// hang-prone marker was cut off in the hang. It returns all findings.
func (m *Matcher) End() []Finding {
	m.stall()
	m.queue = nil
	return m.Findings()
}

// Findings returns the findings so far, in order of their first line.
func (m *Matcher) Findings() []Finding {
	out := slices.Clone(m.findings)
	slices.SortStableFunc(out, func(a, b Finding) int { return a.Line - b.Line })
	return out
}

// stall records a stall finding when the stream stopped at a marker.
func (m *Matcher) stall() {
	mk := m.marker
	if mk.rule < 0 || mk.line != m.lastMeaningful || m.byRule[mk.rule] >= 0 {
		return
	}
	m.record(mk.rule, mk.line, mk.text)
	m.findings[m.byRule[mk.rule]].Stall = true
}

// eval checks one clean line against every rule.
func (m *Matcher) eval(n int, line []byte) {
	m.scanned += int64(len(line))
	if p, _ := engine.set.index(line); p < 0 {
		return
	}
	// One hit per literal: a pattern's check (its regexp, its exclusions)
	// is about the whole line, so a literal that occurs again on the same
	// line changes nothing, and checking it at each occurrence made a long
	// line with many occurrences quadratic.
	m.stamp++
	hits := m.scratch[:0]
	engine.set.each(line, func(id, at int) {
		if m.litStamp[id] != m.stamp {
			m.litStamp[id] = m.stamp
			hits = append(hits, litHit{id, at})
		}
	})
	m.scratch = hits
	m.scanned += int64(len(line))
	matched := -1 // last rule recorded on this line, to count a line once
	for _, h := range hits {
		for _, pi := range engine.litPats[h.id] {
			c := &engine.pats[pi]
			if !m.active[c.rule] || !m.contextOK(c, n) {
				continue
			}
			m.scanned += int64(len(line))
			if !c.check(line) {
				continue
			}
			if c.marker {
				m.marker.line, m.marker.rule, m.marker.text = n, c.rule, excerpt(line, h.at)
				continue
			}
			if c.rule != matched && !m.recordedOn(c.rule, n) {
				m.record(c.rule, n, excerpt(line, h.at))
				matched = c.rule
			}
		}
	}
	for _, h := range hits {
		if ctx := engine.litCtx[h.id]; ctx >= 0 {
			m.ctxSeen[ctx] = n
		}
	}
}

func (m *Matcher) contextOK(c *compiled, n int) bool {
	for _, u := range c.unless {
		if m.seenWithin(u, n, c.unlessWithin) {
			return false
		}
	}
	if len(c.after) == 0 {
		return true
	}
	for _, a := range c.after {
		if m.seenWithin(a, n, c.within) {
			return true
		}
	}
	return false
}

// seenWithin reports whether context literal lit appeared before line n,
// at most within lines before (0: anywhere before; implied context counts
// as always seen).
func (m *Matcher) seenWithin(lit string, n, within int) bool {
	seen := m.ctxSeen[engine.ctxIDs[lit]]
	return seen >= 0 && (within == 0 || seen == 0 || n-seen <= within)
}

// recordedOn reports whether the rule already counted line n (two of its
// patterns on one line are one matching line).
func (m *Matcher) recordedOn(rule, n int) bool {
	return m.byRule[rule] >= 0 && m.lastHit[rule] == n
}

func (m *Matcher) record(rule, n int, text string) {
	if i := m.byRule[rule]; i >= 0 {
		m.findings[i].Count++
		m.lastHit[rule] = n
		return
	}
	r := rules[rule]
	m.byRule[rule] = len(m.findings)
	m.lastHit[rule] = n
	m.findings = append(m.findings, Finding{
		Family: r.ID, Line: n, Text: text, Summary: r.Summary, Fix: r.Fix, Title: r.Title,
		Count: 1, Links: r.Links, Step: m.o.Step, File: m.o.File, Ladder: r.Ladder,
	})
	m.queue = append(m.queue, len(m.findings)-1)
}
