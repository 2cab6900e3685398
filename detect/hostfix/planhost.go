package hostfix

import (
	"fmt"
	"slices"
	"strings"

	"github.com/haloforge/haloforge/detect"
)

// modprobeActions remove module options that would fight the plan: the
// deprecated amdgpu gttsize (and the gtt_size typo) and TTM limits that
// disagree with the command line. The command line is the one place GTT is
// set afterwards, the place --verify reads.
func modprobeActions(p *Plan, e *Evidence, wants []want) {
	set := map[string]want{}
	for _, w := range wants {
		if w.arg.Op == OpSet {
			set[w.arg.Key] = w
		}
	}
	ttmElsewhere := p.Target.PagesLimit > 0
	for _, f := range e.filesMatching("/etc/modprobe.d/*.conf") {
		for _, o := range modprobeOptions(f, e.Files[f]) {
			if o.param == "pages_limit" && (o.module == "ttm" || o.module == "amdttm") {
				ttmElsewhere = true
			}
		}
	}
	var cmds []string
	for _, f := range e.filesMatching("/etc/modprobe.d/*.conf") {
		data := e.Files[f]
		orig := string(data)
		for _, o := range modprobeOptions(f, e.Files[f]) {
			key := o.module + "." + o.param
			var check detect.CheckID
			var why string
			w, planned := set[key]
			switch {
			case o.module == "amdgpu" && (o.param == "gttsize" || o.param == "gtt_size"):
				if !ttmElsewhere {
					p.Notes = append(p.Notes, fmt.Sprintf("%s sets amdgpu %s=%s and nothing sets ttm.pages_limit: kept, or GTT would shrink to the default (size it with --gtt-gib)", f, o.param, o.value))
					continue
				}
				check, why = detect.CheckGTTSizeDeprecated, "deprecated: GTT follows ttm.pages_limit"
			case planned && o.value != w.arg.Value:
				check, why = w.check, "the kernel command line sets "+w.arg.String()
			default:
				continue
			}
			nd, changes := removeModOption(f, data, o.module, o.param)
			if len(changes) == 0 {
				continue
			}
			data = nd
			c := lineCommands("sudo ", e, changes, nil)
			cmds = append(cmds, c...)
			p.Actions = append(p.Actions, Action{
				ID: "modprobe:" + f + ":" + key, Kind: KindModprobe, Check: check,
				Change:   fmt.Sprintf("remove %s=%s from the options of %s in %s (%s)", o.param, o.value, o.module, f, why),
				Command:  strings.Join(c, " && "),
				Modprobe: &ModprobeEdit{File: f, Module: o.module, Param: o.param, Value: safeOld(o.value)},
			})
		}
		if string(data) != orig {
			p.Files = append(p.Files, FileDiff{Path: f, Diff: unifiedDiff(f, orig, string(data), true)})
		}
	}
	if len(cmds) == 0 {
		return
	}
	p.Script = append(p.Script, cmds...)
	p.Initramfs = initramfsCommands(e, p.Boot)
	for _, c := range p.Initramfs {
		p.Script = append(p.Script, e.sudo()+shellJoin(c))
	}
}

// initramfsCommands rebuild the initramfs, which keeps its own copy of
// /etc/modprobe.d; rpm-ostree and NixOS build theirs from elsewhere.
func initramfsCommands(e *Evidence, b Boot) [][]string {
	switch {
	case b.Name == BootRPMOstree || b.Name == BootNixOS:
		return nil
	case e.has("update-initramfs"):
		return [][]string{{"update-initramfs", "-u", "-k", "all"}}
	case e.has("dracut"):
		return [][]string{{"dracut", "-f", "--regenerate-all"}}
	case e.has("mkinitcpio"):
		return [][]string{{"mkinitcpio", "-P"}}
	}
	return nil
}

