package detect

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
)

// A bundle comes from a bug report: anyone's archive or directory, read by
// someone else. Reading one is bounded in files, bytes and memory whatever
// it holds: only the files the analysis knows are read, each with its own
// cap, and the bundle as a whole has caps on what is scanned and kept.
const (
	// MaxBundleEntries bounds the archive members or directory entries
	// looked at. A collected bundle has about 40.
	MaxBundleEntries = 10_000
	// MaxBundleFiles bounds the known files kept (sysfs copies of many
	// GPUs included).
	MaxBundleFiles = 512
	// MaxBundleKept bounds the bytes of all kept files together.
	MaxBundleKept = 32 << 20
	// MaxBundleUnpacked bounds the bytes decompressed from a .tar.gz,
	// members skipped unread included: a small archive can hold gigabytes
	// of zeros.
	MaxBundleUnpacked = 256 << 20
	// MaxBundleLines bounds the lines of one file. The parsers hold a slice
	// entry per line, so without it a file of newlines costs about fifty
	// bytes of memory per byte. A full dmesg has some 100,000 lines.
	MaxBundleLines = 1 << 18
)

// bundleLimits are the caps of one read: the constants above, lowered in
// tests that would otherwise make ten thousand files.
type bundleLimits struct {
	entries, files int
	kept, unpacked int64
}

var defaultLimits = bundleLimits{entries: MaxBundleEntries, files: MaxBundleFiles, kept: MaxBundleKept, unpacked: MaxBundleUnpacked}

// bundleFile is a file the analysis reads (docs/json.md, "Diagnostics bundle"): a name
// or a path.Match pattern for sysfs copies, and how much of it is kept. A
// larger file is refused, except a log (tail), whose last limit bytes are
// kept: the newest boot is at the end.
type bundleFile struct {
	pattern string
	limit   int64
	tail    bool
}

// bundleFiles is every file a bundle may usefully hold; nothing else in a
// bundle is ever opened. Command outputs are kilobytes: the caps leave room
// for a full `vulkaninfo` or `lspci -vvv` of a large machine, and a sysfs
// value is at most a page.
var bundleFiles = []bundleFile{
	{"dmesg.txt", 8 << 20, true},
	{"vulkaninfo.txt", 8 << 20, false},
	{"rocminfo.txt", 4 << 20, false},
	{"lspci.txt", 2 << 20, false},
	{"amd-smi.txt", 2 << 20, false},
	{"rocm-smi.txt", 2 << 20, false},
	{"modinfo-amdgpu.txt", 1 << 20, false},
	{"lsmod.txt", 1 << 20, false},
	{"firmware.txt", 1 << 20, false},
	{"kfd-topology.txt", 1 << 20, false},
	{"cmdline.txt", 1 << 20, false},
	{"uname.txt", 1 << 20, false},
	{"meminfo.txt", 1 << 20, false},
	{"free.txt", 1 << 20, false},
	{"os-release.txt", 1 << 20, false},
	{"groups.txt", 1 << 20, false},
	{"env.txt", 1 << 20, false},
	{"dev.txt", 1 << 20, false},
	{"df.txt", 1 << 20, false},
	{"podman.txt", 1 << 20, false},
	{"docker.txt", 1 << 20, false},
	{"distrobox.txt", 1 << 20, false},
	{"collect.txt", 1 << 20, false},
	{"sys/class/kfd/kfd/topology/nodes/*/properties", 64 << 10, false},
	{"sys/class/drm/card*/device/mem_info_vram_total", 64 << 10, false},
	{"sys/class/drm/card*/device/mem_info_gtt_total", 64 << 10, false},
	{"sys/class/drm/card*/device/vendor", 64 << 10, false},
	{"sys/class/drm/card*/device/device", 64 << 10, false},
	{"sys/class/drm/card*/device/uevent", 64 << 10, false},
	{"sys/class/drm/card*/device/board_info", 64 << 10, false},
	{"sys/module/ttm/parameters/pages_limit", 64 << 10, false},
	{"sys/module/ttm/parameters/page_pool_size", 64 << 10, false},
	{"sys/module/amdttm/parameters/pages_limit", 64 << 10, false},
	{"sys/module/amdttm/parameters/page_pool_size", 64 << 10, false},
	{"sys/module/amdgpu/version", 64 << 10, false},
	{"sys/module/amdgpu/initstate", 64 << 10, false},
	{"sys/module/amdgpu/parameters/cwsr_enable", 64 << 10, false},
	{"sys/module/amdgpu/parameters/lockup_timeout", 64 << 10, false},
	{"sys/module/firmware_class/parameters/path", 64 << 10, false},
	{"sys/class/drm/card*/device/fw_version/mes_fw_version", 64 << 10, false},
	// PCI attributes of display controllers and NPUs (collect.go pciFiles).
	{"sys/bus/pci/devices/*/class", 64 << 10, false},
	{"sys/bus/pci/devices/*/vendor", 64 << 10, false},
	{"sys/bus/pci/devices/*/device", 64 << 10, false},
	{"sys/bus/pci/devices/*/subsystem_vendor", 64 << 10, false},
	{"sys/bus/pci/devices/*/subsystem_device", 64 << 10, false},
	{"sys/bus/pci/devices/*/revision", 64 << 10, false},
	{"sys/bus/pci/devices/*/uevent", 64 << 10, false},
	// The installed linux-firmware package (dpkg-query/rpm/pacman transcript).
	{"firmware-package.txt", 1 << 20, false},
	// amdgpu firmware in /lib/firmware/updates, which beats the package.
	{"firmware-overrides.txt", 1 << 20, false},
	// Boot evidence, read by detect/hostfix for `doctor --plan --bundle`:
	// how the machine boots and the files a plan would edit.
	{"bootloader.txt", 1 << 20, false},
	{"etc/default/grub", 1 << 20, false},
	{"etc/default/grub.d/*.cfg", 1 << 20, false},
	{"etc/kernel/cmdline", 64 << 10, false},
	{"etc/kernel/install.conf", 64 << 10, false},
	{"etc/modprobe.d/*.conf", 1 << 20, false},
	{"efi/loader/entries/*.conf", 64 << 10, false},
	{"boot/efi/loader/entries/*.conf", 64 << 10, false},
	{"boot/loader/entries/*.conf", 64 << 10, false},
}

