package upstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/pins"
)

// CacheFile is the last status, under the state dir.
const CacheFile = "pins-status.json"

// Cache is the last `pins status` that reached the network: when, and what
// each pin resolved to. `moved` compares against it; `plan` warns from it.
type Cache struct {
	Version   int         `json:"version"`
	CheckedAt time.Time   `json:"checked_at"`
	PinsFile  string      `json:"pins_file"`
	Pins      []CachedPin `json:"pins"`
	byName    map[string]int
}

// CachedPin is one pin of the last status. Resolved is kept from an
// earlier status when the last one could not reach the pin, so a move is
// still seen after a run without network; a pin the last run did not ask
// about at all (it checked another pins file) is kept whole.
type CachedPin struct {
	Name       string    `json:"name"`
	Value      string    `json:"value"`
	Kind       pins.Kind `json:"kind"`
	State      State     `json:"state"`
	Detail     string    `json:"detail"`
	Resolved   string    `json:"resolved,omitempty"`
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
	// CheckedAt is when State was found (a file of an older version has
	// none: the cache's own CheckedAt stands for it).
	CheckedAt time.Time `json:"checked_at,omitzero"`
}

// CachePath is where the last status lives.
func CachePath(stateDir string) string { return filepath.Join(stateDir, CacheFile) }

// maxCache bounds the cache file read.
const maxCache = 16 << 20

// LoadCache reads the last status; (nil, nil) when there is none. The
// file is haloforge's own, in its state dir: a link, a FIFO or anything
// but a regular file there is refused at once, naming the path.
func LoadCache(stateDir string) (*Cache, error) {
	p := CachePath(stateDir)
	data, err := safefile.ReadRegular(p, maxCache, safefile.NoFollow)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseCache(data, p)
}

// ParseCache reads a cache file's content.
func ParseCache(data []byte, name string) (*Cache, error) {
	var c Cache
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s: not a pins status cache: %v", name, err)
	}
	if c.Version != 1 {
		return nil, fmt.Errorf("%s: cache version %d (want 1)", name, c.Version)
	}
	c.index()
	return &c, nil
}

func (c *Cache) index() {
	c.byName = map[string]int{}
	for i, p := range c.Pins {
		c.byName[p.Name] = i
	}
}

// Get returns the cached pin of a name.
func (c *Cache) Get(name string) (CachedPin, bool) {
	if c == nil {
		return CachedPin{}, false
	}
	if c.byName == nil {
		c.index()
	}
	i, ok := c.byName[name]
	if !ok {
		return CachedPin{}, false
	}
	return c.Pins[i], true
}

// NewCache is the cache a report leaves: its results, with the last known
// resolution carried over for pins this run could not reach, and the pins
// it did not ask about (a pins file of a few names) kept as prev had them,
// so that a later run of the full file still compares with them.
func NewCache(rep *Report, pinsFile string, prev *Cache) *Cache {
	c := &Cache{Version: 1, CheckedAt: rep.CheckedAt, PinsFile: pinsFile}
	asked := map[string]bool{}
	for _, r := range rep.Pins {
		asked[r.Name] = true
		cp := CachedPin{Name: r.Name, Value: r.Value, Kind: r.Kind, State: r.State, Detail: r.Detail, Resolved: r.Resolved, CheckedAt: rep.CheckedAt}
		if cp.Resolved != "" {
			cp.ResolvedAt = rep.CheckedAt
		} else if old, ok := prev.Get(r.Name); ok && old.Value == r.Value && r.State == Unreachable {
			cp.Resolved, cp.ResolvedAt = old.Resolved, old.ResolvedAt
		}
		c.Pins = append(c.Pins, cp)
	}
	if prev != nil {
		for _, old := range prev.Pins {
			if asked[old.Name] {
				continue
			}
			if old.CheckedAt.IsZero() {
				old.CheckedAt = prev.CheckedAt
			}
			c.Pins = append(c.Pins, old)
		}
	}
	c.index()
	return c
}

// Marshal is the cache file's content.
func (c *Cache) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	return append(b, '\n'), err
}

