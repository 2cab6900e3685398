package detect

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/haloforge/haloforge/internal/text"
)

// facts is everything the parsers read out of a bundle, before merging.
type facts struct {
	b        *Bundle
	used     map[string]bool
	kfd      []KFDNode
	drm      []drmCard
	rocminfo Rocminfo
	amdsmi   SMI
	rocmsmi  SMI
	lspci    []PCIDevice
	pci      []PCISysDevice // /sys/bus/pci/devices copies
	vulkan   []VulkanDevice
	dmesg    Dmesg
	cmdline  *Cmdline
	lsmod    map[string]bool
	modinfo  Modinfo
	env      map[string]string
	manifest map[string]string
}

// drmCard is /sys/class/drm/cardN/device as copied into the bundle.
type drmCard struct {
	name                 string
	vram, gtt            *int64
	vendor, device, slot string
	boardInfo            bool
}

// read returns a bundle file and records that the analysis used it.
func (f *facts) read(name string) (string, bool) {
	s, ok := f.b.Get(name)
	if ok {
		f.used[name] = true
	}
	return s, ok
}

// Analyse turns a bundle into a report. It is pure: the same bundle gives
// the same report, whoever runs it, wherever.
func Analyse(b *Bundle) *Report {
	if b == nil {
		b = NewBundle()
	}
	f := gather(b)
	r := &Report{GPUs: []GPU{}, OtherGPUs: []GPU{}}
	mergeGPUs(f, r)
	kernelFacts(f, r)
	hostFacts(f, r)
	r.Notes = append(r.Notes, b.Notes()...)
	npuFacts(f, r)
	r.Checks = runChecks(f, r)
	r.Sources = make([]string, 0, len(f.used))
	for k := range f.used {
		r.Sources = append(r.Sources, k)
	}
	slices.Sort(r.Sources)
	return r
}

func gather(b *Bundle) *facts {
	f := &facts{b: b, used: map[string]bool{}}
	f.kfd = readKFD(f)
	f.drm = readDRM(f)
	f.pci = readPCISys(f)
	if s, ok := f.read("rocminfo.txt"); ok {
		f.rocminfo = ParseRocminfo(s)
	}
	if s, ok := f.read("amd-smi.txt"); ok {
		f.amdsmi = ParseAMDSMI(s)
	}
	if s, ok := f.read("rocm-smi.txt"); ok {
		f.rocmsmi = ParseROCmSMI(s)
	}
	if s, ok := f.read("lspci.txt"); ok {
		f.lspci = ParseLspci(s)
	}
	if s, ok := f.read("vulkaninfo.txt"); ok {
		f.vulkan = ParseVulkaninfo(s)
	}
	if s, ok := f.read("dmesg.txt"); ok {
		f.dmesg = ParseDmesg(s)
	}
	if s, ok := f.read("cmdline.txt"); ok {
		c := ParseCmdline(s)
		f.cmdline = &c
	} else if f.dmesg.Cmdline != "" {
		c := ParseCmdline(f.dmesg.Cmdline)
		f.cmdline = &c
	}
	if s, ok := f.read("lsmod.txt"); ok {
		f.lsmod = ParseLsmod(s)
	}
	if s, ok := f.read("modinfo-amdgpu.txt"); ok {
		f.modinfo = ParseModinfo(s)
	}
	if s, ok := f.read("env.txt"); ok {
		f.env = ParseEnv(s)
	}
	if s, ok := f.read("collect.txt"); ok {
		f.manifest = ParseManifest(s)
	}
	return f
}

func readKFD(f *facts) []KFDNode {
	var nodes []KFDNode
	for _, name := range f.b.Glob("sys/class/kfd/kfd/topology/nodes/*/properties") {
		s, _ := f.read(name)
		id, _ := strconv.Atoi(path.Base(path.Dir(name)))
		if p := ParseKFDProperties(s); len(p) > 0 {
			nodes = append(nodes, KFDNode{ID: id, Props: p})
		}
	}
	slices.SortFunc(nodes, func(a, b KFDNode) int { return a.ID - b.ID })
	if s, ok := f.read("kfd-topology.txt"); ok && len(nodes) == 0 {
		nodes = ParseKFDNodes(s)
	}
	return nodes
}

func readDRM(f *facts) []drmCard {
	var cards []drmCard
	seen := map[string]bool{}
	for _, name := range f.b.Glob("sys/class/drm/card*/device/*") {
		card := strings.Split(name, "/")[3]
		if seen[card] || strings.Contains(card, "-") {
			continue
		}
		seen[card] = true
		cards = append(cards, readDRMCard(f, "sys/class/drm/"+card+"/device/", card))
	}
	return cards
}