// IsBundleFile reports whether a bundle's reader keeps a file of this
// slash-separated name; a package that adds a file to bundles checks it.
func IsBundleFile(name string) bool {
	_, ok := knownBundleFile(path.Clean(strings.TrimPrefix(name, "/")))
	return ok
}

// knownBundleFile returns the spec of a cleaned, slash-separated name.
func knownBundleFile(name string) (bundleFile, bool) {
	for _, f := range bundleFiles {
		if ok, _ := path.Match(f.pattern, name); ok {
			return f, true
		}
	}
	return bundleFile{}, false
}

// BundleError is an unusable bundle: a broken limit, a special file, a
// link leaving it. It names the bundle and, when one is to blame, the file.
type BundleError struct {
	Bundle string
	File   string // inside the bundle; "" for the bundle as a whole
	Reason string
}

func (e *BundleError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("read bundle %s: %s", e.Bundle, e.Reason)
	}
	return fmt.Sprintf("read bundle %s: %s: %s", e.Bundle, e.File, e.Reason)
}

// collector keeps the known files of one bundle and enforces the caps.
type collector struct {
	src     string // the bundle, for messages
	lim     bundleLimits
	b       *Bundle
	entries int
	kept    int64
}

func newCollector(src string, lim bundleLimits) *collector {
	return &collector{src: src, lim: lim, b: NewBundle()}
}

func (c *collector) fail(file, format string, a ...any) error {
	return &BundleError{Bundle: c.src, File: file, Reason: fmt.Sprintf(format, a...)}
}

// entry counts one archive member or directory entry looked at.
func (c *collector) entry(name string) error {
	c.entries++
	if c.entries > c.lim.entries {
		return c.fail(name, "more than %d entries (limit %d): not a diagnostics bundle", c.lim.entries, c.lim.entries)
	}
	return nil
}

// keep stores a file under its bundle name; a later copy of the same name
// (tar's append) replaces the earlier one.
func (c *collector) keep(name string, data []byte) error {
	if old, ok := c.b.files[name]; ok {
		c.kept -= int64(len(old))
	} else if len(c.b.files) >= c.lim.files {
		return c.fail(name, "more than %d files the analysis reads (limit %d): not a diagnostics bundle", c.lim.files, c.lim.files)
	}
	c.kept += int64(len(data))
	if c.kept > c.lim.kept {
		return c.fail(name, "the files the analysis reads add up to more than %s (limit %s): not a diagnostics bundle", text.Bytes(c.lim.kept), text.Bytes(c.lim.kept))
	}
	c.b.files[name] = data
	return nil
}

