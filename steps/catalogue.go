// Package steps holds the track catalogue (as data), the plan with its cache
// keys, and the run state that the runner writes and the plan reads.
package steps

import (
	"fmt"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/pins"
	"slices"
	"strings"
)

// Status says how far a track can be trusted today.
type Status string

// Track statuses, as printed by `tracks --json`.
const (
	StatusRecommended     Status = "recommended"
	StatusStable          Status = "stable"
	StatusExperimental    Status = "experimental"
	StatusBlockedUpstream Status = "blocked-upstream"
)

// Track is one way to get from a bare box to a working stack.
type Track struct {
	ID          string
	Title       string
	Status      Status
	Description string   // what it does and when to pick it
	Pros        []string // why someone picks it
	Cons        []string // what it costs
	GFX         []string // LLVM targets it supports
	Requires    []string // host requirements, one line each
	Source      string   // where the track's recipe comes from
	// BlockingChecks are doctor check IDs whose `fail` stops `build`.
	BlockingChecks []detect.CheckID
	// Env holds track variables every step sees (besides the pins).
	Env   map[string]string
	Steps []Step
	// Next lists the commands a user runs once the track is built.
	Next []string
	// RecommendWhen says for which hosts doctor recommends the track; nil
	// means never (steps.Recommend).
	RecommendWhen *Recommendation
}

// Step is one script of a track.
type Step struct {
	ID        string
	Title     string
	Script    string   // file name under scripts/<track>/
	Pins      []string // pin names whose values go into the cache key
	DependsOn []string // step IDs
	Optional  bool     // a failure is recorded and the build goes on
	// Why explains an optional step, shown when it is skipped or fails.
	Why string
	// KeepsRunning says the step starts a service on purpose: what its
	// script leaves running after a success is reported and kept, not
	// stopped when the run ends (after a failure it is stopped all the same).
	KeepsRunning bool
	// Needs are pins the step cannot run without although they may be
	// empty elsewhere (a model to load): plan flags them, build refuses to
	// start without them and the wizard asks for them.
	Needs []string
}

// MissingInputs lists, in first-use order, the Needs of the track's steps
// that are empty in values.
func (t Track) MissingInputs(values map[string]string) []string {
	var out []string
	for _, s := range t.Steps {
		for _, n := range s.Needs {
			if values[n] == "" && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// ScriptPath is the step's script relative to the scripts tree.
func (t Track) ScriptPath(s Step) string { return t.ID + "/" + s.Script }

// Step returns the step with the given ID.
func (t Track) Step(id string) (Step, bool) {
	for _, s := range t.Steps {
		if s.ID == id {
			return s, true
		}
	}
	return Step{}, false
}

// StepIDs lists the track's step IDs in order.
func (t Track) StepIDs() []string {
	ids := make([]string, len(t.Steps))
	for i, s := range t.Steps {
		ids[i] = s.ID
	}
	return ids
}

// PinNames lists every pin any step of the track reads, in first-use order.
func (t Track) PinNames() []string {
	var names []string
	for _, s := range t.Steps {
		for _, p := range s.Pins {
			if !slices.Contains(names, p) {
				names = append(names, p)
			}
		}
	}
	return names
}

// MissingPins lists the pins the track's steps read that values lacks; an
// optional pin may be absent (the scripts read it as empty).
func (t Track) MissingPins(values map[string]string) []string {
	var missing []string
	for _, name := range t.PinNames() {
		if spec, known := pins.Lookup(name); known && spec.Optional {
			continue
		}
		if _, ok := values[name]; !ok {
			missing = append(missing, name)
		}
	}
	return missing
}

// Downstream returns, in track order, the given steps and every step that
// depends on them directly or through others.
func (t Track) Downstream(changed []string) []string {
	hit := map[string]bool{}
	for _, id := range changed {
		hit[id] = true
	}
	var out []string
	for _, s := range t.Steps { // steps are in dependency order
		if !hit[s.ID] {
			for _, d := range s.DependsOn {
				if hit[d] {
					hit[s.ID] = true
					break
				}
			}
		}
		if hit[s.ID] {
			out = append(out, s.ID)
		}
	}
	return out
}

// Catalogue returns every track, in the order users see them.
func Catalogue() []Track { return slices.Clone(catalogue) }

// Lookup finds a track by ID.
func Lookup(id string) (Track, error) {
	for _, t := range catalogue {
		if t.ID == id {
			return t, nil
		}
	}
	return Track{}, fmt.Errorf("unknown track %q (known: %s)", id, strings.Join(TrackIDs(), ", "))
}

// TrackIDs lists every track ID.
func TrackIDs() []string {
	ids := make([]string, len(catalogue))
	for i, t := range catalogue {
		ids[i] = t.ID
	}
	return ids
}

// Validate checks the catalogue's own consistency: unique IDs, known
// dependencies that come earlier, scripts named.
func Validate(tracks []Track) error {
	seen := map[string]bool{}
	for _, t := range tracks {
		if seen[t.ID] {
			return fmt.Errorf("track %s: duplicate ID", t.ID)
		}
		seen[t.ID] = true
		earlier := map[string]bool{}
		for _, s := range t.Steps {
			if s.ID == "" || s.Script == "" {
				return fmt.Errorf("track %s: step without ID or script", t.ID)
			}
			if earlier[s.ID] {
				return fmt.Errorf("track %s: duplicate step %s", t.ID, s.ID)
			}
			for _, d := range s.DependsOn {
				if !earlier[d] {
					return fmt.Errorf("track %s: step %s depends on %s, which does not come before it", t.ID, s.ID, d)
				}
			}
			earlier[s.ID] = true
		}
	}
	return nil
}
