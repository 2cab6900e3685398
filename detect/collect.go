package detect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/mem"

	"github.com/haloforge/haloforge/internal/safefile"
)

// CollectOptions says where and how long to look.
type CollectOptions struct {
	Root    string        // filesystem root for sysfs/procfs/etc ("/" when empty); commands run only when it is "/"
	Timeout time.Duration // per command; zero gives each command its own fair budget (see commands)
	DiskDir string        // where builds will write, for disk-space ("$HOME" when empty)
	Version string        // haloforge version, recorded in collect.txt
}

// command is one external program whose output becomes a bundle file.
type command struct {
	file   string
	args   []string
	filter func([]byte) []byte // keeps what the analysis needs, nil keeps all
	// budget is how long the command may take on a busy machine. Python
	// tools (amd-smi, rocm-smi) and the HSA runtime (rocminfo) start slowly.
	budget time.Duration
	// transcript appends "$ command" and its output to file instead of
	// replacing it: several package managers answer into one file.
	transcript bool
	// exitIsAnswer: a non-zero exit is a normal answer (rpm -q for a package
	// that is not installed, rocminfo without a GPU, dmesg without root),
	// not a failure; for the --version probes it is one.
	exitIsAnswer bool
}

// Budgets for the commands: what each needs on a loaded 2-core machine,
// with room to spare. A command that needs longer has hung.
const (
	quickBudget = 5 * time.Second
	slowBudget  = 15 * time.Second
	// collectWorkers bounds how many commands run at once, so the collector
	// does not itself make the machine too busy for its own deadlines.
	collectWorkers = 4
	// waitDelay is how long Wait gives a killed command to go away.
	waitDelay = 2 * time.Second
)

// dmesgKeep are the kernel log lines worth sharing: the GPU driver, memory
// managers, IOMMU and boot lines. The rest (USB serials, MAC addresses, …)
// stays off a bundle meant for a public bug report.
var dmesgKeep = regexp.MustCompile(`(?i)amdgpu|amdttm|\bttm\b|\[drm\]|kfd|amdxdna|AMD-Vi|iommu|Linux version|ommand line:|read kernel buffer`)

func filterDmesg(out []byte) []byte {
	var b bytes.Buffer
	for _, l := range bytes.SplitAfter(out, []byte("\n")) {
		if dmesgKeep.Match(l) {
			b.Write(l)
		}
	}
	return b.Bytes()
}

// commands are run concurrently, each bounded by its budget. dmesg needs
// root on most distros (kernel.dmesg_restrict); it then degrades to a note.
// The kernel release is read from /proc (see files), not from uname: a file
// cannot time out.
var commands = []command{
	{file: "rocminfo.txt", args: []string{"rocminfo"}, budget: slowBudget, exitIsAnswer: true},
	{file: "lspci.txt", args: []string{"lspci", "-nnk"}, budget: quickBudget, exitIsAnswer: true},
	{file: "dmesg.txt", args: []string{"dmesg"}, filter: filterDmesg, budget: quickBudget, exitIsAnswer: true},
	{file: "lsmod.txt", args: []string{"lsmod"}, budget: quickBudget, exitIsAnswer: true},
	{file: "modinfo-amdgpu.txt", args: []string{"modinfo", "amdgpu"}, budget: quickBudget, exitIsAnswer: true},
	{file: "amd-smi.txt", args: []string{"amd-smi", "static"}, budget: slowBudget, exitIsAnswer: true},
	{file: "rocm-smi.txt", args: []string{"rocm-smi", "--showproductname", "--showmeminfo", "vram", "gtt"}, budget: slowBudget, exitIsAnswer: true},
	{file: "vulkaninfo.txt", args: []string{"vulkaninfo", "--summary"}, budget: slowBudget, exitIsAnswer: true},
	{file: "podman.txt", args: []string{"podman", "--version"}, budget: quickBudget},
	{file: "docker.txt", args: []string{"docker", "--version"}, budget: quickBudget},
	{file: "distrobox.txt", args: []string{"distrobox", "--version"}, budget: quickBudget},
	// The installed linux-firmware, the way any user can ask for it (no root):
	// Debian/Ubuntu, Fedora/openSUSE, Arch. The AMD-only packages are the
	// ones that carry the GPU firmware where the distro splits it.
	{file: "firmware-package.txt", args: []string{"dpkg-query", "-W", "linux-firmware", "firmware-amd-graphics"}, budget: quickBudget, transcript: true, exitIsAnswer: true},
	{file: "firmware-package.txt", args: []string{"rpm", "-q", "linux-firmware", "amd-gpu-firmware", "kernel-firmware-amdgpu"}, budget: quickBudget, transcript: true, exitIsAnswer: true},
	{file: "firmware-package.txt", args: []string{"pacman", "-Q", "linux-firmware", "linux-firmware-amdgpu"}, budget: quickBudget, transcript: true, exitIsAnswer: true},
}

