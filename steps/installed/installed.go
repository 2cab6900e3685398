// Package installed is what haloforge created for each track, and how it
// is removed again: distrobox boxes, podman images, directories (venvs,
// caches, the track's files) and files (models). A step records what it
// creates, as it creates it (scripts/lib/facts.sh: hf_created_box,
// hf_created_image, hf_mkdir, hf_created_file), in its facts file; the
// runner admits each line (Admit) into the state dir's record
// (<state-dir>/installed.json) under the build's lock.
//
// Ownership is recorded at creation and checked again at removal: a box or
// an image haloforge builds carries the label io.haloforge.owner with the
// run's owner token, a directory a marker file holding it, a file the
// identity (device, inode, size, time) it had when its step ended, a pulled
// image the image ID its reference had. A directory inside the state dir is
// haloforge's by being there. What no longer matches the record (a label
// gone, a marker changed, a reference pulled again) is never touched.
package installed

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/pins"
)

// Names of the protocol.
const (
	File       = "installed.json"     // the record, in the state dir
	OwnerEnv   = "HALOFORGE_OWNER"    // the run's owner token, in every step's environment
	OwnerLabel = "io.haloforge.owner" // the label a box or an image carries it in
	Marker     = ".haloforge-owner"   // the file a directory carries it in
	// StateDirOwner is the owner of a directory inside the state dir:
	// haloforge's by being there.
	StateDirOwner = "state-dir"
)

// Kinds of Item.
const (
	KindBox   = "box"    // a distrobox (a container)
	KindImage = "image"  // a container image
	KindDir   = "dir"    // a directory on this machine
	KindFile  = "file"   // a file on this machine
	KindInBox = "in-box" // a path inside a box: it goes with the box
)

// Whats: what a directory or file is for.
var whats = []string{"venv", "cache", "model", "source", "data"}

// How an image came to be.
const (
	Built  = "built"
	Pulled = "pulled"
)

// Item is one thing haloforge created for a track.
type Item struct {
	Kind string `json:"kind"`
	// What it is for: "box", "image", or for a path venv, cache, model,
	// source, data.
	What string `json:"what"`
	// Name is a box's name or an image's reference; "" for a path.
	Name string `json:"name,omitempty"`
	// Path is a directory's or a file's, or a path inside Box.
	Path string `json:"path,omitempty"`
	Box  string `json:"box,omitempty"`
	// Engine runs the box or holds the image: podman, docker, or
	// sudo-podman, sudo-docker for a rootful one.
	Engine  string `json:"engine,omitempty"`
	ImageID string `json:"image_id,omitempty"` // an image's full ID (64 hex)
	How     string `json:"how,omitempty"`      // an image: built or pulled
	// Owner is the token its label or marker holds (StateDirOwner for a
	// directory of the state dir, "" for a pulled image or a file, which
	// are checked by ImageID and Identity).
	Owner    string  `json:"owner"`
	Identity *FileID `json:"identity,omitempty"`
	// SizeBytes is its size on disk when Measured; null when unknown.
	SizeBytes *int64    `json:"size_bytes"`
	Measured  time.Time `json:"measured,omitzero"`
	RunID     string    `json:"run_id"`
	Step      string    `json:"step"`
	Created   time.Time `json:"created"`
}

// FileID is what makes a file the one a step wrote.
type FileID struct {
	Dev   uint64 `json:"dev"`
	Ino   uint64 `json:"ino"`
	Size  int64  `json:"size_bytes"`
	MTime int64  `json:"mtime_ns"`
}

// Key is what makes two records the same thing.
func (it Item) Key() string {
	switch it.Kind {
	case KindImage:
		return it.Kind + " " + it.Engine + " " + it.ImageID
	case KindBox:
		return it.Kind + " " + it.Engine + " " + it.Name
	case KindInBox:
		return it.Kind + " " + it.Box + " " + it.Path
	}
	return it.Kind + " " + it.Path
}

// Where is the item in words: "box haloforge-llamacpp", "/home/u/…".
func (it Item) Where() string {
	switch it.Kind {
	case KindBox, KindImage:
		return it.Name
	case KindInBox:
		return it.Path + " in box " + it.Box
	}
	return it.Path
}

