package hostfix

import (
	"fmt"
	"slices"
	"strings"

	"github.com/haloforge/haloforge/detect"
)

// kernelArgBuilder turns wanted kernel arguments into actions the way this
// machine's bootloader takes them, and collects the script lines.
type kernelArgBuilder struct {
	p       *Plan
	e       *Evidence
	r       *detect.Report
	running []token // the GPU-relevant parameters of the running kernel

	grub     *grubConfig
	grubOrig map[string]string
	kcl      *kernelCmdline
	kclOrig  string
	kclMade  bool
	entries  map[string][]token // grubby: BLS entry -> its options

	edits         []string // the per-argument edit commands, in order
	sets, removes []KernelArg
}

func newKernelArgBuilder(p *Plan, e *Evidence, r *detect.Report) *kernelArgBuilder {
	kb := &kernelArgBuilder{p: p, e: e, r: r}
	keys := make([]string, 0, len(r.Kernel.Cmdline))
	for k := range r.Kernel.Cmdline {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := r.Kernel.Cmdline[k]
		kb.running = append(kb.running, token{key: k, value: v, hasValue: v != ""})
	}
	switch p.Boot.Name {
	case BootGRUB:
		if p.Boot.Problem != "" {
			break
		}
		cfg := &grubConfig{}
		kb.grubOrig = map[string]string{}
		for _, path := range p.Boot.Config {
			f, err := parseGrubFile(path, e.Files[path])
			if err != nil {
				p.Boot.Problem = err.Error() + ": add the arguments by hand"
				cfg = nil
				break
			}
			cfg.files = append(cfg.files, f)
			kb.grubOrig[path] = string(e.Files[path])
		}
		kb.grub = cfg
	case BootSystemdBoot:
		if p.Boot.Tool == "kernel-install" && p.Boot.Problem == "" {
			data, ok := e.Files[kernelCmdlinePath]
			if !ok && e.ProcCmdline == "" {
				p.Boot.Problem = kernelCmdlinePath + " does not exist and the running command line is unknown"
				break
			}
			kb.kcl = newKernelCmdline(data, ok, e.ProcCmdline)
			if err := kb.kcl.check(); err != nil {
				p.Boot.Problem, kb.kcl = err.Error(), nil
				break
			}
			kb.kclOrig = kb.kcl.text
		}
	case BootGrubby:
		kb.entries = map[string][]token{}
		for _, path := range p.Boot.Config {
			kb.entries[path] = params(bootEntryField(string(e.Files[path]), "options"), false)
		}
	}
	return kb
}

// configParams is what the next boot gets, when the configuration is
// read: one command line, or one per boot entry (grubby).
func (kb *kernelArgBuilder) configParams() ([][]token, bool) {
	switch {
	case kb.grub != nil:
		return [][]token{kb.grub.effective()}, true
	case kb.kcl != nil:
		return [][]token{params(kb.kcl.text, false)}, true
	case len(kb.entries) > 0:
		var all [][]token
		for _, path := range sortedKeys(kb.entries) {
			all = append(all, kb.entries[path])
		}
		return all, true
	}
	return nil, false
}

// allSatisfied is true when every command line has what the argument asks.
func allSatisfied(lines [][]token, a KernelArg) bool {
	for _, ps := range lines {
		if !satisfied(ps, a) {
			return false
		}
	}
	return true
}

