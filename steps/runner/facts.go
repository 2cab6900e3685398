package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps/installed"
)

// The facts protocol: what a build really consumed. A pin names an image
// tag, a git ref, a wheel version; what it resolved to on the day (a
// digest, a commit, a file with its sha256) is what reproduces the build
// (pins lock). Every step gets FactsEnv, the path of its facts file
// (<run-dir>/<step>.facts, absent when it starts), and appends one line per
// fact, tab-separated (the helpers hf_fact_image, hf_fact_git,
// hf_fact_pip_report and hf_fact_time in scripts/lib/facts.sh write them):
//
//	image<TAB>REF<TAB>sha256:<64 hex>                  an image and the digest it was pulled as
//	wheel<TAB>NAME==VERSION<TAB>URL<TAB><64 hex>       a wheel pip installed: where from, its sha256
//	git<TAB>REPO<TAB>REF<TAB><40 or 64 hex>            a checkout: the ref asked for, the commit got
//	time<TAB>NAME<TAB>MILLISECONDS                     how long a part of the step's own work took
//	created<TAB>KIND<TAB>…                             something the step created (a box, an image, a
//	                                                   directory, a file): installed.ParseFact's forms
//
// The last is a measurement, not an input: a step's times reach the
// StepFinished event and report.json (times_ns) typed, never as a log line
// a consumer would have to find among Lines the runner may drop.
//
// After the step ends, whatever its outcome, the runner reads the file (at
// most maxFactsBytes and maxFactsLines) and checks every field: a fact is
// input, and a line that is not one of these forms, or a field that is not
// what it says, is reported in the step's fact_errors and kept out.
const (
	FactsEnv       = "HALOFORGE_FACTS_FILE"
	factsSuffix    = ".facts"
	maxFactsBytes  = 256 << 10
	maxFactsLines  = 2000
	maxFactErrors  = 20
	maxFactField   = 2048
	factImage      = "image"
	factWheel      = "wheel"
	factGit        = "git"
	factTime       = "time"
	factCreated    = "created"
	factErrorsNote = "more lines were not read"
)

// Resolved is what a build consumed, as its steps recorded it.
type Resolved struct {
	Images []ResolvedImage `json:"images"`
	Wheels []ResolvedWheel `json:"wheels"`
	Git    []ResolvedGit   `json:"git"`
}

// ResolvedImage is an image and the digest it was pulled as.
type ResolvedImage struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
	Step   string `json:"step,omitempty"` // in the run's list: the step that recorded it
}

// ResolvedWheel is a wheel pip installed.
type ResolvedWheel struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	URL     string `json:"url"`
	SHA256  string `json:"sha256"`
	Step    string `json:"step,omitempty"`
}

// ResolvedGit is a checkout: the ref asked for and the commit it gave.
type ResolvedGit struct {
	Repo string `json:"repo"`
	Ref  string `json:"ref"`
	SHA  string `json:"sha"`
	Step string `json:"step,omitempty"`
}

// Empty says whether nothing was recorded.
func (r *Resolved) Empty() bool {
	return r == nil || len(r.Images)+len(r.Wheels)+len(r.Git) == 0
}

var (
	reDigest      = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	reSHA256      = regexp.MustCompile(`^[0-9a-f]{64}$`)
	reCommit      = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
	reDistName    = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,126}[A-Za-z0-9])?$`)
	reURLSafe     = regexp.MustCompile(`^[A-Za-z0-9._~:/?#\[\]@!&()*+,;=%-]+$`)
	reAbsPathSafe = regexp.MustCompile(`^/[A-Za-z0-9._/+@=,-]*$`)
	reTimeName    = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)
	reMillis      = regexp.MustCompile(`^[0-9]{1,12}$`)
)

// stepFacts is what one step's facts file said: what it consumed, the
// times it measured of its own work, by name, and what it created (checked
// as text: installed.Admit checks it against the machine).
type stepFacts struct {
	resolved Resolved
	times    map[string]time.Duration
	created  []installed.Item
}

// add checks one fact line and keeps it.
func (sf *stepFacts) add(line string) error {
	f := strings.Split(line, "\t")
	if len(f) > 0 && f[0] == factCreated {
		it, err := parseCreated(f[1:])
		if err != nil {
			return err
		}
		sf.created = append(sf.created, it)
		return nil
	}
	if len(f) == 0 || f[0] != factTime {
		return sf.resolved.add(line)
	}
	if len(f) != 3 || !reTimeName.MatchString(f[1]) || !reMillis.MatchString(f[2]) {
		return errors.New("want time<TAB>NAME<TAB>MILLISECONDS (a lower-case name, a whole number)")
	}
	ms, _ := strconv.ParseInt(f[2], 10, 64)
	if sf.times == nil {
		sf.times = map[string]time.Duration{}
	}
	sf.times[f[1]] = time.Duration(ms) * time.Millisecond
	return nil
}

// factsPath is where step writes its facts.
func (r *Runner) factsPath(step string) string {
	return filepath.Join(r.runDir, step+factsSuffix)
}

