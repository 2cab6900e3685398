package detect

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seeds adds every bundle file with this name as a fuzz seed, plus a few
// hand-made pastes, so each target starts from real output.
func seeds(f *testing.F, name string, extra ...string) {
	files, _ := filepath.Glob(filepath.Join("testdata", "bundles", "*", name))
	hold, _ := filepath.Glob(filepath.Join("testdata", "holdout", "*", name))
	for _, p := range append(files, hold...) {
		rel, _ := filepath.Rel(filepath.Join("testdata", "bundles"), p)
		if strings.HasPrefix(rel, "..") {
			rel, _ = filepath.Rel(filepath.Join("testdata", "holdout"), p)
			f.Add(readHoldout(f, rel))
			continue
		}
		f.Add(fixture(f, rel))
	}
	for _, e := range extra {
		f.Add(e)
	}
}

func readHoldout(f *testing.F, rel string) string {
	return fixtureAt(f, filepath.Join("testdata", "holdout", rel))
}

func FuzzRocminfo(f *testing.F) {
	seeds(f, "rocminfo.txt", "Agent 1\n  Name: gfx1151\n  Device Type: GPU\n  Chip ID: 5510(0x1586)\n", "  Name: gfx1100\n  Name: gfx1030\n")
	f.Fuzz(func(t *testing.T, s string) {
		r := ParseRocminfo(s)
		for _, g := range r.GPUs() {
			if g.DeviceType != "GPU" && g.DeviceType != "" {
				t.Fatalf("GPUs() returned a %q agent", g.DeviceType)
			}
		}
	})
}

func FuzzLspci(f *testing.F) {
	seeds(f, "lspci.txt", "00:02.0 VGA compatible controller [0300]: Intel Corporation Device [8086:46a6] (rev 0c)\n\tKernel driver in use: i915\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, d := range ParseLspci(s) {
			if len(d.Slot) != 7 || (d.Vendor != "" && len(d.Vendor) != 4) {
				t.Fatalf("bad device %+v", d)
			}
		}
	})
}

func FuzzDmesg(f *testing.F) {
	seeds(f, "dmesg.txt", "[    1.0] amdgpu 0000:c5:00.0:  99999999999999999999M of GTT memory ready.\n")
	f.Fuzz(func(t *testing.T, s string) {
		d := ParseDmesg(s)
		if d.GTTBytes != nil && *d.GTTBytes < 0 || d.VRAMBytes != nil && *d.VRAMBytes < 0 {
			t.Fatalf("negative memory %+v", d)
		}
	})
}

func FuzzCmdline(f *testing.F) {
	seeds(f, "cmdline.txt", `GRUB_CMDLINE_LINUX_DEFAULT="quiet splash amd_iommu=off"`, "a=\"b c\" d", `"unterminated`)
	f.Fuzz(func(t *testing.T, s string) {
		c := ParseCmdline(s)
		for k := range c.Relevant() {
			if !relevantParam(k) {
				t.Fatalf("irrelevant %q in Relevant()", k)
			}
		}
		for _, p := range c.Params {
			if p.Key == "" && p.Value == "" {
				t.Fatalf("empty parameter from %q", s)
			}
		}
	})
}

func FuzzKFDProperties(f *testing.F) {
	seeds(f, "kfd-topology.txt", "gfx_target_version 110501\nsimd_count 80\nsimd_per_cu 2\nvendor_id 4098\ndevice_id 5510\n")
	f.Add(fixture(f, "gfx1151-kfd-partial/sys/class/kfd/kfd/topology/nodes/1/properties"))
	f.Fuzz(func(t *testing.T, s string) {
		for _, n := range ParseKFDNodes(s) {
			if g, ok := GFXFromTarget(n.Props["gfx_target_version"]); ok && !gfxNameRe.MatchString(g) && !strings.HasPrefix(g, "gfx") {
				t.Fatalf("bad gfx %q", g)
			}
		}
		_ = ParseKFDProperties(s)
	})
}

