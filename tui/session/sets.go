package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/pins/sets"
	"github.com/haloforge/haloforge/pins/upstream"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/tui"
)

// The wizard's pins: what the last `pins status` found stale, the
// known-good sets and `pins use`, through pins/upstream, pins/sets and
// steps.PinsUse, as the CLI does.

var _ tui.PinSetter = (*Engine)(nil)

// pinWarning is what the plan of a track says about the last status.
func (e *Engine) pinWarning(names []string) []string {
	if e.Pins == nil {
		return nil
	}
	w, err := upstream.LastWarning(e.StateDir, e.Pins, names, e.clock())
	if err != nil {
		return []string{"⚠ the last pins status is unreadable: " + err.Error()}
	}
	if w == nil {
		return nil
	}
	return w.Lines()
}

// PinSets lists the known-good sets against the pins file, with what
// `pins use` would change and what rebuilds.
func (e *Engine) PinSets() (*tui.PinSets, error) {
	all, err := sets.All()
	if err != nil {
		return nil, err
	}
	if e.Pins == nil {
		return nil, errors.New("no pins loaded")
	}
	out := &tui.PinSets{PinsFile: e.Pins.Path, CannotWrite: e.cannotWritePins()}
	if e.PinsFile != "" {
		out.PinsFile = e.PinsFile
	} else if e.creates() {
		out.Creates = e.CreatePins.Path
	}
	for _, s := range all {
		v := tui.PinSet{ID: s.ID, Title: s.Title, Status: string(s.Status), Note: s.Note, Evidence: s.Evidence,
			Pins: len(s.File.Pins), Differs: s.Differences(e.Pins)}
		changed, err := e.setChange(s)
		if err != nil {
			v.Err = err.Error()
		}
		for _, name := range pins.ChangedNames(changed) {
			c := changed[name]
			v.Changes = append(v.Changes, tui.PinChange{Name: name, Old: deref(c.Old), New: deref(c.New)})
		}
		v.Rebuild = steps.Rebuilds(e.Tracks(), changed)
		out.Sets = append(out.Sets, v)
	}
	return out, nil
}

// setChange is what using the set changes: in the pins file, exactly as
// `pins use` computes it; without a file, the set's values against the
// pins in use.
func (e *Engine) setChange(s sets.Set) (map[string]pins.Change, error) {
	if e.PinsFile != "" {
		u, err := steps.PreparePinsUse(e.PinsFile, s, e.Tracks(), e.clock())
		if err != nil {
			return nil, err
		}
		return u.Changed, nil
	}
	have := e.Pins.Values()
	changed := map[string]pins.Change{}
	for _, name := range s.Differences(e.Pins) {
		c := pins.Change{New: ptr(s.Values()[name])}
		if v, ok := have[name]; ok {
			c.Old = ptr(v)
		}
		changed[name] = c
	}
	return changed, nil
}

// cannotWritePins says why the wizard does not write the pins file.
func (e *Engine) cannotWritePins() string {
	switch {
	case e.PinsFile == "" && !e.creates():
		return "Your pins are haloforge's built-in copy, so the wizard writes nothing; haloforge pins use SET " +
			"creates ./versions.env from them with the set's values (it asks first)."
	}
	return ""
}

// creates says u creates a pins file: the pins are the built-in copy and
// the file to create does not exist yet.
func (e *Engine) creates() bool {
	if e.PinsFile != "" || e.CreatePins == nil {
		return false
	}
	_, err := os.Lstat(e.CreatePins.Path)
	return errors.Is(err, fs.ErrNotExist)
}

// UsePinSet writes the set into the pins file as `pins use --yes` does
// (the user said yes on the screen), then loads the pins again, so that
// the next plan reads them.
func (e *Engine) UsePinSet(id string) (*tui.PinSetUsed, error) {
	if why := e.cannotWritePins(); why != "" {
		return nil, errors.New(why)
	}
	s, err := sets.Lookup(id)
	if err != nil {
		return nil, err
	}
	now := e.clock()
	var u *steps.PinsUse
	path := e.PinsFile
	if e.creates() {
		path = e.CreatePins.Path
		u, err = steps.PreparePinsCreate(path, e.CreatePins.BaseName, e.CreatePins.Base, s, e.Tracks(), now)
	} else {
		u, err = steps.PreparePinsUse(path, s, e.Tracks(), now)
	}
	if err != nil {
		return nil, err
	}
	used := &tui.PinSetUsed{Path: path, Changed: len(u.Changed), Created: u.Created}
	if len(u.Changed) == 0 && !u.Created {
		return used, nil
	}
	used.Backup, err = u.Write(now)
	switch {
	case errors.Is(err, steps.ErrModeNotKept):
		used.Warning = err.Error()
	case err != nil:
		return nil, err
	}
	if u.Created {
		e.PinsFile = path // the session's pins are this file from now on
	}
	reload := e.ReloadPins
	if reload == nil {
		reload = func() (*pins.File, error) { return pins.Load(e.PinsFile) }
	}
	pf, err := reload()
	if err != nil {
		return used, fmt.Errorf("%s was written, but reading it again failed: %w", e.PinsFile, err)
	}
	e.Pins = pf
	return used, nil
}

func (e *Engine) clock() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func ptr(s string) *string { return &s }
