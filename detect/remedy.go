package detect

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// Kernel-argument operations.
const (
	OpSet    = "set"    // the argument ends up on the command line exactly once, with this value
	OpRemove = "remove" // the argument (any value) is gone from the command line
)

// KernelArg is one change to the kernel command line. Value is the new value
// for OpSet; for OpRemove it is the value seen on the running command line
// (rpm-ostree deletes key=value pairs), empty for a flag such as nomodeset.
type KernelArg struct {
	Op    string `json:"op"`
	Key   string `json:"key"`
	Value string `json:"value,omitempty"`
}

// String is the argument as it appears on the command line.
func (a KernelArg) String() string {
	if a.Value == "" {
		return a.Key
	}
	return a.Key + "=" + a.Value
}

// ArgChange is a kernel argument a remedy asks for and the reason the plan
// prints next to it.
type ArgChange struct {
	Arg KernelArg
	Why string
}

// StepKind is the kind of a change the user makes (haloforge never applies
// it): a package to install, or firmware (a package, or a BIOS setting).
type StepKind string

// Step kinds, as the plan's action kinds name them.
const (
	StepPackage  StepKind = "package"
	StepFirmware StepKind = "firmware"
)

// Step is one change the user makes by hand: a kernel or tool to install,
// firmware to change, a BIOS setting. Commands are by distribution; the plan
// takes the one for its machine, doctor prints those the check chose.
type Step struct {
	ID       string // the plan action's ID: package:kernel, firmware:mes, …
	Kind     StepKind
	Change   string // what to do, one line (the plan's "change")
	Commands []DistroCommand
}

// Distributions as the plan tells them apart (os-release ID and ID_LIKE).
const (
	DistroFedora       = "fedora"
	DistroFedoraAtomic = "ostree" // rpm-ostree systems: Silverblue, Kinoite, Bazzite
	DistroUbuntu       = "ubuntu"
	DistroDebian       = "debian"
	DistroArch         = "arch"
	DistroSUSE         = "opensuse"
	DistroNixOS        = "nixos"
	DistroGentoo       = "gentoo"
)

// DistroCommand is a step's exact command on some distributions.
type DistroCommand struct {
	Distros []string // the distributions it is for (Distro… constants)
	Release string   // os-release VERSION_ID it is for; "" for any
	Label   string   // how doctor names them: "Fedora", "Ubuntu/Debian"
	Command string   // one command a line, each runs as printed; "" when only words fit
	Note    string   // for people, after the command; never part of the plan's command
}

// For is the command for this distribution and release: the one naming the
// release before one for any release.
func (s Step) For(distro, release string) (DistroCommand, bool) {
	var any *DistroCommand
	for i, c := range s.Commands {
		for _, d := range c.Distros {
			switch {
			case d != distro:
			case c.Release == release && release != "":
				return c, true
			case c.Release == "" && any == nil:
				any = &s.Commands[i]
			}
		}
	}
	if any != nil {
		return *any, true
	}
	return DistroCommand{}, false
}

// Remedy is what would make a check pass, as data: doctor's fix text is
// rendered from it (Text) and the host-fix plan places its changes for the
// machine's bootloader and distribution. A remedy without changes is advice.
type Remedy struct {
	Lead   string      // what to do and why, before any command
	Args   []ArgChange // kernel command-line changes (module parameters may also go in modprobe.d)
	Groups []string    // groups the user must be in
	Steps  []Step      // packages, firmware, BIOS settings: the user's own commands
	After  string      // after the commands: how to check the result
	// Manual says why the plan leaves this remedy to the user although it
	// names changes (an opt-in trade-off), or, for advice, why there is no
	// host change; "" when the plan places every change.
	Manual string
	// GTTBytes is the GTT the change gives the GPU, for --verify to read
	// back (mem_info_gtt_total); 0 when the change does not size GTT.
	GTTBytes int64
}

// advice is a remedy of words only.
func advice(text string) *Remedy { return &Remedy{Lead: text} }

// Changes reports whether the remedy asks for a host change the plan can
// make or hand to the user: kernel arguments, groups or steps.
func (m *Remedy) Changes() bool {
	return m != nil && (len(m.Args) > 0 || len(m.Groups) > 0 || len(m.Steps) > 0)
}

