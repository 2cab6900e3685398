package detect

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Bundle is the raw facts of one machine: files by slash-separated relative
// path. Every file is optional and holds a command's output or a file's
// contents as a user would paste it (docs/json.md, "Diagnostics bundle"): rocminfo.txt,
// lspci.txt, cmdline.txt, uname.txt, dmesg.txt, lsmod.txt, modinfo-amdgpu.txt,
// amd-smi.txt, rocm-smi.txt, vulkaninfo.txt, firmware.txt, meminfo.txt,
// free.txt, os-release.txt, groups.txt, env.txt and sys/… at sysfs paths.
// Added here: dev.txt (/dev/kfd ok|missing|denied, or pasted `ls -l`),
// df.txt (`df -P` of the build disk), podman.txt, docker.txt, distrobox.txt
// (`--version`), kfd-topology.txt (a pasted `cat nodes/*/properties`) and
// collect.txt (what the collector did with each command: ok, not found, …).
// Also firmware-package.txt (`dpkg-query -W`/`rpm -q`/`pacman -Q` transcript).
//
// ReadBundle keeps only these files (bundleFiles); Set takes any name.
type Bundle struct {
	files map[string][]byte
	notes []string // what reading the bundle left out, for the report
}

// Notes says what reading the bundle left out (a log cut to its tail), in
// words for the report's notes; nil when nothing was.
func (b *Bundle) Notes() []string { return b.notes }

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