// pendingRemovals are harmful arguments found in the boot configuration
// though the running kernel does not have them (edited, not yet booted).
func (kb *kernelArgBuilder) pendingRemovals(wants []want) []want {
	lines, ok := kb.configParams()
	if !ok {
		return nil
	}
	var ps []token
	for _, l := range lines {
		ps = append(ps, l...)
	}
	var out []want
	for _, k := range []string{"amdgpu.gttsize", "amdgpu.gtt_size", "nomodeset"} {
		if slices.ContainsFunc(wants, func(w want) bool { return w.arg.Key == k }) {
			continue
		}
		i := slices.IndexFunc(ps, func(t token) bool { return t.key == k })
		if i < 0 || (k == "nomodeset" && len(kb.r.GPUs) == 0) {
			continue
		}
		check := detect.CheckGTTSizeDeprecated
		if k == "nomodeset" {
			check = detect.CheckKFDAccess
		}
		out = append(out, want{KernelArg{Op: OpRemove, Key: k, Value: safeOld(ps[i].value)}, check,
			"in the boot configuration for the next boot"})
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// add plans one argument.
func (kb *kernelArgBuilder) add(w want) {
	p := kb.p
	act := Action{ID: argActionID(w.arg), Kind: KindKernelArg, Check: w.check, Change: argChange(w), Arg: &w.arg}
	runningOK := satisfied(kb.running, w.arg)
	if lines, ok := kb.configParams(); ok && allSatisfied(lines, w.arg) {
		if !runningOK && len(kb.running) > 0 {
			note := fmt.Sprintf("%s is in the boot configuration but not on the running kernel: it takes effect at the next boot", w.arg)
			if w.arg.Op == OpRemove {
				note = fmt.Sprintf("%s is on the running kernel but no longer in the boot configuration: it goes at the next boot", w.arg)
			}
			p.Notes = append(p.Notes, note)
			p.Reboot = true
		}
		return
	}
	if _, ok := kb.configParams(); !ok && runningOK {
		return
	}
	switch {
	case kb.grub != nil:
		changes := kb.grub.apply(w.arg)
		act.Command = strings.Join(lineCommands("sudo ", kb.e, changes, nil), " && ")
		kb.edits = append(kb.edits, lineCommands("sudo ", kb.e, changes, nil)...)
	case kb.kcl != nil:
		changes := kb.kcl.apply(w.arg)
		var create map[string]string
		if !kb.kcl.existed && !kb.kclMade {
			create = map[string]string{kernelCmdlinePath: kb.kcl.text}
			kb.kclMade = true
		}
		cmds := lineCommands("sudo ", kb.e, changes, create)
		act.Command = strings.Join(cmds, " && ")
		kb.edits = append(kb.edits, cmds...)
	case p.Boot.Name == BootGrubby && p.Boot.Problem == "":
		if w.arg.Op == OpSet {
			act.Command = kb.e.sudo() + `grubby --update-kernel=ALL --args="` + w.arg.String() + `"`
		} else {
			act.Command = kb.e.sudo() + `grubby --update-kernel=ALL --remove-args="` + w.arg.Key + `"`
		}
	case p.Boot.Name == BootRPMOstree:
		act.Command = kb.e.sudo() + "rpm-ostree kargs " + strings.Join(kb.ostreeFlags(w.arg), " ")
	case p.Boot.Name == BootSystemdBoot && p.Boot.Tool == "kernelstub":
		act.Command = kb.e.sudo() + "kernelstub " + strings.Join(kb.kernelstubFlags(w.arg), " ")
	case p.Boot.Name == BootNixOS:
		if w.arg.Op == OpSet {
			act.Command = `boot.kernelParams = [ "` + w.arg.String() + `" ];`
		} else {
			act.Change += "; remove it from boot.kernelParams in /etc/nixos/configuration.nix (or your flake)"
		}
	default:
		if w.arg.Op == OpSet {
			act.Command = w.arg.String()
		} else {
			act.Change += "; remove it from the kernel command line"
		}
	}
	if w.arg.Op == OpSet {
		kb.sets = append(kb.sets, w.arg)
	} else {
		kb.removes = append(kb.removes, w.arg)
	}
	p.Actions = append(p.Actions, act)
}

// runningValues are the values the running kernel has for a key.
func (kb *kernelArgBuilder) runningValues(key string) []string {
	var out []string
	for _, t := range kb.running {
		if t.key == key {
			out = append(out, t.String())
		}
	}
	return out
}

func (t token) String() string {
	if !t.hasValue {
		return t.key
	}
	return t.key + "=" + t.value
}

// ostreeFlags are rpm-ostree kargs flags for one argument. A value that
// changes is a --delete of the old pair and an --append of the new one:
// rpm-ostree refuses --replace together with --delete.
func (kb *kernelArgBuilder) ostreeFlags(a KernelArg) []string {
	var out []string
	for _, old := range kb.runningValues(a.Key) {
		if oldValueRe.MatchString(strings.TrimPrefix(old, a.Key+"=")) {
			out = append(out, "--delete="+old)
		}
	}
	if a.Op == OpRemove && len(out) == 0 {
		out = append(out, "--delete="+a.String())
	}
	if a.Op == OpSet {
		out = append(out, "--append="+a.String())
	}
	return out
}

// kernelstubFlags are kernelstub's -d (delete) and -a (add) options.
func (kb *kernelArgBuilder) kernelstubFlags(a KernelArg) []string {
	var out []string
	for _, old := range kb.runningValues(a.Key) {
		out = append(out, "-d", shellQuote(old))
	}
	if a.Op == OpRemove && len(out) == 0 {
		out = append(out, "-d", shellQuote(a.String()))
	}
	if a.Op == OpSet {
		out = append(out, "-a", shellQuote(a.String()))
	}
	return out
}

// finish adds the file diffs and the kernel-argument part of the script:
// the edits and the bootloader's update, or the one combined command.
func (kb *kernelArgBuilder) finish() {
	p := kb.p
	if kb.grub != nil {
		for _, f := range kb.grub.files {
			if d := unifiedDiff(f.path, kb.grubOrig[f.path], string(f.bytes()), true); d != "" {
				p.Files = append(p.Files, FileDiff{Path: f.path, Diff: d})
			}
		}
	}
	if kb.kcl != nil {
		if d := unifiedDiff(kernelCmdlinePath, kb.e.fileText(kernelCmdlinePath), kb.kcl.text, kb.kcl.existed); d != "" && (kb.kcl.existed || kb.kclMade) {
			p.Files = append(p.Files, FileDiff{Path: kernelCmdlinePath, Diff: d})
		}
	}
	if len(kb.sets)+len(kb.removes) == 0 {
		return
	}
	switch {
	case kb.grub != nil || kb.kcl != nil:
		p.Script = append(p.Script, kb.edits...)
		for _, u := range p.Boot.Update {
			p.Script = append(p.Script, kb.e.sudo()+shellJoin(u))
		}
	case p.Boot.Name == BootGrubby && p.Boot.Problem == "":
		cmd := kb.e.sudo() + "grubby --update-kernel=ALL"
		if len(kb.removes) > 0 {
			var keys []string
			for _, a := range kb.removes {
				keys = append(keys, a.Key)
			}
			cmd += ` --remove-args="` + strings.Join(keys, " ") + `"`
		}
		if len(kb.sets) > 0 {
			cmd += ` --args="` + joinArgs(kb.sets) + `"`
		}
		p.Script = append(p.Script, cmd)
	case p.Boot.Name == BootRPMOstree:
		var flags []string
		for _, a := range append(append([]KernelArg{}, kb.removes...), kb.sets...) {
			for _, f := range kb.ostreeFlags(a) {
				if !slices.Contains(flags, f) {
					flags = append(flags, f)
				}
			}
		}
		p.Script = append(p.Script, kb.e.sudo()+"rpm-ostree kargs "+strings.Join(flags, " "))
	case p.Boot.Name == BootSystemdBoot && p.Boot.Tool == "kernelstub":
		for _, a := range append(append([]KernelArg{}, kb.removes...), kb.sets...) {
			p.Script = append(p.Script, kb.e.sudo()+"kernelstub "+strings.Join(kb.kernelstubFlags(a), " "))
		}
	case p.Boot.Name == BootNixOS:
		p.Script = append(p.Script, "# in /etc/nixos/configuration.nix (or your flake):")
		if len(kb.sets) > 0 {
			var quoted []string
			for _, a := range kb.sets {
				quoted = append(quoted, `"`+a.String()+`"`)
			}
			p.Script = append(p.Script, "boot.kernelParams = [ "+strings.Join(quoted, " ")+" ];")
		}
		for _, a := range kb.removes {
			p.Script = append(p.Script, "# and remove \""+a.String()+"\" from boot.kernelParams")
		}
		p.Script = append(p.Script, kb.e.sudo()+"nixos-rebuild boot")
	default:
		if len(kb.sets) > 0 {
			p.Script = append(p.Script, "# add to the kernel command line with your bootloader's tool: "+joinArgs(kb.sets))
		}
		if len(kb.removes) > 0 {
			var keys []string
			for _, a := range kb.removes {
				keys = append(keys, a.String())
			}
			p.Script = append(p.Script, "# remove from the kernel command line: "+strings.Join(keys, " "))
		}
	}
}

func joinArgs(as []KernelArg) string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	return strings.Join(out, " ")
}

func (e *Evidence) fileText(p string) string { return string(e.Files[p]) }
