package steps

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/pins/sets"
)

// Rebuilds maps each track the change touches to the steps a rebuild
// re-runs: the steps that read a changed pin and every step after them
// (`haloforge pins diff`).
func Rebuilds(tracks []Track, changed map[string]pins.Change) map[string][]string {
	out := map[string][]string{}
	for _, t := range tracks {
		var direct []string
		for _, s := range t.Steps {
			for _, p := range s.Pins {
				if _, ok := changed[p]; ok {
					direct = append(direct, s.ID)
					break
				}
			}
		}
		if len(direct) > 0 {
			out[t.ID] = t.Downstream(direct)
		}
	}
	return out
}

// PinsUse is what `haloforge pins use SET` does to a pins file, computed
// before anything is written: the file's new content (sets.Apply), the
// pins that change and what each track then rebuilds. The CLI and the
// wizard show it, ask, then Write.
type PinsUse struct {
	Set      sets.Set
	Path     string // the pins file as named
	Target   string // the file written: Path with symlinks resolved
	Old, New *pins.File
	Changed  map[string]pins.Change
	Rebuild  map[string][]string // track -> steps re-run (Rebuilds)
	// Created says the file does not exist yet: Write creates it from
	// the built-in copy with the set in, and never replaces a file that
	// appeared meanwhile.
	Created bool
	orig    []byte
	data    []byte
	mode    fs.FileMode
}

// ErrModeNotKept: the pins file was written but keeps the temporary
// file's mode; a warning, not a failure.
var ErrModeNotKept = errors.New("written, but its mode could not be restored")

// ErrPinsChanged: the pins file changed after its change was computed
// (another pins use, an editor): nothing was written, so no change is lost.
var ErrPinsChanged = errors.New("changed since its diff was computed (another pins use, or an edit), so it was not written: run the command again to see the change as it is now")

// PreparePinsUse reads the pins file and computes the set's change to it.
// Every error is bad input: nothing was written.
func PreparePinsUse(path string, s sets.Set, tracks []Track, now time.Time) (*PinsUse, error) {
	// The change, its diff and the check before writing all start from
	// these bytes, read once: a diff from another read could call a change
	// another writer already made new.
	orig, err := pins.ReadFile(path)
	if err != nil {
		return nil, err
	}
	oldF, err := pins.Parse(path, orig)
	if err != nil {
		return nil, err
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(target)
	if err != nil {
		return nil, err
	}
	u := &PinsUse{Set: s, Path: path, Target: target, Old: oldF, orig: orig, mode: st.Mode().Perm()}
	if err := u.apply(orig, tracks, now); err != nil {
		return nil, err
	}
	return u, nil
}

// apply computes the set's new content from orig, what changes and what
// each track rebuilds.
func (u *PinsUse) apply(orig []byte, tracks []Track, now time.Time) error {
	data, err := sets.Apply(u.Path, orig, u.Set, now)
	if err != nil {
		return err
	}
	if u.New, err = pins.Parse(u.Path, data); err != nil {
		return err
	}
	u.data, u.Changed = data, pins.Diff(u.Old, u.New)
	u.Rebuild = Rebuilds(tracks, u.Changed)
	return nil
}

// PreparePinsCreate computes the set's change to a pins file that does not
// exist yet: it starts from base (the built-in copy, named baseName in
// messages), so the diff shows what differs from the pins in use now.
func PreparePinsCreate(path, baseName string, base []byte, s sets.Set, tracks []Track, now time.Time) (*PinsUse, error) {
	oldF, err := pins.Parse(baseName, base)
	if err != nil {
		return nil, err
	}
	u := &PinsUse{Set: s, Path: path, Target: path, Old: oldF, Created: true, mode: 0o644}
	if err := u.apply(base, tracks, now); err != nil {
		return nil, err
	}
	return u, nil
}

// create writes a new pins file: a temporary file in its directory, linked
// to its name (which fails if a file appeared there meanwhile).
func (u *PinsUse) create() error {
	tmp, err := os.CreateTemp(filepath.Dir(u.Target), "."+filepath.Base(u.Target)+".new-*")
	if err != nil {
		return fmt.Errorf("%s not written: %w", u.Path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(u.data)
	if err == nil {
		err = tmp.Chmod(u.mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp.Name(), u.Target)
	}
	if err != nil {
		return fmt.Errorf("%s not written: %w", u.Path, err)
	}
	return nil
}

// Write keeps the old file next to it (FILE.bak-<time>, never overwriting
// an earlier backup) and replaces the file atomically with its mode. It
// returns the backup's path.
//
// Two writers never interleave: the file is locked (flock) while it is
// read again and replaced, and one that is not what the change was
// computed from is left as it is (ErrPinsChanged).
func (u *PinsUse) Write(now time.Time) (string, error) {
	if u.Created {
		return "", u.create()
	}
	f, err := lockCurrent(u.Target)
	if err != nil {
		return "", fmt.Errorf("%s not written: %w", u.Path, err)
	}
	defer f.Close() // the lock goes with it
	cur, err := io.ReadAll(io.LimitReader(f, int64(len(u.orig))+1))
	if err != nil {
		return "", fmt.Errorf("%s not written: %w", u.Path, err)
	}
	if !bytes.Equal(cur, u.orig) {
		return "", fmt.Errorf("%s %w", u.Path, ErrPinsChanged)
	}
	backup, err := writeBackup(u.Target, u.orig, u.mode, now)
	if err != nil {
		return "", fmt.Errorf("%s not written: the backup failed: %w", u.Path, err)
	}
	if err := WriteFileAtomic(u.Target, u.data); err != nil {
		return "", fmt.Errorf("%s not written: %w (the backup %s is a copy of it)", u.Path, err, backup)
	}
	if err := os.Chmod(u.Target, u.mode); err != nil {
		return backup, fmt.Errorf("%s %w: %v", u.Path, ErrModeNotKept, err)
	}
	return backup, nil
}

// lockCurrent opens path and takes its flock, waiting for another writer
// to finish. The writer replaces the file by renaming a new one over it,
// so a lock taken on the file it replaced is let go and taken again on the
// one the path names now.
func lockCurrent(path string) (*os.File, error) {
	for i := 0; i < 100; i++ {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, err
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return f, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("%s keeps being replaced", path)
}

// writeBackup keeps the old file next to the new one, never overwriting an
// earlier backup.
func writeBackup(target string, data []byte, mode os.FileMode, now time.Time) (string, error) {
	base := target + ".bak-" + now.Format("20060102-150405")
	for i := 0; i < 100; i++ {
		name := base
		if i > 0 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return "", err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return "", err
		}
		return name, f.Close()
	}
	return "", fmt.Errorf("too many backups named %s-*", base)
}
