package serve

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/haloforge/haloforge/steps"
)

// Built is what serve and bench learn of a track before they start its
// engine: it is built when every required step of the track has succeeded
// in the state dir (a step that ran to its end unverified counts, as for
// the cache) and its box or image exists. A box or image that exists
// without a build on record (made by hand, or with another state dir) is
// served, with a note.
type Built struct {
	// Note is said before the run when the state dir does not know the
	// build but the box or image is there.
	Note string
}

// NotBuiltError is a track that cannot be served yet: one line, what to
// run. Nothing has run (exit 2).
type NotBuiltError struct {
	Track, Why string
	// Next is the build command to type, with the flags the user gave.
	Next string
}

func (e *NotBuiltError) Error() string {
	return e.Why + "; build it first: " + e.Next + " (nothing was started)"
}

// Probe says whether a box (steps.ServeInBox: a container distrobox made,
// rootful when root) or an image (steps.ServeInContainer) exists; known is false when it
// cannot tell (no container manager, sudo wants a password).
type Probe func(mode, name string, root bool) (exists, known bool)

// Where is where CheckBuilt looks: the state dir (named in a refusal, so
// that a run with another --state-dir is recognised) and the global flags
// the user gave, which the suggested build command carries.
type Where struct {
	StateDir string
	Flags    []string
}

// CheckBuilt decides whether track can be served from st (the state of
// w.StateDir) and the pins' box or image, as probe finds them.
func CheckBuilt(t steps.Track, st *steps.State, w Where, pins map[string]string, root bool, probe Probe) (Built, error) {
	if t.Serve == nil {
		return Built{}, nil // Plan says the track serves nothing
	}
	spec := t.Serve.ForPins(pins)
	mode := spec.Mode()
	in, _, err := where(spec, pins, root)
	if err != nil {
		return Built{}, nil // Plan says what is missing
	}
	build := "haloforge build --track " + t.ID
	flags := ""
	if len(w.Flags) > 0 {
		flags = " " + strings.Join(w.Flags, " ")
	}
	inDir := ""
	if w.StateDir != "" {
		inDir = " in state dir " + w.StateDir
	}
	var missing []string
	ranAny := false
	for _, s := range t.Steps {
		ok := st != nil && st.LastSuccessKey(t.ID, s.ID) != ""
		ranAny = ranAny || ok
		if !ok && !s.Optional {
			missing = append(missing, s.ID)
		}
	}
	what := "box " + in
	if mode == steps.ServeInContainer {
		what = "image " + in
	}
	exists, known := probe(mode, in, root)
	switch {
	case known && exists && len(missing) > 0:
		return Built{Note: fmt.Sprintf("the state dir has no finished build of %s; its %s exists, so it is served as it is", t.ID, what)}, nil
	case len(missing) > 0 && !ranAny:
		return Built{}, &NotBuiltError{Track: t.ID, Why: t.ID + " is not built yet" + inDir, Next: build + flags}
	case len(missing) > 0:
		return Built{}, &NotBuiltError{Track: t.ID, Why: fmt.Sprintf("%s is not fully built%s (step %s has not succeeded)", t.ID, inDir, missing[0]),
			Next: build + flags}
	case known && !exists:
		return Built{}, &NotBuiltError{Track: t.ID, Why: fmt.Sprintf("the %s of %s does not exist (removed since the build?)", what, t.ID),
			Next: build + " --from " + t.Steps[0].ID + flags}
	}
	return Built{}, nil
}

// ProbeContainers is the Probe of this machine: the container manager
// distrobox uses for a box (rootful boxes through sudo -n, which never
// prompts), podman for an image (what a served container runs with).
func ProbeContainers(mode, name string, root bool) (exists, known bool) {
	if mode == steps.ServeInContainer {
		return ask([]string{"podman", "image", "inspect", "--format", "{{.Id}}", name}, false)
	}
	return BoxExists(name, root)
}

// BoxExists asks the container manager distrobox uses whether a container
// named box exists; known is false when it cannot tell. A rootful box
// (HALOFORGE_DISTROBOX_ROOT=1) is asked through sudo -n, which never
// prompts.
func BoxExists(box string, root bool) (exists, known bool) {
	mgr := os.Getenv("DBX_CONTAINER_MANAGER")
	if mgr == "" || mgr == "autodetect" {
		mgr = "podman"
		if _, err := exec.LookPath("podman"); err != nil {
			mgr = "docker"
		}
	}
	return ask([]string{mgr, "container", "inspect", "--format", "{{.Name}}", box}, root && os.Getuid() != 0)
}

// ask runs a container manager's inspect: exit 0 is "exists", another
// exit status of the manager itself "does not", anything else unknown.
func ask(args []string, sudo bool) (exists, known bool) {
	path, err := exec.LookPath(args[0])
	if err != nil {
		return false, false
	}
	args[0] = path
	if sudo {
		args = append([]string{"sudo", "-n"}, args...)
	}
	err = exec.Command(args[0], args[1:]...).Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, true
	case errors.As(err, &ee) && !sudo: // podman and docker: no such container or image
		return false, true
	}
	return false, false
}
