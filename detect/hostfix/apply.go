package hostfix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
)

// Errors --apply and --rollback return for the CLI's exit codes.
var (
	// ErrMismatch: the plan or backup does not fit this system (exit 2).
	ErrMismatch = errors.New("does not fit this system")
	// ErrNoTerminal: no terminal to type the confirmation on (exit 2).
	ErrNoTerminal = errors.New("no terminal to confirm on")
	// ErrDeclined: the user did not type the confirmation (exit 1).
	ErrDeclined = errors.New("not confirmed: nothing was changed")
	// ErrChanged: the changes are no longer the ones the user confirmed
	// (ApplyOptions.Confirmed): the system changed in between (exit 1).
	ErrChanged = errors.New("the changes differ from the ones you confirmed, so nothing was changed: look at them again")
)

// ApplyOptions are what Apply and Rollback need besides the host.
type ApplyOptions struct {
	StateDir string
	Version  string
	// Confirm shows the prompt and reports whether the user typed the word;
	// it returns ErrNoTerminal when nobody can answer.
	Confirm func(word string) error
	// Confirmed, when set, is the Preview text the user confirmed already
	// (the wizard asks for APPLY on its own screen): Apply goes ahead
	// without Confirm when its changes are still exactly those, and
	// changes nothing (ErrChanged) when they are not.
	Confirmed string
	Now       func() time.Time
	// Stale, when set, is why the plan's facts are out of date
	// (CheckMachine's ErrStalePlan): Apply returns it, before showing or
	// changing anything, unless the system already matches the plan.
	Stale error
	// Flags are the flags the user gave that the haloforge commands printed
	// here must carry to act on the same system and backups ("--root",
	// DIR, "--state-dir", DIR), unquoted.
	Flags []string
}

// command is a haloforge doctor command line to print, with the user's
// flags, quoted for a POSIX shell so that it runs as printed.
func (o ApplyOptions) command(args ...string) string {
	return shellJoin(slices.Concat([]string{"haloforge", "doctor"}, args, o.Flags))
}

func (o ApplyOptions) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// confirmApply asks for APPLY, or checks that the changes shown are the
// ones confirmed before.
func (o ApplyOptions) confirmApply(shown string) error {
	switch {
	case o.Confirmed != "" && o.Confirmed != shown:
		return ErrChanged
	case o.Confirmed != "":
		return nil
	case o.Confirm == nil:
		return ErrNoTerminal
	}
	return o.Confirm("APPLY")
}

// fileEdit is one source file to write.
type fileEdit struct {
	path   string
	before fileState
	after  []byte
}

// step is one system command and why it runs.
type step struct {
	argv []string
	why  string
}

// work is everything --apply will do, computed from the plan's validated
// fields and the system as it is now; nothing in it comes from the plan's
// command texts.
type work struct {
	boot        Boot
	edits       []*fileEdit
	tools       []step // grubby, rpm-ostree
	update      []step // regenerate the boot entries
	initramfs   []step
	groups      []step
	added       []GroupChange
	kargs       *KargsChange
	watch       []string // other files a tool may change (grubby)
	manual      []string // for the user to do
	already     []string // true already
	bootCmdline string
	ev          *Evidence
}

func (w *work) empty() bool {
	return len(w.edits)+len(w.tools)+len(w.update)+len(w.initramfs)+len(w.groups) == 0
}

func (w *work) edit(ctx context.Context, h *Host, p string) (*fileEdit, error) {
	for _, e := range w.edits {
		if e.path == p {
			return e, nil
		}
	}
	st, err := h.readState(ctx, p)
	if err != nil {
		return nil, err
	}
	e := &fileEdit{path: p, before: st, after: st.data}
	if !st.exists {
		e.before.mode, e.after = 0o644, nil
	}
	w.edits = append(w.edits, e)
	return e, nil
}