// readFacts reads a step's facts file; a missing file is no facts.
func readFacts(path string) (res stepFacts, problems []string) {
	b, err := safefile.ReadRegular(path, maxFactsBytes, safefile.Follow)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return res, nil
	case err != nil:
		return res, []string{"the facts file could not be read: " + text.Printable(err.Error(), maxResultText)}
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) > maxFactsLines {
		lines = lines[:maxFactsLines]
		problems = append(problems, fmt.Sprintf("the facts file has more than %d lines; %s", maxFactsLines, factErrorsNote))
	}
	seen := map[string]bool{}
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if seen[l] {
			continue
		}
		seen[l] = true
		if err := res.add(l); err != nil && len(problems) < maxFactErrors {
			problems = append(problems, fmt.Sprintf("facts line %d: %v: %q", i+1, err, text.Printable(l, maxResultText)))
		}
	}
	return res, problems
}

// add checks one fact line and keeps it.
func (res *Resolved) add(line string) error {
	f := strings.Split(line, "\t")
	for _, field := range f {
		if len(field) > maxFactField {
			return fmt.Errorf("a field is longer than %d bytes", maxFactField)
		}
	}
	switch {
	case len(f) == 3 && f[0] == factImage:
		if err := pins.ValidValue(pins.KindImage, f[1]); err != nil {
			return fmt.Errorf("image reference: %w", err)
		}
		if !reDigest.MatchString(f[2]) {
			return errors.New("want a digest sha256:<64 hex>")
		}
		res.Images = append(res.Images, ResolvedImage{Ref: f[1], Digest: f[2]})
	case len(f) == 4 && f[0] == factWheel:
		name, version, ok := strings.Cut(f[1], "==")
		if !ok || !reDistName.MatchString(name) {
			return errors.New("want NAME==VERSION")
		}
		if err := pins.ValidValue(pins.KindVersion, version); err != nil {
			return fmt.Errorf("version: %w", err)
		}
		if err := factURL(f[2], "https", "http", "file"); err != nil {
			return err
		}
		if !reSHA256.MatchString(f[3]) {
			return errors.New("want a sha256 of 64 lower-case hex")
		}
		res.Wheels = append(res.Wheels, ResolvedWheel{Name: name, Version: version, URL: f[2], SHA256: f[3]})
	case len(f) == 4 && f[0] == factGit:
		if err := factRepo(f[1]); err != nil {
			return err
		}
		if err := pins.ValidValue(pins.KindRef, f[2]); err != nil {
			return fmt.Errorf("ref: %w", err)
		}
		if !reCommit.MatchString(f[3]) {
			return errors.New("want a full commit of 40 (or 64) lower-case hex")
		}
		res.Git = append(res.Git, ResolvedGit{Repo: f[1], Ref: f[2], SHA: f[3]})
	default:
		return errors.New("not image<TAB>REF<TAB>DIGEST, wheel<TAB>NAME==VERSION<TAB>URL<TAB>SHA256, git<TAB>REPO<TAB>REF<TAB>SHA, time<TAB>NAME<TAB>MILLISECONDS or created<TAB>…")
	}
	return nil
}

// parseCreated checks the fields of a created line after its word.
func parseCreated(f []string) (installed.Item, error) {
	for _, field := range f {
		if len(field) > maxFactField {
			return installed.Item{}, fmt.Errorf("a field is longer than %d bytes", maxFactField)
		}
	}
	it, err := installed.ParseFact(f)
	if err != nil {
		return it, fmt.Errorf("created: %w", err)
	}
	return it, nil
}

// factURL checks a URL of one of the schemes: printable ASCII without
// spaces or quotes, a host for the network ones.
func factURL(v string, schemes ...string) error {
	if !reURLSafe.MatchString(v) {
		return errors.New("want a URL of printable ASCII, no spaces or quotes")
	}
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	ok := false
	for _, s := range schemes {
		ok = ok || u.Scheme == s
	}
	switch {
	case !ok:
		return fmt.Errorf("want a URL of scheme %s, got %q", strings.Join(schemes, ", "), u.Scheme)
	case u.Scheme != "file" && u.Host == "":
		return errors.New("want a URL with a host")
	case u.User != nil:
		_, hasPassword := u.User.Password()
		if hasPassword {
			return errors.New("a URL with a password is not recorded")
		}
	}
	return nil
}

// factRepo checks a git repository: a URL (https, http, git, ssh, file) or
// an absolute path.
func factRepo(v string) error {
	if strings.HasPrefix(v, "/") {
		if !reAbsPathSafe.MatchString(v) || strings.Contains(v, "..") {
			return errors.New("want a repository path without spaces or shell characters")
		}
		return nil
	}
	if err := factURL(v, "https", "http", "git", "ssh", "file"); err != nil {
		return fmt.Errorf("repository: %w", err)
	}
	return nil
}

// merge adds what other recorded, with the step that recorded it, leaving
// out what is already there.
func (res *Resolved) merge(step string, other Resolved) {
	for _, x := range other.Images {
		x.Step = step
		if !slices.ContainsFunc(res.Images, func(y ResolvedImage) bool { return y.Ref == x.Ref && y.Digest == x.Digest }) {
			res.Images = append(res.Images, x)
		}
	}
	for _, x := range other.Wheels {
		x.Step = step
		if !slices.ContainsFunc(res.Wheels, func(y ResolvedWheel) bool { return y.Name == x.Name && y.Version == x.Version && y.SHA256 == x.SHA256 }) {
			res.Wheels = append(res.Wheels, x)
		}
	}
	for _, x := range other.Git {
		x.Step = step
		if !slices.ContainsFunc(res.Git, func(y ResolvedGit) bool { return y.Repo == x.Repo && y.Ref == x.Ref && y.SHA == x.SHA }) {
			res.Git = append(res.Git, x)
		}
	}
}
