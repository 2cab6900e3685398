package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
)

// Locking a run: `haloforge pins lock RUN` writes a versions.env that
// reproduces the build RUN was. Its pins are RUN's validated snapshot
// (PinsSnapshot: the values its steps read, --set applied); an image a step
// recorded pulling is pinned by the digest it got, a git ref by the commit
// it checked out; what the wheels resolved to (file, sha256) goes into the
// comments of their version pins. A step RUN skipped as up to date is
// locked from the run that last built it with the same cache key.

// reRunID is what a run ID looks like (newRunID): a run named on the
// command line must be one, not a path.
var reRunID = regexp.MustCompile(`^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$`)

// ValidRunID says whether id is a run ID.
func ValidRunID(id string) bool { return reRunID.MatchString(id) }

// maxReport bounds report.json read back.
const maxReport = 16 << 20

// RunName is run id's directory in the state dir ("runs/ID").
func RunName(id string) string { return "runs/" + id }

// ReadReport reads the report.json of run id in stateDir: a regular file,
// bounded, reached through no link (safefile.Tree).
func ReadReport(stateDir, id string) (*Report, error) {
	return readReport(stateDir, RunName(id)+"/"+ReportFile)
}

// readReport reads and decodes the report name of the state dir.
func readReport(stateDir, name string) (*Report, error) {
	t := safefile.Tree(stateDir)
	b, err := t.ReadFile(name, maxReport)
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: not a run report: %w", t.Path(name), err)
	}
	switch {
	case rep.Version > ReportVersion:
		return nil, fmt.Errorf("%s: report version %d, written by a newer haloforge (this one reads version %d): update haloforge", t.Path(name), rep.Version, ReportVersion)
	case !ValidRunID(rep.RunID) || rep.Track == "" || rep.Started.IsZero():
		return nil, fmt.Errorf("%s: not a run report haloforge wrote (no run ID, track or start time)", t.Path(name))
	}
	return &rep, nil
}

// RunIDs lists the runs under stateDir/runs, newest first (IDs sort by time).
func RunIDs(stateDir string) []string {
	ents, err := safefile.Tree(stateDir).ReadDir("runs")
	if err != nil {
		return nil
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() && ValidRunID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	return ids
}

// byNameOnly are ref pins whose consumer needs a tag or branch name, not a
// commit: locking them to a commit would break the build, so the lock keeps
// the name and writes the commit it resolved to in the comment. PYTORCH_REF
// is not one: TheRock's repo_management.py do_checkout runs `git fetch
// origin <hashtag>` then `git checkout FETCH_HEAD`, which takes a commit
// (its related_commits pins are commits; read 2026-11-24).
var byNameOnly = map[string]string{
	"LLAMACPP_REF":       "toolbox/Dockerfile.vulkan clones it with git clone --branch",
	"GFX803_PYTORCH_REF": "toolbox/Dockerfile_rocm64_pytorch clones it with git clone --branch",
	"GFX803_VISION_REF":  "toolbox/Dockerfile_rocm64_pytorch clones it with git clone --branch",
	"GFX803_AUDIO_REF":   "toolbox/Dockerfile_rocm64_pytorch clones it with git clone --branch",
}

// LockInput is what Lock needs about a run.
type LockInput struct {
	Report   *Report
	Snapshot *pins.File // the run's PinsSnapshot, parsed
	// Comments are the comment lines above each pin in the pins file the run
	// was given (Report.PinsFile), when it still parses; nil otherwise.
	Comments map[string]string
	// Earlier returns the report entry of step in the newest earlier run
	// that built it with cacheKey, and that run's ID; nil when none.
	Earlier func(step, cacheKey string) (*StepReport, string)
}

// LockResult is the locked file and what the lock did, pin by pin.
type LockResult struct {
	Data     []byte
	Locked   []string // "NAME: old → new (from step S)"
	Kept     []string // a ref kept as a name, and why
	Floating []string // pins the run's steps read that still float
	Missing  []string // steps whose facts no run recorded
}

// lockFact is one resolved fact with where it came from.
type lockFact struct {
	step, run string
	pins      map[string]string // the pins that step read
	image     *ResolvedImage
	wheel     *ResolvedWheel
	git       *ResolvedGit
}

// Lock writes the versions.env that reproduces in.Report's build, checked
// by the strict parser before it is returned.
func Lock(in LockInput) (LockResult, error) {
	var res LockResult
	rep := in.Report
	facts := gatherFacts(in, &res)
	read := map[string]bool{} // pins some step of the run reads
	for _, s := range rep.Steps {
		for name := range s.Pins {
			read[name] = true
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# versions.env locked by `haloforge pins lock` from run %s (track %s, %s, started %s).\n",
		rep.RunID, rep.Track, rep.Status, rep.Started.UTC().Format("2006-01-02 15:04 MST"))
	b.WriteString("# The values that run used; images by the digest they were pulled as and git refs by the\n")
	b.WriteString("# commit they were checked out at, where the run recorded them (report.json \"resolved\").\n")
	for _, p := range in.Snapshot.Pins {
		value, notes := lockPin(p, facts, rep.RunID, &res)
		if read[p.Name] && pinFloats(p.Kind, value) {
			res.Floating = append(res.Floating, p.Name)
			notes = append(notes, "still floats: the run recorded nothing it resolved to")
		}
		b.WriteString("\n")
		if c := strings.TrimSpace(in.Comments[p.Name]); c != "" {
			for _, l := range strings.Split(c, "\n") {
				b.WriteString("# " + strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "#")) + "\n")
			}
		}
		for _, n := range notes {
			b.WriteString("# " + n + "\n")
		}
		b.WriteString(p.Name + "='" + strings.ReplaceAll(value, "'", `'"'"'`) + "'\n")
	}
	res.Data = []byte(b.String())
	if _, err := pins.Parse("locked versions.env", res.Data); err != nil {
		return res, fmt.Errorf("the locked file does not pass the pins parser (a bug): %w", err)
	}
	return res, nil
}