// Record is installed.json: per track, what haloforge created.
type Record struct {
	Version int                     `json:"version"`
	Tracks  map[string]*TrackRecord `json:"tracks"`
}

// TrackRecord is one track's items, in the order they were created.
type TrackRecord struct {
	Items []Item `json:"items"`
}

// recordVersion is the installed.json format this haloforge reads and writes.
const recordVersion = 1

// maxRecord bounds installed.json.
const maxRecord = 4 << 20

// Load reads the state dir's record; a missing file is an empty record.
// It is a file of the state dir: never read through a link.
func Load(stateDir string) (*Record, error) {
	r := &Record{Version: recordVersion, Tracks: map[string]*TrackRecord{}}
	t := safefile.Tree(stateDir)
	path := t.Path(File)
	b, err := t.ReadFile(File, maxRecord)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("what haloforge installed: %w", err)
	}
	if err := json.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("%s: not a record of what haloforge installed: %w", path, err)
	}
	if r.Version > recordVersion {
		return nil, fmt.Errorf("%s: version %d, written by a newer haloforge (this one reads version %d): update haloforge", path, r.Version, recordVersion)
	}
	if r.Tracks == nil {
		r.Tracks = map[string]*TrackRecord{}
	}
	return r, nil
}

// Save replaces the record atomically (a rename, which replaces a link
// rather than writing through it), reaching it through no link in the
// state dir (safefile.Tree). Only the holder of the state dir's lock saves.
func (r *Record) Save(stateDir string) error {
	r.Version = recordVersion
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return safefile.Tree(stateDir).WriteFile(File, append(b, '\n'), 0o644)
}

// Items are track's items (none when it has no record).
func (r *Record) Items(track string) []Item {
	if r == nil || r.Tracks[track] == nil {
		return nil
	}
	return r.Tracks[track].Items
}

// Add records items for track: one that is already there (the same Key)
// is replaced, keeping when it was first created.
func (r *Record) Add(track string, items ...Item) {
	t := r.Tracks[track]
	if t == nil {
		t = &TrackRecord{}
		r.Tracks[track] = t
	}
	for _, it := range items {
		if i := slices.IndexFunc(t.Items, func(o Item) bool { return o.Key() == it.Key() }); i >= 0 {
			it.Created, it.RunID, it.Step = t.Items[i].Created, t.Items[i].RunID, t.Items[i].Step
			if it.SizeBytes == nil {
				it.SizeBytes, it.Measured = t.Items[i].SizeBytes, t.Items[i].Measured
			}
			t.Items[i] = it
			continue
		}
		t.Items = append(t.Items, it)
	}
}

// Drop forgets the items of track whose keys are given; a track left with
// none is forgotten.
func (r *Record) Drop(track string, keys ...string) {
	t := r.Tracks[track]
	if t == nil {
		return
	}
	t.Items = slices.DeleteFunc(t.Items, func(it Item) bool { return slices.Contains(keys, it.Key()) })
	if len(t.Items) == 0 {
		delete(r.Tracks, track)
	}
}

// Total is the items' size, and how many of them have none known.
func Total(items []Item) (bytes int64, unknown int) {
	for _, it := range items {
		switch {
		case it.Kind == KindInBox:
			// Inside its box: counted in the box's size.
		case it.SizeBytes == nil:
			unknown++
		default:
			bytes += *it.SizeBytes
		}
	}
	return bytes, unknown
}

// NewOwner is a run's owner token: its run ID and 48 random bits, so that
// no label or marker anyone else made can match it by chance.
func NewOwner(runID string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return runID + "." + hex.EncodeToString(b)
}

var (
	reOwner   = regexp.MustCompile(`^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}\.[0-9a-f]{12}$`)
	reBoxName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)
	reImageID = regexp.MustCompile(`^(sha256:)?[0-9a-f]{64}$`)
	rePath    = regexp.MustCompile(`^/[A-Za-z0-9._/+@=,~-]*$`)
)

// ValidOwner says whether s is an owner token NewOwner could have made.
func ValidOwner(s string) bool { return reOwner.MatchString(s) }

// engines are the Engine values, each with the command line that runs it.
var engines = map[string][]string{
	"podman":      {"podman"},
	"docker":      {"docker"},
	"sudo-podman": {"sudo", "-n", "podman"},
	"sudo-docker": {"sudo", "-n", "docker"},
}

