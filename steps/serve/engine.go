// Package serve serves a model on a built track's engine: `haloforge serve`
// and `bench --track`. An engine (Engine: llama.cpp, vLLM, Ollama) is one
// file each; a track's Serve spec in the catalogue names its engine and
// where it runs. The package decides the launch before anything starts (the
// command, the box or container, the port; whether the model fits the GPU's
// memory, from a GGUF header or a Hugging Face config and safetensors
// index), runs it through the runner, and follows the start-up from the
// engine's own log milestones and probes, adding the server's events to
// the runner's stream (Watch).
package serve

import (
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/haloforge/haloforge/steps"
)

// Engine is a server haloforge can run for a track (steps.Track.Serve
// names it): how its command is composed, how big a model is for the fit,
// how its start-up reads and, when it implements Bencher, how it is
// benchmarked. Everything else (the box or container, the port, the
// probes, the watch) is the same for every engine.
//
// Adding one is its file (engine_<name>.go: the type, its methods and its
// readiness profile, with a recorded log in readiness_test.go) and a line
// in engines; TestEveryEngineIsComplete fails until the profile is whole.
type Engine interface {
	// Name is the engine's name: what a track's Serve spec names and
	// `serve --dry-run --json` prints as "engine" (docs/json.md).
	Name() string
	// Port is the port the engine listens on by default, and the one it
	// listens on inside its container.
	Port() int
	// Command composes the engine's command line on l (whose Track, Mode,
	// Host and Port are decided): l.Command, l.Env, l.Model (made absolute
	// when it is a local path) and l.Served, the name its model list shows
	// and a client asks for. It returns the podman flags that mount the
	// model into a container. An error is bad input: nothing has run.
	Command(l *Launch, s steps.ServeSpec, req Request, home string) (mounts []string, err error)
	// Shape reads the model's shape for the fit estimate, or says why it
	// cannot before the engine runs.
	Shape(model string) (ModelShape, string)
	// Overhead is the memory the engine takes besides the weights and the
	// KV cache (compute buffers, a runtime), an estimate with margin.
	Overhead() uint64
	// TinyModel is the file, in the track's state dir, of the tiny
	// random-weight model the track's verify step may write; "" for none.
	// Serve and bench fall back to it when no model is given or pinned.
	TinyModel() string
	// profile is the engine's start-up as the readiness machine reads it.
	profile() profile
}

// Bencher is an engine haloforge can benchmark (bench --track).
type Bencher interface {
	Engine
	// Bench composes the benchmark on b (whose Track, Mode, In and Result
	// are decided): b.Command, b.Env, b.Model, b.Tiny, b.Note, and
	// b.Wrapper for a container.
	Bench(b *BenchLaunch, s steps.ServeSpec, req BenchRequest, home string) error
	// BenchesServer says the benchmark measures a running server at
	// BenchRequest.URL (vLLM's), not the engine on its own (llama-bench).
	BenchesServer() bool
	// ResultFile names the file, in the run directory, that the
	// benchmark's results go to (BenchLaunch.Result).
	ResultFile() string
}

// engines are the engines haloforge can run, listed once, as goreleaser
// lists its pipes: a track's Serve spec names one of them.
var engines = []Engine{llamaCpp{}, vllm{}, ollama{}}

// EngineNamed finds an engine by its name.
func EngineNamed(name string) (Engine, bool) {
	for _, e := range engines {
		if e.Name() == name {
			return e, true
		}
	}
	return nil, false
}

// EngineNames lists the engines' names, in their order.
func EngineNames() []string {
	out := make([]string, len(engines))
	for i, e := range engines {
		out[i] = e.Name()
	}
	return out
}

// BenchResultFiles names the files a bench run's results may be in, one
// per engine that benchmarks (Bencher.ResultFile).
func BenchResultFiles() []string {
	var out []string
	for _, e := range engines {
		if b, ok := e.(Bencher); ok {
			out = append(out, b.ResultFile())
		}
	}
	return out
}

