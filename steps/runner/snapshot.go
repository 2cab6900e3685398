package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/pins"
)

// How pins reach a step: one channel, the environment. haloforge validates
// the pins (pins.Parse, then --set) and toolbox.env (pins.ParseToolbox)
// before a run starts and hands every value to each step in its environment,
// with PinNamesEnv naming them; under the runner scripts/lib/common.sh reads
// no file at all, so a pins file edited during a build (an editor, a git
// pull, a step) never reaches a later step, and no value is ever evaluated.
//
// The run dir keeps the same values as read-only snapshots: the record of
// what the steps got (pins lock reads it), written when the run starts and
// again when it ends, so that a step that changed the record cannot change
// what the run reports it used. A snapshot is a valid pins file: comment
// lines and NAME='value' lines, a ' inside a value written as '"'"'. Run by
// hand, a step reads a pins file named by PinsFileEnv (or the checkout's
// versions.env) with the same strict reader.
const (
	PinsSnapshot    = "pins.env"    // in the run dir: every pin the steps see
	ToolboxSnapshot = "toolbox.env" // in the run dir: toolbox.env's build variables
	SnapshotHead    = "# haloforge snapshot v1"
	SnapshotEnd     = "# end of haloforge snapshot"
	PinsFileEnv     = "HALOFORGE_PINS_FILE"        // by hand only: the pins file a step reads; the runner clears it
	ToolboxEnvFile  = "HALOFORGE_TOOLBOX_ENV_FILE" // by hand only: the build variables' file; the runner clears it
	// PinNamesEnv names, space-separated, the pins and build variables the
	// runner put in a step's environment (an empty one included), so that a
	// step declares the empty ones and hands them all to its half in the box.
	PinNamesEnv = "HALOFORGE_PIN_NAMES"
	// ToolboxEnvName is the build variables' file in the toolbox dir.
	ToolboxEnvName = "toolbox.env"
	maxEnvFile     = 1 << 20 // bytes of toolbox.env read at most
)

// snapshots checks the plan's pins and the toolbox dir's toolbox.env and
// makes what the steps get from them: the build variables' values
// (r.buildVars; the pins are the plan's own), the names of both and the two
// snapshots' contents; every error is bad input.
func (r *Runner) snapshots() error {
	env := r.plan.Env
	var names []string
	for _, s := range pins.Specs() {
		if _, ok := env[s.Name]; ok {
			names = append(names, s.Name)
		}
	}
	r.stepVarNames = slices.Clone(names)
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
	pinNames := names
	r.buildVars = map[string]string{}
	names = nil
	for _, p := range vars {
		names = append(names, p.Name)
		r.buildVars[p.Name] = p.Value
		if !slices.Contains(pinNames, p.Name) {
			r.stepVarNames = append(r.stepVarNames, p.Name)
		}
	}
	r.toolboxSnap, err = snapshot("build variables from "+strconv.Quote(path)+", validated; the pins win", names, r.buildVars)
	return err
}

// snapshot renders names in order with their values.
func snapshot(what string, names []string, values map[string]string) ([]byte, error) {
	var b strings.Builder
	b.WriteString(SnapshotHead + "\n")
	b.WriteString("# " + what + ".\n")
	b.WriteString("# The values haloforge gave each step of this run in its environment; a record, read by pins lock. Do not edit.\n")
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
// whatever is there: the record holds the validated values, not what a step
// or another program made of the file.
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