// EngineCommand is the command line of an Engine value; nil when unknown.
func EngineCommand(engine string) []string { return slices.Clone(engines[engine]) }

// ParseFact reads the fields of one "created" line of a facts file (the
// word "created" already taken off):
//
//	box<TAB>NAME<TAB>ENGINE
//	image<TAB>REF<TAB>IMAGE-ID<TAB>ENGINE<TAB>built|pulled<TAB>SIZE
//	dir<TAB>WHAT<TAB>PATH
//	file<TAB>WHAT<TAB>PATH
//	in-box<TAB>BOX<TAB>WHAT<TAB>PATH
//
// SIZE is bytes or "-". Every field is checked; what a line says about the
// machine (a marker, a file) is checked by Admit.
func ParseFact(f []string) (Item, error) {
	if len(f) == 0 {
		return Item{}, errors.New("no kind")
	}
	switch {
	case f[0] == KindBox && len(f) == 3:
		if !reBoxName.MatchString(f[1]) {
			return Item{}, errors.New("want a box name of letters, digits, _ . -")
		}
		if engines[f[2]] == nil {
			return Item{}, errors.New("want the engine podman, docker, sudo-podman or sudo-docker")
		}
		return Item{Kind: KindBox, What: KindBox, Name: f[1], Engine: f[2]}, nil
	case f[0] == KindImage && len(f) == 6:
		if err := pins.ValidValue(pins.KindImage, f[1]); err != nil {
			return Item{}, fmt.Errorf("image reference: %w", err)
		}
		if !reImageID.MatchString(f[2]) {
			return Item{}, errors.New("want an image ID of 64 hex")
		}
		if engines[f[3]] == nil {
			return Item{}, errors.New("want the engine podman, docker, sudo-podman or sudo-docker")
		}
		if f[4] != Built && f[4] != Pulled {
			return Item{}, errors.New("want built or pulled")
		}
		it := Item{Kind: KindImage, What: KindImage, Name: f[1], ImageID: strings.TrimPrefix(f[2], "sha256:"), Engine: f[3], How: f[4]}
		if f[5] != "-" {
			n, err := strconv.ParseInt(f[5], 10, 64)
			if err != nil || n < 0 {
				return Item{}, errors.New("want a size in bytes, or -")
			}
			it.SizeBytes = &n
		}
		return it, nil
	case (f[0] == KindDir || f[0] == KindFile) && len(f) == 3:
		if !slices.Contains(whats, f[1]) {
			return Item{}, fmt.Errorf("want what it is for: %s", strings.Join(whats, ", "))
		}
		if err := checkPath(f[2]); err != nil {
			return Item{}, err
		}
		return Item{Kind: f[0], What: f[1], Path: f[2]}, nil
	case f[0] == KindInBox && len(f) == 4:
		if !reBoxName.MatchString(f[1]) {
			return Item{}, errors.New("want a box name of letters, digits, _ . -")
		}
		if !slices.Contains(whats, f[2]) {
			return Item{}, fmt.Errorf("want what it is for: %s", strings.Join(whats, ", "))
		}
		if err := checkPath(f[3]); err != nil {
			return Item{}, err
		}
		return Item{Kind: KindInBox, Box: f[1], What: f[2], Path: f[3]}, nil
	}
	return Item{}, errors.New("not box<TAB>NAME<TAB>ENGINE, image<TAB>REF<TAB>ID<TAB>ENGINE<TAB>built|pulled<TAB>SIZE, dir|file<TAB>WHAT<TAB>PATH or in-box<TAB>BOX<TAB>WHAT<TAB>PATH")
}

// checkPath refuses a path that is not absolute and clean, or that names
// a place no step may claim as its own (the root, a top-level directory).
func checkPath(p string) error {
	if !rePath.MatchString(p) || filepath.Clean(p) != p {
		return errors.New("want a clean absolute path without spaces or shell characters")
	}
	if strings.Count(p, "/") < 2 {
		return fmt.Errorf("%s is too near the root to be a step's own", p)
	}
	return nil
}

