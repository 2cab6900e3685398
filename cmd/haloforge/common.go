package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge"
	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
)

// Flags several commands share, each declared once.

// globalOptions are the global flags (docs/cli.md) (--state-dir, --pins, --set,
// --scripts): persistent flags of the root, so that they work before or
// after any command (an alias `haloforge --state-dir ~/hf` works for every
// command). A command that has no use for one accepts it and ignores it.
type globalOptions struct {
	stateDir string
	scripts  string
	pins     pinFlags
}

// bind declares the global flags on the root.
func (g *globalOptions) bind(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&g.stateDir, "state-dir", "", "keep runs, logs and state in DIR (default $XDG_STATE_HOME/haloforge)")
	f.StringVar(&g.scripts, "scripts", "", "run the step scripts of DIR (default ./scripts when it is a haloforge tree, else the built-in copy)")
	f.StringVar(&g.pins.pins, "pins", "", "read the pins from FILE (default ./versions.env, else the built-in copy)")
	f.StringArrayVar(&g.pins.sets, "set", nil, "override a pin with NAME=VALUE (repeatable; validated like the file)")
	// Before any command runs: a path flag whose value looks like an option
	// (--state-dir -- took "--" and built into ./--) is bad usage.
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return g.check(cmd) }
	_ = root.RegisterFlagCompletionFunc("state-dir", completeDirs)
	_ = root.RegisterFlagCompletionFunc("scripts", completeDirs)
	_ = root.RegisterFlagCompletionFunc("pins", completeEnvFiles)
	_ = root.RegisterFlagCompletionFunc("set", completePinNames)
}

// check refuses a path flag given empty, or with a value that starts with
// '-': the flag took the next option (or --) as its value.
func (g *globalOptions) check(cmd *cobra.Command) error {
	for _, f := range []struct{ name, value, what string }{
		{"state-dir", g.stateDir, "directory"}, {"scripts", g.scripts, "directory"}, {"pins", g.pins.pins, "file"}} {
		if !cmd.Flags().Changed(f.name) {
			continue
		}
		if f.value == "" {
			return usageErr(fmt.Errorf("--%s needs a %s", f.name, f.what))
		}
		if strings.HasPrefix(f.value, "-") {
			return usageErr(fmt.Errorf("--%s %s: that looks like an option, not a %s (for a %s whose name starts with '-', write ./%s)", f.name, shellWord(f.value), f.what, f.what, f.value))
		}
	}
	return nil
}

// stateDirOr is the state dir these flags name, or the default.
func (g *globalOptions) stateDirOr() string { return stateDirOrDefault(g.stateDir) }

// args are the global flags as the user gave them, for the commands
// haloforge prints (resume, build): pasted, they use the same pins,
// scripts and state. The default state dir is left out.
func (g *globalOptions) args() []string {
	var out []string
	if g.pins.pins != "" {
		out = append(out, "--pins", shellWord(g.pins.pins))
	}
	for _, s := range g.pins.sets {
		out = append(out, "--set", shellWord(s))
	}
	if g.scripts != "" {
		out = append(out, "--scripts", shellWord(g.scripts))
	}
	if g.stateDir != "" && g.stateDir != defaultStateDir() {
		out = append(out, "--state-dir", shellWord(g.stateDir))
	}
	return out
}

// shellWord quotes s for a POSIX shell when it needs it, so that a printed
// command can be pasted as it is.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// pinFlags are --pins and --set, which every command that reads pins honours.
type pinFlags struct {
	pins string
	sets []string
}

// trackFlag is --track of the commands that work on one track; the shell
// completes it with the track IDs.
func trackFlag(cmd *cobra.Command, track *string) {
	cmd.Flags().StringVar(track, "track", "", "the track ID (see `haloforge tracks`)")
	_ = cmd.RegisterFlagCompletionFunc("track", completeTracks)
}

// requireTrack is the one answer to a missing --track.
func requireTrack(track string) error {
	if track == "" {
		return usageErr(fmt.Errorf("--track is required (one of: %s)", strings.Join(steps.TrackIDs(), ", ")))
	}
	return nil
}

