package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps/installed"
)

// What a run created for its track goes into the state dir's record
// (installed.json) as each step ends: the items the step recorded in its
// facts file, each admitted against the machine (installed.Admit), and the
// track's own directories of the state dir the runner and the scripts make
// (cache/<track>, <track>). A dry run and a run without history (serve,
// bench) record nothing: they create nothing haloforge keeps.

// measureBudget bounds asking the engines for sizes at the end of a run.
const measureBudget = time.Minute

// recordCreated admits what step recorded it created, adds it and the
// track's directories to the record and saves it; what cannot be admitted
// is one more fact error. It returns the items admitted.
func (r *Runner) recordCreated(step string, created []installed.Item, problems []string) ([]installed.Item, []string) {
	if r.o.DryRun || r.o.NoHistory {
		return nil, problems
	}
	now := time.Now()
	var admitted []installed.Item
	for _, it := range created {
		it.RunID, it.Step = r.runID, step
		a, err := installed.Admit(it, r.o.StateDir, r.owner, now)
		if err != nil {
			if len(problems) < maxFactErrors {
				problems = append(problems, "created "+it.Kind+" "+it.Where()+": not recorded: "+text.Printable(err.Error(), maxResultText))
			}
			continue
		}
		admitted = append(admitted, a)
	}
	rec, err := installed.Load(r.o.StateDir)
	if err != nil {
		return admitted, append(problems, text.Printable(err.Error(), maxResultText))
	}
	track := r.plan.Track.ID
	rec.Add(track, admitted...)
	rec.Add(track, r.ownDirs(step, now, rec.Items(track))...)
	items := rec.Items(track)
	if len(items) == 0 {
		return admitted, problems // nothing to keep: no record is written
	}
	installed.Measure(items, now)
	if err := rec.Save(r.o.StateDir); err != nil {
		return admitted, append(problems, "what haloforge installed could not be saved: "+text.Printable(err.Error(), maxResultText))
	}
	r.report.Installed = items
	return admitted, problems
}

// ownDirs are the track's directories of the state dir that hold
// something and are not recorded yet: haloforge's by being there.
func (r *Runner) ownDirs(step string, at time.Time, have []installed.Item) []installed.Item {
	var out []installed.Item
	t := safefile.Tree(r.o.StateDir)
	for _, d := range []struct{ what, name string }{
		{"cache", "cache/" + r.plan.Track.ID},
		{"data", r.plan.Track.ID},
	} {
		// A directory of the state dir, reached through no link.
		ents, err := t.ReadDir(d.name)
		if err != nil || len(ents) == 0 {
			continue
		}
		it := installed.Item{Kind: installed.KindDir, What: d.what, Path: t.Path(d.name), RunID: r.runID, Step: step}
		known := false
		for _, h := range have {
			known = known || h.Key() == it.Key()
		}
		if known {
			continue
		}
		if a, err := installed.Admit(it, r.o.StateDir, r.owner, at); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// measureInstalled asks the engines for the sizes of the track's boxes and
// images at the end of the run, and saves them.
func (r *Runner) measureInstalled() error {
	if r.o.DryRun || r.o.NoHistory {
		return nil
	}
	rec, err := installed.Load(r.o.StateDir)
	if err != nil {
		return err
	}
	items := rec.Items(r.plan.Track.ID)
	if len(items) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), measureBudget)
	defer cancel()
	now := time.Now()
	installed.Cleaner{StateDir: r.o.StateDir}.MeasureEngine(ctx, items, now)
	installed.Measure(items, now)
	if err := rec.Save(r.o.StateDir); err != nil {
		return fmt.Errorf("what haloforge installed: %w", err)
	}
	r.report.Installed = items
	return nil
}