// gatherFacts collects what each step of the run consumed: its own facts,
// or those of the earlier run that built it, when this run skipped it.
func gatherFacts(in LockInput, res *LockResult) []lockFact {
	var out []lockFact
	for i := range in.Report.Steps {
		s := &in.Report.Steps[i]
		run := in.Report.RunID
		if s.Status == steps.OutcomeSkipped && in.Earlier != nil {
			if e, id := in.Earlier(s.ID, s.CacheKey); e != nil {
				s, run = e, id
			}
		}
		if s.Resolved.Empty() {
			if s.Status != StatusNotRun && s.Status != StatusPending {
				res.Missing = append(res.Missing, s.ID)
			}
			continue
		}
		for j := range s.Resolved.Images {
			out = append(out, lockFact{step: s.ID, run: run, pins: s.Pins, image: &s.Resolved.Images[j]})
		}
		for j := range s.Resolved.Wheels {
			out = append(out, lockFact{step: s.ID, run: run, pins: s.Pins, wheel: &s.Resolved.Wheels[j]})
		}
		for j := range s.Resolved.Git {
			out = append(out, lockFact{step: s.ID, run: run, pins: s.Pins, git: &s.Resolved.Git[j]})
		}
	}
	return out
}

// lockPin is a pin's locked value and the comment lines that say why.
func lockPin(p pins.Pin, facts []lockFact, runID string, res *LockResult) (string, []string) {
	from := func(f lockFact) string {
		if f.run != runID {
			return fmt.Sprintf("step %s, run %s", f.step, f.run)
		}
		return "step " + f.step
	}
	switch p.Kind {
	case pins.KindImage:
		if strings.Contains(p.Value, "@sha256:") {
			return p.Value, nil
		}
		f, ok := uniqueFact(facts, p, func(f lockFact) (string, bool) {
			if f.image == nil || f.image.Ref != p.Value {
				return "", false
			}
			return f.image.Digest, true
		})
		if !ok {
			return p.Value, nil
		}
		v := p.Value + "@" + f.image.Digest
		res.Locked = append(res.Locked, fmt.Sprintf("%s: %s → %s (%s)", p.Name, p.Value, v, from(f)))
		return v, []string{fmt.Sprintf("locked: %s was pulled as %s (%s)", p.Value, f.image.Digest, from(f))}
	case pins.KindRef, pins.KindBranch, pins.KindTag, pins.KindSHA:
		f, ok := uniqueFact(facts, p, func(f lockFact) (string, bool) {
			if f.git == nil || f.git.Ref != p.Value || !sameRepo(f, p.Name) {
				return "", false
			}
			return f.git.SHA, true
		})
		if !ok || f.git.SHA == p.Value {
			return p.Value, nil
		}
		if why, name := byNameOnly[p.Name]; name {
			res.Kept = append(res.Kept, fmt.Sprintf("%s=%s (commit %s): %s", p.Name, p.Value, f.git.SHA, why))
			return p.Value, []string{fmt.Sprintf("resolved: %s was commit %s (%s); kept as a name: %s", p.Value, f.git.SHA, from(f), why)}
		}
		res.Locked = append(res.Locked, fmt.Sprintf("%s: %s → %s (%s)", p.Name, p.Value, f.git.SHA, from(f)))
		return f.git.SHA, []string{fmt.Sprintf("locked: %s of %s was commit %s (%s)", p.Value, f.git.Repo, f.git.SHA, from(f))}
	case pins.KindVersion:
		var notes []string
		for _, f := range facts {
			if f.wheel != nil && f.wheel.Version == p.Value && hasPin(f, p.Name) {
				notes = append(notes, fmt.Sprintf("resolved: %s==%s from %s sha256:%s (%s)", f.wheel.Name, f.wheel.Version, f.wheel.URL, f.wheel.SHA256, from(f)))
			}
		}
		slices.Sort(notes)
		return p.Value, slices.Compact(notes)
	}
	return p.Value, nil
}