func readDRMCard(f *facts, dir, name string) drmCard {
	c := drmCard{name: name}
	num := func(file string) *int64 {
		s, ok := f.read(dir + file)
		if !ok {
			return nil
		}
		if v, ok := leadingInt(sysValue(s, file)); ok {
			return &v
		}
		return nil
	}
	c.vram, c.gtt = num("mem_info_vram_total"), num("mem_info_gtt_total")
	if s, ok := f.read(dir + "vendor"); ok {
		c.vendor = strings.TrimPrefix(sysValue(s, "vendor"), "0x")
	}
	if s, ok := f.read(dir + "device"); ok {
		c.device = strings.TrimPrefix(sysValue(s, "device"), "0x")
	}
	if s, ok := f.read(dir + "uevent"); ok {
		if v, ok := ParseEnv(s)["PCI_SLOT_NAME"]; ok {
			if m := bdfRe.FindStringSubmatch(v); m != nil {
				c.slot = strings.ToLower(m[1])
			}
		}
	}
	_, c.boardInfo = f.b.Get(dir + "board_info")
	return c
}

// sysValue is a sysfs file's value: the file itself, or, when someone pasted
// a transcript of several `cat`s, the first output line after the command
// that read this file. Author notes after " #" are dropped.
func sysValue(s, file string) string {
	afterCmd, first := "", ""
	want := false
	for _, raw := range strings.Split(s, "\n") {
		t := strings.TrimSpace(cleanLine(raw))
		if m := promptRe.FindStringSubmatch(t); m != nil && looksLikeCommand(m[1]) {
			want = strings.HasSuffix(strings.TrimSpace(m[1]), "/"+file) || strings.HasSuffix(strings.TrimSpace(m[1]), " "+file)
			continue
		}
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		v := stripComment(t)
		if want && afterCmd == "" {
			afterCmd = v
		}
		if first == "" {
			first = v
		}
	}
	if afterCmd != "" {
		return afterCmd
	}
	return first
}

// lastLine is the last non-empty output line of a pasted `cat`.
func lastLine(s string) string {
	lines := parsePasted(s).lines
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			return strings.TrimSpace(lines[i])
		}
	}
	return ""
}

func kernelFacts(f *facts, r *Report) {
	k := &r.Kernel
	if s, ok := f.read("uname.txt"); ok {
		if rel := ParseUname(s); rel != "" {
			k.Release = &rel
		}
	}
	if k.Release == nil && f.dmesg.KernelRelease != "" {
		k.Release = ptr(f.dmesg.KernelRelease)
	}
	if k.Release == nil && f.cmdline != nil {
		if rel := f.cmdline.BootKernel(); rel != "" {
			k.Release = &rel
		}
	}
	if f.cmdline != nil {
		k.Cmdline = f.cmdline.Relevant()
	}
	k.TTMModule = ttmModule(f)
	k.AMDGPUDKMS, r.Driver.Version = dkms(f)
	for _, mod := range []string{"amdttm", "ttm"} {
		if s, ok := f.read("sys/module/" + mod + "/parameters/pages_limit"); ok {
			if v, ok := leadingInt(sysValue(s, "pages_limit")); ok {
				k.TTMPagesLimit = &v
				break
			}
		}
	}
	r.Driver.Loaded = driverLoaded(f)
	watchdogFacts(f, r)
	if s, ok := f.read("firmware.txt"); ok {
		if mes := ParseFirmwareMES(s); mes != "" {
			r.Firmware.MES = &mes
		}
	}
	if r.Firmware.MES == nil {
		// amdgpu's sysfs copy of the same number, readable without root.
		for _, name := range f.b.Glob("sys/class/drm/card*/device/fw_version/mes_fw_version") {
			s, _ := f.read(name)
			if v := sysHex(sysValue(s, "mes_fw_version"), 8); v != "" && strings.Trim(v, "0") != "" {
				r.Firmware.MES = ptr("0x" + v)
				break
			}
		}
	}
	if s, ok := f.read("firmware-package.txt"); ok {
		r.Firmware.Package = amdgpuFirmwarePackage(ParseFirmwarePackages(s))
	}
	if s, ok := f.read("firmware-overrides.txt"); ok {
		if files, looked := ParseFirmwareOverrides(s); looked {
			r.Firmware.Overrides = files
		}
	}
}

// ttmModule is amdttm when amdgpu-dkms brings its own TTM, ttm otherwise.
func ttmModule(f *facts) *string {
	switch {
	case f.lsmod["amdttm"] || f.b.Has("sys/module/amdttm/parameters/pages_limit"):
		return ptr("amdttm")
	case f.lsmod["ttm"] || f.b.Has("sys/module/ttm/parameters/pages_limit"):
		return ptr("ttm")
	}
	return nil
}