// commandFor is the command whose program is tool, for messages.
func commandFor(tool string) (command, bool) {
	for _, c := range commands {
		if c.args[0] == tool {
			return c, true
		}
	}
	return command{}, false
}

// sysGlobs are the sysfs files copied into the bundle at their own paths.
var sysGlobs = []string{
	"sys/class/kfd/kfd/topology/nodes/*/properties",
	"sys/class/drm/card*/device/mem_info_vram_total",
	"sys/class/drm/card*/device/mem_info_gtt_total",
	"sys/class/drm/card*/device/vendor",
	"sys/class/drm/card*/device/device",
	"sys/class/drm/card*/device/uevent",
	"sys/class/drm/card*/device/board_info",
	// amdgpu shows the running MES firmware to every user (0444, kernel 6.6+);
	// debugfs's amdgpu_firmware_info needs root.
	"sys/class/drm/card*/device/fw_version/mes_fw_version",
	"sys/module/ttm/parameters/pages_limit",
	"sys/module/ttm/parameters/page_pool_size",
	"sys/module/amdttm/parameters/pages_limit",
	"sys/module/amdttm/parameters/page_pool_size",
	"sys/module/amdgpu/version",
	"sys/module/amdgpu/initstate",
	"sys/module/amdgpu/parameters/cwsr_enable",
	// The GPU watchdog as loaded, whether set on the command line or in
	// modprobe.d (empty: the kernel's default).
	"sys/module/amdgpu/parameters/lockup_timeout",
	// Where the kernel loads firmware from: NixOS points it into the store,
	// whose path names the linux-firmware version.
	"sys/module/firmware_class/parameters/path",
}

// pciFiles are the attributes of a PCI device copied for GPUs and NPUs,
// as the kernel shows them (class 0x030200, vendor 0x10de, …); uevent
// carries the bound driver (DRIVER=…), the link lspci -k reads.
var pciFiles = []string{"class", "vendor", "device", "subsystem_vendor", "subsystem_device", "revision", "uevent"}

// pciWanted are the PCI classes worth a bundle: display controllers (03xx:
// VGA, 3D, display) and the signal-processing and accelerator classes the
// XDNA NPU and other NPUs use (1180, 12xx).
func pciWanted(class string) bool {
	c := strings.TrimPrefix(strings.TrimSpace(class), "0x")
	return strings.HasPrefix(c, "03") || strings.HasPrefix(c, "1180") || strings.HasPrefix(c, "12")
}

// files are single files copied under another name.
var files = map[string]string{
	"proc/cmdline":   "cmdline.txt",
	"proc/meminfo":   "meminfo.txt",
	"etc/os-release": "os-release.txt",
	// What `uname -r` prints, read from the file it reads: no process to hang.
	"proc/sys/kernel/osrelease": "uname.txt",
}

// envKeys are the only environment variables collected: a bundle is meant
// to be shared, so nothing else from the environment goes in.
var envKeys = []string{"HSA_OVERRIDE_GFX_VERSION", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
	"HSA_ENABLE_SDMA", "PYTORCH_ROCM_ARCH", "ROCM_PATH", "GPU_TARGET", "TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL"}

// commandResult is what one command left: its output and what happened.
type commandResult struct {
	out    []byte
	status string // for collect.txt: ok, not found, timed out after 5s, exit: …
}