// dropUnchanged removes edits that change nothing.
func (w *work) dropUnchanged() {
	w.edits = slices.DeleteFunc(w.edits, func(e *fileEdit) bool {
		return e.before.exists && bytes.Equal(e.before.data, e.after) || !e.before.exists && e.after == nil
	})
}

// plan computes the work from the plan and the live system.
func planWork(ctx context.Context, p *Plan, h *Host) (*work, error) {
	ev, err := FromRoot(h.root())
	if err != nil {
		return nil, err
	}
	boot := DetectBoot(ev)
	if boot.Name != p.Bootloader || boot.Tool != p.Boot.Tool {
		return nil, fmt.Errorf("the plan is for %s (%s), but %s boots with %s (%s): make a new plan here: %w",
			p.Bootloader, p.Boot.Tool, describeRoot(h), boot.Name, boot.Tool, ErrMismatch)
	}
	w := &work{boot: boot, ev: ev}
	var args []KernelArg
	for _, a := range p.Actions {
		switch a.Kind {
		case KindKernelArg:
			args = append(args, *a.Arg)
		case KindPackage, KindFirmware:
			line := a.Change
			if a.Command != "" {
				line += ": " + a.Command
			}
			w.manual = append(w.manual, line)
		}
	}
	if err := w.kernelArgs(ctx, h, args); err != nil {
		return nil, err
	}
	for _, a := range p.Actions {
		if a.Kind == KindModprobe {
			if err := w.modprobe(ctx, h, *a.Modprobe); err != nil {
				return nil, err
			}
		}
	}
	w.dropUnchanged()
	if slices.ContainsFunc(w.edits, func(e *fileEdit) bool { return strings.HasPrefix(e.path, "/etc/modprobe.d/") }) {
		for _, c := range initramfsCommands(ev, boot) {
			w.initramfs = append(w.initramfs, step{c, "the initramfs keeps a copy of /etc/modprobe.d"})
		}
	}
	for _, a := range p.Actions {
		if a.Kind == KindGroup {
			w.group(*a.Group)
		}
	}
	return w, nil
}

func describeRoot(h *Host) string {
	if h.chrooted() {
		return "the system under " + h.root()
	}
	return "this machine"
}