// tooLarge is the refusal of a file over its cap.
func (c *collector) tooLarge(name string, spec bundleFile, size int64) error {
	if size < 0 {
		return c.fail(name, "over the %s limit for this file: not the output it should hold", text.Bytes(spec.limit))
	}
	return c.fail(name, "%d bytes, over the %s limit for this file: not the output it should hold", size, text.Bytes(spec.limit))
}

// accept applies a file's line cap and keeps it: a log keeps its last
// lines, any other file over the cap is refused.
func (c *collector) accept(name string, spec bundleFile, data []byte) error {
	if n := bytes.Count(data, []byte{'\n'}); n > MaxBundleLines {
		if !spec.tail {
			return c.fail(name, "%d lines, over the %d-line limit for this file: not the output it should hold", n, MaxBundleLines)
		}
		data = lastNLines(data, MaxBundleLines)
		c.b.notes = append(c.b.notes, fmt.Sprintf("%s has %d lines: only its last %d were read", name, n, MaxBundleLines))
	}
	return c.keep(name, data)
}

// lastNLines keeps the last n lines of data (a final line without a
// newline counts as one).
func lastNLines(data []byte, n int) []byte {
	need := n + 1 // the newline that ends the line before them
	if len(data) > 0 && data[len(data)-1] != '\n' {
		need = n
	}
	pos := len(data)
	for range need {
		if pos = bytes.LastIndexByte(data[:pos], '\n'); pos < 0 {
			return data
		}
	}
	return bytes.Clone(data[pos+1:])
}

// truncated records, in the report's notes, that a log was cut to its tail.
func (c *collector) truncated(name string, size int64, spec bundleFile) {
	c.b.notes = append(c.b.notes, fmt.Sprintf("%s is %s: only its last %s were read", name, text.Bytes(size), text.Bytes(spec.limit)))
}

// lastLines keeps the last limit bytes of data, from the first line that
// starts inside them, so no half line reaches a parser.
func lastLines(data []byte, limit int64) []byte {
	if int64(len(data)) <= limit {
		return data
	}
	start := int64(len(data)) - limit
	if data[start-1] != '\n' {
		if i := bytes.IndexByte(data[start:], '\n'); i >= 0 {
			start += int64(i) + 1
		}
	}
	return bytes.Clone(data[start:])
}

// tailBuffer keeps the last limit bytes written to it, in at most twice
// that much memory, however much is written.
type tailBuffer struct {
	buf   []byte
	limit int
	total int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	t.total += int64(n)
	if len(p) > t.limit {
		p = p[len(p)-t.limit:]
	}
	if len(t.buf)+len(p) > 2*t.limit {
		keep := t.limit - len(p)
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-keep:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// ReadBundle reads a bundle directory, or a .tar.gz / .tgz archive of one.
// An archive with a single top directory is read from inside it. Only the
// files of bundleFiles are read, within the limits above; a
// bundle that breaks one is refused with a *BundleError naming the limit
// and the file.
func ReadBundle(p string) (*Bundle, error) { return readBundle(p, defaultLimits) }

func readBundle(p string, lim bundleLimits) (*Bundle, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("read bundle: %w", err)
	}
	if st.IsDir() {
		return readBundleDir(p, lim)
	}
	if strings.HasSuffix(p, ".tar.gz") || strings.HasSuffix(p, ".tgz") {
		return readBundleTarGz(p, lim)
	}
	return nil, fmt.Errorf("read bundle %s: not a directory or a .tar.gz", p)
}

// errUnpacked stops decompression at the unpacked limit.
var errUnpacked = errors.New("decompressed size limit")

// countingReader fails once more than max bytes have come through it.
type countingReader struct {
	r   io.Reader
	n   int64
	max int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		return n, errUnpacked
	}
	return n, err
}

func readBundleTarGz(p string, lim bundleLimits) (*Bundle, error) {
	c := newCollector(p, lim)
	f, _, err := safefile.OpenRegular(p, safefile.Follow) // the user named this archive: a link to it is fine
	var nr *safefile.NotRegularError
	switch {
	case errors.As(err, &nr):
		return nil, c.fail("", "%s, not a regular file: refused", safefile.Kind(nr.Mode))
	case err != nil:
		return nil, fmt.Errorf("read bundle: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, c.fail("", "%v", err)
	}
	cr := &countingReader{r: zr, max: lim.unpacked}
	tr := tar.NewReader(cr)
	top := ""  // the archive's top directory once known ("." for none)
	last := "" // the member before, whose unread data Next skips
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, c.unpackErr(err, last)
		}
		last = h.Name
		if err := c.entry(h.Name); err != nil {
			return nil, err
		}
		if path.Clean("/"+filepath.ToSlash(h.Name)) == "/" {
			continue // "./", the archive's own root
		}
		clean, err := cleanBundlePath(h.Name)
		if err != nil {
			return nil, c.fail("", "%v", err)
		}
		name, spec, ok := archiveName(clean, &top)
		if !ok {
			continue // not a file the analysis reads: skipped unread
		}
		if h.Typeflag != tar.TypeReg {
			return nil, c.fail(h.Name, "%s in the archive, not a regular file: refused", tarKind(h))
		}
		data, err := c.readMember(tr, h, name, spec)
		if err != nil {
			return nil, err
		}
		if err := c.accept(name, spec, data); err != nil {
			return nil, err
		}
	}
	return c.b, nil
}

