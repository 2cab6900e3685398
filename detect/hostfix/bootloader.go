package hostfix

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Bootloader names of `doctor --plan --json` (docs/json.md).
const (
	BootGRUB        = "grub"
	BootGrubby      = "grubby"
	BootSystemdBoot = "systemd-boot"
	BootRPMOstree   = "rpm-ostree"
	BootNixOS       = "nixos"
	BootUnknown     = "unknown"
)

// Boot is how a machine boots and how haloforge changes its command line.
type Boot struct {
	Name      string     `json:"name"`
	Tool      string     `json:"tool,omitempty"`      // the program that applies or regenerates: update-grub, grub2-mkconfig, grubby, kernel-install, kernelstub, rpm-ostree, nixos-rebuild
	Config    []string   `json:"config,omitempty"`    // the files haloforge edits for kernel arguments
	Update    [][]string `json:"update,omitempty"`    // commands (argv) that regenerate the boot entries after an edit
	Generated []string   `json:"generated,omitempty"` // what those commands write
	Kernels   []Kernel   `json:"kernels,omitempty"`   // kernels whose entries kernel-install rewrites
	Reason    string     `json:"reason"`              // how the bootloader was recognised
	Problem   string     `json:"problem,omitempty"`   // why kernel arguments cannot be applied here (printed only)
}

// Editable is true when --apply may change kernel arguments on this boot setup.
func (b Boot) Editable() bool {
	switch b.Name {
	case BootGRUB, BootGrubby, BootSystemdBoot, BootRPMOstree:
		return b.Problem == ""
	}
	return false
}

