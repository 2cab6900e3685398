package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
)

// BenchRequest is what the user asked `haloforge bench --track` for.
type BenchRequest struct {
	Track string
	Pins  map[string]string
	// Model is the model to measure: a GGUF file for llama-bench, the
	// served model's name for vLLM ("" for the track's default).
	Model string
	// Tiny is the track's tiny random-weight model (TinyModel), used when
	// no model is given or pinned (a proof that kernels run, no speed claim).
	Tiny string
	// URL is the server `vllm bench serve` measures (haloforge serve's).
	URL    string
	Depths []int // llama-bench -d; nil: 0
	Root   bool
	Home   string
	NoGPU  bool
}

// BenchLaunch is a benchmark run decided: the engine's command, where it
// runs, and the file its results go to.
type BenchLaunch struct {
	Track   string            `json:"track"`
	Engine  string            `json:"engine"`
	Command []string          `json:"command"`
	Env     map[string]string `json:"env"`
	Model   string            `json:"model"`
	Tiny    bool              `json:"tiny"` // the tiny random model: no speed claim
	Mode    string            `json:"mode"`
	In      string            `json:"in"`
	Wrapper []string          `json:"wrapper"`
	Shell   string            `json:"shell"`
	// Entrypoint is the container entrypoint haloforge sets (see Launch).
	Entrypoint string `json:"entrypoint,omitempty"`
	// Result names the results file in the run directory.
	Result string `json:"result"`
	// Note is what the bench script adds to Command, said before it runs
	// ("" for nothing); not part of the JSON.
	Note string `json:"-"`
}

// PlanBench decides a benchmark run of req.
func PlanBench(req BenchRequest) (BenchLaunch, error) {
	t, e, _ := servable(req.Track)
	be, ok := e.(Bencher)
	if !ok {
		var ids []string
		for _, id := range ServableTracks() {
			if ok, _ := CanBench(id); ok {
				ids = append(ids, id)
			}
		}
		return BenchLaunch{}, fmt.Errorf("track %s has no benchmark to run (haloforge bench --track knows: %s; any llama-bench or vLLM result: bench --from FILE)", req.Track, strings.Join(ids, ", "))
	}
	s := t.Serve.ForPins(req.Pins)
	b := BenchLaunch{Track: req.Track, Engine: e.Name(), Env: map[string]string{}, Mode: s.Mode(), Result: be.ResultFile()}
	var err error
	if b.In, b.Wrapper, err = where(s, req.Pins, req.Root); err != nil {
		return BenchLaunch{}, err
	}
	home := req.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if err := be.Bench(&b, s, req, home); err != nil {
		return BenchLaunch{}, err
	}
	words := b.ScriptArgs()
	if b.Mode == steps.ServeInBox {
		words = append(slices.Clone(b.Wrapper), words...)
	}
	b.Shell = QuoteCommand(words)
	return b, nil
}

// ScriptArgs are the arguments of the track's bench.sh (see Launch.ScriptArgs).
func (b BenchLaunch) ScriptArgs() []string {
	if b.Mode == steps.ServeInBox {
		return append(envPrefix(b.Env), b.Command...)
	}
	return append(slices.Clone(b.Wrapper), afterEntrypoint(b.Command, b.Entrypoint)...)
}

// EngineTime names the time a bench script records of the benchmark
// command alone (scripts/serve/lib.sh's bench_run writes it to the facts
// file): a bench step's runner.StepFinished.Times[EngineTime]. What
// haloforge and the box or container add is the rest of the run's time.
const EngineTime = "engine"

// RunDirWord stands for the run directory in a bench command: the bench
// script puts the directory in its place (it is known once the run is).
const RunDirWord = "{run_dir}"

// NewBenchRunner makes the runner of a bench run: one step running the
// track's bench script; its results land in <run-dir>/<Result>.
func NewBenchRunner(b BenchLaunch, o RunOptions) (*runner.Runner, error) {
	if o.Plan == nil {
		return nil, fmt.Errorf("bench: no plan of track %s", b.Track)
	}
	title := fmt.Sprintf("Benchmark %s with %s", filepath.Base(b.Model), benchTool(b.Command))
	p := onePlan(o.Plan, BenchStepID, title, BenchScript(b.Track), map[string]string{"HALOFORGE_BENCH_RESULT": b.Result})
	return runner.New(o.runnerOptions(p, BenchStepID, b.ScriptArgs(), 0))
}