func FuzzGFXFromTarget(f *testing.F) {
	for _, v := range []int64{110501, 90010, 80003, 0, 999999, -5} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v int64) {
		g, ok := GFXFromTarget(v)
		if ok && (v <= 0 || !strings.HasPrefix(g, "gfx")) {
			t.Fatalf("GFXFromTarget(%d) = %q", v, g)
		}
	})
}

func FuzzSMI(f *testing.F) {
	seeds(f, "amd-smi.txt")
	seeds(f, "rocm-smi.txt", "GPU[0]\t\t: GTT Total Memory (B): 67108864000\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, smi := range []SMI{ParseAMDSMI(s), ParseROCmSMI(s)} {
			for _, g := range smi.GPUs {
				if g.GFX != "" && !gfxNameRe.MatchString(g.GFX) {
					t.Fatalf("bad gfx %q", g.GFX)
				}
			}
		}
	})
}

func FuzzVulkaninfo(f *testing.F) {
	seeds(f, "vulkaninfo.txt", "GPU id = 0 (AMD Radeon Graphics (RADV GFX1151))\n", "GPU0:\n\tdeviceName = x (RADV STRIX_HALO)\n\tdeviceType = PHYSICAL_DEVICE_TYPE_CPU\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, d := range ParseVulkaninfo(s) {
			if d.GFX != "" && !strings.HasPrefix(d.GFX, "gfx") {
				t.Fatalf("bad gfx %q", d.GFX)
			}
		}
	})
}

// FuzzPCISysfs feeds one text as every attribute of a PCI device: IDs come
// out as fixed-width lower-case hex or not at all.
func FuzzPCISysfs(f *testing.F) {
	seeds(f, "sys/bus/pci/devices/0000:18:00.0/uevent", "$ cat /sys/bus/pci/devices/0000:c5:00.0/class\n0x038000\n", "0x", "PCI_ID=10DE:\nPCI_CLASS=3020000000\n")
	f.Fuzz(func(t *testing.T, s string) {
		files := map[string]string{}
		for _, name := range pciFiles {
			files[name] = s
		}
		d := ParsePCISysDevice("0000:18:00.0", files)
		for _, v := range []struct {
			got   string
			width int
		}{{d.Class, 6}, {d.Vendor, 4}, {d.Device, 4}, {d.SubVendor, 4}, {d.SubDevice, 4}, {d.Revision, 2}} {
			if v.got != "" && (len(v.got) != v.width || strings.ToLower(v.got) != v.got || strings.Trim(v.got, "0123456789abcdef") != "") {
				t.Fatalf("bad hex %q in %+v", v.got, d)
			}
		}
		_ = pciName(d.Vendor, d.Device)
	})
}

// FuzzFirmwarePackages: any text gives known firmware packages whose
// release, when set, is a real YYYYMMDD date at the start of the version.
func FuzzFirmwarePackages(f *testing.F) {
	seeds(f, "firmware-package.txt", "ii  firmware-amd-graphics 1:20230210-5 all x\n", "amd-gpu-firmware.noarch 20251111-1.fc43 @updates\n",
		"/nix/store/q0v3mxbzlqz8rk3d1cx8f9yjvn1y0dpa-linux-firmware-20260810-zstd/lib\n", "linux-firmware-20251399-1.fc43.noarch\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range ParseFirmwarePackages(s) {
			if !firmwarePackageName(p.Name) || p.Version == "" {
				t.Fatalf("bad package %+v", p)
			}
			if p.Release != "" && (len(p.Release) != 8 || !strings.Contains(p.Version, p.Release)) {
				t.Fatalf("release %q not from version %q", p.Release, p.Version)
			}
		}
		_ = amdgpuFirmwarePackage(ParseFirmwarePackages(s))
	})
}

