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
			var check, why string
			w, planned := set[key]
			switch {
			case o.module == "amdgpu" && (o.param == "gttsize" || o.param == "gtt_size"):
				if !ttmElsewhere {
					p.Notes = append(p.Notes, fmt.Sprintf("%s sets amdgpu %s=%s and nothing sets ttm.pages_limit: kept, or GTT would shrink to the default (size it with --gtt-gib)", f, o.param, o.value))
					continue
				}
				check, why = "gttsize-deprecated", "deprecated: GTT follows ttm.pages_limit"
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

// renderGroups are the groups that open /dev/kfd and /dev/dri/renderD*.
var renderGroups = []string{"render", "video"}

// groupAction adds the user to render and video when the checks say the
// user lacks them.
func groupAction(p *Plan, r *detect.Report, e *Evidence, o Options) {
	denied := status(r, "kfd-access") == detect.StatusFail && r.Host.KFD != nil && *r.Host.KFD == "denied"
	if !flagged(r, "render-groups") && !denied {
		return
	}
	check := "render-groups"
	if !flagged(r, "render-groups") {
		check = "kfd-access"
	}
	user := o.User
	if user == "" && r.Host.User != nil {
		user = *r.Host.User
	}
	if user == "" || user == "root" || !userRe.MatchString(user) {
		p.Notes = append(p.Notes, "which user needs the render and video groups is unknown: run haloforge doctor --plan as that user")
		return
	}
	var missing []string
	for _, g := range renderGroups {
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
	for _, g := range renderGroups {
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

// distro is the os-release family: fedora, debian, ubuntu, arch, or "".
func distro(r *detect.Report, e *Evidence, b Boot) string {
	ids := e.OSRelease["ID"] + " " + e.OSRelease["ID_LIKE"]
	if r.Host.OSID != nil {
		ids += " " + *r.Host.OSID
	}
	f := strings.Fields(ids)
	switch {
	case b.Name == BootRPMOstree:
		return "ostree"
	case b.Name == BootNixOS || slices.Contains(f, "nixos"):
		return "nixos"
	case slices.Contains(f, "ubuntu"):
		return "ubuntu"
	case slices.Contains(f, "debian"):
		return "debian"
	case slices.Contains(f, "fedora") || slices.Contains(f, "rhel"):
		return "fedora"
	case slices.Contains(f, "arch"):
		return "arch"
	}
	return ""
}

// adviceActions are the package and firmware changes haloforge does not
// make itself (a kernel, firmware, the BIOS): the exact command where one
// is certain for the distribution, else the words.
func adviceActions(p *Plan, r *detect.Report, e *Evidence) {
	d := distro(r, e, p.Boot)
	version := e.OSRelease["VERSION_ID"]
	advise := func(id, kind, check, change, command string) {
		p.Actions = append(p.Actions, Action{ID: id, Kind: kind, Check: check, Change: change, Command: command, Advice: true})
	}
	if flagged(r, "kernel-version") {
		cmd := map[string]string{
			"fedora": "sudo dnf upgrade --refresh kernel",
			"arch":   "sudo pacman -Syu linux",
			"ostree": "rpm-ostree upgrade",
		}[d]
		if d == "ubuntu" && version == "24.04" {
			cmd = "sudo apt install linux-oem-24.04"
		}
		advise("package:kernel", KindPackage, "kernel-version", "install a kernel >= 6.18.4 (the gfx1151 KFD/CWSR fixes), then reboot into it", cmd)
	}
	if status(r, "mes-firmware") == detect.StatusFail {
		cmd := map[string]string{
			"fedora": "sudo dnf upgrade --refresh linux-firmware",
			"ubuntu": "sudo apt update && sudo apt install --only-upgrade linux-firmware",
			"debian": "sudo apt update && sudo apt install --only-upgrade firmware-amd-graphics",
			"arch":   "sudo pacman -Syu linux-firmware",
			"ostree": "rpm-ostree upgrade",
		}[d]
		advise("firmware:mes", KindFirmware, "mes-firmware", "replace linux-firmware 20251125 (MES 0x83 hangs the GPU) with 20260108 or newer, then reboot", cmd)
	}
	if c, ok := r.Check("firmware-kernel-pair"); ok && flagged(r, "firmware-kernel-pair") {
		advise("firmware:kernel-pair", KindFirmware, "firmware-kernel-pair", firstSentence(c.Summary)+": see the doctor's fix", "")
	}
	if flagged(r, "carveout") {
		advise("firmware:bios-carveout", KindFirmware, "carveout",
			"in the BIOS/UEFI setup, set the UMA frame buffer (\"iGPU memory\", \"UMA size\") to its minimum: 512 MB on most boards "+
				"(GMKtec EVO-X2 BIOS 1.12: 2 GB, under UMA_SPECIFIED, shown with Alt+F5); memory for the GPU then comes from GTT", "")
	}
	for _, tool := range []string{"container-engine", "distrobox"} {
		if status(r, tool) != detect.StatusFail {
			continue
		}
		pkg := map[string]string{"container-engine": "podman", "distrobox": "distrobox"}[tool]
		cmd := map[string]string{
			"fedora": "sudo dnf install " + pkg,
			"ubuntu": "sudo apt install " + pkg,
			"debian": "sudo apt install " + pkg,
			"arch":   "sudo pacman -S " + pkg,
			"ostree": "rpm-ostree install " + pkg,
		}[d]
		advise("package:"+pkg, KindPackage, tool, "install "+pkg, cmd)
	}
}

func firstSentence(s string) string {
	if i := strings.Index(s, ": "); i > 0 && i < 120 {
		return s[:i]
	}
	return s
}

// skipReasons say why a flagged check has no host change in the plan.
var skipReasons = map[string]string{
	"gpu":          "no AMD GPU to configure",
	"gfx-support":  "a GPU target question: pick the track doctor recommends",
	"kfd-access":   "", // the check's own explanation: driver not loaded, or nodes not mapped
	"hsa-override": "an environment variable, not a host setting: unset HSA_OVERRIDE_GFX_VERSION where it is set",
	"disk-space":   "free space or point --state-dir at a bigger disk",
	"build-memory": "pick a prebuilt track, or build with a lower MAX_JOBS",
	"iommu":        "amd_iommu=off is an opt-in trade-off (faster, but no NPU or VFIO): haloforge never sets it for you",
	"npu":          "information about the NPU: nothing to change",
}

// skippedChecks lists the warning and failing checks that neither an
// action nor a wanted argument (already configured, waiting for the
// reboot) covers.
func skippedChecks(p *Plan, r *detect.Report, wants []want) {
	covered := map[string]bool{}
	for _, a := range p.Actions {
		covered[a.Check] = true
	}
	for _, w := range wants {
		covered[w.check] = true
	}
	for _, c := range r.Checks {
		if covered[c.ID] || (c.Status != detect.StatusWarn && c.Status != detect.StatusFail) {
			continue
		}
		reason, ok := skipReasons[c.ID]
		switch {
		case !ok:
			reason = "no host change for it: see haloforge doctor -v"
		case reason == "":
			// One explanation, doctor's: the check knows why (the driver
			// is not loaded, or the nodes are not mapped into a container).
			reason = c.Summary
			if fix, _, _ := strings.Cut(c.Fix, "\n"); fix != "" {
				reason += "; " + fix
			}
		}
		p.Skipped = append(p.Skipped, Skipped{Check: c.ID, Status: string(c.Status), Reason: reason})
	}
}
