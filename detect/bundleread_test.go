package detect

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// member is one entry of a test archive. Data nil means size zero bytes,
// written as precompressed gzip members so that a gigabyte costs a
// megabyte, as archive bombs do.
type member struct {
	name string
	size int64
	data []byte
	typ  byte   // tar.TypeReg when zero
	link string // for links
}

var zeroGz = sync.OnceValue(func() []byte { return gzipBytes(make([]byte, 1<<20)) })

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// tarHeader is the raw header block(s) of one member: a tar.Writer is used
// for the header only, its data is written by the caller.
func tarHeader(m member) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	typ := m.typ
	if typ == 0 {
		typ = tar.TypeReg
	}
	size := m.size
	if m.data != nil {
		size = int64(len(m.data))
	}
	if typ != tar.TypeReg {
		size = 0
	}
	h := &tar.Header{Name: m.name, Typeflag: typ, Size: size, Mode: 0o644, Linkname: m.link, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		panic(err)
	}
	return buf.Bytes() // no Close: that would check for the missing data
}

// writeTarGz writes members as concatenated gzip streams (what gzip -c a b
// makes; Go and GNU tar read them as one): the zeros of a large member as
// copies of one precompressed mebibyte, everything else in one stream.
func writeTarGz(t testing.TB, p string, members []member) {
	t.Helper()
	var out, raw bytes.Buffer
	flush := func() {
		if raw.Len() > 0 {
			out.Write(gzipBytes(raw.Bytes()))
			raw.Reset()
		}
	}
	for _, m := range members {
		raw.Write(tarHeader(m))
		if m.typ != 0 && m.typ != tar.TypeReg {
			continue
		}
		size := m.size
		if m.data != nil {
			raw.Write(m.data)
			size = int64(len(m.data))
		} else {
			for ; m.size >= 1<<20; m.size -= 1 << 20 {
				flush()
				out.Write(zeroGz())
			}
			raw.Write(make([]byte, m.size))
		}
		raw.Write(make([]byte, (512-size%512)%512))
	}
	raw.Write(make([]byte, 1024))
	flush()
	if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readBundleWithin reads a bundle with a deadline. The deadline is a safety
// net against a regression that blocks (a FIFO), never a timing assertion.
func readBundleWithin(t testing.TB, p string, lim ...bundleLimits) (*Bundle, error) {
	t.Helper()
	type result struct {
		b   *Bundle
		err error
	}
	done := make(chan result, 1)
	go func() {
		l := defaultLimits
		if len(lim) > 0 {
			l = lim[0]
		}
		b, err := readBundle(p, l)
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		return r.b, r.err
	case <-time.After(60 * time.Second):
		t.Fatalf("ReadBundle(%s) blocked", p)
		return nil, nil
	}
}

// hostileBundle is a hostile bundle (links, devices, bombs, members that
// leave the bundle) and the refusal it must get.
type hostileBundle struct {
	name string
	make func(t testing.TB, dir string) string // returns the bundle path
	file string                                // the file the error names ("" for the bundle)
	want string                                // in the error
}

func tgz(members ...member) func(t testing.TB, dir string) string {
	return func(t testing.TB, dir string) string {
		p := filepath.Join(dir, "b.tar.gz")
		writeTarGz(t, p, members)
		return p
	}
}

func many(n int, name func(i int) string, size int64) []member {
	out := make([]member, n)
	for i := range out {
		out[i] = member{name: name(i), size: size}
	}
	return out
}

// bundleDir makes a directory bundle with a uname.txt and whatever setup adds.
func bundleDir(setup func(t testing.TB, root, outside string)) func(t testing.TB, dir string) string {
	return func(t testing.TB, dir string) string {
		root, outside := filepath.Join(dir, "bundle"), filepath.Join(dir, "outside")
		for _, d := range []string{root, outside} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(root, "uname.txt"), []byte("6.18.4\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		setup(t, root, outside)
		return root
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var hostileBundles = []hostileBundle{
	{"tar.gz of 400 members of 8 MiB zeros", tgz(many(400, func(i int) string { return fmt.Sprintf("bundle/f%04d.txt", i) }, 8<<20)...),
		"bundle/f0031.txt", "more than 256 MiB once decompressed (limit 256 MiB)"},
	{"tar.gz of 400 known files of 8 MiB zeros", tgz(many(400, func(i int) string { return fmt.Sprintf("bundle/sys/class/kfd/kfd/topology/nodes/%d/properties", i) }, 8<<20)...),
		"bundle/sys/class/kfd/kfd/topology/nodes/0/properties", "8388608 bytes, over the 64 KiB limit for this file"},
	{"one 1 GiB member", tgz(member{name: "bundle/x.log", size: 1 << 30}),
		"bundle/x.log", "more than 256 MiB once decompressed (limit 256 MiB)"},
	{"a 1 GiB dmesg.txt", tgz(member{name: "bundle/dmesg.txt", size: 1 << 30}),
		"bundle/dmesg.txt", "1073741824 bytes, over the 256 MiB limit of a whole bundle"},
	{"a 5 MiB rocminfo.txt", tgz(member{name: "rocminfo.txt", size: 5 << 20}),
		"rocminfo.txt", "5242880 bytes, over the 4 MiB limit for this file"},
	{"more entries than a bundle has", tgz(many(MaxBundleEntries+1, func(i int) string { return fmt.Sprintf("bundle/x%05d", i) }, 0)...),
		fmt.Sprintf("bundle/x%05d", MaxBundleEntries), "more than 10000 entries (limit 10000)"},
	{"more known files than the limit", tgz(many(MaxBundleFiles+1, func(i int) string { return fmt.Sprintf("sys/class/kfd/kfd/topology/nodes/%d/properties", i) }, 0)...),
		fmt.Sprintf("sys/class/kfd/kfd/topology/nodes/%d/properties", MaxBundleFiles), "more than 512 files the analysis reads (limit 512)"},
	{"known files adding up to more than the limit", tgz(append([]member{{name: "dmesg.txt", size: 8 << 20}, {name: "vulkaninfo.txt", size: 8 << 20},
		{name: "rocminfo.txt", size: 4 << 20}, {name: "lspci.txt", size: 2 << 20}, {name: "amd-smi.txt", size: 2 << 20}, {name: "rocm-smi.txt", size: 2 << 20}},
		many(100, func(i int) string { return fmt.Sprintf("sys/class/kfd/kfd/topology/nodes/%d/properties", i) }, 64<<10)...)...),
		"sys/class/kfd/kfd/topology/nodes/96/properties", "add up to more than 32 MiB (limit 32 MiB)"},
	{"a symlink member to /etc/shadow", tgz(member{name: "bundle/uname.txt", data: []byte("6.18.4\n")}, member{name: "bundle/dmesg.txt", typ: tar.TypeSymlink, link: "/etc/shadow"}),
		"bundle/dmesg.txt", "a symlink (→ /etc/shadow) in the archive, not a regular file"},
	{"a hard link member to /etc/passwd", tgz(member{name: "rocminfo.txt", typ: tar.TypeLink, link: "/etc/passwd"}),
		"rocminfo.txt", "a hard link (→ /etc/passwd) in the archive"},
	{"a character device member", tgz(member{name: "lspci.txt", typ: tar.TypeChar}),
		"lspci.txt", "a character device in the archive"},
	{"a path leaving the bundle", tgz(member{name: "bundle/../../escaped.txt", data: []byte("x")}),
		"", `bundle path "bundle/../../escaped.txt" leaves the bundle`},
	{"a FIFO named .tar.gz", func(t testing.TB, dir string) string {
		p := filepath.Join(dir, "fifo.tar.gz")
		must(t, syscall.Mkfifo(p, 0o600))
		return p
	}, "", "a FIFO (named pipe), not a regular file"},
	{"directory: dmesg.txt → /dev/zero", bundleDir(func(t testing.TB, root, _ string) {
		must(t, os.Symlink("/dev/zero", filepath.Join(root, "dmesg.txt")))
	}), "dmesg.txt", "leaves the bundle through a symlink (→ /dev/zero)"},
	{"directory: rocminfo.txt is a FIFO", bundleDir(func(t testing.TB, root, _ string) {
		must(t, syscall.Mkfifo(filepath.Join(root, "rocminfo.txt"), 0o600))
	}), "rocminfo.txt", "a FIFO (named pipe), not a regular file"},
	{"directory: a link inside to a FIFO inside", bundleDir(func(t testing.TB, root, _ string) {
		must(t, syscall.Mkfifo(filepath.Join(root, "p"), 0o600))
		must(t, os.Symlink("p", filepath.Join(root, "lsmod.txt")))
	}), "lsmod.txt", "a FIFO (named pipe), not a regular file"},
	{"directory: lspci.txt → a secret outside", bundleDir(func(t testing.TB, root, outside string) {
		secret := filepath.Join(outside, "shadow")
		must(t, os.WriteFile(secret, []byte("root:$6$secret:19000:0:99999:7:::\n"), 0o600))
		must(t, os.Symlink(secret, filepath.Join(root, "lspci.txt")))
	}), "lspci.txt", "leaves the bundle through a symlink (→ "},
	{"directory: sys → a tree outside", bundleDir(func(t testing.TB, root, outside string) {
		must(t, os.MkdirAll(filepath.Join(outside, "module/ttm/parameters"), 0o755))
		must(t, os.WriteFile(filepath.Join(outside, "module/ttm/parameters/pages_limit"), []byte("1\n"), 0o644))
		must(t, os.Symlink(outside, filepath.Join(root, "sys")))
	}), "sys/module/ttm/parameters/pages_limit", "leaves the bundle through a symlink"},
	{"directory: a 5 MiB rocminfo.txt", bundleDir(func(t testing.TB, root, _ string) {
		must(t, os.Truncate(mustCreate(t, filepath.Join(root, "rocminfo.txt")), 5<<20))
	}), "rocminfo.txt", "5242880 bytes, over the 4 MiB limit for this file"},
	{"directory: more entries than the limit (lowered to 50)", bundleDir(func(t testing.TB, root, _ string) {
		nodes := filepath.Join(root, "sys/class/kfd/kfd/topology/nodes")
		must(t, os.MkdirAll(nodes, 0o755))
		for i := range 51 {
			mustCreate(t, filepath.Join(nodes, fmt.Sprint(i)))
		}
	}), "", "more than 50 entries (limit 50)"},
}

// loweredLimits are the limits of the cases that would otherwise make ten
// thousand files (slow on a loaded machine); the archive cases test the real
// limits.
var loweredLimits = map[string]bundleLimits{
	"directory: more entries than the limit (lowered to 50)": {entries: 50, files: MaxBundleFiles, kept: MaxBundleKept, unpacked: MaxBundleUnpacked},
}

func mustCreate(t testing.TB, p string) string {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

// TestReadBundleHostile: every hostile bundle is refused with a
// *BundleError that names the bundle, the file and the limit, without
// hanging; nothing outside the bundle is read.
func TestReadBundleHostile(t *testing.T) {
	for _, hb := range hostileBundles {
		t.Run(hb.name, func(t *testing.T) {
			p := hb.make(t, t.TempDir())
			lim, ok := loweredLimits[hb.name]
			if !ok {
				lim = defaultLimits
			}
			b, err := readBundleWithin(t, p, lim)
			if err == nil {
				t.Fatalf("accepted, with files %v", b.Names())
			}
			var be *BundleError
			if !errors.As(err, &be) {
				t.Fatalf("error %q is not a *BundleError", err)
			}
			if be.Bundle != p || be.File != hb.file && hb.file != "" {
				t.Errorf("error names bundle %q file %q, want %q and %q", be.Bundle, be.File, p, hb.file)
			}
			if msg := err.Error(); !strings.Contains(msg, hb.want) || !strings.HasPrefix(msg, "read bundle "+p+": ") || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want one line starting with the bundle and saying %q", msg, hb.want)
			}
		})
	}
}

// TestReadBundleSkipsUnknown: what the analysis does not read is never
// opened, whatever it is: a link to an outside secret, to /dev/zero, a FIFO.
func TestReadBundleSkipsUnknown(t *testing.T) {
	dir := t.TempDir()
	root := bundleDir(func(t testing.TB, root, outside string) {
		secret := filepath.Join(outside, "secret.txt")
		must(t, os.WriteFile(secret, []byte("hipErrorNoDevice SECRET-TOKEN=hunter2\n"), 0o600))
		must(t, os.Symlink(secret, filepath.Join(root, "out.txt")))
		must(t, os.Symlink("/dev/zero", filepath.Join(root, "zero.log")))
		must(t, syscall.Mkfifo(filepath.Join(root, "p.log"), 0o600))
		must(t, os.WriteFile(filepath.Join(root, "notes.md"), []byte("hello"), 0o644))
	})(t, dir)
	b, err := readBundleWithin(t, root)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Names(); !slices.Equal(got, []string{"uname.txt"}) {
		t.Errorf("files %v, want only uname.txt", got)
	}
	tgzPath := filepath.Join(dir, "b.tar.gz")
	writeTarGz(t, tgzPath, []member{
		{name: "bundle/", typ: tar.TypeDir},
		{name: "bundle/uname.txt", data: []byte("6.18.4\n")},
		{name: "bundle/out.txt", typ: tar.TypeSymlink, link: "/etc/shadow"},
		{name: "bundle/core", size: 3 << 20},
		{name: "bundle/f.fifo", typ: tar.TypeFifo},
	})
	b, err = readBundleWithin(t, tgzPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Names(); !slices.Equal(got, []string{"uname.txt"}) {
		t.Errorf("archive files %v, want only uname.txt", got)
	}
}

// TestReadBundleDmesgTail: a dmesg larger than its cap keeps its newest
// lines, from a line start, and the report says so; directory and archive
// agree.
func TestReadBundleDmesgTail(t *testing.T) {
	var log bytes.Buffer
	for i := 0; log.Len() < 20<<20; i++ {
		fmt.Fprintf(&log, "[%8d.000000] amdgpu 0000:c5:00.0: some ordinary line number %d\n", i, i)
	}
	log.WriteString("[99999999.000000] [drm] amdgpu version: 6.16.6\n")
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "d", "dmesg.txt"), log.Bytes(), 0o644))
	writeTarGz(t, filepath.Join(dir, "b.tar.gz"), []member{{name: "bundle/dmesg.txt", data: log.Bytes()}})
	var first []byte
	for _, p := range []string{filepath.Join(dir, "d"), filepath.Join(dir, "b.tar.gz")} {
		b, err := readBundleWithin(t, p)
		if err != nil {
			t.Fatal(err)
		}
		got := b.files["dmesg.txt"]
		if len(got) > 8<<20 || len(got) < 8<<20-200 || got[0] != '[' || !bytes.HasSuffix(log.Bytes(), got) {
			t.Fatalf("%s: kept %d bytes starting %q: want the last 8 MiB from a line start", p, len(got), got[:20])
		}
		if first != nil && !bytes.Equal(first, got) {
			t.Errorf("%s: the archive keeps another tail than the directory", p)
		}
		first = got
		r := Analyse(b)
		if r.Driver.Version == nil || *r.Driver.Version != "6.16.6" {
			t.Errorf("%s: the last line was not read: driver %v", p, r.Driver.Version)
		}
		if !slices.ContainsFunc(r.Notes, func(n string) bool {
			return strings.Contains(n, "dmesg.txt is 20 MiB: only its last 8 MiB were read")
		}) {
			t.Errorf("%s: notes %q do not say the dmesg was cut", p, r.Notes)
		}
	}
}

// TestBundleFilesCoverCollector: every file `doctor --collect` writes and
// every file of the test bundles is one ReadBundle keeps, so the bound
// loses nothing a real bundle holds.
func TestBundleFilesCoverCollector(t *testing.T) {
	var names []string
	for _, c := range commands {
		names = append(names, c.file)
	}
	for _, dst := range files {
		names = append(names, dst)
	}
	for _, g := range sysGlobs {
		names = append(names, strings.NewReplacer("card*", "card1", "*", "1").Replace(g))
	}
	names = append(names, "dev.txt", "groups.txt", "env.txt", "df.txt", "collect.txt", "firmware.txt", "meminfo.txt")
	fixtures, _ := filepath.Glob(filepath.Join("testdata", "*", "*", "*"))
	for _, dir := range []string{"bundles", "holdout"} {
		filepath.WalkDir(filepath.Join("testdata", dir), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() != "SOURCE" && d.Name() != "expected.json" {
				rel, _ := filepath.Rel(filepath.Join("testdata", dir), p)
				_, name, _ := strings.Cut(filepath.ToSlash(rel), "/")
				names = append(names, name)
			}
			return nil
		})
	}
	if len(fixtures) < 20 {
		t.Fatalf("only %d fixture files found", len(fixtures))
	}
	for _, n := range names {
		if _, ok := knownBundleFile(n); !ok {
			t.Errorf("%s is collected or in a fixture but ReadBundle would skip it", n)
		}
	}
}

// rssHelperEnv names the bundle a helper process reads and analyses.
const rssHelperEnv = "HALOFORGE_TEST_RSS_BUNDLE"

// TestMain doubles as the helper process of peakRSS: with rssHelperEnv set
// the test binary only reads and analyses that bundle, so its peak RSS is
// the cost of doing so (plus the runtime's own few MiB).
func TestMain(m *testing.M) {
	if p := os.Getenv(rssHelperEnv); p != "" {
		b, err := ReadBundle(p)
		if err == nil {
			r := Analyse(b)
			fmt.Printf("analysed: %d files, %d checks\n", len(b.Names()), len(r.Checks))
		} else {
			fmt.Printf("refused: %v\n", err)
		}
		// VmHWM is this process's own peak: unlike ru_maxrss it does not
		// start from the parent's size at fork.
		status, _ := os.ReadFile("/proc/self/status")
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
				fmt.Printf("VmHWM: %s\n", strings.TrimSpace(v))
			}
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// peakRSS reads and analyses a bundle in a child process and returns its
// peak resident set (VmHWM) and the helper's first line.
func peakRSS(t testing.TB, bundle string) (int64, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), rssHelperEnv+"="+bundle)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	first, rest, _ := strings.Cut(string(out), "\n")
	var kib int64
	if _, err := fmt.Sscanf(strings.TrimSpace(rest), "VmHWM: %d kB", &kib); err != nil {
		t.Skipf("no VmHWM from the helper (not Linux?): %q", rest)
	}
	return kib << 10, first
}

