package hostfix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/haloforge/haloforge/internal/safefile"
)

// planFileName is the copy of the applied plan in a backup, for --verify.
const planFileName = "plan.json"

// LastApplied is the newest apply backup that no later rollback undid, the
// default of --rollback and (its plan) of --verify.
func LastApplied(stateDir string) (string, error) {
	state := safefile.Tree(stateDir)
	entries, err := state.ReadDir(backupsDirName)
	var nd *safefile.NotDirError
	if errors.As(err, &nd) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("no backups in %s: nothing was applied yet", backupsDir(stateDir))
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && backupDirRe.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	slices.SortFunc(names, compareBackupNames)
	undone := map[string]bool{}
	var applies []string
	for _, n := range names {
		f, _, err := state.Open(backupsDirName + "/" + n + "/" + manifestName)
		if err != nil {
			continue
		}
		m, err := ParseManifest(f)
		f.Close()
		if err != nil {
			continue
		}
		// Only a rollback that finished undid its apply: one that stopped
		// half-way leaves it to roll back again.
		switch {
		case m.Kind == "rollback" && m.State == "done":
			undone[m.Of] = true
		case m.Kind != "rollback":
			applies = append(applies, n)
		}
	}
	for i := len(applies) - 1; i >= 0; i-- {
		if !undone[applies[i]] {
			return filepath.Join(backupsDir(stateDir), applies[i]), nil
		}
	}
	if len(applies) > 0 {
		return "", fmt.Errorf("nothing to roll back: the last apply (%s) was rolled back already", applies[len(applies)-1])
	}
	return "", fmt.Errorf("no backups in %s: nothing was applied yet", backupsDir(stateDir))
}

// savePlan keeps the applied plan beside its backup.
func savePlan(dir string, p *Plan) error {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return safefile.Tree(dir).WriteFile(planFileName, append(data, '\n'), 0o600)
}

// LoadAppliedPlan reads the plan saved with a backup.
func LoadAppliedPlan(dir string) (*Plan, error) {
	f, _, err := safefile.Tree(dir).Open(planFileName)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParsePlan(f)
}

// restore is one file to put back.
type restore struct {
	mf      ManifestFile
	current fileState
	data    []byte // the backed-up content
	remove  bool   // the file did not exist before: delete haloforge's file
}

