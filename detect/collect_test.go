package detect

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeTools puts real shell scripts named like the collector's commands on
// an otherwise empty PATH, so Collect runs them instead of the machine's.
func fakeTools(t *testing.T, scripts map[string]string) {
	t.Helper()
	bin := t.TempDir()
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
}

// TestCollectSlowCommand: on a busy machine doctor
// dropped its distrobox check. A distrobox that hangs (a real script that
// sleeps, with a child of its own) must yield a distrobox check that says it
// could not be run in time, and leave no process behind.
func TestCollectSlowCommand(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	fakeTools(t, map[string]string{
		"distrobox": "echo $$ >" + pids + "\n/bin/sleep 60 &\necho $! >>" + pids + "\nwait\n",
		"podman":    "echo 'Error: cannot read /etc/containers/storage.conf' >&2\nexit 3\n",
		"rocminfo":  "echo 'ROCk module is NOT loaded, possibly no GPU devices'\nexit 1\n",
	})
	start := time.Now()
	b, err := Collect(t.Context(), CollectOptions{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("Collect waited %s for a command with a 1 s budget", waited)
	}
	m, _ := b.Get("collect.txt")
	if !strings.Contains(m, "distrobox: timed out after 1s") || !strings.Contains(m, "podman: exit: exit status 3") ||
		!strings.Contains(m, "rocminfo: done, exit status 1") || !strings.Contains(m, "docker: not found") {
		t.Errorf("collect.txt:\n%s", m)
	}
	r := Analyse(b)
	c := mustCheck(t, r, "distrobox", StatusWarn)
	if c.Summary != "could not run distrobox --version in 1s, so this was not checked" || c.Fix == "" {
		t.Errorf("distrobox check %+v", c)
	}
	ce := mustCheck(t, r, "container-engine", StatusWarn)
	if !strings.HasPrefix(ce.Summary, "podman --version failed (exit status 3)") {
		t.Errorf("container-engine %+v", ce)
	}
	// rocminfo answered (no GPU is an answer): no note for it.
	notes := strings.Join(r.Notes, "\n")
	if !strings.Contains(notes, "could not run distrobox --version in 1s") || strings.Contains(notes, "rocminfo") {
		t.Errorf("notes:\n%s", notes)
	}
	var text strings.Builder
	if err := r.WriteText(&text, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "[!] distrobox: could not run distrobox --version in 1s") {
		t.Errorf("doctor's summary hides the distrobox check:\n%s", text.String())
	}
	// The script and its sleeping child were killed with their group.
	raw, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(raw)) {
		pid, _ := strconv.Atoi(f)
		// SIGKILL is delivered when the process next runs: give a loaded
		// machine a moment before calling it a stray.
		for end := time.Now().Add(5 * time.Second); running(pid) && time.Now().Before(end); {
			time.Sleep(20 * time.Millisecond)
		}
		if running(pid) {
			t.Errorf("process %d of the timed-out command is still running", pid)
		}
	}
}

