package demo

import (
	"fmt"
	"io/fs"
	"path"

	"github.com/haloforge/haloforge/detect"
)

// Bundle returns the demo machine as a diagnostics bundle, ready for
// detect.Analyse: the same files `doctor --collect` writes, copied from real
// Strix Halo snapshots (bundle/SOURCES.md says which).
func Bundle() (*detect.Bundle, error) {
	b := detect.NewBundle()
	fsys := BundleFS()
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(name) == ".md" {
			return err // SOURCES.md documents the bundle; it is not part of it
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		return b.Set(name, data)
	})
	if err != nil {
		return nil, fmt.Errorf("demo bundle: %w", err)
	}
	return b, nil
}

// WriteBundle writes the demo machine's bundle under dir, for
// `haloforge doctor --bundle DIR` and for people who want to read it.
func WriteBundle(dir string) error { return writeTree(BundleFS(), dir) }