// kernelArgs turns the plan's kernel arguments into file edits or tool
// commands for the bootloader found now.
func (w *work) kernelArgs(ctx context.Context, h *Host, args []KernelArg) error {
	if len(args) == 0 {
		return nil
	}
	b := w.boot
	if !b.Editable() {
		for _, a := range args {
			line := a.Op + " " + a.String() + " on the kernel command line"
			if b.Name == BootNixOS && a.Op == OpSet {
				line = `boot.kernelParams = [ "` + a.String() + `" ];  # then sudo nixos-rebuild boot`
			}
			w.manual = append(w.manual, line+" ("+b.Problem+")")
		}
		return nil
	}
	switch {
	case b.Name == BootGRUB:
		cfg := &grubConfig{}
		for _, p := range b.Config {
			e, err := w.edit(ctx, h, p)
			if err != nil {
				return err
			}
			f, err := parseGrubFile(p, e.before.data)
			if err != nil {
				return fmt.Errorf("%v: %w", err, ErrMismatch)
			}
			cfg.files = append(cfg.files, f)
		}
		w.bootCmdline = tokensText(cfg.effective())
		changed := false
		for _, a := range args {
			if len(cfg.apply(a)) == 0 {
				w.already = append(w.already, a.Op+" "+a.String()+": already so in the GRUB configuration")
				continue
			}
			changed = true
		}
		for _, f := range cfg.files {
			e, err := w.edit(ctx, h, f.path)
			if err != nil {
				return err
			}
			e.after = f.bytes()
		}
		if changed {
			w.addUpdate(b)
		}
	case b.Name == BootSystemdBoot && b.Tool == "kernel-install":
		e, err := w.edit(ctx, h, kernelCmdlinePath)
		if err != nil {
			return err
		}
		if !e.before.exists && w.ev.ProcCmdline == "" {
			return fmt.Errorf("%s does not exist and the running command line is unknown: %w", kernelCmdlinePath, ErrMismatch)
		}
		k := newKernelCmdline(e.before.data, e.before.exists, w.ev.ProcCmdline)
		if err := k.check(); err != nil {
			return fmt.Errorf("%v: %w", err, ErrMismatch)
		}
		w.bootCmdline = strings.TrimSpace(k.text)
		changed := false
		for _, a := range args {
			if len(k.apply(a)) == 0 {
				w.already = append(w.already, a.Op+" "+a.String()+": already so in "+kernelCmdlinePath)
				continue
			}
			changed = true
		}
		if changed {
			e.after = []byte(k.text)
			w.addUpdate(b)
		}
	case b.Name == BootGrubby:
		var sets, removes []string
		entries := w.ev.filesMatching("/boot/loader/entries/*.conf")
		var lines [][]token
		for _, p := range entries {
			lines = append(lines, params(bootEntryField(string(w.ev.Files[p]), "options"), false))
			if w.bootCmdline == "" {
				w.bootCmdline = bootEntryField(string(w.ev.Files[p]), "options")
			}
		}
		for _, a := range args {
			if len(lines) > 0 && allSatisfied(lines, a) {
				w.already = append(w.already, a.Op+" "+a.String()+": already so in every boot entry")
				continue
			}
			if a.Op == OpSet {
				sets = append(sets, a.String())
			} else {
				removes = append(removes, a.Key)
			}
		}
		if len(sets)+len(removes) > 0 {
			argv := []string{"grubby", "--update-kernel=ALL"}
			if len(removes) > 0 {
				argv = append(argv, "--remove-args="+strings.Join(removes, " "))
			}
			if len(sets) > 0 {
				argv = append(argv, "--args="+strings.Join(sets, " "))
			}
			w.tools = append(w.tools, step{argv, "grubby rewrites every boot entry's arguments"})
			w.watch = append(append(w.watch, entries...), "/etc/default/grub", kernelCmdlinePath)
		}
	case b.Name == BootRPMOstree:
		var out bytes.Buffer
		if err := h.Runner.Run(ctx, h.toolArgv([]string{"rpm-ostree", "kargs"}), false, &out); err != nil {
			return err
		}
		current := params(strings.TrimSpace(out.String()), false)
		w.bootCmdline = strings.TrimSpace(out.String())
		kc := &KargsChange{}
		argv := []string{"rpm-ostree", "kargs"}
		for _, a := range args {
			if satisfied(current, a) {
				w.already = append(w.already, a.Op+" "+a.String()+": already in the deployment's arguments")
				continue
			}
			for _, t := range current {
				if t.key == a.Key && oldValueRe.MatchString(t.value) {
					argv = append(argv, "--delete="+t.String())
					kc.Deleted = append(kc.Deleted, t.String())
				}
			}
			if a.Op == OpSet {
				argv = append(argv, "--append="+a.String())
				kc.Appended = append(kc.Appended, a.String())
			}
		}
		if len(argv) > 2 {
			w.tools = append(w.tools, step{argv, "rpm-ostree makes a new deployment with these arguments"})
			w.kargs = kc
		}
	}
	return nil
}

func (w *work) addUpdate(b Boot) {
	if len(w.update) > 0 {
		return
	}
	for _, u := range b.Update {
		w.update = append(w.update, step{u, "regenerates the boot entries from the configuration"})
	}
}

func tokensText(ts []token) string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.String()
	}
	return strings.Join(out, " ")
}

func (w *work) modprobe(ctx context.Context, h *Host, m ModprobeEdit) error {
	e, err := w.edit(ctx, h, m.File)
	if err != nil {
		return err
	}
	if !e.before.exists {
		w.already = append(w.already, m.File+": gone already")
		return nil
	}
	nd, changes := removeModOption(m.File, e.after, m.Module, m.Param)
	if len(changes) == 0 {
		w.already = append(w.already, fmt.Sprintf("%s: no %s option %s any more", m.File, m.Module, m.Param))
		return nil
	}
	e.after = nd
	return nil
}