// archiveName maps a member to its bundle name: the member itself, or the
// member inside the single top directory `tar czf x.tar.gz bundle/` makes.
// The first known member decides which; top records it.
func archiveName(clean string, top *string) (string, bundleFile, bool) {
	switch *top {
	case "":
		if spec, ok := knownBundleFile(clean); ok {
			*top = "."
			return clean, spec, true
		}
		if d, rest, ok := strings.Cut(clean, "/"); ok && d != "sys" {
			if spec, ok := knownBundleFile(rest); ok {
				*top = d
				return rest, spec, true
			}
		}
		return "", bundleFile{}, false
	case ".":
		spec, ok := knownBundleFile(clean)
		return clean, spec, ok
	}
	rest, ok := strings.CutPrefix(clean, *top+"/")
	if !ok {
		return "", bundleFile{}, false
	}
	spec, ok := knownBundleFile(rest)
	return rest, spec, ok
}

func tarKind(h *tar.Header) string {
	switch h.Typeflag {
	case tar.TypeSymlink:
		return "a symlink (→ " + h.Linkname + ")"
	case tar.TypeLink:
		return "a hard link (→ " + h.Linkname + ")"
	case tar.TypeChar:
		return "a character device"
	case tar.TypeBlock:
		return "a block device"
	case tar.TypeFifo:
		return "a FIFO (named pipe)"
	case tar.TypeDir:
		return "a directory"
	case tar.TypeGNUSparse:
		return "a GNU sparse file"
	}
	return fmt.Sprintf("an entry of type %q", h.Typeflag)
}

// unpackErr turns a read error inside the archive into the bundle's error,
// naming the decompression limit when that is what stopped it.
func (c *collector) unpackErr(err error, member string) error {
	if errors.Is(err, errUnpacked) {
		return c.fail(member, "more than %s once decompressed (limit %s): not a diagnostics bundle (a collected one is well under 1 MiB unpacked)",
			text.Bytes(c.lim.unpacked), text.Bytes(c.lim.unpacked))
	}
	return c.fail(member, "%v", err)
}

// readMember reads a known member within its cap: a file over the cap is
// refused from its header without reading it; a log is read through, and
// only its tail kept.
func (c *collector) readMember(tr *tar.Reader, h *tar.Header, name string, spec bundleFile) ([]byte, error) {
	if !spec.tail {
		if h.Size > spec.limit {
			return nil, c.tooLarge(h.Name, spec, h.Size)
		}
		data := make([]byte, h.Size)
		if _, err := io.ReadFull(tr, data); err != nil {
			return nil, c.unpackErr(err, h.Name)
		}
		return data, nil
	}
	if h.Size > c.lim.unpacked {
		return nil, c.fail(h.Name, "%d bytes, over the %s limit of a whole bundle: not a diagnostics bundle", h.Size, text.Bytes(c.lim.unpacked))
	}
	t := &tailBuffer{limit: int(spec.limit)}
	if _, err := io.Copy(t, tr); err != nil {
		return nil, c.unpackErr(err, h.Name)
	}
	if t.total > spec.limit {
		c.truncated(name, t.total, spec)
	}
	return lastLines(t.buf, spec.limit), nil
}

// readBundleDir reads the known files of a bundle directory. Nothing is
// listed but the few directories that hold numbered sysfs entries (nodes/N,
// cardN), and nothing is opened but a known name. A known name must be a
// regular file inside the bundle: a symlink leaving it (to /etc/shadow, to
// the live /sys), a device such as /dev/zero or a FIFO is refused, never
// read and never waited on.
func readBundleDir(dir string, lim bundleLimits) (*Bundle, error) {
	c := newCollector(dir, lim)
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("read bundle: %w", err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("read bundle: %w", err)
	}
	d := &dirReader{c: c, root: root, listed: map[string][]string{}}
	for _, spec := range bundleFiles {
		names, err := d.expand(".", strings.Split(spec.pattern, "/"))
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			if err := d.read(name, spec); err != nil {
				return nil, err
			}
		}
	}
	return c.b, nil
}

