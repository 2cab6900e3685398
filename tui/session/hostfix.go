package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/detect/hostfix"
	"github.com/haloforge/haloforge/tui"
)

// The wizard's host fixes: the same plan, preview and apply as `haloforge
// doctor --plan` and `--apply`, through package hostfix.

var _ tui.HostFixer = (*Engine)(nil)

// HostFix plans the fixes for the last detection and previews what
// applying them changes now.
func (e *Engine) HostFix(ctx context.Context) (*tui.HostFix, error) {
	p, err := e.lastHostPlan()
	if err != nil {
		return nil, err
	}
	fix := &tui.HostFix{Plan: p}
	text, changes, err := hostfix.Preview(ctx, p, e.host(io.Discard, e.previewRunner()))
	if err != nil {
		fix.PreviewErr = err.Error()
		return fix, nil
	}
	fix.Changes, fix.Applicable = text, changes
	return fix, nil
}

// ApplyHostFix applies the plan when its changes are still the ones the
// user confirmed; commands that need root go through sudo (the terminal is
// the user's while it runs).
func (e *Engine) ApplyHostFix(ctx context.Context, fix *tui.HostFix, out io.Writer) (*tui.HostFixResult, error) {
	if fix == nil || fix.Plan == nil || !fix.Applicable || fix.Changes == "" {
		return nil, errors.New("no confirmed changes to apply")
	}
	// The undo and verify it prints act on the same system and backups.
	var flags []string
	if e.HostRoot != "" && e.HostRoot != "/" {
		flags = append(flags, "--root", e.HostRoot)
	}
	if slices.Contains(e.Flags, "--state-dir") {
		flags = append(flags, "--state-dir", e.StateDir)
	}
	dir, err := hostfix.Apply(ctx, fix.Plan, e.host(out, e.runner()), hostfix.ApplyOptions{
		StateDir: e.StateDir, Version: e.Version, Confirmed: fix.Changes, Flags: flags})
	res := &tui.HostFixResult{BackupDir: dir}
	if dir != "" {
		if m, merr := hostfix.LoadBackup(dir); merr == nil {
			res.Commands = m.Commands
		}
	}
	return res, err
}

// lastHostPlan plans the host fixes for the last detection.
func (e *Engine) lastHostPlan() (*hostfix.Plan, error) {
	r := e.lastReport()
	if r == nil {
		return nil, errors.New("nothing detected yet")
	}
	return e.hostPlan(r)
}

// hostFixCount is how many host changes the plan for r holds that
// haloforge applies, and how many it leaves to the user (by hand), for the
// detection screen's offer; 0, 0 when there is no plan to make.
func (e *Engine) hostFixCount(r *detect.Report) (applied, byHand int) {
	p, err := e.hostPlan(r)
	if err != nil {
		return 0, 0
	}
	return p.Counts()
}

func (e *Engine) hostPlan(r *detect.Report) (*hostfix.Plan, error) {
	var ev *hostfix.Evidence
	var err error
	if e.HostEvidence != nil {
		ev, err = e.HostEvidence()
	} else {
		ev, err = hostfix.FromRoot(e.hostRoot())
	}
	if err != nil {
		return nil, err
	}
	return hostfix.Build(r, ev, hostfix.Options{Source: e.Source, Version: e.Version})
}

func (e *Engine) hostRoot() string {
	if e.HostRoot == "" {
		return "/"
	}
	return e.HostRoot
}

func (e *Engine) host(out io.Writer, r hostfix.Runner) *hostfix.Host {
	return &hostfix.Host{Root: e.hostRoot(), Out: out, Runner: r}
}

func (e *Engine) runner() hostfix.Runner {
	if e.HostRunner != nil {
		return e.HostRunner
	}
	return hostfix.NewExecRunner()
}

func (e *Engine) previewRunner() hostfix.Runner {
	if e.HostRunner != nil {
		return e.HostRunner
	}
	return previewRunner{hostfix.NewExecRunner()}
}

// previewRunner runs what needs no root and refuses the rest: the preview
// is made while the wizard's screen owns the terminal, where sudo could not
// ask for a password. It shows commands as the real runner does, so that
// the preview is the text the apply shows.
type previewRunner struct{ hostfix.ExecRunner }

func (r previewRunner) Run(ctx context.Context, argv []string, asRoot bool, out io.Writer) error {
	if asRoot && !r.IsRoot {
		return fmt.Errorf("reading what would change needs root (%s); in a terminal, haloforge doctor --apply shows it and asks for sudo", argv[len(argv)-1])
	}
	return r.ExecRunner.Run(ctx, argv, asRoot, out)
}

func (e *Engine) lastReport() *detect.Report {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.report
}

func (e *Engine) setReport(r *detect.Report) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.report = r
}