// uniqueFact finds the facts of the steps that read pin p that key
// accepts; ok only when they all agree on one value.
func uniqueFact(facts []lockFact, p pins.Pin, key func(lockFact) (string, bool)) (lockFact, bool) {
	var found lockFact
	value := ""
	for _, f := range facts {
		k, ok := key(f)
		if !ok || !hasPin(f, p.Name) {
			continue
		}
		if value != "" && k != value {
			return lockFact{}, false // two steps got two answers: nothing to lock to
		}
		found, value = f, k
	}
	return found, value != ""
}

// hasPin says whether the step that recorded f reads the pin name.
func hasPin(f lockFact, name string) bool {
	_, ok := f.pins[name]
	return ok
}

// sameRepo says whether a git fact is of the repository a ref pin goes
// with (X_REF or SOURCE_X_REF with X_REPO), when the step reads that pin.
func sameRepo(f lockFact, refPin string) bool {
	base := strings.TrimSuffix(strings.TrimPrefix(refPin, "SOURCE_"), "_REF")
	repo, ok := f.pins[base+"_REPO"]
	return !ok || repo == f.git.Repo
}

// pinFloats says whether a value of kind moves by itself.
func pinFloats(k pins.Kind, v string) bool {
	f, err := pins.Floats(k, v)
	return err == nil && f
}

// ErrNoSnapshot is Lock's answer for a run without a pins snapshot (made by
// a haloforge that did not write one).
var ErrNoSnapshot = errors.New("the run has no pins snapshot (" + PinsSnapshot + "): it was made before haloforge recorded one; lock a newer run")

// ReadSnapshot reads and parses the pins snapshot of run id in stateDir,
// which must be whole (SnapshotHead first, SnapshotEnd last).
func ReadSnapshot(stateDir, id string) (*pins.File, error) {
	t := safefile.Tree(stateDir)
	name := RunName(id) + "/" + PinsSnapshot
	path := t.Path(name)
	b, err := t.ReadFile(name, maxEnvFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoSnapshot
	}
	if err != nil {
		return nil, err
	}
	text := string(b)
	if !strings.HasPrefix(text, SnapshotHead+"\n") || !strings.HasSuffix(text, SnapshotEnd+"\n") {
		return nil, fmt.Errorf("%s is not a whole snapshot haloforge wrote", path)
	}
	return pins.Parse(path, b)
}