// kinds are the kinds of change the remedy asks for.
func (m *Remedy) kinds() []string {
	if m == nil {
		return nil
	}
	var out []string
	if len(m.Args) > 0 {
		out = append(out, changeKernelArg)
	}
	if len(m.Groups) > 0 {
		out = append(out, changeGroup)
	}
	for _, s := range m.Steps {
		out = append(out, string(s.Kind))
	}
	return out
}

// Text is the fix as doctor prints it, ready to paste; the kernel
// arguments' blocks start with this OS's (os-release ID and ID_LIKE).
func (m *Remedy) Text(osID string) string {
	if m == nil {
		return ""
	}
	var parts []string
	if m.Lead != "" {
		parts = append(parts, m.Lead)
	}
	if len(m.Args) > 0 {
		parts = append(parts, argsText(m.Args, osID))
	}
	if len(m.Groups) > 0 {
		parts = append(parts, "sudo usermod -aG "+strings.Join(m.Groups, ",")+" $USER\nthen log out and back in (or reboot) so the new groups apply.")
	}
	indent := ""
	if m.Lead != "" {
		indent = "  "
	}
	for _, s := range m.Steps {
		if t := s.text(indent); t != "" {
			parts = append(parts, t)
		}
	}
	if m.After != "" {
		parts = append(parts, m.After)
	}
	return strings.Join(parts, "\n")
}

// text lays out a step's commands, one block per distribution.
func (s Step) text(indent string) string {
	var lines []string
	for _, c := range s.Commands {
		cmd := strings.Split(c.Command, "\n")
		first := c.Label + ": " + cmd[0]
		if c.Command == "" {
			first = c.Label + ": " + c.Note
		}
		lines = append(lines, indent+first)
		for _, l := range cmd[1:] {
			lines = append(lines, indent+"  "+l)
		}
		if c.Command != "" && c.Note != "" {
			for _, l := range strings.Split(c.Note, "\n") {
				lines = append(lines, indent+"  "+l)
			}
		}
	}
	return strings.Join(lines, "\n")
}

// argsText is the ready-to-paste way to set and remove kernel parameters on
// Fedora (grubby), Ubuntu/Debian (GRUB) and as modprobe.d options.
func argsText(args []ArgChange, osID string) string {
	var add, remove []string
	for _, a := range args {
		if a.Arg.Op == OpSet {
			add = append(add, a.Arg.String())
		} else {
			remove = append(remove, a.Arg.Key)
		}
	}
	var fedora, debian, addF, addD, remF, remD []string
	if len(add) > 0 {
		addF = append(addF, fmt.Sprintf(`sudo grubby --update-kernel=ALL --args="%s"`, strings.Join(add, " ")))
		addD = append(addD, fmt.Sprintf(`sudo sed -i 's/^GRUB_CMDLINE_LINUX_DEFAULT="/&%s /' /etc/default/grub`, strings.Join(add, " ")))
	}
	if len(remove) > 0 {
		remF = append(remF, fmt.Sprintf(`sudo grubby --update-kernel=ALL --remove-args="%s"`, strings.Join(remove, " ")))
		for _, r := range remove {
			remD = append(remD, fmt.Sprintf(`sudo sed -i -E 's/ ?%s=[^ "]*//g' /etc/default/grub`, strings.ReplaceAll(r, ".", `\.`)))
		}
	}
	if replaces(add, remove) {
		// A new value for a parameter already set: the old one goes first,
		// or the removal would take the new one with it.
		fedora, debian = append(remF, addF...), append(remD, addD...)
	} else {
		fedora, debian = append(addF, remF...), append(addD, remD...)
	}
	debian = append(debian, "sudo update-grub")
	blocks := []string{
		"Fedora (grubby):\n  " + strings.Join(fedora, "\n  "),
		"Ubuntu/Debian (GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub):\n  " + strings.Join(debian, "\n  "),
	}
	if strings.Contains(osID, "debian") || strings.Contains(osID, "ubuntu") {
		blocks[0], blocks[1] = blocks[1], blocks[0]
	}
	if modprobe := modprobeLines(add, remove); len(modprobe) > 0 {
		blocks = append(blocks, "Or as module options (any distro; then rebuild the initramfs: sudo dracut -f --regenerate-all on Fedora,\n"+
			"sudo update-initramfs -u -k all on Ubuntu/Debian, sudo mkinitcpio -P on Arch):\n  "+strings.Join(modprobe, "\n  "))
	}
	return strings.Join(blocks, "\n") + "\nThen reboot."
}