// compareWithPrevious turns `ok` into `moved` where the same pin value now
// resolves elsewhere than at the last status.
func compareWithPrevious(rep *Report, prev *Cache) {
	if prev == nil {
		return
	}
	for i := range rep.Pins {
		r := &rep.Pins[i]
		old, ok := prev.Get(r.Name)
		if !ok || r.State != OK || old.Value != r.Value || old.Resolved == "" || r.Resolved == "" {
			continue
		}
		if was, now, moved := movedBetween(old.Resolved, r.Resolved); moved {
			r.State = Moved
			r.Detail = fmt.Sprintf("moved since the status of %s: was %s, now %s; %s",
				old.ResolvedAt.UTC().Format("2006-01-02 15:04 MST"), was, now, r.Detail)
		}
	}
}

// movedBetween compares two resolutions. Wheel resolutions list
// "file=sha256:…" entries: only a file present in both that changed counts
// (a new file for another Python is no move).
func movedBetween(old, now string) (was, is string, moved bool) {
	if !strings.Contains(old, "=sha256:") && !strings.Contains(now, "=sha256:") {
		return short(old), short(now), old != now
	}
	parse := func(s string) map[string]string {
		m := map[string]string{}
		for _, e := range strings.Fields(s) {
			if f, h, ok := strings.Cut(e, "="); ok {
				m[f] = h
			}
		}
		return m
	}
	o, n := parse(old), parse(now)
	var files []string
	for f := range o {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		if h, ok := n[f]; ok && h != o[f] {
			return f + " " + short(o[f]), short(h), true
		}
	}
	return "", "", false
}

// Warning is what `plan` (and the wizard's plan screen) say about the last
// status: the pins it found retired or moved whose values are still the
// ones in use, and how old that finding is.
type Warning struct {
	CheckedAt time.Time
	Age       time.Duration
	Pins      []CachedPin // retired or moved, value unchanged since
	Edited    []string    // pins found retired or moved whose value changed since
}

// StaleAfter is when a status is old enough to say "check again".
const StaleAfter = 7 * 24 * time.Hour

// LastWarning reads the last status under stateDir and keeps the findings
// that still apply to f, restricted to names when names is not nil. It is
// nil when there is no status or nothing to warn about.
func LastWarning(stateDir string, f *pins.File, names []string, now time.Time) (*Warning, error) {
	c, err := LoadCache(stateDir)
	if err != nil || c == nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	values := f.Values()
	w := &Warning{CheckedAt: c.CheckedAt}
	for _, p := range c.Pins {
		if (names != nil && !want[p.Name]) || (p.State != Retired && p.State != Moved) {
			continue
		}
		if v, ok := values[p.Name]; ok && v == p.Value {
			w.Pins = append(w.Pins, p)
			// the age is the oldest finding's: a pin kept from an earlier
			// status is as old as that status
			if !p.CheckedAt.IsZero() && p.CheckedAt.Before(w.CheckedAt) {
				w.CheckedAt = p.CheckedAt
			}
		} else {
			w.Edited = append(w.Edited, p.Name)
		}
	}
	if len(w.Pins) == 0 {
		return nil, nil
	}
	w.Age = now.Sub(w.CheckedAt)
	return w, nil
}

// Lines renders the warning for a terminal or a log, one finding a line,
// ending with what to do.
func (w *Warning) Lines() []string {
	n := len(w.Pins)
	noun := "pins are"
	if n == 1 {
		noun = "pin is"
	}
	out := []string{fmt.Sprintf("⚠ %d %s gone or moved upstream (pins status, checked %s)", n, noun, text.Ago(w.Age))}
	for _, p := range w.Pins {
		mark := "✗"
		if p.State == Moved {
			mark = "↻"
		}
		out = append(out, fmt.Sprintf("  %s %s=%s  %s: %s", mark, p.Name, p.Value, p.State, p.Detail))
	}
	hint := "  known-good sets: haloforge pins sets   (then haloforge pins use SET)"
	if w.Age > StaleAfter {
		hint += "; the status is old: haloforge pins status"
	}
	return append(out, hint)
}