// worstBundles are accepted bundles at every cap: the six large files at
// theirs and six more at 1 MiB (32 MiB, the kept limit), each at most at
// the line cap, filled with what costs the parsers most.
func worstBundles() map[string]func(size int) []byte {
	fill := func(unit string) func(int) []byte {
		return func(n int) []byte { return bytes.Repeat([]byte(unit), n/len(unit)+1)[:n] }
	}
	return map[string]func(int) []byte{
		"only newlines":    fill("\n"),
		"short lines":      fill("a\n"),
		"no newline":       fill("a"),
		"escape sequences": fill("\x1b[31m\x1b]0;t\x07X\x1b[0m\r\n"),
		"pasted prompts":   fill("user@host:~$ cat x\n"),
		"wrapped dmesg":    wrappedDmesg,
	}
}

// wrappedDmesg is a log whose first half of lines carry timestamps and
// whose second half are pieces a terminal wrapped: ParseDmesg glues them all
// to the last stamped line (quadratic when done by appending one by one).
func wrappedDmesg(n int) []byte {
	const stamped, piece = "[1.0] a\n", "wrapped piece of a line, no timestamp on it .....\n"
	lines := min(MaxBundleLines/2, n/(len(stamped)+len(piece)))
	return append(bytes.Repeat([]byte(stamped), lines), bytes.Repeat([]byte(piece), lines)...)
}