// running reports whether a process exists and is not a zombie (a killed
// process whose parent died waits as a zombie for PID 1 to reap it).
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(st), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// TestCollectGrandchildKeepsOutput: a command that exits while a child it
// started keeps running (and keeps the output open) still gives its output
// at once; with a pipe, Wait waited for the child and the output was lost.
func TestCollectGrandchildKeepsOutput(t *testing.T) {
	fakeTools(t, map[string]string{
		"distrobox": "/bin/sleep 30 &\necho 'distrobox: 1.8.1.2'\n",
	})
	start := time.Now()
	b, err := Collect(t.Context(), CollectOptions{Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > 15*time.Second {
		t.Errorf("Collect waited %s for the command's child", waited)
	}
	mustCheck(t, Analyse(b), "distrobox", StatusOK)
}

// sysfsRoot builds a fake root whose /sys/bus/pci/devices is laid out as the
// kernel lays it out: each entry a symlink to the device's directory under
// /sys/devices, with attribute files as the kernel writes them and a driver
// link into /sys/bus/pci/drivers.
type sysfsRoot struct {
	t    *testing.T
	root string
}

func newSysfsRoot(t *testing.T) *sysfsRoot { return &sysfsRoot{t: t, root: t.TempDir()} }

func (s *sysfsRoot) write(p, content string) {
	s.t.Helper()
	full := filepath.Join(s.root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// pciDevice adds one device: parent is its path under /sys/devices, attrs
// its attribute files (class, vendor, …), driver the bound driver or "".
func (s *sysfsRoot) pciDevice(parent, slot, driver string, attrs map[string]string) {
	s.t.Helper()
	dev := filepath.Join("sys/devices", parent, slot)
	for name, v := range attrs {
		s.write(filepath.Join(dev, name), v)
	}
	links := filepath.Join(s.root, "sys/bus/pci/devices")
	if err := os.MkdirAll(links, 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("../../..", "devices", parent, slot), filepath.Join(links, slot)); err != nil {
		s.t.Fatal(err)
	}
	if driver != "" {
		drv := filepath.Join(s.root, "sys/bus/pci/drivers", driver)
		if err := os.MkdirAll(drv, 0o755); err != nil {
			s.t.Fatal(err)
		}
		up := strings.Repeat("../", strings.Count(filepath.Join(dev, "x"), "/"))
		if err := os.Symlink(filepath.Join(up, "bus/pci/drivers", driver), filepath.Join(s.root, dev, "driver")); err != nil {
			s.t.Fatal(err)
		}
	}
}

// TestCollectPCISysfsNvidiaOnly: a machine with one NVIDIA H100, no
// AMD GPU, no lspci. The live collector copies the GPU's PCI attributes
// from sysfs (and nothing of the other devices), and doctor names the GPU
// and says plainly what haloforge is for, instead of BIOS advice.
func TestCollectPCISysfsNvidiaOnly(t *testing.T) {
	s := newSysfsRoot(t)
	h100 := map[string]string{"class": "0x030200\n", "vendor": "0x10de\n", "device": "0x2330\n",
		"subsystem_vendor": "0x10de\n", "subsystem_device": "0x16c1\n",
		"uevent": "DRIVER=nvidia\nPCI_CLASS=30200\nPCI_ID=10DE:2330\nPCI_SUBSYS_ID=10DE:16C1\nPCI_SLOT_NAME=0000:18:00.0\nMODALIAS=pci:v000010DEd00002330sv000010DEsd000016C1bc03sc02i00\n"}
	s.pciDevice("pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0", "0000:18:00.0", "nvidia", h100)
	// A NIC: not a GPU, must stay out of a bundle meant to be shared.
	s.pciDevice("pci0000:00", "0000:00:03.0", "virtio-pci", map[string]string{"class": "0x020000\n", "vendor": "0x1af4\n", "device": "0x1041\n",
		"uevent": "DRIVER=virtio-pci\nPCI_CLASS=20000\nPCI_ID=1AF4:1041\nPCI_SUBSYS_ID=1AF4:1100\nPCI_SLOT_NAME=0000:00:03.0\n"})
	b, err := Collect(t.Context(), CollectOptions{Root: s.root})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"class", "vendor", "device", "subsystem_vendor", "subsystem_device", "uevent"} {
		got, ok := b.Get("sys/bus/pci/devices/0000:18:00.0/" + f)
		if !ok || got != h100[f] {
			t.Errorf("bundle %s = %q (present %v), want the sysfs file %q", f, got, ok, h100[f])
		}
	}
	if n := b.Glob("sys/bus/pci/devices/0000:00:03.0/*"); len(n) > 0 {
		t.Errorf("a network card was copied: %v", n)
	}
	r := Analyse(b)
	if len(r.GPUs) != 0 || len(r.OtherGPUs) != 1 {
		t.Fatalf("gpus %s, other %s", jsonOf(r.GPUs), jsonOf(r.OtherGPUs))
	}
	o := r.OtherGPUs[0]
	if o.Vendor != "nvidia" || *o.PCIID != "10de:2330" || *o.Name != "NVIDIA H100 SXM5 80GB" || *o.PCISlot != "18:00.0" || o.Source != "pci-sysfs" {
		t.Errorf("other GPU %s", jsonOf(o))
	}
	c := mustCheck(t, r, "gpu", StatusFail)
	if c.Summary != "no AMD GPU found; this machine has NVIDIA H100 SXM5 80GB (10de:2330)" {
		t.Errorf("summary %q", c.Summary)
	}
	first, _, _ := strings.Cut(c.Fix, "\n")
	if !strings.Contains(first, "haloforge sets up AMD GPUs") || !strings.Contains(c.Fix, "haloforge demo") || strings.Contains(first, "BIOS") {
		t.Errorf("fix must say what haloforge is for and offer the demo before any BIOS advice:\n%s", c.Fix)
	}
	// The walk of PCI sysfs saw both devices and no NPU: that is an answer.
	if n := mustCheck(t, r, "npu", StatusSkip); n.Summary != "no XDNA NPU on this machine" {
		t.Errorf("npu %q", n.Summary)
	}
	// With no AMD GPU, the checks about one say so instead of advising
	// `modprobe amdgpu` for /dev/kfd or passing ROCm settings as fine;
	// the host-general ones still run.
	for _, id := range []CheckID{CheckKFDAccess, CheckHSAOverride, CheckGTTSizeDeprecated, CheckKernelVersion, CheckRenderGroups} {
		if k := mustCheck(t, r, id, StatusSkip); k.Summary != SkipNoAMD || k.Fix != "" {
			t.Errorf("%s: %q, fix %q", id, k.Summary, k.Fix)
		}
	}
	for _, c := range r.Checks {
		if strings.Contains(c.Fix, "modprobe amdgpu") {
			t.Errorf("%s advises loading amdgpu on a machine without an AMD GPU: %q", c.ID, c.Fix)
		}
	}
	if c, _ := r.Check(CheckContainerEngine); c.Summary == SkipNoAMD {
		t.Errorf("container-engine skipped as if it were about the GPU")
	}
}

// TestPCISysfsNames: a device the table lacks is named by its vendor and IDs.
func TestPCISysfsNames(t *testing.T) {
	tests := []struct {
		vendor, device, class, want string
	}{
		{"0x10de", "0x2335", "0x030200", "no AMD GPU found; this machine has NVIDIA GPU (10de:2335)"},
		{"0x8086", "0x46a6", "0x030000", "no AMD GPU found; this machine has Intel Iris Xe Graphics (Alder Lake-P) (8086:46a6)"},
		{"0x1a03", "0x2000", "0x030000", "no AMD GPU found; this machine has ASPEED Graphics Family (server BMC) (1a03:2000)"},
		{"0x1234", "0x1111", "0x030000", "no AMD GPU found; this machine has display controller (1234:1111)"},
	}
	for _, tc := range tests {
		dir := "sys/bus/pci/devices/0000:01:00.0/"
		r := Analyse(bundleOf(t, map[string]string{dir + "class": tc.class + "\n", dir + "vendor": tc.vendor + "\n", dir + "device": tc.device + "\n"}))
		if c := mustCheck(t, r, "gpu", StatusFail); c.Summary != tc.want {
			t.Errorf("%s:%s: %q, want %q", tc.vendor, tc.device, c.Summary, tc.want)
		}
	}
}

// TestCollectPCISysfsStrixHalo: without lspci or ROCm tools, sysfs alone
// finds the Strix Halo GPU (by its PCI ID) and the XDNA NPU.
func TestCollectPCISysfsStrixHalo(t *testing.T) {
	s := newSysfsRoot(t)
	// The IDs of gfx1151-lspci-nnk-2 (host probe): GPU c5:00.0, NPU c6:00.1.
	s.pciDevice("pci0000:00/0000:00:08.1", "0000:c5:00.0", "amdgpu", map[string]string{"class": "0x038000\n", "vendor": "0x1002\n", "device": "0x1586\n",
		"subsystem_vendor": "0x2014\n", "subsystem_device": "0x801d\n", "revision": "0xc1\n",
		"uevent": "DRIVER=amdgpu\nPCI_CLASS=38000\nPCI_ID=1002:1586\nPCI_SUBSYS_ID=2014:801D\nPCI_SLOT_NAME=0000:c5:00.0\n"})
	s.pciDevice("pci0000:00/0000:00:08.2", "0000:c6:00.1", "amdxdna", map[string]string{"class": "0x118000\n", "vendor": "0x1022\n", "device": "0x17f0\n",
		"subsystem_vendor": "0x1022\n", "subsystem_device": "0x17f0\n", "revision": "0x11\n",
		"uevent": "DRIVER=amdxdna\nPCI_CLASS=118000\nPCI_ID=1022:17F0\nPCI_SUBSYS_ID=1022:17F0\nPCI_SLOT_NAME=0000:c6:00.1\n"})
	b, err := Collect(t.Context(), CollectOptions{Root: s.root})
	if err != nil {
		t.Fatal(err)
	}
	r := Analyse(b)
	g := r.Primary()
	if g == nil || *g.GFX != "gfx1151" || *g.PCIID != "1002:1586" || *g.PCISlot != "c5:00.0" || !*g.Integrated {
		t.Fatalf("GPU %s", jsonOf(r.GPUs))
	}
	mustCheck(t, r, "gpu", StatusOK)
	if !b.Has("sys/bus/pci/devices/0000:c6:00.1/uevent") {
		t.Errorf("the NPU's attributes were not copied: %v", b.Names())
	}
	if c := mustCheck(t, r, "npu", StatusOK); !strings.HasPrefix(c.Summary, "XDNA NPU 1022:17f0 at c6:00.1 (amdxdna bound)") {
		t.Errorf("npu %q, npu facts %s", c.Summary, jsonOf(r.NPU))
	}
}

// TestRunCommandLeavesNoTempFile: the file a command writes its output to is
// unlinked before the command starts, so haloforge killed mid-collection
// (SIGTERM, kill -9) leaves no copy of dmesg or anything else in $TMPDIR;
// the command, listing $TMPDIR, must not see it.
func TestRunCommandLeavesNoTempFile(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	res := runCommand(t.Context(), command{args: []string{"sh", "-c", `echo listing; ls -A "$TMPDIR"`}}, 10*time.Second)
	if res.status != "ok" {
		t.Fatalf("status %q", res.status)
	}
	if got := string(res.out); !strings.HasPrefix(got, "listing\n") || strings.Contains(got, "haloforge-collect") {
		t.Errorf("output %q: the command saw its own output file in $TMPDIR", got)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left in $TMPDIR: %v", ents)
	}
}