// Rollback restores a backup made by Apply: every source file byte for byte
// (checksums checked before and after), files Apply created are deleted
// when unchanged since, the boot entries are regenerated and groups Apply
// added are removed. Its own state before goes into a new backup first.
func Rollback(ctx context.Context, dir string, h *Host, o ApplyOptions) (string, error) {
	m, err := LoadBackup(dir)
	if err != nil {
		return "", fmt.Errorf("%v: %w", err, ErrMismatch)
	}
	if filepath.Clean(m.Root) != filepath.Clean(h.root()) {
		return "", fmt.Errorf("%s is a backup of the system under %s, not of %s: %w", dir, m.Root, describeRoot(h), ErrMismatch)
	}
	ev, err := FromRoot(h.root())
	if err != nil {
		return "", err
	}
	boot := DetectBoot(ev)
	if boot.Name != m.Bootloader || boot.Tool != m.Tool {
		return "", fmt.Errorf("the backup was made with %s (%s) but %s now boots with %s (%s): %w", m.Bootloader, m.Tool, describeRoot(h), boot.Name, boot.Tool, ErrMismatch)
	}
	out := h.out()
	w := &work{boot: boot, ev: ev}
	var restores, sideEffects []restore
	var kept []string
	bootConfig, modprobe := false, false
	for _, mf := range m.Files {
		if mf.Role == RoleSideEffect {
			rs := restore{mf: mf, remove: !mf.Existed}
			if mf.Existed {
				if rs.data, err = readBackupCopy(dir, mf); err != nil {
					return "", err
				}
			}
			sideEffects = append(sideEffects, rs)
			continue
		}
		if mf.Role != RoleSource {
			continue
		}
		cur, err := h.readState(ctx, mf.Path)
		if err != nil {
			return "", err
		}
		rs := restore{mf: mf, current: cur}
		switch {
		case mf.Existed:
			rs.data, err = readBackupCopy(dir, mf)
			if err != nil {
				return "", err
			}
			if cur.exists && sum(cur.data) == mf.SHA256 && fmt.Sprintf("%04o", cur.mode) == mf.Mode {
				continue
			}
		case !cur.exists:
			continue
		case sum(cur.data) != mf.After:
			kept = append(kept, mf.Path)
			continue
		default:
			rs.remove = true
		}
		restores = append(restores, rs)
		if strings.HasPrefix(mf.Path, "/etc/modprobe.d/") {
			modprobe = true
		} else {
			bootConfig = true
		}
		e := &fileEdit{path: mf.Path, before: cur, after: rs.data}
		if rs.remove {
			e.after = nil
		}
		w.edits = append(w.edits, e)
	}
	if bootConfig && (boot.Name == BootGRUB || boot.Tool == "kernel-install") {
		w.addUpdate(boot)
	}
	if m.Kargs != nil && (len(m.Kargs.Appended)+len(m.Kargs.Deleted) > 0) {
		argv := []string{"rpm-ostree", "kargs"}
		inverse := &KargsChange{}
		for _, a := range m.Kargs.Appended {
			argv = append(argv, "--delete="+a)
			inverse.Deleted = append(inverse.Deleted, a)
		}
		for _, a := range m.Kargs.Deleted {
			argv = append(argv, "--append="+a)
			inverse.Appended = append(inverse.Appended, a)
		}
		w.tools = append(w.tools, step{argv, "undoes the kernel arguments --apply changed"})
		w.kargs = inverse
	}
	if modprobe {
		for _, c := range initramfsCommands(ev, boot) {
			w.initramfs = append(w.initramfs, step{c, "the initramfs keeps a copy of /etc/modprobe.d"})
		}
	}
	for _, g := range m.Groups {
		for _, name := range g.Groups {
			if slices.Contains(ev.Groups[name], g.User) {
				w.groups = append(w.groups, step{[]string{"gpasswd", "-d", g.User, name}, "--apply added " + g.User + " to " + name})
			}
		}
	}
	for _, p := range kept {
		fmt.Fprintf(out, "Keeping %s: haloforge created it, but it changed since, so it is not haloforge's to delete\n", p)
	}
	if w.empty() {
		fmt.Fprintf(out, "Nothing to restore: %s is as it was before %s.\n", describeRoot(h), dir)
		return "", verifyRestored(ctx, h, m, dir, out)
	}
	if err := h.reachable(w.all()); err != nil {
		return "", err
	}
	w.show(out, h)
	if err := h.canBecomeRoot(w); err != nil {
		return "", err
	}
	if err := o.Confirm("ROLLBACK"); err != nil {
		return "", err
	}
	if err := interrupted(ctx, "before anything changed"); err != nil {
		return "", err
	}
	if err := w.recheck(ctx, h); err != nil {
		return "", err
	}
	// Room for every file first: a disk that fills half-way through would
	// leave some files restored and others not.
	if err := h.roomFor(restores); err != nil {
		return "", fmt.Errorf("%w: nothing was restored, and the backup %s is kept: free some space and run the same command again", err, dir)
	}
	undo, um, err := backup(ctx, h, o, w, "rollback", filepath.Base(dir))
	if err != nil {
		return "", err
	}
	fmt.Fprintf(out, "The state before this rollback is saved in %s\n", undo)
	// A rollback that stops half-way says what it restored, keeps both
	// backups and says how to finish: the same command again (it restores
	// what is still to restore) or, to go back to before it, its own backup.
	fail := func(err error) (string, error) {
		um.State = "failed"
		if errors.Is(err, ErrInterrupted) {
			um.State = "interrupted"
		}
		_ = writeManifest(undo, um)
		return undo, fmt.Errorf("%w\nThe rollback stopped there; done: %s; not restored: %s. Both backups are kept. To finish it: %s\nTo go back to before it: %s",
			err, orNothing(um.Commands), orNothing(pending(restores, um.Commands)), o.command("--rollback", dir), o.command("--rollback", undo))
	}
	if err := putBack(ctx, h, restores, undo, um); err != nil {
		return fail(err)
	}
	for _, s := range w.steps() {
		if err := interrupted(ctx, "before running "+shellJoin(s.argv)); err != nil {
			return fail(err)
		}
		fmt.Fprintf(out, "Running %s\n", shellJoin(shownArgv(h, s.argv)))
		if err := h.runTool(ctx, s.argv); err != nil {
			return fail(err)
		}
		um.Commands = append(um.Commands, shellJoin(s.argv))
	}
	if len(w.groups) > 0 {
		// gpasswd rewrote shadow-utils' own copies: put those back too.
		if err := putBack(ctx, h, sideEffects, undo, um); err != nil {
			return fail(err)
		}
	}
	um.Kargs = w.kargs
	if err := finishManifest(ctx, h, undo, um, w); err != nil {
		return fail(err)
	}
	return undo, verifyRestored(ctx, h, m, dir, out)
}