// TestJoinWrappedLinear: gluing wrapped dmesg pieces allocates in
// proportion to the log, not to its square (a bound on memory traffic, not
// a timing): twice the pieces, at most three times the bytes.
func TestJoinWrappedLinear(t *testing.T) {
	alloc := func(n int) uint64 {
		lines := strings.Split(strings.TrimSuffix(string(wrappedDmesg(n)), "\n"), "\n")
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		out := joinWrapped(lines)
		runtime.ReadMemStats(&after)
		if len(out) != len(lines)/2 || !strings.HasSuffix(out[len(out)-1], "no timestamp on it .....") {
			t.Fatalf("%d lines joined into %d", len(lines), len(out))
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := alloc(200_000), alloc(400_000)
	t.Logf("joinWrapped allocated %d bytes for 200 kB, %d for 400 kB", small, large)
	if large > 3*small {
		t.Errorf("twice the input allocated %.1f times the bytes: quadratic", float64(large)/float64(small))
	}
}

func writeWorstBundle(t testing.TB, p string, fill func(int) []byte) {
	t.Helper()
	var ms []member
	for _, name := range []string{"dmesg.txt", "vulkaninfo.txt", "rocminfo.txt", "lspci.txt", "amd-smi.txt", "rocm-smi.txt",
		"cmdline.txt", "modinfo-amdgpu.txt", "lsmod.txt", "firmware.txt", "meminfo.txt", "os-release.txt"} {
		spec, _ := knownBundleFile(name)
		data := fill(int(spec.limit))
		if !spec.tail { // at most the line cap, which a log is cut to
			for i, pos := 0, 0; i < len(data); i++ {
				if data[i] == '\n' {
					if pos++; pos == MaxBundleLines {
						data = data[:i+1]
						break
					}
				}
			}
		}
		ms = append(ms, member{name: "bundle/" + name, data: data})
	}
	writeTarGz(t, p, ms)
}

// TestReadBundlePeakRSS measures, in a child process, the peak memory of
// reading and analysing each hostile bundle and the worst accepted ones: it
// must stay under 256 MiB whatever the bundle (a 3.7 MB bomb once took 4.3 GB).
func TestReadBundlePeakRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gigabyte bombs")
	}
	const bound = 256 << 20
	dir := t.TempDir()
	check := func(name, p, want string) {
		rss, out := peakRSS(t, p)
		t.Logf("%-50s peak RSS %4d MiB  %s", name, rss>>20, out)
		if rss > bound {
			t.Errorf("%s: peak RSS %d MiB, over %d MiB", name, rss>>20, bound>>20)
		}
		if !strings.HasPrefix(out, want) {
			t.Errorf("%s: helper said %q, want %q", name, out, want)
		}
	}
	for i, hb := range hostileBundles {
		if _, lowered := loweredLimits[hb.name]; lowered {
			continue
		}
		check(hb.name, hb.make(t, mkdirAll(t, filepath.Join(dir, fmt.Sprint("h", i)))), "refused:")
	}
	for name, fill := range worstBundles() {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".tar.gz")
		writeWorstBundle(t, p, fill)
		check("worst accepted: "+name, p, "analysed:")
	}
	p := filepath.Join(dir, "kfd-nodes.tar.gz")
	writeKFDBundle(t, p)
	check("worst accepted: 512 kfd nodes of 64 KiB", p, "analysed:")
}

