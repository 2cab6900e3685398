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
	// StatusHistory: kept runnable to reproduce or compare an old setup, not
	// offered for new builds (`tracks` and the picker list it only when asked).
	StatusHistory Status = "history"
)

// Track is one way to get from a bare box to a working stack.
type Track struct {
	ID          string
	Title       string
	Status      Status
	Description string // what it does and when to pick it
	// History says why a StatusHistory track is no longer offered ("" for
	// the others): what replaced it and what it is still good for.
	History  string
	Pros     []string // why someone picks it
	Cons     []string // what it costs
	GFX      []string // LLVM targets it supports
	Requires []string // host requirements, one line each
	Source   string   // where the track's recipe comes from
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
	// Serve says how `haloforge serve` and `bench --track` run the track's
	// engine; nil for a track that serves nothing.
	Serve *ServeSpec
}

// ServeSpec is how a built track serves a model: the engine, where it runs
// (the track's box or a container of its image) and the pins that name the
// box or image, the port and a default model. Its serve script is
// scripts/serve/<track>/serve.sh (bench.sh for a benchmark).
type ServeSpec struct {
	// Engine is the serve engine's name, one of steps/serve's Engines:
	// "llama.cpp", "vllm", "ollama".
	Engine string
	// BoxPin is the pin naming the distrobox the engine runs in; ImagePin
	// the pin naming the image a container runs. Exactly one is set.
	BoxPin   string
	ImagePin string
	// PortPin is the pin with the default port ("" for the engine's own).
	PortPin string
	// ModelPin is the pin with a default model ("" for none).
	ModelPin string
	// Devices are the container flags that hand the GPU in (ImagePin only).
	Devices []string
	// Entrypoint sets the container's entrypoint to the engine command's
	// first word (ImagePin only): vllm/vllm-openai-rocm starts `vllm serve`
	// itself and rocm/vllm has no entrypoint; with --entrypoint vllm both run
	// `serve MODEL …`, as scripts/vllm-image/launcher-body.sh does.
	Entrypoint bool
	// Env is what haloforge sets for the engine beyond the engine's own.
	Env map[string]string
	// Alt is the spec used instead when a pin holds a value: a backend the
	// user chose in versions.env that runs another image with other devices.
	Alt *ServeAlt
}

// ServeAlt is a ServeSpec chosen by a pin's value (ServeSpec.ForPins).
type ServeAlt struct {
	Pin, Value string
	Spec       ServeSpec
}

// ForPins is the spec these pins choose: Alt's when its pin has its value.
func (s ServeSpec) ForPins(pins map[string]string) ServeSpec {
	if s.Alt != nil && pins[s.Alt.Pin] == s.Alt.Value {
		return s.Alt.Spec
	}
	return s
}

// Where the engine of a ServeSpec runs, as `serve --dry-run --json` says it (mode).
const (
	ServeInBox       = "box"       // the distrobox the track made: distrobox enter BOX -- …
	ServeInContainer = "container" // a container of the track's image: podman run … IMAGE …
)

// Mode is where the engine runs: ServeInBox or ServeInContainer.
func (s ServeSpec) Mode() string {
	if s.ImagePin != "" {
		return ServeInContainer
	}
	return ServeInBox
}

// InPin is the pin naming the box or the image.
func (s ServeSpec) InPin() string {
	if s.ImagePin != "" {
		return s.ImagePin
	}
	return s.BoxPin
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

// InputExample is what a value of a needed pin looks like, for the hints
// that ask for it (plan, build, the wizard): a path names a model file.
func InputExample(name string) string {
	if spec, ok := pins.Lookup(name); ok && spec.Kind == pins.KindPath {
		return "/path/to/model.gguf"
	}
	return "VALUE"
}

// FailingChecks are the track's blocking checks that fail in r, in the
// track's order: what stops `haloforge build` (unless --ignore-checks), and
// what the wizard's plan asks a second Enter for. None when r is nil.
func FailingChecks(t Track, r *detect.Report) []detect.Check {
	if r == nil {
		return nil
	}
	var out []detect.Check
	for _, id := range t.BlockingChecks {
		if c, ok := r.Check(id); ok && c.Status == detect.StatusFail {
			out = append(out, c)
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

// Catalogue returns every track, in the order users see them (pickOrder;
// a track it does not name comes last, in catalogue order).
func Catalogue() []Track {
	out := slices.Clone(catalogue)
	rank := func(id string) int {
		if i := slices.Index(pickOrder, id); i >= 0 {
			return i
		}
		return len(pickOrder)
	}
	slices.SortStableFunc(out, func(a, b Track) int { return rank(a.ID) - rank(b.ID) })
	return out
}

// Offered is the tracks an owner picks from today, in catalogue order: the
// ones kept as history are left out unless their ID is in keep (asked for by
// name, e.g. `--track locked-spoof`).
func Offered(tracks []Track, keep ...string) []Track {
	return slices.DeleteFunc(slices.Clone(tracks), func(t Track) bool {
		return t.Status == StatusHistory && !slices.Contains(keep, t.ID)
	})
}

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
	ts := Catalogue()
	ids := make([]string, len(ts))
	for i, t := range ts {
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
