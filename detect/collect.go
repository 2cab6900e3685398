package detect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/mem"
)

// CollectOptions says where and how long to look.
type CollectOptions struct {
	Root    string        // filesystem root for sysfs/procfs/etc ("/" when empty); commands run only when it is "/"
	Timeout time.Duration // per command (2 s when zero)
	DiskDir string        // where builds will write, for disk-space ("$HOME" when empty)
	Version string        // haloforge version, recorded in collect.txt
}

// command is one external program whose output becomes a bundle file.
type command struct {
	file   string
	args   []string
	filter func([]byte) []byte // keeps what the analysis needs, nil keeps all
}

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

// commands are run concurrently, each bounded by the timeout. dmesg needs
// root on most distros (kernel.dmesg_restrict); it then degrades to a note.
var commands = []command{
	{"rocminfo.txt", []string{"rocminfo"}, nil},
	{"lspci.txt", []string{"lspci", "-nnk"}, nil},
	{"uname.txt", []string{"uname", "-r"}, nil},
	{"dmesg.txt", []string{"dmesg"}, filterDmesg},
	{"lsmod.txt", []string{"lsmod"}, nil},
	{"modinfo-amdgpu.txt", []string{"modinfo", "amdgpu"}, nil},
	{"amd-smi.txt", []string{"amd-smi", "static"}, nil},
	{"rocm-smi.txt", []string{"rocm-smi", "--showproductname", "--showmeminfo", "vram", "gtt"}, nil},
	{"vulkaninfo.txt", []string{"vulkaninfo", "--summary"}, nil},
	{"podman.txt", []string{"podman", "--version"}, nil},
	{"docker.txt", []string{"docker", "--version"}, nil},
	{"distrobox.txt", []string{"distrobox", "--version"}, nil},
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
	"sys/module/ttm/parameters/pages_limit",
	"sys/module/ttm/parameters/page_pool_size",
	"sys/module/amdttm/parameters/pages_limit",
	"sys/module/amdttm/parameters/page_pool_size",
	"sys/module/amdgpu/version",
	"sys/module/amdgpu/initstate",
	"sys/module/amdgpu/parameters/cwsr_enable",
}

// files are single files copied under another name.
var files = map[string]string{
	"proc/cmdline":   "cmdline.txt",
	"proc/meminfo":   "meminfo.txt",
	"etc/os-release": "os-release.txt",
}

// envKeys are the only environment variables collected: a bundle is meant
// to be shared, so nothing else from the environment goes in.
var envKeys = []string{"HSA_OVERRIDE_GFX_VERSION", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
	"HSA_ENABLE_SDMA", "PYTORCH_ROCM_ARCH", "ROCM_PATH", "GPU_TARGET", "TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL"}

// Collect gathers a bundle from the live machine: sysfs and procfs under
// Root, then the commands, all at once. It never fails because a command
// is absent, slow or denied: collect.txt records what happened to each.
func Collect(ctx context.Context, o CollectOptions) (*Bundle, error) {
	if o.Root == "" {
		o.Root = "/"
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	b := NewBundle()
	var mu sync.Mutex
	manifest := map[string]string{}
	record := func(name, status string) {
		mu.Lock()
		defer mu.Unlock()
		manifest[name] = status
	}
	set := func(name string, data []byte) {
		mu.Lock()
		defer mu.Unlock()
		_ = b.Set(name, data) // names are ours, always inside the bundle
	}
	var wg sync.WaitGroup
	if o.Root == "/" {
		for _, c := range commands {
			wg.Go(func() { runCommand(ctx, c, o.Timeout, set, record) })
		}
	}
	copyFiles(o.Root, set)
	set("dev.txt", []byte(devState(o.Root)))
	if g := groupsText(); g != "" {
		set("groups.txt", []byte(g))
	}
	set("env.txt", []byte(envText()))
	if o.Root == "/" {
		hostStats(o, set)
	}
	wg.Wait()
	manifest["collected-by"] = "haloforge " + o.Version
	set("collect.txt", []byte(manifestText(manifest)))
	return b, nil
}

func runCommand(ctx context.Context, c command, timeout time.Duration, set func(string, []byte), record func(string, string)) {
	name := c.args[0]
	path, err := exec.LookPath(name)
	if err != nil {
		record(name, "not found")
		return
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, path, c.args[1:]...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "NO_COLOR=1")
	cmd.WaitDelay = 100 * time.Millisecond
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	switch {
	case cctx.Err() != nil && errors.Is(cctx.Err(), context.DeadlineExceeded):
		record(name, fmt.Sprintf("timed out after %s", timeout))
	case err != nil:
		record(name, "exit: "+err.Error())
	default:
		record(name, "ok")
	}
	data := out.Bytes()
	if c.filter != nil {
		data = c.filter(data)
	}
	if len(data) > 0 {
		set(c.file, data)
	}
}

func copyFiles(root string, set func(string, []byte)) {
	for _, g := range sysGlobs {
		matches, _ := filepath.Glob(filepath.Join(root, g))
		for _, m := range matches {
			data, err := os.ReadFile(m)
			if err != nil || len(data) == 0 {
				continue
			}
			rel, err := filepath.Rel(root, m)
			if err == nil {
				set(filepath.ToSlash(rel), data)
			}
		}
	}
	for src, dst := range files {
		if data, err := os.ReadFile(filepath.Join(root, src)); err == nil {
			set(dst, data)
		}
	}
	// amdgpu_firmware_info lives in debugfs: readable by root only.
	fw, _ := filepath.Glob(filepath.Join(root, "sys/kernel/debug/dri/*/amdgpu_firmware_info"))
	for _, m := range fw {
		if data, err := os.ReadFile(m); err == nil {
			set("firmware.txt", data)
			break
		}
	}
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