// writeKFDBundle is the most sysfs copies a bundle may hold, each at its
// cap: 512 GPU nodes of 64 KiB of properties, 32 MiB in all.
func writeKFDBundle(t testing.TB, p string) {
	t.Helper()
	props := bytes.Repeat([]byte("simd_count 80\ngfx_target_version 110501\n"), (64<<10)/40)
	ms := many(MaxBundleFiles, func(i int) string { return fmt.Sprintf("bundle/sys/class/kfd/kfd/topology/nodes/%d/properties", i) }, 0)
	for i := range ms {
		ms[i].data = props
	}
	writeTarGz(t, p, ms)
}

// BenchmarkReadBundlePeakRSS reports the peak memory of reading and
// analysing the worst accepted bundle and a 3.7 MB bomb against
// the baseline of a real machine's bundle, each in its own child process.
// The figures are memory, not time: the ratio is what to compare.
func BenchmarkReadBundlePeakRSS(b *testing.B) {
	dir := b.TempDir()
	baseline := filepath.Join("testdata", "bundles", "gfx1151-sysfs-transcript")
	worst := map[string]string{}
	for name, fill := range worstBundles() {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".tar.gz")
		writeWorstBundle(b, p, fill)
		worst[name] = p
	}
	worst["512 kfd nodes of 64 KiB"] = filepath.Join(dir, "kfd-nodes.tar.gz")
	writeKFDBundle(b, worst["512 kfd nodes of 64 KiB"])
	bomb := hostileBundles[0].make(b, mkdirAll(b, filepath.Join(dir, "bomb")))
	var base, peak, bombPeak int64
	peakName := ""
	for b.Loop() {
		base, _ = peakRSS(b, baseline)
		bombPeak, _ = peakRSS(b, bomb)
		for name, p := range worst {
			if rss, _ := peakRSS(b, p); rss > peak {
				peak, peakName = rss, name
			}
		}
	}
	b.ReportMetric(float64(base)/(1<<20), "baseline-peak-MiB")
	b.ReportMetric(float64(peak)/(1<<20), "worst-peak-MiB")
	b.ReportMetric(float64(bombPeak)/(1<<20), "review-bomb-peak-MiB")
	b.ReportMetric(float64(peak)/float64(base), "worst/baseline")
	b.Logf("worst accepted bundle: %s", peakName)
}

func mkdirAll(t testing.TB, p string) string {
	t.Helper()
	must(t, os.MkdirAll(p, 0o755))
	return p
}