// dkms tells whether amdgpu-dkms is in use, and its version when known.
func dkms(f *facts) (*bool, *string) {
	version := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	if s, ok := f.read("sys/module/amdgpu/version"); ok {
		return ptr(true), version(lastLine(s))
	}
	if d := f.modinfo.DKMS(); d != nil {
		if *d {
			return d, version(f.modinfo.Version)
		}
		return d, nil
	}
	switch {
	case f.rocminfo.ModuleVersion != "":
		return ptr(true), version(f.rocminfo.ModuleVersion)
	case f.lsmod["amdttm"]:
		return ptr(true), nil
	case f.amdsmi.DriverVersion != "":
		return ptr(true), version(f.amdsmi.DriverVersion)
	case f.dmesg.DriverVersion != "":
		return ptr(true), version(f.dmesg.DriverVersion)
	case f.rocminfo.ModuleLoaded != nil && *f.rocminfo.ModuleLoaded:
		// rocminfo prints the version exactly when /sys/module/amdgpu/version exists.
		return ptr(false), nil
	}
	return nil, nil
}

func driverLoaded(f *facts) *bool {
	switch {
	case f.lsmod != nil:
		return ptr(f.lsmod["amdgpu"])
	case f.rocminfo.ModuleLoaded != nil:
		return f.rocminfo.ModuleLoaded
	case f.b.Has("sys/module/amdgpu/initstate") || len(f.kfd) > 0 || f.dmesg.PCISlot != "":
		return ptr(true)
	}
	return nil
}

func hostFacts(f *facts, r *Report) {
	h := &r.Host
	if s, ok := f.read("meminfo.txt"); ok {
		r.Memory.TotalBytes = ParseMeminfo(s)
	}
	if s, ok := f.read("free.txt"); ok && r.Memory.TotalBytes == nil {
		r.Memory.TotalBytes = ParseFree(s)
	}
	if s, ok := f.read("os-release.txt"); ok {
		osr := ParseOSRelease(s)
		if v := osr["PRETTY_NAME"]; v != "" {
			h.OS = &v
		}
		if v := osr["ID"]; v != "" {
			id := v
			if like := osr["ID_LIKE"]; like != "" {
				id += " " + like
			}
			h.OSID = &id
		}
	}
	if s, ok := f.read("groups.txt"); ok {
		u, g := ParseGroupsUser(s)
		h.Groups = g
		if u != "" {
			h.User = &u
		}
	}
	if v, ok := f.env["HSA_OVERRIDE_GFX_VERSION"]; ok && v != "" {
		h.HSAOverride = &v
	}
	h.Podman, h.Docker, h.Distrobox = toolVersion(f, "podman"), toolVersion(f, "docker"), toolVersion(f, "distrobox")
	if s, ok := f.read("df.txt"); ok {
		if avail, mount := ParseDf(s); avail != nil {
			h.DiskFree, h.DiskPath = avail, &mount
		}
	}
	if s, ok := f.read("dev.txt"); ok {
		if st := ParseDev(s); st != "" {
			h.KFD = &st
		}
	}
	if f.dmesg.Restricted {
		r.note("dmesg needs root on this machine (kernel.dmesg_restrict): the driver's boot lines were not read; sudo haloforge doctor --collect DIR reads them")
	}
	if v := f.manifest["collected-by"]; v != "" {
		h.CollectedBy = &v
	}
	for _, c := range commands {
		if p := commandStatusProblem(c.args[0], f.manifest[c.args[0]]); p != "" {
			r.note("%s: what it reports is missing from this report", p)
		}
	}
}

func toolVersion(f *facts, tool string) *string {
	if s, ok := f.read(tool + ".txt"); ok {
		if v := ParseToolVersion(s); v != "" {
			return &v
		}
	}
	return nil
}

// commandProblem says which of the collector's commands did not give an
// answer, as one line ("could not run distrobox --version in 5 s"), or ""
// when all did, or the bundle was not collected by haloforge.
func (f *facts) commandProblem(tools ...string) string {
	var out []string
	for _, t := range tools {
		if p := commandStatusProblem(t, f.manifest[t]); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}

// commandStatusProblem turns one collect.txt status into a sentence; ""
// when the command answered (or was not there: that is an answer too).
func commandStatusProblem(tool, status string) string {
	line := tool
	if c, ok := commandFor(tool); ok {
		line = strings.Join(c.args, " ")
	}
	switch {
	case strings.HasPrefix(status, "timed out after "):
		d, err := time.ParseDuration(strings.TrimPrefix(status, "timed out after "))
		if err != nil {
			return "could not run " + line + " in time"
		}
		return "could not run " + line + " in " + text.Seconds(d)
	case strings.HasPrefix(status, "exit: "):
		return line + " failed (" + strings.TrimPrefix(status, "exit: ") + ")"
	case strings.HasPrefix(status, "not finished") || strings.HasPrefix(status, "not run"):
		return line + " did not finish (doctor was interrupted)"
	}
	return ""
}

// toolMissing is true only when the collector looked for the tool and it
// was not there; a pasted bundle without the file says nothing.
func (f *facts) toolMissing(tool string) bool {
	return strings.HasPrefix(f.manifest[tool], "not found")
}

// note records a disagreement between sources for the report's reader.
func (r *Report) note(format string, a ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, a...))
}