// Collect gathers a bundle from the live machine: sysfs and procfs under
// Root, then the commands, at most collectWorkers at once. It never fails
// because a command is absent, slow or denied: collect.txt records what
// happened to each, and the analysis turns a command that did not finish
// into a check that says so.
func Collect(ctx context.Context, o CollectOptions) (*Bundle, error) {
	if o.Root == "" {
		o.Root = "/"
	}
	b := NewBundle()
	var mu sync.Mutex
	set := func(name string, data []byte) {
		mu.Lock()
		defer mu.Unlock()
		_ = b.Set(name, data) // names are ours, always inside the bundle
	}
	results := make([]commandResult, len(commands))
	var wg sync.WaitGroup
	if o.Root == "/" {
		slots := make(chan struct{}, collectWorkers)
		for i, c := range commands {
			wg.Go(func() {
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					results[i] = commandResult{status: "not run: " + ctx.Err().Error()}
					return
				}
				defer func() { <-slots }()
				budget := c.budget
				if o.Timeout > 0 {
					budget = o.Timeout
				}
				results[i] = runCommand(ctx, c, budget)
			})
		}
	}
	copyFiles(o.Root, set)
	set("firmware-overrides.txt", firmwareOverrides(o.Root))
	walked, copied := copyPCI(o.Root, set)
	set("dev.txt", []byte(devState(o.Root)))
	if g := groupsText(); g != "" {
		set("groups.txt", []byte(g))
	}
	set("env.txt", []byte(envText()))
	if o.Root == "/" {
		hostStats(o, set)
	}
	wg.Wait()
	manifest := map[string]string{}
	transcripts := map[string][]byte{}
	for i, c := range commands {
		if o.Root != "/" {
			break
		}
		r := results[i]
		manifest[c.args[0]] = r.status
		switch {
		case c.transcript && len(r.out) > 0:
			transcripts[c.file] = append(transcripts[c.file], transcript(c.args, r.out)...)
		case len(r.out) > 0:
			set(c.file, r.out)
		}
	}
	if nix := nixFirmware(o.Root); nix != "" {
		transcripts["firmware-package.txt"] = append(transcripts["firmware-package.txt"], nix...)
	}
	for name, data := range transcripts {
		set(name, data)
	}
	// That the PCI walk happened is itself a fact: no NPU among the devices is an answer.
	manifest["pci-sysfs"] = fmt.Sprintf("ok, %d devices walked, %d display or NPU copied", walked, copied)
	manifest["collected-by"] = "haloforge " + o.Version
	set("collect.txt", []byte(manifestText(manifest)))
	return b, nil
}

// transcript is a command and its output as a terminal shows them.
func transcript(args []string, out []byte) []byte {
	b := []byte("$ " + strings.Join(args, " ") + "\n")
	b = append(b, out...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		b = append(b, '\n')
	}
	return b
}

// runCommand runs one command in its own process group with its output in
// a file, not a pipe: a grandchild that keeps the pipe open, or a busy
// machine slow to drain it, cannot then hold Wait up or cut the output
// (a 100 ms WaitDelay dropped distrobox.txt on a busy machine). A
// command that outlives its budget is killed with its whole group.
func runCommand(ctx context.Context, c command, budget time.Duration) commandResult {
	path, err := exec.LookPath(c.args[0])
	if err != nil {
		return commandResult{status: "not found"}
	}
	out, err := os.CreateTemp("", "haloforge-collect-*")
	if err != nil {
		return commandResult{status: "exit: " + err.Error()}
	}
	// Unlinked at once: the command writes through the open descriptor, and
	// nothing is left in $TMPDIR when haloforge is killed mid-collection (a
	// deferred Remove left dmesg copies behind after a SIGTERM or kill -9).
	_ = os.Remove(out.Name())
	defer out.Close()
	cctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	cmd := exec.CommandContext(cctx, path, c.args[1:]...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "NO_COLOR=1")
	cmd.Stdout, cmd.Stderr = out, out
	// Pdeathsig: a command outlives neither haloforge killed by a signal it
	// does not handle nor a kill -9 (its own group is killed only on timeout).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = waitDelay
	err = cmd.Run()
	res := commandResult{status: "ok"}
	switch {
	case errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		res.status = "timed out after " + budget.String()
	case ctx.Err() != nil:
		res.status = "not finished: " + ctx.Err().Error()
	case err != nil:
		var exit *exec.ExitError
		if errors.As(err, &exit) && c.exitIsAnswer {
			res.status = "done, " + err.Error()
		} else {
			res.status = "exit: " + err.Error()
		}
	}
	if _, err := out.Seek(0, io.SeekStart); err == nil {
		res.out, _ = io.ReadAll(io.LimitReader(out, maxLiveFile))
	}
	if c.filter != nil {
		res.out = c.filter(res.out)
	}
	return res
}