// FuzzLockupTimeout: amdgpu.lockup_timeout as the kernel reads it; a value
// accepted as set is a positive number of milliseconds or -1 (disabled).
func FuzzLockupTimeout(f *testing.F) {
	for _, s := range []string{"", "0", "20000", "-1", "0x4e20", "10000,60000,10000,10000", ",", "-0", "99999999999999999999", "010"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, set, ok := parseLockupTimeout(s)
		if set && (!ok || (ms <= 0 && ms != -1)) {
			t.Fatalf("parseLockupTimeout(%q) = %d %v %v", s, ms, set, ok)
		}
		if !ok && set {
			t.Fatalf("rejected yet set: %q", s)
		}
		// Each queue's timeout, on either side of Linux 6.19: a number of
		// milliseconds or -1, and a value the kernel takes gives the first
		// queue what parseLockupTimeout reads.
		for _, old := range []bool{true, false} {
			q, qok := queueTimeouts(s, old)
			if qok != ok {
				t.Fatalf("queueTimeouts(%q) ok %v, parse ok %v", s, qok, ok)
			}
			for _, v := range q {
				if qok && v != -1 && v <= 0 {
					t.Fatalf("queueTimeouts(%q, %v) = %v", s, old, q)
				}
			}
			if qok && set && q[queueGFX] != ms {
				t.Fatalf("queueTimeouts(%q)[GFX] = %d, parse %d", s, q[queueGFX], ms)
			}
		}
	})
}

// FuzzFirmwareOverrides: any listing gives only paths under updates/ that
// name an amdgpu file with safe characters (they go into a printed rm).
func FuzzFirmwareOverrides(f *testing.F) {
	for _, s := range []string{"looked: /lib/firmware/updates/amdgpu\nupdates/amdgpu/gc_11_5_1_mes_2.bin\n",
		"/lib/firmware/updates/6.18.9/amdgpu/x.bin.zst\n", "updates/amdgpu/a b\n", "updates/amdgpu/../../etc/passwd\n", "updates/../amdgpu/gc_11_5_1_mes_2.bin\n", "updates/amdgpu/..\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		files, _ := ParseFirmwareOverrides(s)
		if len(files) > maxOverrides {
			t.Fatalf("%d files", len(files))
		}
		for _, p := range files {
			if !overridePathRe.MatchString(p) || strings.Contains(p, "/.") || strings.Contains(p, "/-") {
				t.Fatalf("unsafe path %q", p)
			}
		}
	})
}

// FuzzSmallParsers covers the one-value sources: uname, lsmod, free,
// meminfo, groups, env, df, tool versions, dev and the sysfs value reader.
func FuzzSmallParsers(f *testing.F) {
	seeds(f, "uname.txt")
	seeds(f, "lsmod.txt")
	seeds(f, "free.txt", "$ free -g\nMem: 1e400 1\n", "MemTotal: 99999999999999999999 kB\n")
	seeds(f, "dev.txt", "uid=1(a) gid=1(a) groups=1(a),44(video\n")
	f.Fuzz(func(t *testing.T, s string) {
		_ = ParseUname(s)
		_ = ParseLsmod(s)
		_ = ParseFree(s)
		_ = ParseMeminfo(s)
		_ = ParseGroups(s)
		_ = ParseEnv(s)
		_, _ = ParseDf(s)
		_ = ParseToolVersion(s)
		_ = ParseDev(s)
		_ = ParseModinfo(s)
		_ = ParseFirmwareMES(s)
		_ = sysValue(s, "pages_limit")
	})
}

