// Package preflight checks, before a build starts, that the pins a track
// needs still resolve where they come from, and when one is gone, which
// known-good set resolves instead. It asks pins/upstream (the `pins status`
// machinery: bounded in time, read only) about the track's pins alone, reuses
// a recent last status instead of asking again, keeps what it learnt in that
// status, and says in one line when nothing could be asked. The CLI's `plan`
// and `build` and the wizard's plan screen print its Lines; `build` stops
// before the first step when Blocks.
package preflight

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/pins/sets"
	"github.com/haloforge/haloforge/pins/upstream"
	"github.com/haloforge/haloforge/steps"
)

// Defaults of Options.
const (
	// DefaultDeadline bounds the whole check, the sets tried included.
	DefaultDeadline = 20 * time.Second
	// DefaultFresh is how old a last status may be and still stand for a
	// new check of the same pin values.
	DefaultFresh = time.Hour
	// maxSets bounds how many known-good sets are asked about.
	maxSets = 4
)

// Options tune a check; the zero value asks upstream with the defaults.
type Options struct {
	// StateDir holds the last status (upstream.CacheFile), read and updated.
	StateDir string
	// Offline, when not empty, is why nothing is asked ("HALOFORGE_OFFLINE=1").
	Offline string
	// Deadline bounds the check (DefaultDeadline when zero); Fresh is the age
	// under which the last status is reused (DefaultFresh when zero).
	Deadline, Fresh time.Duration
	// Upstream carries what tests set for the real servers (RootCAs, Git,
	// GitEnv); Only, Offline, Deadline and Previous are set here.
	Upstream upstream.Options
	// Sets are the known-good sets to try when a pin is gone (nil: sets.All).
	Sets []sets.Set
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Result is what the check found for one track.
type Result struct {
	Track string
	// Steps are the track's steps, for "step N/M would fail".
	Steps []string
	// CheckedAt is when the pins were asked about; FromCache says the last
	// status was recent enough to stand for a new check.
	CheckedAt time.Time
	FromCache bool
	// Offline is one line when nothing could be asked (and why); then the
	// build goes on with the pins as they are.
	Offline string
	// Stale are the last status's findings still true of these pins, shown
	// when nothing could be asked.
	Stale []string
	// Unreadable says the last status could not be read (a link, a FIFO, a
	// directory or bad JSON in its place): it was ignored.
	Unreadable string
	// What upstream said about the track's pins.
	Retired, Moved, Unreachable []upstream.Result
	OK                          int
	// FirstStep is the first step that reads a retired pin.
	FirstStep string
	// Works is the first known-good set whose values for the track resolve
	// upstream, when a pin is gone; Tried are the sets asked about, in order.
	Works *SetCheck
	Tried []SetCheck
}

// SetCheck is what asking about one known-good set found.
type SetCheck struct {
	ID     string
	Status sets.Status
	// Verdict is "resolves", "gone" (one of its pins is gone too) or
	// "not checked" (its upstream did not answer); Detail says more.
	Verdict, Detail string
	// Changes are the track's pins whose values the set changes.
	Changes []string
}

// Blocks says the build cannot succeed: a pin the track needs is gone.
func (r *Result) Blocks() bool { return r != nil && len(r.Retired) > 0 }

// Check asks upstream about the pins the track's steps read (the other pins
// of f give them context: the index a wheel is on, PYTHON_VERSION). It never
// fails: what could not be asked says so in the Result.
func Check(ctx context.Context, t steps.Track, f *pins.File, o Options) *Result {
	if o.Deadline <= 0 {
		o.Deadline = DefaultDeadline
	}
	if o.Fresh <= 0 {
		o.Fresh = DefaultFresh
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &Result{Track: t.ID, Steps: t.StepIDs()}
	// The track's pins this file defines (an absent optional pin reads as
	// empty: nothing to ask).
	values := f.Values()
	names := slices.DeleteFunc(t.PinNames(), func(n string) bool { _, ok := values[n]; return !ok })
	prev, cacheErr := upstream.LoadCache(o.StateDir)
	if cacheErr != nil {
		prev = nil // an unreadable status is asked again, and replaced
		r.Unreadable = "warning: the last pins status is unreadable: " + cacheErr.Error()
	}
	if o.Offline != "" {
		r.Offline = "pins not checked upstream (" + o.Offline + "): building with them as they are"
		r.stale(o, f, names)
		return r
	}
	if res, at, ok := fresh(prev, f, names, o.Now(), o.Fresh); ok {
		r.CheckedAt, r.FromCache = at, true
		r.sort(res)
	} else {
		ctx, cancel := context.WithTimeout(ctx, o.Deadline)
		defer cancel()
		uo := o.Upstream
		uo.Only, uo.Offline, uo.Deadline, uo.Previous, uo.Now = names, false, o.Deadline, prev, o.Now
		rep := upstream.Check(ctx, f, uo)
		r.CheckedAt = rep.CheckedAt
		if rep.NoNetwork != "" {
			r.Offline = "pins not checked upstream: no upstream answered (" + hosts(rep) + "): building with them as they are"
			r.stale(o, f, names)
			return r
		}
		r.sort(rep.Pins)
		save(o.StateDir, f.Path, rep, prev)
	}
	if r.Blocks() {
		r.FirstStep = firstStep(t, r.Retired)
		r.trySets(ctx, t, f, o)
	}
	return r
}

// fresh returns the last status's results for names when each was found
// less than maxAge ago at its current value (the oldest finding's time is
// returned).
func fresh(c *upstream.Cache, f *pins.File, names []string, now time.Time, maxAge time.Duration) ([]upstream.Result, time.Time, bool) {
	if c == nil {
		return nil, time.Time{}, false
	}
	values := f.Values()
	var out []upstream.Result
	oldest := now
	for _, n := range names {
		p, ok := c.Get(n)
		at := p.CheckedAt
		if at.IsZero() {
			at = c.CheckedAt
		}
		if !ok || p.Value != values[n] || p.State == upstream.Unreachable || now.Sub(at) > maxAge || now.Before(at) {
			return nil, time.Time{}, false
		}
		if at.Before(oldest) {
			oldest = at
		}
		out = append(out, upstream.Result{Name: p.Name, Value: p.Value, Kind: p.Kind, State: p.State, Detail: p.Detail, Resolved: p.Resolved})
	}
	return out, oldest, true
}

func (r *Result) sort(rs []upstream.Result) {
	for _, p := range rs {
		switch p.State {
		case upstream.Retired:
			r.Retired = append(r.Retired, p)
		case upstream.Moved:
			r.Moved = append(r.Moved, p)
		case upstream.Unreachable:
			r.Unreachable = append(r.Unreachable, p)
		case upstream.OK:
			r.OK++
		}
	}
}

// stale keeps what the last status, of any age, found retired or moved among
// these pins at these values: said when nothing can be asked now.
func (r *Result) stale(o Options, f *pins.File, names []string) {
	if r.Unreadable != "" {
		return
	}
	if w, err := upstream.LastWarning(o.StateDir, f, names, o.Now()); err == nil && w != nil {
		r.Stale = w.Lines()
	}
}

// save writes this run into the last status (NewCache keeps the pins it
// did not ask about as they were).
func save(stateDir, pinsPath string, rep *upstream.Report, prev *upstream.Cache) {
	if stateDir == "" {
		return
	}
	if data, err := upstream.NewCache(rep, pinsPath, prev).Marshal(); err == nil {
		_ = safefile.Tree(stateDir).WriteFile(upstream.CacheFile, data, 0o644)
	}
}

// hosts names the upstreams that did not answer, from the results' details.
func hosts(rep *upstream.Report) string {
	var out []string
	for _, p := range rep.Pins {
		if p.State != upstream.Unreachable {
			continue
		}
		h, _, _ := strings.Cut(p.Detail, ": ")
		if h != "" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	if len(out) > 3 {
		out = append(out[:3], fmt.Sprintf("%d more", len(out)-3))
	}
	return strings.Join(out, ", ")
}

// firstStep is the first step of the track that reads one of the pins.
func firstStep(t steps.Track, rs []upstream.Result) string {
	for _, s := range t.Steps {
		for _, p := range rs {
			if slices.Contains(s.Pins, p.Name) {
				return s.ID
			}
		}
	}
	return ""
}

// trySets asks about the known-good sets that change every retired pin,
// most trusted first, until one resolves.
func (r *Result) trySets(ctx context.Context, t steps.Track, f *pins.File, o Options) {
	all := o.Sets
	if all == nil {
		var err error
		if all, err = sets.All(); err != nil {
			return
		}
	}
	names := t.PinNames()
	for _, s := range all {
		if len(r.Tried) == maxSets || ctx.Err() != nil {
			break
		}
		if s.Status == sets.History || !fixes(s, r.Retired) {
			continue
		}
		overlay, changes, err := apply(f, s, names)
		if err != nil || len(changes) == 0 {
			continue
		}
		sc := SetCheck{ID: s.ID, Status: s.Status, Changes: changes}
		uo := o.Upstream
		uo.Only, uo.Offline, uo.Deadline, uo.Previous, uo.Now = changes, false, o.Deadline, nil, o.Now
		rep := upstream.Check(ctx, overlay, uo)
		sc.Verdict, sc.Detail = verdict(rep)
		r.Tried = append(r.Tried, sc)
		if sc.Verdict == "resolves" {
			r.Works = &r.Tried[len(r.Tried)-1]
			return
		}
	}
}

// fixes says the set gives every retired pin another value.
func fixes(s sets.Set, retired []upstream.Result) bool {
	v := s.Values()
	for _, p := range retired {
		if w, ok := v[p.Name]; !ok || w == p.Value {
			return false
		}
	}
	return true
}

// apply is f with the set's values (f itself is unchanged), and the track's
// pins whose values that changes.
func apply(f *pins.File, s sets.Set, names []string) (*pins.File, []string, error) {
	overlay := *f
	for _, p := range s.File.Pins {
		if err := overlay.Set(p.Name + "=" + s.Values()[p.Name]); err != nil {
			return nil, nil, err
		}
	}
	before, after := f.Values(), overlay.Values()
	var changes []string
	for _, n := range names {
		if before[n] != after[n] {
			changes = append(changes, n)
		}
	}
	return &overlay, changes, nil
}

// verdict reads a set's run: gone when a pin is gone, resolves when every
// pin asked about answered as pinned.
func verdict(rep *upstream.Report) (string, string) {
	var unreachable []string
	for _, p := range rep.Pins {
		switch p.State {
		case upstream.Retired:
			return "gone", p.Name + "=" + p.Value + ": " + p.Detail
		case upstream.Unreachable:
			unreachable = append(unreachable, p.Name)
		}
	}
	if len(unreachable) > 0 {
		return "not checked", "no answer for " + strings.Join(unreachable, ", ")
	}
	return "resolves", ""
}

// Lines says what the check found, for a terminal or a log: one line when
// all is well or nothing could be asked, the gone pins, the first step that
// would fail and the set that works when the build cannot succeed.
func (r *Result) Lines(now time.Time) []string {
	if r == nil {
		return nil
	}
	var out []string
	if r.Unreadable != "" {
		out = append(out, r.Unreadable)
	}
	if r.Offline != "" {
		return append(append(out, "· "+r.Offline), r.Stale...)
	}
	age := "checked " + text.Ago(now.Sub(r.CheckedAt))
	if r.FromCache {
		age = "pins status " + age
	}
	if r.Blocks() {
		noun := "pin"
		if len(r.Retired) > 1 {
			noun = "pins"
		}
		head := fmt.Sprintf("✗ %d %s of %s gone upstream (%s)", len(r.Retired), noun, r.Track, age)
		if i := slices.Index(r.Steps, r.FirstStep); i >= 0 {
			head += fmt.Sprintf(": step %d/%d %s would fail", i+1, len(r.Steps), r.FirstStep)
		}
		out = append(out, head)
		for _, p := range r.Retired {
			out = append(out, fmt.Sprintf("  ✗ %s=%s  retired: %s", p.Name, p.Value, p.Detail))
		}
		switch {
		case r.Works != nil:
			out = append(out, fmt.Sprintf("  the set that resolves: %s [%s] (%s answer upstream): haloforge pins use %s",
				r.Works.ID, r.Works.Status, strings.Join(r.Works.Changes, ", "), r.Works.ID))
		case len(r.Tried) > 0:
			for _, s := range r.Tried {
				out = append(out, fmt.Sprintf("  set %s: %s (%s)", s.ID, s.Verdict, s.Detail))
			}
			out = append(out, "  no known-good set resolves for certain: haloforge pins sets shows them all")
		default:
			out = append(out, "  no known-good set changes these pins: haloforge pins sets shows them all")
		}
	} else {
		line := fmt.Sprintf("✓ pins of %s resolve upstream: %d ok", r.Track, r.OK)
		if n := len(r.Unreachable); n > 0 {
			line += fmt.Sprintf(", %d not answered (%s)", n, names(r.Unreachable))
		}
		out = append(out, line+" ("+age+")")
	}
	for _, p := range r.Moved {
		out = append(out, fmt.Sprintf("  ↻ %s=%s  moved: %s", p.Name, p.Value, p.Detail))
	}
	return out
}

func names(rs []upstream.Result) string {
	var out []string
	for _, p := range rs {
		out = append(out, p.Name)
	}
	if len(out) > 4 {
		out = append(out[:4], fmt.Sprintf("%d more", len(out)-4))
	}
	return strings.Join(out, ", ")
}
