package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/pins"
)

// The env files the step scripts read. haloforge validates the pins
// (pins.Parse, then --set) and toolbox.env (pins.ParseToolbox) before a run
// starts, and writes what the steps may see into the run dir as snapshots:
// read-only, written afresh before every step, so that a pins file edited
// during a build (an editor, a git pull, a step) never reaches a later step.
// scripts/lib/common.sh reads only these files when the runner started it
// (HALOFORGE_PINS_FILE, HALOFORGE_TOOLBOX_ENV_FILE), refuses one that does
// not begin with SnapshotHead and end with SnapshotEnd, and assigns values
// without ever evaluating them: a value is never code.
//
// A snapshot is a valid pins file: comment lines and NAME='value' lines, a
// ' inside a value written as '"'"'.
const (
	PinsSnapshot    = "pins.env"    // in the run dir: every pin the steps see
	ToolboxSnapshot = "toolbox.env" // in the run dir: toolbox.env's build variables
	SnapshotHead    = "# haloforge snapshot v1"
	SnapshotEnd     = "# end of haloforge snapshot"
	PinsFileEnv     = "HALOFORGE_PINS_FILE"
	ToolboxEnvFile  = "HALOFORGE_TOOLBOX_ENV_FILE"
	// ToolboxEnvName is the build variables' file in the toolbox dir.
	ToolboxEnvName = "toolbox.env"
	maxEnvFile     = 1 << 20 // bytes of toolbox.env read at most
)

// snapshots makes the two snapshots' contents from the plan's environment
// and the toolbox dir's toolbox.env, checking both; every error is bad input.
func (r *Runner) snapshots() error {
	env := r.plan.Env
	var names []string
	for _, s := range pins.Specs() {
		if _, ok := env[s.Name]; ok {
			names = append(names, s.Name)
		}
	}
	from := "the built-in pins"
	if r.o.PinsFile != "" {
		from = strconv.Quote(r.o.PinsFile)
	}
	var err error
	r.pinsSnap, err = snapshot("pins from "+from+", validated, --set applied", names, env)
	if err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	if r.o.ToolboxDir == "" {
		return nil
	}
	path := filepath.Join(r.o.ToolboxDir, ToolboxEnvName)
	data, err := safefile.ReadRegular(path, maxEnvFile, safefile.Follow)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("toolbox build variables: %w", err)
	}
	tf, err := pins.ParseToolbox(path, data)
	if err != nil {
		return err
	}
	vars, err := tf.Over(env)
	if err != nil {
		return err
	}
	values := map[string]string{}
	names = nil
	for _, p := range vars {
		names = append(names, p.Name)
		values[p.Name] = p.Value
	}
	r.toolboxSnap, err = snapshot("build variables from "+strconv.Quote(path)+", validated; the pins win", names, values)
	return err
}

// snapshot renders names in order with their values.
func snapshot(what string, names []string, values map[string]string) ([]byte, error) {
	var b strings.Builder
	b.WriteString(SnapshotHead + "\n")
	b.WriteString("# " + what + ".\n")
	b.WriteString("# Written by haloforge before each step; the step scripts read only this file. Do not edit.\n")
	for _, n := range names {
		v := values[n]
		if strings.IndexFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
			return nil, fmt.Errorf("%s holds a control character", n)
		}
		b.WriteString(n + "='" + strings.ReplaceAll(v, "'", `'"'"'`) + "'\n")
	}
	b.WriteString(SnapshotEnd + "\n")
	return []byte(b.String()), nil
}

// writeSnapshots puts the snapshots in the run dir, read-only, replacing
// whatever is there: a step gets the validated values, not what an earlier
// step or another program made of the file.
func (r *Runner) writeSnapshots() error {
	for name, data := range map[string][]byte{PinsSnapshot: r.pinsSnap, ToolboxSnapshot: r.toolboxSnap} {
		if data == nil {
			continue
		}
		if err := safefile.Tree(r.o.StateDir).WriteFile(RunName(r.runID)+"/"+name, data, 0o444); err != nil {
			return fmt.Errorf("snapshot %s: %w", name, err)
		}
	}
	return nil
}

// snapshotPath is where a step finds a snapshot; "" when there is none.
func (r *Runner) snapshotPath(name string) string {
	if name == ToolboxSnapshot && r.toolboxSnap == nil {
		return ""
	}
	return filepath.Join(r.runDir, name)
}