// servable is a track's Serve spec and its engine; ok is false for an
// unknown track, one that serves nothing, or one whose engine is unknown.
func servable(track string) (steps.Track, Engine, bool) {
	t, err := steps.Lookup(track)
	if err != nil || t.Serve == nil {
		return steps.Track{}, nil, false
	}
	e, ok := EngineNamed(t.Serve.Engine)
	return t, e, ok
}

// ServableTracks lists the tracks `haloforge serve` knows, sorted.
func ServableTracks() []string {
	var out []string
	for _, t := range steps.Catalogue() {
		if _, _, ok := servable(t.ID); ok {
			out = append(out, t.ID)
		}
	}
	slices.Sort(out)
	return out
}

// EngineOf names the engine a track serves with ("" when it serves none).
func EngineOf(track string) string {
	if _, e, ok := servable(track); ok {
		return e.Name()
	}
	return ""
}

// CanBench says whether `bench --track` can benchmark the track, and
// whether its benchmark needs the track's server running first.
func CanBench(track string) (ok, needsServer bool) {
	_, e, found := servable(track)
	if !found {
		return false, false
	}
	b, ok := e.(Bencher)
	return ok, ok && b.BenchesServer()
}

// DefaultURL is where a client reaches the track's server when it runs as
// `haloforge serve --track T` starts it by default: 127.0.0.1, the track's
// port pin, else the engine's own port ("" for a track that serves nothing).
func DefaultURL(track string, pins map[string]string) string {
	t, e, ok := servable(track)
	if !ok {
		return ""
	}
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port(t.Serve.ForPins(pins), e, pins)))
}

// port is the port of a launch with no --port: the track's pin, else the engine's.
func port(s steps.ServeSpec, e Engine, pins map[string]string) int {
	if s.PortPin != "" {
		if p, err := strconv.Atoi(pins[s.PortPin]); err == nil && p != 0 {
			return p
		}
	}
	return e.Port()
}

// where names the track's box or image from its pins; for a box, the
// wrapper that runs a command in it (distrobox enter [--root] BOX --).
func where(s steps.ServeSpec, pins map[string]string, root bool) (string, []string, error) {
	pin, in := s.InPin(), pins[s.InPin()]
	if s.Mode() == steps.ServeInContainer {
		if in == "" {
			return "", nil, fmt.Errorf("%s names no image: set it in versions.env or with --set %s=IMAGE", pin, pin)
		}
		return in, nil, nil
	}
	if in == "" {
		return "", nil, fmt.Errorf("%s names no box: set it in versions.env or with --set %s=NAME", pin, pin)
	}
	w := []string{"distrobox", "enter"}
	if root {
		w = append(w, "--root")
	}
	return in, append(w, in, "--"), nil
}

// needModel is ErrNoModel when the launch has no model, saying what kind
// of model the engine takes and which pin would give a default.
func needModel(model, kind string, s steps.ServeSpec) error {
	if model != "" {
		return nil
	}
	if s.ModelPin == "" {
		return fmt.Errorf("%w: give one with --model (a %s)", ErrNoModel, kind)
	}
	return fmt.Errorf("%w: give one with --model (a %s), or set %s", ErrNoModel, kind, s.ModelPin)
}

// benchTool names a benchmark command by its words before the first flag:
// llama-bench, vllm bench serve.
func benchTool(command []string) string {
	i := slices.IndexFunc(command, func(w string) bool { return strings.HasPrefix(w, "-") })
	if i < 0 {
		i = len(command)
	}
	return strings.Join(command[:i], " ")
}

// TinyModel is where the track's tiny random-weight model would be
// (Engine.TinyModel, in the track's state dir): "" when its engine has
// none. Whether it exists is the caller's question.
func TinyModel(stateDir, track string) string {
	_, e, ok := servable(track)
	if !ok || e.TinyModel() == "" {
		return ""
	}
	return filepath.Join(stateDir, track, e.TinyModel())
}
