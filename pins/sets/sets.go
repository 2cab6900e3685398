// Package sets holds haloforge's known-good pin sets: combinations of pins
// someone ran on a Strix Halo box (or that a seed document fixed), each with
// its evidence. A set is a versions.env-format file in this directory, its
// header naming it; the pin lines go through the same strict parser as
// versions.env, so a set can never carry what versions.env could not.
// `haloforge pins sets` lists them; `haloforge pins use SET` writes one into
// versions.env (Apply).
package sets

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/haloforge/haloforge/pins"
)

//go:embed *.env
var files embed.FS

// Status is how much a set is trusted.
type Status string

// Statuses, most trusted first.
const (
	// Recommended: validated on gfx1151 by its evidence, and what haloforge ships.
	Recommended Status = "recommended"
	// Previous: the set haloforge recommended before the current one, kept for
	// as long as its upstream still serves it; its note says until when.
	Previous Status = "previous"
	// Validated: run on gfx1151 by its evidence.
	Validated Status = "validated"
	// Candidate: upstream's current line, not yet validated on gfx1151 in the evidence.
	Candidate Status = "candidate"
	// History: kept to reproduce or compare; not for new builds.
	History Status = "history"
)

var statusRank = map[Status]int{Recommended: 0, Previous: 1, Validated: 2, Candidate: 3, History: 4}

// Set is one known-good set.
type Set struct {
	ID       string     `json:"id"`
	Title    string     `json:"title"`
	Status   Status     `json:"status"`
	Evidence []string   `json:"evidence"`
	Note     string     `json:"note,omitempty"`
	File     *pins.File `json:"-"`
}

// Values maps each pin of the set to its resolved value.
func (s Set) Values() map[string]string { return s.File.Values() }

// Names lists the set's pins in file order.
func (s Set) Names() []string {
	out := make([]string, 0, len(s.File.Pins))
	for _, p := range s.File.Pins {
		out = append(out, p.Name)
	}
	return out
}

var (
	reID       = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,62}$`)
	reHeader   = regexp.MustCompile(`^#\s*([a-z]+):\s*(.*?)\s*$`)
	headerKeys = map[string]bool{"id": true, "title": true, "status": true, "evidence": true, "note": true}
)

// maxSetFile bounds a set file; real ones are a few KiB.
const maxSetFile = 64 << 10

// Parse reads one set file: a header of `# key: value` lines (id, title,
// status, evidence (repeatable), note (repeatable)) up to the first line
// that is not a comment, then versions.env lines.
func Parse(name string, data []byte) (Set, error) {
	var s Set
	if len(data) > maxSetFile {
		return s, fmt.Errorf("%s: %d bytes (limit %d)", name, len(data), maxSetFile)
	}
	f, err := pins.Parse(name, data)
	if err != nil {
		return s, err
	}
	s.File = f
	var notes []string
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "#") {
			break
		}
		if strings.TrimSpace(strings.TrimLeft(t, "#")) == "" {
			continue
		}
		m := reHeader.FindStringSubmatch(t)
		if m == nil || !headerKeys[m[1]] {
			return s, &pins.Error{Path: name, Line: i + 1, Reason: "header lines are `# key: value` with key id, title, status, evidence or note"}
		}
		key, val := m[1], m[2]
		bad := func(why string) error { return &pins.Error{Path: name, Line: i + 1, Reason: key + ": " + why} }
		switch key {
		case "id":
			if s.ID != "" || !reID.MatchString(val) {
				return s, bad("want one lower-case id of letters, digits, '.' and '-'")
			}
			s.ID = val
		case "title":
			if s.Title != "" || val == "" || len(val) > 200 {
				return s, bad("want one title of at most 200 characters")
			}
			s.Title = val
		case "status":
			if _, ok := statusRank[Status(val)]; !ok || s.Status != "" {
				return s, bad("want one of recommended, previous, validated, candidate, history")
			}
			s.Status = Status(val)
		case "evidence":
			u, err := url.Parse(val)
			if err != nil || u.Scheme != "https" || u.Host == "" || strings.ContainsAny(val, " \t") {
				return s, bad("want an https URL")
			}
			s.Evidence = append(s.Evidence, val)
		case "note":
			notes = append(notes, val)
		}
	}
	s.Note = strings.Join(notes, " ")
	var missing []string
	if s.ID == "" {
		missing = append(missing, "id")
	}
	if s.Title == "" {
		missing = append(missing, "title")
	}
	if s.Status == "" {
		missing = append(missing, "status")
	}
	if len(s.Evidence) == 0 {
		missing = append(missing, "evidence")
	}
	if len(missing) > 0 {
		return s, &pins.Error{Path: name, Line: 1, Reason: "header lacks " + strings.Join(missing, ", ")}
	}
	if len(f.Pins) == 0 {
		return s, &pins.Error{Path: name, Line: 1, Reason: "no pins"}
	}
	return s, nil
}

// All returns the built-in sets, most trusted first, then by id.
func All() ([]Set, error) { return load(files) }

func load(fsys fs.FS) ([]Set, error) {
	names, err := fs.Glob(fsys, "*.env")
	if err != nil {
		return nil, err
	}
	var out []Set
	var errs []error
	seen := map[string]string{}
	for _, n := range names {
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		s, err := Parse(path.Join("pins/sets", n), data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if other, dup := seen[s.ID]; dup {
			errs = append(errs, fmt.Errorf("pins/sets/%s: id %s is also %s's", n, s.ID, other))
			continue
		}
		seen[s.ID] = n
		out = append(out, s)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if a, b := statusRank[out[i].Status], statusRank[out[j].Status]; a != b {
			return a < b
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Lookup returns the built-in set of an id.
func Lookup(id string) (Set, error) {
	all, err := All()
	if err != nil {
		return Set{}, err
	}
	var ids []string
	for _, s := range all {
		if s.ID == id {
			return s, nil
		}
		ids = append(ids, s.ID)
	}
	return Set{}, fmt.Errorf("unknown set %q (known sets: %s)", id, strings.Join(ids, ", "))
}

// Differences lists the set's pins whose value differs from f's (or that
// f lacks), in the set's order.
func (s Set) Differences(f *pins.File) []string {
	have := f.Values()
	var out []string
	for _, p := range s.File.Pins {
		// An absent pin reads as empty in the scripts, so a set's empty
		// value (an optional pin cleared) matches a file without the name.
		if v, ok := have[p.Name]; (!ok && p.Value != "") || (ok && v != p.Value) {
			out = append(out, p.Name)
		}
	}
	return out
}