func (w *work) group(g GroupChange) {
	var missing []string
	for _, name := range g.Groups {
		members, ok := w.ev.Groups[name]
		switch {
		case !ok:
			w.manual = append(w.manual, "this system has no "+name+" group")
		case slices.Contains(members, g.User):
			w.already = append(w.already, g.User+" is in "+name+" already (log out and back in for it to apply)")
		default:
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return
	}
	w.groups = append(w.groups, step{[]string{"usermod", "-aG", strings.Join(missing, ","), g.User}, "for /dev/kfd and /dev/dri/renderD*"})
	w.added = append(w.added, GroupChange{User: g.User, Groups: missing})
}

// argvShower shows a command as the runner will really run it.
type argvShower interface {
	Argv(argv []string, asRoot bool) []string
}

func shownArgv(h *Host, argv []string) []string {
	full := h.toolArgv(argv)
	if s, ok := h.Runner.(argvShower); ok {
		return s.Argv(full, true)
	}
	return full
}

// show prints every change: file diffs and the exact commands.
func (w *work) show(out io.Writer, h *Host) {
	fmt.Fprintf(out, "Changes to %s (bootloader %s", describeRoot(h), w.boot.Name)
	if w.boot.Tool != "" {
		fmt.Fprintf(out, ", %s", w.boot.Tool)
	}
	fmt.Fprintln(out, "):")
	for _, e := range w.edits {
		fmt.Fprint(out, text.Sanitize(unifiedDiff(e.path, string(e.before.data), string(e.after), e.before.exists)))
	}
	steps := w.steps()
	if len(steps) > 0 {
		fmt.Fprintln(out, "Commands, as root:")
		for _, s := range steps {
			fmt.Fprintf(out, "  %s    # %s\n", shellJoin(shownArgv(h, s.argv)), s.why)
		}
	}
	for _, a := range w.already {
		fmt.Fprintln(out, "Already done: "+text.Sanitize(a))
	}
	if len(w.manual) > 0 {
		fmt.Fprintln(out, "For you to do (haloforge does not do these):")
		for _, m := range w.manual {
			fmt.Fprintln(out, "  "+text.Sanitize(m))
		}
	}
}

func (w *work) steps() []step {
	return slices.Concat(w.tools, w.update, w.initramfs, w.groups)
}

// Apply shows the plan's changes for this system, asks for the typed
// confirmation, backs up every file it touches, makes the changes and never
// reboots. It returns the backup directory ("" when nothing changed).
func Apply(ctx context.Context, p *Plan, h *Host, o ApplyOptions) (string, error) {
	w, err := planWork(ctx, p, h)
	if err != nil {
		return "", err
	}
	if !w.empty() && o.Stale != nil {
		return "", o.Stale
	}
	out := h.out()
	if w.empty() {
		w.show(out, h)
		if len(w.manual) > 0 {
			fmt.Fprintln(out, "Nothing for haloforge to change here: the steps above are yours to do.")
		} else {
			fmt.Fprintln(out, "Nothing to change: the system already matches the plan.")
		}
		return "", nil
	}
	if err := h.reachable(w.all()); err != nil {
		return "", err
	}
	var shown strings.Builder
	w.show(&shown, h)
	fmt.Fprint(out, shown.String())
	if err := h.canBecomeRoot(w); err != nil {
		return "", err
	}
	if err := o.confirmApply(shown.String()); err != nil {
		return "", err
	}
	if err := interrupted(ctx, "before anything changed"); err != nil {
		return "", err
	}
	// The prompt may have waited long: a file edited meanwhile (by a
	// package upgrade, by hand) is not overwritten with the text computed
	// before.
	if err := w.recheck(ctx, h); err != nil {
		return "", err
	}
	dir, m, err := backup(ctx, h, o, w, "apply", "")
	if err != nil {
		return "", err
	}
	fmt.Fprintf(out, "Backup: %s\n", dir)
	if err := savePlan(dir, p); err != nil {
		return dir, err
	}
	fail := func(err error) (string, error) {
		undo := o.command("--rollback", dir)
		if errors.Is(err, ErrInterrupted) {
			m.State = "interrupted"
			_ = writeManifest(dir, m)
			return dir, fmt.Errorf("%w\nThe apply stopped there. To undo what it changed: %s", err, undo)
		}
		m.State = "failed"
		_ = writeManifest(dir, m)
		return dir, fmt.Errorf("%w\nNothing more was changed. To undo what was: %s", err, undo)
	}
	for _, e := range w.edits {
		if err := interrupted(ctx, "before writing "+e.path); err != nil {
			return fail(err)
		}
		fmt.Fprintf(out, "Writing %s\n", e.path)
		if err := h.writeFile(ctx, e.path, e.after, e.before.mode, e.before.uid, e.before.gid, dir, &e.before); err != nil {
			return fail(err)
		}
		m.Commands = append(m.Commands, "write "+e.path)
	}
	for _, s := range w.steps() {
		if err := interrupted(ctx, "before running "+shellJoin(s.argv)); err != nil {
			return fail(err)
		}
		fmt.Fprintf(out, "Running %s\n", shellJoin(shownArgv(h, s.argv)))
		if err := h.runTool(ctx, s.argv); err != nil {
			return fail(err)
		}
		m.Commands = append(m.Commands, shellJoin(s.argv))
	}
	m.Groups, m.Kargs = w.added, w.kargs
	if err := finishManifest(ctx, h, dir, m, w); err != nil {
		return fail(err)
	}
	fmt.Fprintf(out, "Done. Nothing was rebooted.\nNext: reboot, then run %s\nTo undo: %s\n", o.command("--verify"), o.command("--rollback", dir))
	return dir, nil
}

// interrupted is ErrInterrupted once ctx has ended (haloforge was told to
// stop), saying when.
func interrupted(ctx context.Context, when string) error {
	if ctx.Err() != nil {
		return fmt.Errorf("stopped %s: %w", when, ErrInterrupted)
	}
	return nil
}

// changedError is a file that changed after the changes were shown and
// confirmed: it is ErrChanged (exit 1).
type changedError struct{ paths []string }

func (e *changedError) Error() string {
	return strings.Join(e.paths, ", ") + " changed after the changes were shown, so nothing was changed: run the same command again to see the changes as they are now"
}

func (e *changedError) Unwrap() error { return ErrChanged }

// recheck reads every file to edit again: one that is not what the changes
// shown were computed from is not overwritten.
func (w *work) recheck(ctx context.Context, h *Host) error {
	var changed []string
	for _, e := range w.edits {
		now, err := h.readState(ctx, e.path)
		if err != nil {
			return err
		}
		if !now.same(e.before) {
			changed = append(changed, e.path)
		}
	}
	if len(changed) > 0 {
		return &changedError{changed}
	}
	return nil
}

// all are the files the backup records, in one list.
func (w *work) all() []string {
	sources, generated, side := w.watched()
	return slices.Concat(sources, generated, side)
}

// watched are the files a backup records: the sources edited, files a tool
// edits in place, what the bootloader tool regenerates, and for group
// changes /etc/group (edited back by gpasswd) with shadow-utils' copies.
func (w *work) watched() (sources, generated, side []string) {
	if len(w.groups) > 0 {
		generated = append(generated, groupFiles...)
		side = append(side, groupSideEffects...)
	}
	for _, e := range w.edits {
		sources = append(sources, e.path)
	}
	for _, p := range w.watch {
		if !slices.Contains(sources, p) {
			sources = append(sources, p)
		}
	}
	for _, g := range w.boot.Generated {
		for _, p := range w.ev.filesMatching(g) {
			if !slices.Contains(sources, p) && !slices.Contains(generated, p) {
				generated = append(generated, p)
			}
		}
		if _, ok := w.ev.Files[g]; !ok && !strings.Contains(g, "*") && !slices.Contains(generated, g) {
			generated = append(generated, g)
		}
	}
	return sources, generated, side
}

// backup copies every watched file into a new backup directory and writes
// the manifest before anything changes.
//
// A backup that cannot be made whole (a full or read-only state dir, a
// file that changed since it was shown) is removed again, and nothing is
// changed.
func backup(ctx context.Context, h *Host, o ApplyOptions, w *work, kind, of string) (string, *Manifest, error) {
	dir, err := newBackupDir(o.StateDir, o.now())
	if err != nil {
		return "", nil, fmt.Errorf("%w: nothing was changed", err)
	}
	m, err := fillBackup(ctx, h, o, w, dir, kind, of)
	if err != nil {
		_ = os.RemoveAll(dir) // made just now, by this run
		var ce *changedError
		var rf *refusal
		if errors.As(err, &ce) || errors.As(err, &rf) {
			return "", nil, err
		}
		return "", nil, fmt.Errorf("backup %s: %w: nothing was changed", dir, err)
	}
	return dir, m, nil
}

func fillBackup(ctx context.Context, h *Host, o ApplyOptions, w *work, dir, kind, of string) (*Manifest, error) {
	m := &Manifest{Format: manifestFormat, Version: ManifestVersion, CreatedBy: "haloforge " + o.Version,
		Created: o.now().UTC().Format(time.RFC3339), Kind: kind, Of: of, Root: h.root(), State: "started",
		Bootloader: w.boot.Name, Tool: w.boot.Tool, ProcCmdline: w.ev.ProcCmdline, BootCmdline: w.bootCmdline, Commands: []string{}}
	sources, generated, side := w.watched()
	n := 0
	add := func(p, role string) error {
		st, err := h.readState(ctx, p)
		if err != nil {
			return err
		}
		// What is backed up is what the changes were computed from.
		for _, e := range w.edits {
			if e.path == p && !st.same(e.before) {
				return &changedError{[]string{p}}
			}
		}
		mf := ManifestFile{Path: p, Role: role, Existed: st.exists}
		if st.exists {
			n++
			mf.SHA256, mf.Size, mf.Mode, mf.UID, mf.GID = sum(st.data), int64(len(st.data)), fmt.Sprintf("%04o", st.mode), st.uid, st.gid
			mf.Backup = fmt.Sprintf("files/%04d", n)
			if err := safefile.Tree(dir).WriteFile(mf.Backup, st.data, 0o600); err != nil {
				return err
			}
		}
		m.Files = append(m.Files, mf)
		return nil
	}
	for _, p := range sources {
		if err := add(p, RoleSource); err != nil {
			return nil, err
		}
	}
	for _, p := range generated {
		if err := add(p, RoleGenerated); err != nil {
			return nil, err
		}
	}
	for _, p := range side {
		if err := add(p, RoleSideEffect); err != nil {
			return nil, err
		}
	}
	return m, writeManifest(dir, m)
}

// finishManifest records the files as they are now, and the generated files
// the tool created, and marks the backup done.
func finishManifest(ctx context.Context, h *Host, dir string, m *Manifest, w *work) error {
	known := map[string]bool{}
	for i := range m.Files {
		known[m.Files[i].Path] = true
		st, err := h.readState(ctx, m.Files[i].Path)
		if err != nil {
			return err
		}
		m.Files[i].After = ""
		if st.exists {
			m.Files[i].After = sum(st.data)
		}
	}
	now, err := FromRoot(h.root())
	if err != nil {
		return err
	}
	for _, g := range w.boot.Generated {
		for _, p := range now.filesMatching(g) {
			if !known[p] {
				m.Files = append(m.Files, ManifestFile{Path: p, Role: RoleGenerated, After: sum(now.Files[p])})
				known[p] = true
			}
		}
	}
	m.State = "done"
	return writeManifest(dir, m)
}