type dirReader struct {
	c      *collector
	root   string              // the bundle directory, symlinks resolved
	listed map[string][]string // directory listings already made
}

// expand turns a pattern's segments into the existing relative paths that
// match it, listing a directory only for a segment with a wildcard.
func (d *dirReader) expand(rel string, segs []string) ([]string, error) {
	if len(segs) == 0 {
		return []string{rel}, nil
	}
	seg := segs[0]
	if !strings.ContainsAny(seg, "*?[") {
		return d.expand(path.Join(rel, seg), segs[1:])
	}
	names, err := d.list(rel)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if ok, _ := path.Match(seg, n); ok {
			more, err := d.expand(path.Join(rel, n), segs[1:])
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
		}
	}
	return out, nil
}

// list reads a directory's names in batches, each counted as an entry.
func (d *dirReader) list(rel string) ([]string, error) {
	if names, ok := d.listed[rel]; ok {
		return names, nil
	}
	d.listed[rel] = nil
	real, err := d.resolve(rel)
	if err != nil || real == "" {
		return nil, err
	}
	f, err := safefile.OpenDir(real)
	if err != nil {
		return nil, nil // not a directory, or unreadable: nothing of it is known
	}
	defer f.Close()
	var names []string
	for {
		batch, err := f.ReadDir(256)
		for _, e := range batch {
			if err := d.c.entry(path.Join(rel, e.Name())); err != nil {
				return nil, err
			}
			names = append(names, e.Name())
		}
		if err != nil {
			break // io.EOF, or a directory that cannot be read further
		}
	}
	d.listed[rel] = names
	return names, nil
}

// resolve returns the real path of a relative name with every symlink
// followed, "" when it does not exist, and an error when it leaves the
// bundle.
func (d *dirReader) resolve(rel string) (string, error) {
	full := filepath.Join(d.root, filepath.FromSlash(rel))
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", nil // absent (or a dangling link): the file is simply not there
	}
	if r, err := filepath.Rel(d.root, real); err != nil || r == ".." || strings.HasPrefix(r, "../") {
		target, _ := os.Readlink(full)
		if target == "" {
			target = real // a directory above it is the link
		}
		return "", d.c.fail(rel, "leaves the bundle through a symlink (→ %s): refused; copy the file into the bundle instead", target)
	}
	return real, nil
}

// read opens one known file and keeps it within its cap.
func (d *dirReader) read(rel string, spec bundleFile) error {
	real, err := d.resolve(rel)
	if err != nil || real == "" {
		return err
	}
	if err := d.c.entry(rel); err != nil {
		return err
	}
	f, st, err := safefile.OpenRegular(real, safefile.NoFollow) // resolved inside the bundle above
	var nr *safefile.NotRegularError
	switch {
	case errors.As(err, &nr):
		return d.c.fail(rel, "%s%s, not a regular file: refused", linkNote(filepath.Join(d.root, filepath.FromSlash(rel))), safefile.Kind(nr.Mode))
	case err != nil:
		return d.c.fail(rel, "%v", err)
	}
	defer f.Close()
	size := st.Size()
	if !spec.tail && size > spec.limit {
		return d.c.tooLarge(rel, spec, size)
	}
	if spec.tail && size > spec.limit {
		// a regular file can be read from its end: no need to go through it
		if _, err := f.Seek(size-spec.limit-1, io.SeekStart); err != nil {
			return d.c.fail(rel, "%v", err)
		}
	}
	// Read one byte more than the cap: a file that is larger than its size
	// said (procfs-like, or growing) is caught too.
	data, err := io.ReadAll(io.LimitReader(f, spec.limit+1))
	if err != nil {
		return d.c.fail(rel, "%v", err)
	}
	switch {
	case spec.tail && (size > spec.limit || int64(len(data)) > spec.limit):
		d.c.truncated(rel, max(size, int64(len(data))), spec)
		data = lastLines(data, spec.limit)
	case int64(len(data)) > spec.limit:
		return d.c.tooLarge(rel, spec, -1)
	}
	return d.c.accept(rel, spec, data)
}

// linkNote is "a symlink to X, " when p is one, so the message says what
// the name really points at.
func linkNote(p string) string {
	if t, err := os.Readlink(p); err == nil {
		return "a symlink to " + t + ", which is "
	}
	return ""
}
