package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
)

type pinsLockOptions struct {
	*globalOptions // --state-dir: where the run is
	run, output    string
	force          bool
}

func newPinsLockCmd(g *globalOptions) *cobra.Command {
	o := pinsLockOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "lock RUN",
		Short: "Write a versions.env that reproduces a build: its pins, images by digest, git refs by commit",
		Long: "lock reads what run RUN (a run ID, or last: the newest build that was not a dry run) " +
			"consumed, as its report.json records it (\"resolved\": image digests, wheel files with their " +
			"sha256, commits), and writes the pins that run used (its validated snapshot, --set applied) " +
			"with every image its steps pulled pinned by digest and every git ref they checked out pinned " +
			"by commit; each wheel's URL and sha256 go into the comment of its version pin. A ref that " +
			"its build needs by name (git clone --branch) keeps the name and gets the commit in its " +
			"comment. A step the run skipped as up to date is locked from the run that built it. The file " +
			"goes to stdout, or to -o FILE (never over an existing file without --force); it passes " +
			"`haloforge pins check`. Exit 1 when a pin the run's steps read still floats (no fact " +
			"recorded for it); the file is written all the same.",
		Example: "  haloforge pins lock last -o versions.lock.env\n" +
			"  haloforge pins lock 20261124-101500-a1b2c3 > versions.env.new\n" +
			"  haloforge build --track therock-toolbox --pins versions.lock.env   # the same build again",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.run = args[0]
			return runPinsLock(o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "write the locked versions.env to FILE instead of stdout")
	cmd.Flags().BoolVar(&o.force, "force", false, "with -o: replace FILE when it exists")
	return cmd
}

func runPinsLock(o pinsLockOptions, stdout, stderr io.Writer) error {
	stateDir := o.stateDirOr()
	id := o.run
	switch {
	case id == "last":
		if id = lastBuild(stateDir); id == "" {
			return usageErr(fmt.Errorf("no build to lock in %s (dry runs resolve nothing)", filepath.Join(stateDir, "runs")))
		}
	case !runner.ValidRunID(id):
		return usageErr(fmt.Errorf("%q is not a run: give a run ID such as 20261124-101500-a1b2c3 (report: lines, haloforge build) or last", id))
	}
	rep, err := runner.ReadReport(stateDir, id)
	if err != nil {
		return usageErr(fmt.Errorf("run %s: %w", id, err))
	}
	if rep.DryRun {
		return usageErr(fmt.Errorf("run %s was a dry run: it resolved nothing to lock", id))
	}
	snap, err := runner.ReadSnapshot(stateDir, id)
	if err != nil {
		return usageErr(fmt.Errorf("run %s: %w", id, err))
	}
	if o.output != "" && !o.force {
		if _, err := os.Lstat(o.output); err == nil {
			return usageErr(fmt.Errorf("%s exists: pins lock never replaces a file (remove it, or pass --force)", o.output))
		}
	}
	res, err := runner.Lock(runner.LockInput{Report: rep, Snapshot: snap, Comments: pinComments(rep.PinsFile),
		Earlier: func(step, key string) (*runner.StepReport, string) { return earlierBuild(stateDir, id, step, key) }})
	if err != nil {
		return failedErr(err)
	}
	fmt.Fprintf(stderr, "pins lock: run %s (track %s, %s)\n", id, rep.Track, rep.Status)
	if rep.Status != steps.OutcomeSucceeded && rep.Status != steps.OutcomeNotVerified {
		fmt.Fprintf(stderr, "  ⚠ the run did not succeed: this locks what it consumed up to where it stopped\n")
	}
	for _, l := range res.Locked {
		fmt.Fprintf(stderr, "  locked %s\n", l)
	}
	for _, l := range res.Kept {
		fmt.Fprintf(stderr, "  kept %s\n", l)
	}
	if len(res.Missing) > 0 {
		fmt.Fprintf(stderr, "  no facts recorded by: %s\n", strings.Join(res.Missing, ", "))
	}
	if o.output == "" {
		if _, err := stdout.Write(res.Data); err != nil {
			return failedErr(err)
		}
	} else {
		if err := steps.WriteFileAtomic(o.output, res.Data); err != nil {
			return failedErr(fmt.Errorf("-o %s: %w", o.output, err))
		}
		fmt.Fprintf(stderr, "wrote %s (%d pins); haloforge pins check %s validates it\n", o.output, len(snap.Pins), o.output)
	}
	if len(res.Floating) > 0 {
		return failedErr(fmt.Errorf("still floating (the run recorded nothing they resolved to): %s", strings.Join(res.Floating, ", ")))
	}
	return nil
}

// lastBuild is the newest run under stateDir that was not a dry run.
func lastBuild(stateDir string) string {
	for _, id := range runner.RunIDs(stateDir) {
		if rep, err := runner.ReadReport(stateDir, id); err == nil && !rep.DryRun {
			return id
		}
	}
	return ""
}

// earlierBuild finds the newest run before id that built step with the
// cache key key and recorded what it consumed.
func earlierBuild(stateDir, id, step, key string) (*runner.StepReport, string) {
	for _, other := range runner.RunIDs(stateDir) {
		if other >= id {
			continue
		}
		rep, err := runner.ReadReport(stateDir, other)
		if err != nil || rep.DryRun {
			continue
		}
		for i := range rep.Steps {
			s := &rep.Steps[i]
			if s.ID == step && s.CacheKey == key && !s.Resolved.Empty() &&
				(s.Status == steps.OutcomeSucceeded || s.Status == steps.OutcomeNotVerified) {
				return s, other
			}
		}
	}
	return nil, ""
}

// pinComments are the comments above each pin of the pins file a run was
// given, when it still parses: where each value came from.
func pinComments(path string) map[string]string {
	if path == "" {
		return nil
	}
	pf, err := pins.Load(path)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, p := range pf.Pins {
		out[p.Name] = p.Comment
	}
	return out
}
