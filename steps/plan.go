package steps

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/haloforge/haloforge/pins"
)

// cacheKeyVersion changes when the key recipe changes, so old keys never match.
const cacheKeyVersion = "haloforge-cache-v1"

// PlannedStep is a catalogue step with what this plan knows about it.
type PlannedStep struct {
	Step
	ScriptPath  string            // "<track>/<file>" inside the scripts tree
	ScriptHash  string            // sha256 hex of the script bytes
	SupportHash string            // sha256 hex of scripts/lib and the track's helper files
	PinValues   map[string]string // values of the pins this step reads
	CacheKey    string            // script, pin values, track env and the dependencies' keys
	WillRun     bool              // false when CacheKey equals the last success
	Reason      string            // why it will run, or why not
}

// Plan is a track's steps in order, ready for the runner.
type Plan struct {
	Track    Track
	Steps    []PlannedStep
	Floating []string          // floating pins this track reads
	Env      map[string]string // every pin plus the track's variables ("" = unset)
}

// MissingScriptError says which scripts a plan could not find.
type MissingScriptError struct{ Paths []string }

func (e *MissingScriptError) Error() string {
	return "missing step scripts: " + strings.Join(e.Paths, ", ")
}

// NewPlan resolves the track's pins, hashes its scripts and compares each
// step's cache key with the last success recorded in st (nil: no history).
func NewPlan(t Track, pf *pins.File, scripts fs.FS, st *State) (*Plan, error) {
	if st == nil {
		st = NewState()
	}
	values := pf.Values()
	if missingPins := t.MissingPins(values); len(missingPins) > 0 {
		return nil, fmt.Errorf("%s does not define %s (needed by track %s)", pf.Path, strings.Join(missingPins, ", "), t.ID)
	}
	p := &Plan{Track: t, Env: planEnv(t, values)}
	floating := pf.Floating()
	for _, name := range t.PinNames() {
		if slices.Contains(floating, name) {
			p.Floating = append(p.Floating, name)
		}
	}
	support, err := supportHash(scripts, t)
	if err != nil {
		return nil, err
	}
	keys := map[string]string{}
	var missing []string
	for _, s := range t.Steps {
		ps := PlannedStep{Step: s, ScriptPath: t.ScriptPath(s), PinValues: map[string]string{}}
		body, err := fs.ReadFile(scripts, ps.ScriptPath)
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, ps.ScriptPath)
		} else if err != nil {
			return nil, fmt.Errorf("read %s: %w", ps.ScriptPath, err)
		}
		ps.ScriptHash = hashBytes(body)
		ps.SupportHash = support
		for _, name := range s.Pins {
			ps.PinValues[name] = values[name]
		}
		ps.CacheKey = cacheKey(t, ps, keys)
		keys[s.ID] = ps.CacheKey
		ps.WillRun, ps.Reason = willRun(st, t.ID, ps, p.Steps)
		p.Steps = append(p.Steps, ps)
	}
	if len(missing) > 0 {
		return p, &MissingScriptError{Paths: missing}
	}
	return p, nil
}

func planEnv(t Track, values map[string]string) map[string]string {
	env := maps.Clone(values)
	for k, v := range t.Env {
		env[k] = v
	}
	return env
}

func hashBytes(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// supportHash covers the files a track's steps source or call besides their
// own script: the shared lib and the track folder's other files. A fix in a
// patcher must rebuild what it patched. Tests are not inputs.
func supportHash(scripts fs.FS, t Track) (string, error) {
	stepFiles := map[string]bool{}
	for _, s := range t.Steps {
		stepFiles[t.ScriptPath(s)] = true
	}
	h := sha256.New()
	for _, root := range []string{"lib", t.ID} {
		err := fs.WalkDir(scripts, root, func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "tests" && p != root {
					return fs.SkipDir
				}
				return nil
			}
			if stepFiles[p] {
				return nil
			}
			b, err := fs.ReadFile(scripts, p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s\x00%s\n", p, hashBytes(b))
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("hash helper scripts: %w", err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// cacheKey hashes everything that can change what a step produces.
func cacheKey(t Track, ps PlannedStep, depKeys map[string]string) string {
	h := sha256.New()
	line := func(parts ...string) { fmt.Fprintln(h, strings.Join(parts, "\x00")) }
	line(cacheKeyVersion, t.ID, ps.ID)
	line("script", ps.ScriptHash)
	line("support", ps.SupportHash)
	for _, name := range sortedKeys(ps.PinValues) {
		line("pin", name, ps.PinValues[name])
	}
	for _, name := range sortedKeys(t.Env) {
		line("env", name, t.Env[name])
	}
	for _, d := range ps.DependsOn {
		line("dep", d, depKeys[d])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// willRun explains the step's fate against its last success.
func willRun(st *State, track string, ps PlannedStep, earlier []PlannedStep) (bool, string) {
	ts := st.Tracks[track]
	if ts == nil || ts.Steps[ps.ID] == nil {
		return true, "first run"
	}
	last := ts.Steps[ps.ID].LastSuccess
	if last == nil {
		if st := ts.Steps[ps.ID].Status; st == OutcomeSucceeded || st == OutcomeNotVerified {
			// Only clean forgets a success: what the step built is gone.
			return true, "what it built was removed (haloforge clean)"
		}
		return true, "never succeeded (last try: " + ts.Steps[ps.ID].Status + ")"
	}
	if last.CacheKey == ps.CacheKey {
		if len(last.NotVerified) > 0 {
			return false, "up to date (not verified " + last.At.Format("2006-01-02 15:04") + ": " + strings.Join(last.NotVerified, "; ") + ")"
		}
		return false, "up to date (succeeded " + last.At.Format("2006-01-02 15:04") + ")"
	}
	var why []string
	if last.ScriptHash != "" && last.ScriptHash != ps.ScriptHash {
		why = append(why, "script changed")
	}
	if last.SupportHash != "" && last.SupportHash != ps.SupportHash {
		why = append(why, "helper scripts changed (scripts/lib or the track's own helpers)")
	}
	if last.Pins != nil {
		var changed []string
		for _, name := range sortedKeys(ps.PinValues) {
			if old, ok := last.Pins[name]; !ok || old != ps.PinValues[name] {
				changed = append(changed, name)
			}
		}
		if len(changed) > 0 {
			why = append(why, "pins changed: "+strings.Join(changed, ", "))
		}
	}
	for _, e := range earlier {
		if slices.Contains(ps.DependsOn, e.ID) && e.WillRun {
			why = append(why, "depends on "+e.ID+", which runs again")
		}
	}
	if len(why) == 0 {
		why = append(why, "inputs changed since the last success")
	}
	return true, strings.Join(why, "; ")
}

// Step returns the planned step with the given ID.
func (p *Plan) Step(id string) (PlannedStep, bool) {
	for _, s := range p.Steps {
		if s.ID == id {
			return s, true
		}
	}
	return PlannedStep{}, false
}