// pending are the files of restores that done does not list.
func pending(restores []restore, done []string) []string {
	var out []string
	for _, rs := range restores {
		if !slices.Contains(done, "restore "+rs.mf.Path) && !slices.Contains(done, "remove "+rs.mf.Path) {
			out = append(out, rs.mf.Path)
		}
	}
	return out
}

// orNothing lists what was done, or says nothing was.
func orNothing(done []string) string {
	if len(done) == 0 {
		return "nothing"
	}
	return strings.Join(done, ", ")
}

// expect is what the file must still be for the rollback to replace it:
// what it was when the changes were shown (sources), or nothing to check
// (the side effects a tool of the rollback itself rewrote).
func (rs restore) expect() *fileState {
	if rs.mf.Role == RoleSideEffect {
		return nil
	}
	return &rs.current
}

// putBack writes back (or removes) files from a backup.
func putBack(ctx context.Context, h *Host, restores []restore, staging string, um *Manifest) error {
	out := h.out()
	for _, rs := range restores {
		if err := interrupted(ctx, "before restoring "+rs.mf.Path); err != nil {
			return err
		}
		if rs.remove {
			if exp := rs.expect(); exp != nil {
				now, err := h.readState(ctx, rs.mf.Path)
				if err != nil {
					return err
				}
				if !now.same(*exp) {
					return &changedError{[]string{rs.mf.Path}}
				}
			}
			fmt.Fprintf(out, "Removing %s (haloforge created it)\n", rs.mf.Path)
			if err := h.removeFile(ctx, rs.mf.Path); err != nil {
				return err
			}
			um.Commands = append(um.Commands, "remove "+rs.mf.Path)
			continue
		}
		mode, _ := strconv.ParseUint(rs.mf.Mode, 8, 32)
		fmt.Fprintf(out, "Restoring %s\n", rs.mf.Path)
		if err := h.writeFile(ctx, rs.mf.Path, rs.data, fs.FileMode(mode), rs.mf.UID, rs.mf.GID, staging, rs.expect()); err != nil {
			return err
		}
		um.Commands = append(um.Commands, "restore "+rs.mf.Path)
	}
	return nil
}

// verifyRestored checks every file against the manifest: sources must be
// byte for byte what they were; regenerated files are compared and reported.
func verifyRestored(ctx context.Context, h *Host, m *Manifest, dir string, out interface {
	Write([]byte) (int, error)
}) error {
	var bad []string
	for _, mf := range m.Files {
		cur, err := h.readState(ctx, mf.Path)
		if err != nil {
			return err
		}
		same := cur.exists == mf.Existed && (!cur.exists || sum(cur.data) == mf.SHA256)
		restored := mf.Role == RoleSource || mf.Role == RoleSideEffect
		switch {
		case restored && same && (!cur.exists || fmt.Sprintf("%04o", cur.mode) == mf.Mode):
			fmt.Fprintf(out, "  ok  %s: as before (%s)\n", mf.Path, shortSum(mf))
		case restored:
			bad = append(bad, mf.Path)
			fmt.Fprintf(out, "  !!  %s: differs from the backup\n", mf.Path)
		case same:
			fmt.Fprintf(out, "  ok  %s: regenerated, identical to before (%s)\n", mf.Path, shortSum(mf))
		default:
			fmt.Fprintf(out, "  --  %s: regenerated; differs from before (a kernel installed since?)\n", mf.Path)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("not restored exactly: %s (backup in %s)", strings.Join(bad, ", "), dir)
	}
	fmt.Fprintf(out, "Rolled back %s. Reboot to boot with the old settings.\n", dir)
	return nil
}

func shortSum(mf ManifestFile) string {
	if !mf.Existed {
		return "absent"
	}
	return "sha256 " + mf.SHA256[:12]
}

// IsUsage tells the CLI which errors are bad input (exit 2).
func IsUsage(err error) bool {
	return errors.Is(err, ErrMismatch) || errors.Is(err, ErrNoTerminal) || errors.Is(err, errPlanFile) || errors.Is(err, ErrWrongMachine)
}