// replaces is true when a parameter is both removed and added (a new value).
func replaces(add, remove []string) bool {
	for _, a := range add {
		k, _, _ := strings.Cut(a, "=")
		for _, r := range remove {
			if k == r {
				return true
			}
		}
	}
	return false
}

// modprobeFile is where doctor's fix appends module options: a file of
// haloforge's own, so that following two fixes keeps both and no file the
// user wrote is overwritten.
const modprobeFile = "/etc/modprobe.d/haloforge-%s.conf"

// modprobeLines turns module parameters (ttm.pages_limit=N) into
// /etc/modprobe.d edits; kernel-only parameters such as amd_iommu have none.
// A parameter is first taken out of every options line of its module (its
// param=value only, and a line left empty goes), then a new value is
// appended to haloforge's file for the module: the same edit the plan makes
// to a file (removeModOption, detect/hostfix/modprobe.go).
func modprobeLines(add, remove []string) []string {
	byMod := map[string][]string{}
	var order []string
	drop := slices.Clone(remove)
	for _, a := range add {
		k, v, ok := strings.Cut(a, "=")
		mod, param, dotted := strings.Cut(k, ".")
		if !ok || !dotted {
			continue
		}
		if _, seen := byMod[mod]; !seen {
			order = append(order, mod)
		}
		byMod[mod] = append(byMod[mod], param+"="+v)
		if !slices.Contains(drop, k) {
			drop = append(drop, k)
		}
	}
	var out []string
	for _, r := range drop {
		if mod, param, ok := strings.Cut(r, "."); ok {
			out = append(out, modprobeRemove(mod, param))
		}
	}
	for _, mod := range order {
		out = append(out, fmt.Sprintf(`echo "options %s %s" | sudo tee -a `+modprobeFile, mod, strings.Join(byMod[mod], " "), mod))
	}
	return out
}

// modprobeRemove is the sed that takes one parameter (param=value) out of
// a module's options lines in /etc/modprobe.d, and deletes a line left
// with no parameter.
func modprobeRemove(mod, param string) string {
	m, p := regexp.QuoteMeta(mod), regexp.QuoteMeta(param)
	return fmt.Sprintf(`sudo sed -i -E -e '/^[[:space:]]*options[[:space:]]+%s[[:space:]]/ s/[[:space:]]+%s=[^[:space:]#]*//g' -e '/^[[:space:]]*options[[:space:]]+%s[[:space:]]*(#.*)?$/d' /etc/modprobe.d/*.conf`, m, p, m)
}

const gib = int64(1) << 30

// PagesPerGiB is 1 GiB in the 4 KiB pages that ttm.pages_limit counts.
const PagesPerGiB = 262144

// gttPlan is the GTT size haloforge proposes for this machine's RAM.
type gttPlan struct {
	GiB, Pages, ReserveGiB int64
}

// planGTT leaves the OS a reserve of 1/16 of RAM, at least 4 and at most
// 8 GiB, and gives the rest to GTT: 125 GiB visible -> 117 GiB = 30670848 pages.
func planGTT(ramBytes int64) gttPlan {
	reserve := int64(math.Ceil(float64(ramBytes) / 16 / float64(gib)))
	reserve = min(max(reserve, 4), 8)
	g := ramBytes/gib - reserve
	if g < 1 {
		g = 1
	}
	return gttPlan{GiB: g, Pages: g * PagesPerGiB, ReserveGiB: reserve}
}

// GTTArgs are the kernel arguments that give the GPU this many TTM pages on
// this machine: ttm's, and amdttm's too when amdgpu-dkms brings its own TTM
// module. The gtt-size checks ask for them; the plan too for --gtt-gib.
func GTTArgs(r *Report, pages int64, why string) []ArgChange {
	n := fmt.Sprint(pages)
	keys := []string{"ttm.pages_limit", "ttm.page_pool_size"}
	if usesAMDTTM(r) {
		keys = append(keys, "amdttm.pages_limit", "amdttm.page_pool_size")
	}
	out := make([]ArgChange, len(keys))
	for i, k := range keys {
		out[i] = ArgChange{Arg: KernelArg{Op: OpSet, Key: k, Value: n}, Why: why}
	}
	return out
}
