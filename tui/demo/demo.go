// Package demo holds the built-in data of `haloforge demo`: a real Strix Halo
// machine assembled from public snapshots, the real pins, and step scripts that
// replay real build logs through the real runner. It is plain data and Go, so
// the wizard, line mode and tests all tell the same story: step `rocm` fails
// with therock-amdsmi-double-free, the fix is applied, and the run goes on.
package demo

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	haloforge "github.com/haloforge/haloforge"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
)

// TrackID is the track the demo runs: the default track for gfx1151.
const TrackID = "therock-toolbox"

// FailingStep is the step whose first run fails with FailureFamily.
const FailingStep = "rocm"

// FailureFamily is the failure family (docs/ids.md) the demo's failing step shows.
const FailureFamily = "therock-amdsmi-double-free"

// SpeedEnv scales the replay: 1 is realistic (about 80 s for the whole
// track), larger whole numbers are that many times faster.
const SpeedEnv = "HALOFORGE_DEMO_SPEED"

// fixMarker is written by ApplyFix under the state dir; 02-install-rocm.sh
// passes once it exists.
const fixMarker = "demo/amdsmi-fix-applied"

//go:embed all:scripts
var scripts embed.FS

//go:embed bundle
var bundle embed.FS

// Track returns the demo track: the real therock-toolbox track (same ID,
// steps, titles, dependencies and optional flags), whose scripts the demo's
// Scripts tree replaces.
func Track() steps.Track {
	t, err := steps.Lookup(TrackID)
	if err != nil {
		panic(fmt.Sprintf("demo: the catalogue lost %s: %v", TrackID, err))
	}
	t.Steps = slices.Clone(t.Steps)
	for i := range t.Steps {
		t.Steps[i].Pins = slices.Clone(t.Steps[i].Pins)
		t.Steps[i].DependsOn = slices.Clone(t.Steps[i].DependsOn)
	}
	return t
}

// Scripts returns the demo's scripts tree: therock-toolbox/<script> for each
// step, lib/replay.sh, and logs/ with the recorded logs and their sources.
func Scripts() fs.FS {
	sub, err := fs.Sub(scripts, "scripts")
	if err != nil {
		panic(err) // "scripts" is a valid, embedded path
	}
	return sub
}

// BundleFS returns the demo machine's diagnostics bundle as files, laid out as
// `doctor --collect` writes them.
func BundleFS() fs.FS {
	sub, err := fs.Sub(bundle, "bundle")
	if err != nil {
		panic(err) // "bundle" is a valid, embedded path
	}
	return sub
}

// Pins parses the versions.env embedded in the binary: the demo shows the
// pins a real build would use.
func Pins() (*pins.File, error) {
	return pins.Parse("versions.env", haloforge.VersionsEnv)
}

// ApplyFix "applies" the amdsmi fix for the demo by leaving the marker that
// makes the rocm replay pass on its retry. Nothing outside stateDir changes.
func ApplyFix(stateDir string) error {
	if stateDir == "" {
		return errors.New("demo: no state dir to apply the fix in")
	}
	path := filepath.Join(stateDir, filepath.FromSlash(fixMarker))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("demo: apply fix: %w", err)
	}
	note := "haloforge demo: the therock-amdsmi-double-free fix was applied:\n" + FixCommand() + "\n"
	if err := steps.WriteFileAtomic(path, []byte(note)); err != nil {
		return fmt.Errorf("demo: apply fix: %w", err)
	}
	return nil
}

// FixApplied reports whether ApplyFix ran for this state dir.
func FixApplied(stateDir string) bool {
	_, err := os.Stat(filepath.Join(stateDir, filepath.FromSlash(fixMarker)))
	return err == nil
}

// FixCommand is the real fix for therock-amdsmi-double-free (docs/ids.md;
// ROCm/TheRock#1059, #2269): make rocm_sdk preload its libraries without
// RTLD_GLOBAL (both `preload_libraries` and `initialize_process` declare
// `rtld_global: bool = True` in rocm_sdk/__init__.py), or remove the
// standalone amdsmi package that brings a second copy of the same symbols.
// Both run in the toolbox's venv; importing rocm_sdk does not import torch.
func FixCommand() string {
	return `sed -i 's/rtld_global: bool = True/rtld_global: bool = False/' ` +
		`"$(python -c 'import rocm_sdk; print(rocm_sdk.__file__)')"` +
		"\n# or: pip uninstall -y amdsmi"
}

// WriteScripts writes the Scripts tree under dir, step scripts executable,
// for runners and people who want the files on disk.
func WriteScripts(dir string) error { return writeTree(Scripts(), dir) }

// writeTree copies fsys under dir; shell scripts get the executable bit that
// embed.FS does not keep.
func writeTree(fsys fs.FS, dir string) error {
	return fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if filepath.Ext(name) == ".sh" {
			mode = 0o755
		}
		if err := os.WriteFile(dst, data, mode); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		return nil
	})
}