// FuzzAnalyse feeds one random text as every bundle file at once: Analyse
// must never panic, and its JSON must keep the contract's shape.
func FuzzAnalyse(f *testing.F) {
	seeds(f, "rocminfo.txt")
	seeds(f, "dmesg.txt")
	f.Fuzz(func(t *testing.T, s string) {
		b := NewBundle()
		for _, name := range []string{"rocminfo.txt", "lspci.txt", "cmdline.txt", "uname.txt", "dmesg.txt", "lsmod.txt",
			"modinfo-amdgpu.txt", "amd-smi.txt", "rocm-smi.txt", "vulkaninfo.txt", "firmware.txt", "meminfo.txt", "free.txt",
			"groups.txt", "env.txt", "df.txt", "dev.txt", "kfd-topology.txt", "sys/class/kfd/kfd/topology/nodes/1/properties",
			"sys/class/drm/card0/device/mem_info_gtt_total", "sys/module/ttm/parameters/pages_limit",
			"firmware-package.txt", "collect.txt", "sys/module/amdgpu/parameters/lockup_timeout", "sys/class/drm/card0/device/fw_version/mes_fw_version",
			"sys/bus/pci/devices/0000:c5:00.0/class", "sys/bus/pci/devices/0000:c5:00.0/vendor", "sys/bus/pci/devices/0000:c5:00.0/device",
			"sys/bus/pci/devices/0000:c6:00.1/uevent"} {
			_ = b.Set(name, []byte(s))
		}
		r := Analyse(b)
		if len(r.Checks) != len(CheckIDs) {
			t.Fatalf("%d checks", len(r.Checks))
		}
		for i, c := range r.Checks {
			if c.ID != CheckIDs[i] || marks[c.Status] == "" || c.Summary == "" {
				t.Fatalf("bad check %+v", c)
			}
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzReadBundle feeds arbitrary bytes as a .tar.gz: reading must fail
// cleanly or yield files that stay inside the bundle.
func FuzzReadBundle(f *testing.F) {
	for _, name := range []string{"gfx1151-sysfs-transcript", "gfx1151-no-devkfd"} {
		b, err := ReadBundle(filepath.Join("testdata", "bundles", name))
		if err != nil {
			f.Fatal(err)
		}
		p := filepath.Join(f.TempDir(), "seed.tar.gz")
		if err := b.WriteTarGz(p); err != nil {
			f.Fatal(err)
		}
		f.Add(fixtureAt(f, p))
	}
	f.Add("\x1f\x8b\x08\x00\x00\x00\x00\x00")
	// Hostile archives, small: links and
	// devices under known names, a header claiming a gigabyte, a member
	// leaving the bundle, a dmesg over the line cap, many members.
	for _, ms := range [][]member{
		{{name: "bundle/dmesg.txt", typ: tar.TypeSymlink, link: "/etc/shadow"}, {name: "bundle/uname.txt", data: []byte("6.18.4\n")}},
		{{name: "rocminfo.txt", typ: tar.TypeLink, link: "/etc/passwd"}},
		{{name: "lspci.txt", typ: tar.TypeChar}, {name: "p.log", typ: tar.TypeFifo}},
		{{name: "bundle/../../escaped.txt", data: []byte("x")}},
		{{name: "bundle/dmesg.txt", data: bytes.Repeat([]byte("\n"), MaxBundleLines+2)}},
		{{name: "rocminfo.txt", data: bytes.Repeat([]byte("a\n"), MaxBundleLines+1)}},
		many(64, func(i int) string { return fmt.Sprintf("bundle/sys/class/kfd/kfd/topology/nodes/%d/properties", i) }, 0),
	} {
		p := filepath.Join(f.TempDir(), "hostile.tar.gz")
		writeTarGz(f, p, ms)
		f.Add(fixtureAt(f, p))
	}
	big := filepath.Join(f.TempDir(), "big.tar.gz")
	writeTarGz(f, big, []member{{name: "bundle/rocminfo.txt", size: 1 << 30}})
	raw, err := os.ReadFile(big)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(raw[:4096])) // a gigabyte claimed, a few bytes there
	f.Fuzz(func(t *testing.T, data string) {
		p := filepath.Join(t.TempDir(), "b.tar.gz")
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := ReadBundle(p)
		if err != nil {
			var be *BundleError
			if !errors.As(err, &be) || be.Bundle != p {
				t.Fatalf("error %v is not a *BundleError naming the bundle", err)
			}
			return
		}
		kept := 0
		for _, n := range b.Names() {
			if strings.HasPrefix(n, "../") || strings.HasPrefix(n, "/") || n == ".." {
				t.Fatalf("file %q escapes the bundle", n)
			}
			spec, ok := knownBundleFile(n)
			if !ok {
				t.Fatalf("file %q is not one the analysis reads", n)
			}
			if int64(len(b.files[n])) > spec.limit || bytes.Count(b.files[n], []byte{'\n'}) > MaxBundleLines {
				t.Fatalf("file %q kept over its caps: %d bytes", n, len(b.files[n]))
			}
			kept += len(b.files[n])
		}
		if kept > MaxBundleKept || len(b.Names()) > MaxBundleFiles {
			t.Fatalf("%d files, %d bytes kept", len(b.Names()), kept)
		}
		Analyse(b)
	})
}