var (
	kernelVersionRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+~-]{0,127}$`)
	imagePathRe     = regexp.MustCompile(`^/[A-Za-z0-9._+~/-]{1,255}$`)
)

// DetectBoot recognises the bootloader from the evidence, most specific
// first: NixOS and rpm-ostree manage the command line themselves; Pop!_OS's
// kernelstub and systemd-boot (a loader.conf on an ESP, kernel-install) come
// before grubby (Fedora, RHEL), and GRUB with its update tool comes last.
func DetectBoot(e *Evidence) Boot {
	id := e.OSRelease["ID"]
	switch {
	case id == "nixos" || e.Markers["/etc/NIXOS"]:
		return Boot{Name: BootNixOS, Tool: "nixos-rebuild", Reason: "NixOS (/etc/NIXOS, os-release ID=nixos): the command line comes from boot.kernelParams in the configuration",
			Problem: "NixOS builds the boot entries from its configuration: haloforge prints the snippet and changes nothing"}
	case e.Markers["/run/ostree-booted"] && e.has("rpm-ostree"):
		return Boot{Name: BootRPMOstree, Tool: "rpm-ostree", Reason: "an rpm-ostree system (/run/ostree-booted): kernel arguments go into a new deployment with rpm-ostree kargs"}
	case e.Markers["/run/ostree-booted"]:
		return Boot{Name: BootUnknown, Reason: "an ostree system without rpm-ostree", Problem: "no rpm-ostree found: set the arguments with your system's ostree tooling"}
	case e.has("kernelstub"):
		return Boot{Name: BootSystemdBoot, Tool: "kernelstub", Reason: "kernelstub is installed (Pop!_OS): it keeps the systemd-boot entry's options",
			Problem: "haloforge prints kernelstub's commands but has not been tested with it: run them yourself"}
	}
	if esp := loaderConf(e); esp != "" && e.has("kernel-install") {
		b := Boot{Name: BootSystemdBoot, Tool: "kernel-install", Config: []string{kernelCmdlinePath},
			Reason: "systemd-boot (" + esp + ") with kernel-install: new entries take their options from " + kernelCmdlinePath}
		b.Kernels = entryKernels(e)
		for _, k := range b.Kernels {
			b.Update = append(b.Update, []string{"kernel-install", "add", k.Version, k.Image})
		}
		b.Generated = append(b.Generated, path.Join(path.Dir(esp), "entries")+"/*.conf")
		if len(b.Kernels) == 0 {
			b.Problem = "no installed kernel image found under /usr/lib/modules or /boot for kernel-install to rewrite"
		}
		return b
	}
	if e.has("grubby") {
		return Boot{Name: BootGrubby, Tool: "grubby", Reason: "grubby is installed (Fedora, RHEL): it updates every boot entry's arguments",
			Config: e.filesMatching("/boot/loader/entries/*.conf")}
	}
	if _, ok := e.Files["/etc/default/grub"]; ok {
		b := Boot{Name: BootGRUB, Config: append([]string{"/etc/default/grub"}, e.filesMatching("/etc/default/grub.d/*.cfg")...)}
		cfg := "/boot/grub/grub.cfg"
		switch {
		case e.has("update-grub"):
			b.Tool = "update-grub"
			b.Update = [][]string{{"update-grub"}}
		case e.has("grub2-mkconfig"):
			if _, ok := e.Files["/boot/grub2/grub.cfg"]; ok || !hasFile(e, cfg) {
				cfg = "/boot/grub2/grub.cfg"
			}
			b.Tool = "grub2-mkconfig"
			b.Update = [][]string{{"grub2-mkconfig", "-o", cfg}}
		case e.has("grub-mkconfig"):
			b.Tool = "grub-mkconfig"
			b.Update = [][]string{{"grub-mkconfig", "-o", cfg}}
		default:
			return Boot{Name: BootUnknown, Reason: "/etc/default/grub exists but no update-grub or grub-mkconfig was found",
				Problem: "no GRUB tool to regenerate grub.cfg"}
		}
		b.Generated = []string{cfg}
		b.Reason = fmt.Sprintf("GRUB (/etc/default/grub, regenerated with %s)", b.Tool)
		return b
	}
	return Boot{Name: BootUnknown, Reason: unknownReason(e), Problem: "haloforge does not know how this machine boots: add the arguments with your bootloader's tool"}
}

func hasFile(e *Evidence, p string) bool { _, ok := e.Files[p]; return ok }

func unknownReason(e *Evidence) string {
	if e.Root == "" && len(e.Tools) == 0 && len(e.Files) == 0 {
		return "the bundle has no boot evidence (bootloader.txt): collect it with haloforge doctor --collect"
	}
	return "none of GRUB, grubby, systemd-boot, rpm-ostree or NixOS was found"
}

// loaderConf is the systemd-boot loader.conf found on an ESP or XBOOTLDR.
func loaderConf(e *Evidence) string {
	for _, p := range []string{"/efi/loader/loader.conf", "/boot/efi/loader/loader.conf", "/boot/loader/loader.conf"} {
		if e.Markers[p] {
			return p
		}
	}
	return ""
}

// entryKernels are the installed kernels that already have a boot entry, so
// that rewriting the entries adds none; with no matching entry, every
// installed kernel (what the next kernel update would do anyway).
func entryKernels(e *Evidence) []Kernel {
	versions := map[string]bool{}
	for _, g := range []string{"/efi/loader/entries/*.conf", "/boot/efi/loader/entries/*.conf", "/boot/loader/entries/*.conf"} {
		for _, p := range e.filesMatching(g) {
			if v := bootEntryField(string(e.Files[p]), "version"); v != "" {
				versions[v] = true
			}
		}
	}
	var out, all []Kernel
	for _, k := range e.Kernels {
		if !kernelVersionRe.MatchString(k.Version) || !imagePathRe.MatchString(k.Image) {
			continue
		}
		all = append(all, k)
		if versions[k.Version] {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return all
	}
	return out
}

// bootEntryField reads one key of a Boot Loader Specification entry.
func bootEntryField(s, key string) string {
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == key {
			return strings.Join(f[1:], " ")
		}
	}
	return ""
}
