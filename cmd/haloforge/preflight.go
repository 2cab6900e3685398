package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/preflight"
)

// offlineEnv turns the plan's upstream check off: on a machine without
// network, in CI, or to build on with a pin the check says is gone.
const offlineEnv = "HALOFORGE_OFFLINE"

// checkPinsUpstream is the plan's check of the track's pins upstream
// (steps/preflight), as `plan`, `build` and the wizard's plan screen run it.
func checkPinsUpstream(ctx context.Context, t steps.Track, pf *pins.File, stateDir string) *preflight.Result {
	o := preflight.Options{StateDir: stateDir}
	if os.Getenv(offlineEnv) == "1" {
		o.Offline = offlineEnv + "=1"
	}
	return preflight.Check(ctx, t, pf, o)
}

// printPinsUpstream prints the check's lines.
func printPinsUpstream(w io.Writer, r *preflight.Result) {
	for _, l := range r.Lines(time.Now()) {
		fmt.Fprintln(w, l)
	}
}

// pinsGoneErr stops a build whose track needs a pin that is gone upstream:
// the check's lines, then what to do; exit 1 before any step starts.
func pinsGoneErr(w io.Writer, r *preflight.Result, build string) error {
	printPinsUpstream(w, r)
	fmt.Fprintf(w, "nothing was run: the build would stop at step %s. Switch to the set above, then run again: %s\n", r.FirstStep, build)
	fmt.Fprintf(w, "(%s=1 skips this check, to build with the pins as they are)\n", offlineEnv)
	return silentExit(exitFailed)
}