// firmwareOverrides lists the amdgpu firmware in the directories the
// kernel's firmware loader reads before /lib/firmware
// (drivers/base/firmware_loader/main.c fw_path: updates/<release>, updates):
// a file there beats every linux-firmware update. The first line says where
// it looked, so that an empty listing is an answer.
func firmwareOverrides(root string) []byte {
	dirs := []string{"updates/amdgpu"}
	if rel, err := safefile.ReadRegular(filepath.Join(root, "proc/sys/kernel/osrelease"), maxLiveFile, safefile.Follow); err == nil {
		if r := strings.TrimSpace(string(rel)); overrideNameRe.MatchString(r) {
			dirs = append(dirs, "updates/"+r+"/amdgpu")
		}
	}
	var b strings.Builder
	b.WriteString("looked: /lib/firmware/" + strings.Join(dirs, " /lib/firmware/") + "\n")
	for _, d := range dirs {
		f, err := safefile.OpenDir(filepath.Join(root, "lib/firmware", d))
		if err != nil {
			continue
		}
		entries, _ := f.ReadDir(maxOverrides)
		f.Close()
		for _, e := range entries {
			if overrideNameRe.MatchString(e.Name()) && !e.IsDir() {
				b.WriteString(d + "/" + e.Name() + "\n")
			}
		}
	}
	return []byte(b.String())
}

func copyFiles(root string, set func(string, []byte)) {
	for _, g := range sysGlobs {
		matches, _ := filepath.Glob(filepath.Join(root, g))
		for _, m := range matches {
			copyRel(root, m, set)
		}
	}
	for src, dst := range files {
		if data, err := safefile.ReadRegular(filepath.Join(root, src), maxLiveFile, safefile.Follow); err == nil && len(data) > 0 {
			set(dst, data)
		}
	}
	// amdgpu_firmware_info lives in debugfs: readable by root only.
	fw, _ := filepath.Glob(filepath.Join(root, "sys/kernel/debug/dri/*/amdgpu_firmware_info"))
	for _, m := range fw {
		if data, err := safefile.ReadRegular(m, maxLiveFile, safefile.Follow); err == nil {
			set("firmware.txt", data)
			break
		}
	}
}

// copyRel copies one file into the bundle at its path under root.
func copyRel(root, p string, set func(string, []byte)) {
	data, err := safefile.ReadRegular(p, maxLiveFile, safefile.Follow)
	if err != nil || len(data) == 0 {
		return
	}
	if rel, err := filepath.Rel(root, p); err == nil {
		set(filepath.ToSlash(rel), data)
	}
}

// copyPCI copies the PCI attributes of every display controller and NPU
// from sysfs, so a machine without lspci still says which GPUs it has. It
// returns how many devices it looked at and how many it copied.
func copyPCI(root string, set func(string, []byte)) (walked, copied int) {
	devs, _ := filepath.Glob(filepath.Join(root, "sys/bus/pci/devices/*"))
	for _, d := range devs {
		class, err := safefile.ReadRegular(filepath.Join(d, "class"), maxLiveFile, safefile.Follow)
		if err != nil {
			continue
		}
		walked++
		if !pciWanted(string(class)) {
			continue
		}
		copied++
		for _, f := range pciFiles {
			copyRel(root, filepath.Join(d, f), set)
		}
	}
	return walked, copied
}

