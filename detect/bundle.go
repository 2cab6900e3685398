package detect

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// maxBundleFile bounds one file of a bundle: command outputs are small, and a
// pasted or hostile archive must not exhaust memory.
const maxBundleFile = 8 << 20

// Bundle is the raw facts of one machine: files by slash-separated relative
// path. Every file is optional and holds a command's output or a file's
// contents as a user would paste it. DESIGN.md's names: rocminfo.txt,
// lspci.txt, cmdline.txt, uname.txt, dmesg.txt, lsmod.txt, modinfo-amdgpu.txt,
// amd-smi.txt, rocm-smi.txt, vulkaninfo.txt, firmware.txt, meminfo.txt,
// free.txt, os-release.txt, groups.txt, env.txt and sys/… at sysfs paths.
// Added here: dev.txt (/dev/kfd ok|missing|denied, or pasted `ls -l`),
// df.txt (`df -P` of the build disk), podman.txt, docker.txt, distrobox.txt
// (`--version`), kfd-topology.txt (a pasted `cat nodes/*/properties`) and
// collect.txt (what the collector did with each command: ok, not found, …).
// Also firmware-package.txt (`dpkg-query -W`/`rpm -q`/`pacman -Q` transcript).
type Bundle struct {
	files map[string][]byte
}

// NewBundle returns an empty bundle.
func NewBundle() *Bundle { return &Bundle{files: map[string][]byte{}} }

// Set stores a file; the path is cleaned and must stay inside the bundle.
func (b *Bundle) Set(name string, data []byte) error {
	p, err := cleanBundlePath(name)
	if err != nil {
		return err
	}
	b.files[p] = data
	return nil
}

// Get returns a file's text, or "" and false when it is absent.
func (b *Bundle) Get(name string) (string, bool) {
	d, ok := b.files[name]
	return string(d), ok
}

// Has reports whether a file is present.
func (b *Bundle) Has(name string) bool { _, ok := b.files[name]; return ok }

// Names lists the files, sorted.
func (b *Bundle) Names() []string {
	out := make([]string, 0, len(b.files))
	for k := range b.files {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Glob lists the files matching a path.Match pattern, sorted.
func (b *Bundle) Glob(pattern string) []string {
	var out []string
	for k := range b.files {
		if ok, _ := path.Match(pattern, k); ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func cleanBundlePath(name string) (string, error) {
	p := path.Clean(strings.TrimPrefix(filepath.ToSlash(name), "./"))
	if p == "." || p == ".." || strings.HasPrefix(p, "../") || path.IsAbs(p) {
		return "", fmt.Errorf("bundle path %q leaves the bundle", name)
	}
	return p, nil
}

// ReadBundle reads a bundle directory, or a .tar.gz / .tgz archive of one.
// An archive with a single top directory is read from inside it.
func ReadBundle(p string) (*Bundle, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("read bundle: %w", err)
	}
	if st.IsDir() {
		return readBundleDir(p)
	}
	if strings.HasSuffix(p, ".tar.gz") || strings.HasSuffix(p, ".tgz") {
		return readBundleTarGz(p)
	}
	return nil, fmt.Errorf("read bundle %s: not a directory or a .tar.gz", p)
}

func readBundleDir(dir string) (*Bundle, error) {
	b := NewBundle()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := readLimited(p)
		if err != nil {
			return err
		}
		return b.Set(rel, data)
	})
	if err != nil {
		return nil, fmt.Errorf("read bundle %s: %w", dir, err)
	}
	return b, nil
}

func readLimited(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxBundleFile))
}

func readBundleTarGz(p string) (*Bundle, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("read bundle: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("read bundle %s: %w", p, err)
	}
	tr := tar.NewReader(zr)
	b := NewBundle()
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read bundle %s: %w", p, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(io.LimitReader(tr, maxBundleFile))
		if err != nil {
			return nil, fmt.Errorf("read bundle %s: %w", p, err)
		}
		if err := b.Set(h.Name, data); err != nil {
			return nil, fmt.Errorf("read bundle %s: %w", p, err)
		}
	}
	return b.stripTopDir(), nil
}

// stripTopDir drops a single leading directory shared by every file, so that
// `tar czf x.tar.gz bundle/` reads the same as the directory.
func (b *Bundle) stripTopDir() *Bundle {
	top := ""
	for k := range b.files {
		d, _, ok := strings.Cut(k, "/")
		if !ok || d == "sys" || (top != "" && d != top) {
			return b
		}
		top = d
	}
	if top == "" {
		return b
	}
	out := NewBundle()
	for k, v := range b.files {
		out.files[strings.TrimPrefix(k, top+"/")] = v
	}
	return out
}

// WriteDir writes every file under dir, creating directories as needed.
func (b *Bundle) WriteDir(dir string) error {
	for _, name := range b.Names() {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("write bundle: %w", err)
		}
		if err := os.WriteFile(p, b.files[name], 0o644); err != nil {
			return fmt.Errorf("write bundle: %w", err)
		}
	}
	return nil
}

// WriteTarGz writes the bundle as a gzipped tar with stable order and times.
func (b *Bundle) WriteTarGz(p string) (err error) {
	f, err := os.Create(p)
	if err != nil {
		return fmt.Errorf("write bundle: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write bundle: %w", cerr)
		}
	}()
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	mtime := time.Unix(0, 0).UTC()
	for _, name := range b.Names() {
		data := b.files[name]
		h := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("write bundle: %w", err)
		}
		if _, err := tw.Write(data); err != nil {
			return fmt.Errorf("write bundle: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write bundle: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("write bundle: %w", err)
	}
	return nil
}