func jsonFlag(cmd *cobra.Command, on *bool, what string) {
	cmd.Flags().BoolVar(on, "json", false, what)
}

// stateDirOrDefault is --state-dir, or the default when it was not given.
func stateDirOrDefault(dir string) string {
	if dir == "" {
		return defaultStateDir()
	}
	return dir
}

// cmdContext is the command's context; a command run without one (a
// test calling Execute) gets the background context.
func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// collectOptions is how every command collects this machine's facts (the
// wizard, build's blocking checks, doctor): the same timeout, and free disk
// judged where builds write, the state dir, or the nearest directory above
// it that exists yet.
func collectOptions(stateDir string) detect.CollectOptions {
	// No Timeout: the collector gives each command its own fair limit.
	return detect.CollectOptions{Root: "/", Version: version, DiskDir: existingDir(stateDir)}
}

// existingDir is dir, or its nearest ancestor that exists.
func existingDir(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	for !dirExists(abs) && filepath.Dir(abs) != abs {
		abs = filepath.Dir(abs)
	}
	return abs
}

// embeddedPinsName is how errors name the copy of versions.env in the binary.
const embeddedPinsName = "versions.env (built in)"

// loadPinsFlags reads --pins (default ./versions.env, else the embedded
// copy) and applies each --set. Any problem is bad input: exit 2.
func loadPinsFlags(pinsPath string, sets []string) (*pins.File, error) {
	var (
		pf  *pins.File
		err error
	)
	switch {
	case pinsPath != "":
		pf, err = pins.Load(pinsPath)
	case fileExists("versions.env"):
		pf, err = pins.Load("versions.env")
	default:
		pf, err = pins.Parse(embeddedPinsName, haloforge.VersionsEnv)
	}
	if err != nil {
		return nil, usageErr(err)
	}
	for _, s := range sets {
		if err := pf.Set(s); err != nil {
			return nil, usageErr(err)
		}
	}
	return pf, nil
}

// pinsFileOnDisk returns the absolute path of the pins file when it is a real
// file, so scripts can source the same one; "" for the embedded copy.
func pinsFileOnDisk(pf *pins.File) string {
	if pf.Path == embeddedPinsName {
		return ""
	}
	abs, err := filepath.Abs(pf.Path)
	if err != nil {
		return ""
	}
	return abs
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// defaultStateDir is $XDG_STATE_HOME/haloforge, else ~/.local/state/haloforge.
// A relative XDG_STATE_HOME is ignored, as the XDG Base Directory
// specification says (its paths "must be absolute"): it would move the
// state with the working directory.
func defaultStateDir() string {
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "haloforge")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		// Per user: a shared name in /tmp could be made first by someone else
		// (runner.CheckStateDir refuses a state dir that is not yours).
		return filepath.Join(os.TempDir(), fmt.Sprintf("haloforge-state-%d", os.Getuid()))
	}
	return filepath.Join(home, ".local", "state", "haloforge")
}

// scriptsFS is the scripts tree for planning: --scripts DIR, ./scripts when
// it is a haloforge tree (local.go), or the embedded copy. It reads only; nothing is written.
func scriptsFS(flag string) (fs.FS, string, error) {
	switch {
	case flag != "":
		if !dirExists(flag) {
			return nil, "", usageErr(fmt.Errorf("--scripts %s: not a directory", flag))
		}
		return os.DirFS(flag), flag, nil
	case localScripts():
		return os.DirFS("scripts"), "scripts", nil
	}
	sub, err := fs.Sub(haloforge.Scripts, "scripts")
	return sub, "", err
}

// scriptsRoot returns a directory holding the scripts tree on disk, ready to
// execute: --scripts DIR, else ./scripts, else the embedded tree written once
// under <state-dir>/scripts/<hash>/ (the hash keeps versions apart).
func scriptsRoot(flag, stateDir string) (string, error) {
	if _, dir, err := scriptsFS(flag); err != nil || dir != "" {
		if err != nil {
			return "", err
		}
		return filepath.Abs(dir)
	}
	return materialise(haloforge.Scripts, "scripts", stateDir, "scripts")
}