// nixFirmware finds the linux-firmware version on NixOS, where no package
// manager can be asked: the kernel's firmware path is a store directory of
// links into the linux-firmware store path, whose name carries the version.
// It returns what `readlink` on the MES firmware (or its directory) prints.
func nixFirmware(root string) string {
	raw, err := safefile.ReadRegular(filepath.Join(root, "sys/module/firmware_class/parameters/path"), maxLiveFile, safefile.Follow)
	dir := strings.TrimSpace(string(raw))
	if err != nil || !strings.HasPrefix(dir, "/nix/store/") {
		return ""
	}
	amd := filepath.Join(dir, "amdgpu")
	candidates := []string{amd}
	mes, _ := filepath.Glob(filepath.Join(root, amd, "gc_11_5_1_mes_2.bin*"))
	for _, m := range mes {
		candidates = append(candidates, strings.TrimPrefix(m, strings.TrimSuffix(filepath.Clean(root), "/")))
	}
	var b strings.Builder
	for _, c := range candidates {
		if target, err := os.Readlink(filepath.Join(root, c)); err == nil {
			fmt.Fprintf(&b, "$ readlink %s\n%s\n", c, target)
		}
	}
	return b.String()
}

// devState says whether /dev/kfd can be opened read-write by this user.
func devState(root string) string {
	p := filepath.Join(root, "dev/kfd")
	state := "ok"
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		state = "missing"
	case errors.Is(err, os.ErrPermission):
		state = "denied"
	case err != nil:
		state = "error " + err.Error()
	default:
		f.Close()
	}
	out := "/dev/kfd " + state + "\n"
	renders, _ := filepath.Glob(filepath.Join(root, "dev/dri/renderD*"))
	for _, r := range renders {
		out += "/dev/dri/" + filepath.Base(r) + " present\n"
	}
	// The XDNA NPU's device node (the accel subsystem).
	accels, _ := filepath.Glob(filepath.Join(root, "dev/accel/accel*"))
	for _, a := range accels {
		out += "/dev/accel/" + filepath.Base(a) + " present\n"
	}
	if len(accels) == 0 {
		out += "/dev/accel absent\n"
	}
	return out
}

func groupsText() string {
	u, err := user.Current()
	if err != nil {
		return ""
	}
	ids, err := u.GroupIds()
	if err != nil {
		return ""
	}
	var names []string
	for _, id := range ids {
		if g, err := user.LookupGroupId(id); err == nil {
			names = append(names, g.Name)
		}
	}
	return u.Username + " : " + strings.Join(names, " ") + "\n"
}

func envText() string {
	var lines []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		// ROCR also reads a per-node HSA_OVERRIDE_GFX_VERSION_<node>.
		if slices.Contains(envKeys, k) || strings.HasPrefix(k, "HSA_OVERRIDE_GFX_VERSION_") {
			lines = append(lines, kv+"\n")
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "")
}

// hostStats uses gopsutil for RAM (when /proc/meminfo was unreadable) and
// the free space where builds will go.
func hostStats(o CollectOptions, set func(string, []byte)) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		if vm, err := mem.VirtualMemory(); err == nil {
			set("meminfo.txt", fmt.Appendf(nil, "MemTotal: %d kB\n", vm.Total/1024))
		}
	}
	dir := o.DiskDir
	if dir == "" {
		dir, _ = os.UserHomeDir()
	}
	if dir == "" {
		return
	}
	if u, err := disk.Usage(dir); err == nil {
		set("df.txt", fmt.Appendf(nil, "Filesystem 1024-blocks Used Available Capacity Mounted on\n%s %d %d %d %.0f%% %s\n",
			u.Fstype, u.Total/1024, u.Used/1024, u.Free/1024, u.UsedPercent, dir))
	}
}

func manifestText(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, m[k])
	}
	return b.String()
}

// maxLiveFile bounds what the live collector keeps of one command's output
// and the size of a file it copies (sysfs and procfs attributes, /etc
// files: a larger one is not what it looks for, and is left out, as is a
// FIFO or a device; links are followed, as sysfs needs); the bundle reader
// applies its own per-file caps on reading.
const maxLiveFile = 8 << 20
