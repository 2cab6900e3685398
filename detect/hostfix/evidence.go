package hostfix

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/internal/safefile"
)

// Evidence is what the plan needs to know about how a machine boots: which
// bootloader tools are installed, the configuration files haloforge may
// edit, the installed kernels and the render/video groups. It comes from a
// root filesystem (the live "/", or an image or chroot) or from a bundle.
type Evidence struct {
	Root        string            // the filesystem it was read from; "" for a bundle
	OSRelease   map[string]string // /etc/os-release
	Tools       map[string]string // tool name -> path inside the root, for the tools found
	Markers     map[string]bool   // marker path -> exists
	Files       map[string][]byte // absolute path inside the root -> content
	Kernels     []Kernel          // installed kernels, newest name last
	Groups      map[string][]string
	ProcCmdline string // the running kernel's command line, when known
}

// Kernel is an installed kernel and its image.
type Kernel struct {
	Version string `json:"version"`
	Image   string `json:"image"`
}

// bootTools are the programs whose presence decides the bootloader and the
// commands of a plan.
var bootTools = []string{"update-grub", "grub-mkconfig", "grub2-mkconfig", "grubby", "rpm-ostree",
	"kernel-install", "bootctl", "kernelstub", "nixos-rebuild", "update-initramfs", "dracut", "mkinitcpio", "usermod", "gpasswd"}

// toolDirs are searched for bootTools inside the root: a user's PATH often
// lacks /usr/sbin, where update-grub lives.
var toolDirs = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin", "/run/current-system/sw/bin"}

// markerPaths are files whose existence says what kind of system this is.
var markerPaths = []string{"/run/ostree-booted", "/etc/NIXOS", "/sys/firmware/efi",
	"/efi/loader/loader.conf", "/boot/efi/loader/loader.conf", "/boot/loader/loader.conf"}

// configGlobs are the files a plan may edit or that a bootloader update
// regenerates; their content goes into the evidence.
var configGlobs = []string{
	"/etc/default/grub", "/etc/default/grub.d/*.cfg",
	kernelCmdlinePath, "/etc/kernel/install.conf",
	"/etc/modprobe.d/*.conf",
	"/efi/loader/entries/*.conf", "/boot/efi/loader/entries/*.conf", "/boot/loader/entries/*.conf",
}

// generatedGlobs are the files bootloader tools write from the configuration.
var generatedGlobs = []string{"/boot/grub/grub.cfg", "/boot/grub2/grub.cfg",
	"/efi/loader/entries/*.conf", "/boot/efi/loader/entries/*.conf", "/boot/loader/entries/*.conf"}

// Bounds on what evidence holds, whatever the root or bundle contains.
const (
	maxEvidenceFile  = 1 << 20
	maxEvidenceFiles = 512
)

// FromRoot reads the evidence from a root filesystem ("/" for this machine)
// as its own programs would under chroot: a link, absolute or with "..",
// resolves inside the root (rootFS), so nothing outside it is read. A file
// it looks for that is absent or unreadable is no evidence; one that is a
// FIFO, a device or larger than maxEvidenceFile is refused at once (never
// waited on), with an error naming it: a plan made without it could be
// wrong.
func FromRoot(root string) (*Evidence, error) {
	if root == "" {
		root = "/"
	}
	st, err := os.Stat(root)
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("root %s: not a directory", root)
	}
	r := rootFS{root: root}
	e := &Evidence{Root: root, Tools: map[string]string{}, Markers: map[string]bool{}, Files: map[string][]byte{}, Groups: map[string][]string{}}
	var refused error
	read := func(p string) ([]byte, bool) {
		data, err := r.readFile(p, maxEvidenceFile)
		var nr *safefile.NotRegularError
		var tl *safefile.TooLargeError
		if refused == nil && ((errors.As(err, &nr) && !nr.Mode.IsDir()) || errors.As(err, &tl)) {
			refused = err
		}
		return data, err == nil
	}
	for _, p := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		if data, ok := read(p); ok {
			e.OSRelease = detect.ParseOSRelease(string(data))
			break
		}
	}
	for _, t := range bootTools {
		for _, d := range toolDirs {
			p := path.Join(d, t)
			if st, err := r.stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
				e.Tools[t] = p
				break
			}
		}
	}
	for _, m := range markerPaths {
		_, err := r.stat(m)
		e.Markers[m] = err == nil
	}
	for _, g := range append(append([]string{}, configGlobs...), generatedGlobs...) {
		for _, p := range r.glob(g) {
			if len(e.Files) >= maxEvidenceFiles {
				break
			}
			if _, seen := e.Files[p]; seen {
				continue
			}
			if data, ok := read(p); ok {
				e.Files[p] = data
			}
		}
	}
	e.Kernels = findKernels(r)
	if data, ok := read("/etc/group"); ok {
		e.Groups = parseGroupFile(string(data))
	}
	if data, ok := read("/proc/cmdline"); ok {
		e.ProcCmdline = strings.TrimSpace(string(data))
	}
	if refused != nil {
		return nil, fmt.Errorf("%w: haloforge reads the boot configuration only from regular files", refused)
	}
	return e, nil
}