// groupAction adds the user to the groups the checks' remedies ask for
// (render and video: /dev/kfd and /dev/dri/renderD*).
func groupAction(p *Plan, r *detect.Report, e *Evidence, o Options) {
	var check detect.CheckID
	var want []string
	for _, c := range remedies(r) {
		if len(c.Remedy.Groups) == 0 {
			continue
		}
		if check == "" {
			check = c.ID
		}
		for _, g := range c.Remedy.Groups {
			if !slices.Contains(want, g) {
				want = append(want, g)
			}
		}
	}
	if len(want) == 0 {
		return
	}
	user := o.User
	if user == "" && r.Host.User != nil {
		user = *r.Host.User
	}
	if user == "" || user == "root" || !userRe.MatchString(user) {
		p.Notes = append(p.Notes, "which user needs the "+strings.Join(want, " and ")+" groups is unknown: run haloforge doctor --plan as that user")
		return
	}
	var missing []string
	for _, g := range want {
		if slices.Contains(r.Host.Groups, g) {
			continue
		}
		if members, known := e.Groups[g]; known && slices.Contains(members, user) {
			p.Notes = append(p.Notes, fmt.Sprintf("%s is already in %s in /etc/group: log out and back in (or reboot) for it to apply", user, g))
			continue
		}
		if _, known := e.Groups[g]; !known && len(e.Groups) > 0 {
			p.Notes = append(p.Notes, fmt.Sprintf("this system has no %s group", g))
			continue
		}
		missing = append(missing, g)
	}
	p.Target.User = user
	for _, g := range want {
		if _, known := e.Groups[g]; known || len(e.Groups) == 0 {
			p.Target.Groups = append(p.Target.Groups, g)
		}
	}
	if len(missing) == 0 {
		return
	}
	a := Action{ID: "group:" + user, Kind: KindGroup, Check: check,
		Change: fmt.Sprintf("add %s to %s (for /dev/kfd and /dev/dri/renderD*; log out and back in afterwards)", user, strings.Join(missing, " and ")),
		Group:  &GroupChange{User: user, Groups: missing}}
	if p.Boot.Name == BootNixOS {
		var q []string
		for _, g := range missing {
			q = append(q, `"`+g+`"`)
		}
		a.Command = "users.users." + user + ".extraGroups = [ " + strings.Join(q, " ") + " ];"
		p.Script = append(p.Script, a.Command)
	} else {
		a.Command = e.sudo() + "usermod -aG " + strings.Join(missing, ",") + " " + user
		p.Script = append(p.Script, a.Command)
	}
	p.Actions = append(p.Actions, a)
}

// distro is the os-release family, as detect's steps name distributions:
// fedora, ostree (rpm-ostree systems), ubuntu, debian, arch, nixos, or "".
func distro(r *detect.Report, e *Evidence, b Boot) string {
	ids := e.OSRelease["ID"] + " " + e.OSRelease["ID_LIKE"]
	if r.Host.OSID != nil {
		ids += " " + *r.Host.OSID
	}
	f := strings.Fields(ids)
	switch {
	case b.Name == BootRPMOstree:
		return detect.DistroFedoraAtomic
	case b.Name == BootNixOS || slices.Contains(f, "nixos"):
		return detect.DistroNixOS
	case slices.Contains(f, "ubuntu"):
		return detect.DistroUbuntu
	case slices.Contains(f, "debian"):
		return detect.DistroDebian
	case slices.Contains(f, "fedora") || slices.Contains(f, "rhel"):
		return detect.DistroFedora
	case slices.Contains(f, "arch"):
		return detect.DistroArch
	case slices.Contains(f, "suse") || slices.Contains(f, "opensuse"):
		return detect.DistroSUSE
	case slices.Contains(f, "gentoo"):
		return detect.DistroGentoo
	}
	return ""
}

// adviceActions are the steps of the checks' remedies that haloforge does
// not take itself (a kernel, firmware, a package, the BIOS): the exact
// command where the step has one for this distribution, else the words.
func adviceActions(p *Plan, r *detect.Report, e *Evidence) {
	d := distro(r, e, p.Boot)
	version := e.OSRelease["VERSION_ID"]
	seen := map[string]bool{}
	for _, c := range remedies(r) {
		for _, s := range c.Remedy.Steps {
			if seen[s.ID] {
				continue
			}
			seen[s.ID] = true
			a := Action{ID: s.ID, Kind: string(s.Kind), Check: c.ID, Change: s.Change, Advice: true}
			if dc, ok := s.For(d, version); ok {
				a.Command = dc.Command
			}
			p.Actions = append(p.Actions, a)
		}
	}
}

// skippedChecks lists the warning and failing checks that neither an
// action nor a wanted argument (already configured, waiting for the
// reboot) covers, with the remedy's reason, or why the plan made no
// changes at all (noGPU) for a check that has some.
func skippedChecks(p *Plan, r *detect.Report, wants []want, noGPU string) {
	covered := map[detect.CheckID]bool{}
	for _, a := range p.Actions {
		covered[a.Check] = true
	}
	for _, w := range wants {
		covered[w.check] = true
	}
	for _, c := range r.Checks {
		if covered[c.ID] || !c.Flagged() {
			continue
		}
		reason := "no host change for it: see haloforge doctor -v"
		switch {
		case c.Remedy != nil && c.Remedy.Manual != "":
			reason = c.Remedy.Manual
		case noGPU != "":
			reason = noGPU
		}
		p.Skipped = append(p.Skipped, Skipped{Check: c.ID, Status: string(c.Status), Reason: reason})
	}
}