// Admit checks a recorded item against this machine as its step ended and
// completes it: a directory must be one (not a link) holding the run's
// marker, or be inside the state dir; a file must be a regular file, whose
// identity is taken; none may be the state dir or hold it, or be the home
// directory. Boxes and images are checked at removal (the label, the image
// ID): their engine may need sudo.
func Admit(it Item, stateDir, owner string, at time.Time) (Item, error) {
	switch it.Kind {
	case KindBox:
		it.Owner = owner
	case KindImage:
		if it.How == Built {
			it.Owner = owner
		}
	case KindDir, KindFile:
		if err := notHome(it.Path, stateDir); err != nil {
			return it, err
		}
		fi, err := os.Lstat(it.Path)
		if err != nil {
			return it, err
		}
		if it.Kind == KindFile {
			if !fi.Mode().IsRegular() {
				return it, fmt.Errorf("%s is %s, not a regular file", it.Path, safefile.Kind(fi.Mode()))
			}
			it.Identity = identity(fi)
			break
		}
		if !fi.IsDir() {
			return it, fmt.Errorf("%s is %s, not a directory", it.Path, safefile.Kind(fi.Mode()))
		}
		if InStateDir(it.Path, stateDir) {
			it.Owner = StateDirOwner
			break
		}
		m, err := readMarker(it.Path)
		if err != nil {
			return it, err
		}
		if !ValidOwner(m) {
			return it, fmt.Errorf("%s/%s does not hold an owner token haloforge wrote", it.Path, Marker)
		}
		it.Owner = m
	case KindInBox:
		it.Owner = owner
	}
	if linked(it, stateDir) {
		return it, fmt.Errorf("%s: a link is on the way to it", it.Path)
	}
	it.Created = at
	return it, nil
}

// notHome refuses the home directory, the state dir and what holds it.
func notHome(p, stateDir string) error {
	if home, err := os.UserHomeDir(); err == nil && filepath.Clean(home) == p {
		return fmt.Errorf("%s is the home directory", p)
	}
	if sd := filepath.Clean(stateDir); sd == p || strings.HasPrefix(sd+"/", p+"/") {
		return fmt.Errorf("%s holds the state dir", p)
	}
	return nil
}

// InStateDir says whether p is inside the state dir (not the dir itself).
func InStateDir(p, stateDir string) bool {
	sd := filepath.Clean(stateDir)
	return strings.HasPrefix(p, sd+"/") && p != sd
}

// linked says whether a path item is reached through a link where its
// ownership does not vouch for it: below the state dir for one of the
// state dir's directories (the state dir itself may be reached through
// one, a home on another disk), the path itself for the others (whose
// marker or identity says they are the one recorded).
func linked(it Item, stateDir string) bool {
	if it.Kind != KindDir && it.Kind != KindFile {
		return false
	}
	root := filepath.Dir(it.Path)
	if it.Owner == StateDirOwner {
		root = filepath.Clean(stateDir)
	}
	rel, err := filepath.Rel(root, it.Path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return true
	}
	p := root
	for _, elem := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, elem)
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			return true
		}
	}
	return false
}

// maxMarker bounds a marker file.
const maxMarker = 256

func readMarker(dir string) (string, error) {
	b, err := safefile.ReadRegular(filepath.Join(dir, Marker), maxMarker, safefile.NoFollow)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// identity is what a file is, for FileID.
func identity(fi fs.FileInfo) *FileID {
	id := &FileID{Size: fi.Size(), MTime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.Dev, id.Ino = uint64(st.Dev), st.Ino
	}
	return id
}

// Describe is the item in words, the one form every screen lists it in:
// "box haloforge-llamacpp (podman)", "image docker.io/x:1 (pulled)",
// "venv /opt/venv in box haloforge-therock", "cache /home/u/….".
func (it Item) Describe() string {
	switch it.Kind {
	case KindBox:
		return "box " + it.Name + " (" + it.Engine + ")"
	case KindImage:
		return "image " + it.Name + " (" + it.How + ")"
	}
	return it.What + " " + it.Where()
}

// Size is the item's size in words: "1.2 GiB", "in its box", "size unknown".
func (it Item) Size() string {
	switch {
	case it.Kind == KindInBox:
		return "in the box"
	case it.SizeBytes == nil:
		return "size unknown"
	}
	return text.Bytes(*it.SizeBytes)
}