// toolboxRoot is ./toolbox when it is a haloforge toolbox tree, else the
// embedded copy on disk.
func toolboxRoot(stateDir string) (string, error) {
	if localToolbox() {
		return filepath.Abs("toolbox")
	}
	return materialise(haloforge.Toolbox, "toolbox", stateDir, "toolbox")
}

// materialise copies an embedded tree to <stateDir>/<name>/<content hash>/
// once, with scripts executable, and returns that directory. The state
// dir's own elements are never followed through a link (safefile.Tree):
// a scripts/ or scripts/<hash> planted as a link would have the build run
// scripts from elsewhere.
func materialise(fsys fs.FS, root, stateDir, name string) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	state := safefile.Tree(stateDir)
	dest := name + "/" + hex.EncodeToString(h.Sum(nil))[:16]
	if fi, err := state.Lstat(dest); err == nil {
		if !fi.IsDir() {
			return "", fmt.Errorf("state dir: %w", &safefile.NotDirError{Path: state.Path(dest), Mode: fi.Mode()})
		}
		return state.Path(dest), nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("state dir: %w", err)
	}
	staging := name + "-tmp"
	if err := state.MkdirAll(staging, 0o755); err != nil {
		return "", fmt.Errorf("state dir: %w", err)
	}
	// Removed last: the staging dir goes once empty (a concurrent copy's
	// keeps it), not left in every state dir.
	defer state.Remove(staging)
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := staging + "/" + hex.EncodeToString(rnd[:])
	if err := state.Mkdir(tmp, 0o700); err != nil {
		return "", fmt.Errorf("state dir: %w", err)
	}
	// A directory made just now, private to this user: its insides are
	// written by path.
	defer os.RemoveAll(state.Path(tmp))
	err = fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		target := filepath.Join(state.Path(tmp), rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if filepath.Ext(p) == ".sh" || filepath.Ext(p) == ".py" || filepath.Ext(p) == ".bash" {
			mode = 0o755
		}
		return os.WriteFile(target, b, mode)
	})
	if err != nil {
		return "", err
	}
	if err := state.MkdirAll(name, 0o755); err != nil {
		return "", fmt.Errorf("state dir: %w", err)
	}
	if err := state.Rename(tmp, dest); err != nil {
		// A concurrent copy of the same content got there first.
		if fi, lerr := state.Lstat(dest); lerr != nil || !fi.IsDir() {
			return "", fmt.Errorf("state dir: %w", err)
		}
	}
	return state.Path(dest), nil
}

// workspace is what the global flags name: the pins (--pins, --set), the
// scripts tree (--scripts, ./scripts or the built-in copy) and the state
// dir (--state-dir or the default). Nothing is written: onDisk puts the
// trees on disk when something runs. Bad flags are usage errors (exit 2).
func (g *globalOptions) workspace() (steps.Workspace, error) {
	pf, err := loadPinsFlags(g.pins.pins, g.pins.sets)
	if err != nil {
		return steps.Workspace{}, err
	}
	sfs, _, err := scriptsFS(g.scripts)
	if err != nil {
		return steps.Workspace{}, err
	}
	return steps.Workspace{StateDir: g.stateDirOr(), Scripts: sfs, Pins: pf, PinsFile: pinsFileOnDisk(pf)}, nil
}

// onDisk gives the workspace the scripts and container definitions on
// disk, for the runner: --scripts DIR, ./scripts and ./toolbox as they
// are, the built-in trees once per content under the state dir.
func (g *globalOptions) onDisk(w *steps.Workspace) error {
	var err error
	if w.ScriptsDir, err = scriptsRoot(g.scripts, w.StateDir); err != nil {
		return err
	}
	w.ToolboxDir, err = toolboxRoot(w.StateDir)
	return err
}

// planFor plans a track in the workspace. An unknown track or unreadable
// state is bad usage; missing scripts are returned with the plan.
func planFor(w steps.Workspace, trackID string) (*steps.Plan, error) {
	t, err := steps.Lookup(trackID)
	if err != nil {
		return nil, usageErr(err)
	}
	p, err := w.Plan(t)
	if err != nil {
		var mse *steps.MissingScriptError
		if errors.As(err, &mse) {
			return p, err
		}
		return nil, usageErr(err)
	}
	return p, nil
}
