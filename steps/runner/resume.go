package runner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps"
)

// planResume checks that there is a run to resume and explains how the
// fresh plan differs from it: the plan is always made from today's pins and
// scripts, so a step whose inputs changed since runs again.
func (r *Runner) planResume() error {
	track := r.plan.Track.ID
	ts := r.st.Tracks[track]
	if ts == nil || ts.LastRun == "" {
		return fmt.Errorf("nothing to resume: track %s has not run with state dir %s", track, r.o.StateDir)
	}
	last := ts.LastRun
	var unfinished []string
	for _, s := range r.plan.Steps {
		ss := ts.Steps[s.ID]
		if ss == nil || ss.RunID != last {
			continue
		}
		switch ss.Status {
		case steps.OutcomeFailed, steps.OutcomeInterrupted, steps.OutcomeRunning:
			unfinished = append(unfinished, fmt.Sprintf("%s (%s)", s.ID, describeStatus(ss.Status)))
			r.resumed[s.ID] = true
		}
	}
	if len(unfinished) == 0 {
		r.notices = append(r.notices, fmt.Sprintf("run %s ended without a failure; nothing to resume, running what is out of date", last))
	} else {
		r.notices = append(r.notices, fmt.Sprintf("resuming run %s: %s", last, strings.Join(unfinished, ", ")))
	}
	r.notices = append(r.notices, r.changesSince(last)...)
	return nil
}

func describeStatus(s string) string {
	if s == steps.OutcomeRunning {
		return "haloforge stopped while it ran"
	}
	return s
}

// changesSince compares the pins and scripts of run id with today's plan.
func (r *Runner) changesSince(id string) []string {
	prev, err := ReadReport(r.o.StateDir, id)
	if err != nil {
		return nil
	}
	old := map[string]StepReport{}
	for _, s := range prev.Steps {
		old[s.ID] = s
	}
	var changed []string
	var rerun []string
	seen := map[string]bool{}
	for i, s := range r.plan.Steps {
		o, ok := old[s.ID]
		if !ok || o.CacheKey == s.CacheKey {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(s.PinValues)) {
			if v, had := o.Pins[name]; (!had || v != s.PinValues[name]) && !seen[name] {
				seen[name] = true
				changed = append(changed, fmt.Sprintf("%s %s -> %s", name, text.OrNone(v), s.PinValues[name]))
			}
		}
		if r.runs[i] && (o.Status == steps.OutcomeSucceeded || o.Status == steps.OutcomeNotVerified || o.Status == steps.OutcomeSkipped) {
			rerun = append(rerun, s.ID)
		}
	}
	if len(changed) == 0 && len(rerun) == 0 {
		return nil
	}
	msg := "re-planned: inputs changed since run " + id
	if len(changed) > 0 {
		msg += " (" + strings.Join(changed, "; ") + ")"
	}
	if len(rerun) > 0 {
		msg += "; runs again: " + strings.Join(rerun, ", ")
	}
	return []string{msg}
}