// findKernels lists kernels with an image: /usr/lib/modules/V/vmlinuz
// (Fedora, Arch) or /boot/vmlinuz-V (Debian, Ubuntu).
func findKernels(r rootFS) []Kernel {
	seen := map[string]bool{}
	var out []Kernel
	for _, modDir := range []string{"/usr/lib/modules", "/lib/modules"} {
		entries, _ := r.readDir(modDir)
		for _, d := range entries {
			v := d.Name()
			if seen[v] || !d.IsDir() {
				continue
			}
			for _, img := range []string{path.Join(modDir, v, "vmlinuz"), "/boot/vmlinuz-" + v} {
				if st, err := r.stat(img); err == nil && st.Mode().IsRegular() {
					seen[v] = true
					out = append(out, Kernel{Version: v, Image: img})
					break
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b Kernel) int { return strings.Compare(a.Version, b.Version) })
	return out
}

// parseGroupFile reads /etc/group into group -> members.
func parseGroupFile(s string) map[string][]string {
	out := map[string][]string{}
	for _, l := range strings.Split(s, "\n") {
		f := strings.Split(strings.TrimSpace(l), ":")
		if len(f) < 4 || f[0] == "" {
			continue
		}
		var members []string
		for _, m := range strings.Split(f[3], ",") {
			if m = strings.TrimSpace(m); m != "" {
				members = append(members, m)
			}
		}
		out[f[0]] = members
	}
	return out
}

// bootEvidenceFile is the bundle file that records tools, markers, kernels
// and groups; configuration files go into the bundle at their own paths.
const bootEvidenceFile = "bootloader.txt"

// bundleGlobs are the evidence files shared in a bundle (small, no secrets:
// GRUB passwords live in /etc/grub.d, which is not read).
var bundleGlobs = []string{"/etc/default/grub", "/etc/default/grub.d/*.cfg", kernelCmdlinePath,
	"/etc/kernel/install.conf", "/etc/modprobe.d/*.conf",
	"/efi/loader/entries/*.conf", "/boot/efi/loader/entries/*.conf", "/boot/loader/entries/*.conf"}

// AddToBundle writes the evidence into a bundle, so that someone else's
// `doctor --plan --bundle` sees the same bootloader as this machine.
func (e *Evidence) AddToBundle(b *detect.Bundle) error {
	var sb strings.Builder
	sb.WriteString("# haloforge boot evidence: tools, markers, kernels, groups\n")
	for _, t := range bootTools {
		p := e.Tools[t]
		if p == "" {
			p = "-"
		}
		fmt.Fprintf(&sb, "tool %s %s\n", t, p)
	}
	for _, m := range markerPaths {
		fmt.Fprintf(&sb, "marker %s %s\n", m, map[bool]string{true: "yes", false: "no"}[e.Markers[m]])
	}
	for _, k := range e.Kernels {
		fmt.Fprintf(&sb, "kernel %s %s\n", k.Version, k.Image)
	}
	for _, g := range []string{"render", "video"} {
		if m, ok := e.Groups[g]; ok {
			fmt.Fprintf(&sb, "group %s %s\n", g, strings.Join(append([]string{":"}, m...), " "))
		}
	}
	if err := b.Set(bootEvidenceFile, []byte(sb.String())); err != nil {
		return err
	}
	for p, data := range e.Files {
		for _, g := range bundleGlobs {
			if ok, _ := path.Match(g, p); ok {
				if err := b.Set(strings.TrimPrefix(p, "/"), data); err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

// FromBundle reads the evidence a bundle carries. ok is false when the
// bundle has none (an older bundle, or one pasted by hand): the bootloader
// is then unknown.
func FromBundle(b *detect.Bundle) (e *Evidence, ok bool) {
	e = &Evidence{Tools: map[string]string{}, Markers: map[string]bool{}, Files: map[string][]byte{}, Groups: map[string][]string{}}
	if s, found := b.Get("os-release.txt"); found {
		e.OSRelease = detect.ParseOSRelease(s)
	}
	if s, found := b.Get("cmdline.txt"); found {
		e.ProcCmdline = strings.TrimSpace(firstLine(s))
	}
	s, found := b.Get(bootEvidenceFile)
	if !found {
		return e, false
	}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch {
		case f[0] == "tool" && len(f) == 3 && slices.Contains(bootTools, f[1]) && f[2] != "-" && path.IsAbs(f[2]):
			e.Tools[f[1]] = path.Clean(f[2])
		case f[0] == "marker" && len(f) == 3 && slices.Contains(markerPaths, f[1]):
			e.Markers[f[1]] = f[2] == "yes"
		case f[0] == "kernel" && len(f) == 3 && kernelVersionRe.MatchString(f[1]) && path.IsAbs(f[2]):
			e.Kernels = append(e.Kernels, Kernel{Version: f[1], Image: path.Clean(f[2])})
		case f[0] == "group" && len(f) >= 3 && f[2] == ":":
			e.Groups[f[1]] = f[3:]
		}
	}
	for _, name := range b.Names() {
		p := "/" + name
		for _, g := range bundleGlobs {
			if ok, _ := path.Match(g, p); ok && len(e.Files) < maxEvidenceFiles {
				data, _ := b.Get(name)
				e.Files[p] = []byte(data)
				break
			}
		}
	}
	return e, true
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			return t
		}
	}
	return ""
}

// has reports whether a tool was found.
func (e *Evidence) has(tool string) bool { return e.Tools[tool] != "" }

// filesMatching lists the evidence files matching a glob, sorted.
func (e *Evidence) filesMatching(glob string) []string {
	var out []string
	for p := range e.Files {
		if ok, _ := path.Match(glob, p); ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
