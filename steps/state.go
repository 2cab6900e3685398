package steps

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/haloforge/haloforge/internal/safefile"
)

// StateFile is the name of the state file inside the state dir.
const StateFile = "state.json"

// Step outcomes recorded in state.json and report.json.
const (
	OutcomeSucceeded = "succeeded"
	// OutcomeNotVerified is a step that ran to its end (exit 0) but said it
	// could not prove its outcome (runner.ResultEnv): not a failure, never
	// a pass. For the cache it is done; plans and summaries say what it
	// could not check. A run with such a step ends not-verified (exit 0).
	OutcomeNotVerified = "not-verified"
	OutcomeFailed      = "failed"
	OutcomeInterrupted = "interrupted"
	OutcomeSkipped     = "skipped" // cache key matched the last success
	OutcomeRunning     = "running" // only seen after a crash of haloforge itself
)

// State is what haloforge remembers between runs: per track, per step, the
// last attempt and the last success (whose cache key makes a step skippable).
type State struct {
	Version int                    `json:"version"`
	Tracks  map[string]*TrackState `json:"tracks"`
}

// TrackState is the memory of one track.
type TrackState struct {
	LastRun string                `json:"last_run,omitempty"`
	Steps   map[string]*StepState `json:"steps"`
}

// StepState is the memory of one step.
type StepState struct {
	Status      string        `json:"status"`
	RunID       string        `json:"run_id,omitempty"`
	CacheKey    string        `json:"cache_key,omitempty"`
	ExitCode    int           `json:"exit_code"`
	Started     time.Time     `json:"started,omitzero"`
	Duration    time.Duration `json:"duration_ns"`
	Log         string        `json:"log,omitempty"`
	LastSuccess *Success      `json:"last_success,omitempty"`
}

// Success records the cache key and duration of a step's last success, and
// the inputs behind the key so that `plan` can say what changed since.
// A step that ran to its end without proving its outcome is a success for
// the cache; NotVerified keeps why it is not verified.
type Success struct {
	CacheKey    string            `json:"cache_key"`
	RunID       string            `json:"run_id"`
	At          time.Time         `json:"at"`
	Duration    time.Duration     `json:"duration_ns"`
	ScriptHash  string            `json:"script_sha256,omitempty"`
	SupportHash string            `json:"support_sha256,omitempty"`
	Pins        map[string]string `json:"pins,omitempty"`
	NotVerified []string          `json:"not_verified,omitempty"`
}

// NewState returns an empty state.
func NewState() *State { return &State{Version: 1, Tracks: map[string]*TrackState{}} }

// MaxStateBytes bounds state.json: a real one is a few KiB per track, and a
// state dir is only as trusted as whoever could write into it.
const MaxStateBytes = 16 << 20

// LoadState reads <dir>/state.json; a missing file is an empty state. Only a
// regular file of at most MaxStateBytes is read, never through a link: a
// state.json swapped for a FIFO, a link, /dev/zero or a huge file is
// refused at once (it used to hang, or read /dev/zero until memory ran
// out).
func LoadState(dir string) (*State, error) {
	path := filepath.Join(dir, StateFile)
	b, err := safefile.Tree(dir).ReadFile(StateFile, MaxStateBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return NewState(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	s := NewState()
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("%s: not valid state JSON: %w", path, err)
	}
	if s.Version > stateVersion {
		return nil, fmt.Errorf("%s: version %d, written by a newer haloforge (this one reads version %d): update haloforge, or use another --state-dir", path, s.Version, stateVersion)
	}
	if s.Tracks == nil {
		s.Tracks = map[string]*TrackState{}
	}
	for id, t := range s.Tracks {
		// Run IDs name directories under runs/: one that is not a run ID
		// (../..) would send --resume to read a report elsewhere.
		if t != nil && t.LastRun != "" && !reRunID.MatchString(t.LastRun) {
			return nil, fmt.Errorf("%s: track %s: last_run %q is not a run ID", path, id, t.LastRun)
		}
	}
	return s, nil
}

// stateVersion is the state.json format this haloforge reads and writes.
const stateVersion = 1

// reRunID is the form of a run ID (runner: 20261124-101500-a1b2c3).
var reRunID = regexp.MustCompile(`^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$`)

// Track returns the state of a track, creating it when absent.
func (s *State) Track(id string) *TrackState {
	t := s.Tracks[id]
	if t == nil {
		t = &TrackState{Steps: map[string]*StepState{}}
		s.Tracks[id] = t
	}
	if t.Steps == nil {
		t.Steps = map[string]*StepState{}
	}
	return t
}

// LastSuccessKey returns the cache key of the step's last success, or "".
func (s *State) LastSuccessKey(track, step string) string {
	t := s.Tracks[track]
	if t == nil || t.Steps[step] == nil || t.Steps[step].LastSuccess == nil {
		return ""
	}
	return t.Steps[step].LastSuccess.CacheKey
}

// RecordSuccess remembers a step's success with the inputs of its key.
func (s *State) RecordSuccess(track string, ps PlannedStep, runID string, at time.Time, d time.Duration) {
	t := s.Track(track)
	ss := t.Steps[ps.ID]
	if ss == nil {
		ss = &StepState{}
		t.Steps[ps.ID] = ss
	}
	ss.LastSuccess = &Success{CacheKey: ps.CacheKey, RunID: runID, At: at, Duration: d, ScriptHash: ps.ScriptHash, SupportHash: ps.SupportHash, Pins: ps.PinValues}
}

// Save writes state.json atomically: a temp file in the same dir, fsync,
// rename (safefile.Tree: a link in its place is replaced, never written
// through). Only the holder of the state dir's lock saves, so a temp file
// already there is one a killed haloforge left (kill -9 mid-write): it goes.
func (s *State) Save(dir string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	t := safefile.Tree(dir)
	if entries, err := t.ReadDir(""); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "."+StateFile+".tmp-") {
				_ = t.Remove(e.Name())
			}
		}
	}
	return t.WriteFile(StateFile, append(b, '\n'), 0o644)
}

// WriteFileAtomic replaces path with data so that a reader sees the old or
// the new content, never a torn write, even after a crash.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // make the rename durable; best effort on odd file systems
		d.Close()
	}
	return nil
}
