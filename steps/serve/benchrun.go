package serve

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/steps/runner"
)

// BenchRequest is what the user asked `haloforge bench --track` for.
type BenchRequest struct {
	Track string
	Pins  map[string]string
	// Model is the model to measure: a GGUF file for llama-bench, the
	// served model's name for vLLM ("" for the track's default).
	Model string
	// Tiny is the track's tiny random-weight model, used when no model is
	// given or pinned (a proof that kernels run, no speed claim).
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
	// Result names the results file in the run directory.
	Result string `json:"result"`
}

// Benchmark sizes: llama-bench's standard prompt and generation lengths
// (the reference table's pp512, pp2048 and tg128), fewer for the tiny model.
var (
	benchSizes     = []string{"-p", "512,2048", "-n", "128"}
	tinyBenchSizes = []string{"-p", "64", "-n", "16"}
)

// PlanBench decides a benchmark run of req.
func PlanBench(req BenchRequest) (BenchLaunch, error) {
	ln, ok := launchers[req.Track]
	if !ok || !ln.benchable {
		var ids []string
		for _, id := range ServableTracks() {
			if launchers[id].benchable {
				ids = append(ids, id)
			}
		}
		return BenchLaunch{}, fmt.Errorf("track %s has no benchmark to run (haloforge bench --track knows: %s; any llama-bench or vLLM result: bench --from FILE)", req.Track, strings.Join(ids, ", "))
	}
	b := BenchLaunch{Track: req.Track, Engine: ln.engine, Env: map[string]string{}, Mode: ln.mode}
	var err error
	if b.In, b.Wrapper, err = ln.where(req.Pins, req.Root); err != nil {
		return BenchLaunch{}, err
	}
	home := req.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	switch ln.engine {
	case EngineLlamaCpp:
		err = b.llamaBench(ln, req, home)
	case EngineVLLM:
		err = b.vllmBench(ln, req)
	}
	if err != nil {
		return BenchLaunch{}, err
	}
	words := b.ScriptArgs()
	if b.Mode == ModeBox {
		words = append(slices.Clone(b.Wrapper), words...)
	}
	b.Shell = QuoteCommand(words)
	return b, nil
}

// ScriptArgs are the arguments of the track's bench.sh (see Launch.ScriptArgs).
func (b BenchLaunch) ScriptArgs() []string {
	if b.Mode == ModeBox {
		return append(envPrefix(b.Env), b.Command...)
	}
	return append(slices.Clone(b.Wrapper), b.Command...)
}

// llamaBench is llama-bench with JSONL output, three repetitions, flash
// attention and every layer on the GPU; the bench script adds the switch
// that turns mmap off, which the build's --help names (-mmp 0 or -lm none).
func (b *BenchLaunch) llamaBench(ln launcher, req BenchRequest, home string) error {
	model := req.Model
	if model == "" {
		model = req.Pins[ln.modelPin]
	}
	if model == "" && req.Tiny != "" {
		if _, err := os.Stat(req.Tiny); err == nil {
			model, b.Tiny = req.Tiny, true
		}
	}
	if model == "" {
		return fmt.Errorf("%w: give a GGUF file with --model, set %s, or build the track first (its verify step writes a tiny model)", ErrNoModel, ln.modelPin)
	}
	abs, err := filepath.Abs(model)
	if err != nil {
		return err
	}
	if st, err := os.Stat(abs); err != nil || !st.Mode().IsRegular() {
		if err == nil {
			err = errors.New("not a regular file")
		}
		return fmt.Errorf("--model %s: %w", model, safefile.Cause(err))
	}
	b.Model = abs
	inside := abs
	var wrapper []string
	switch ln.mode {
	case ModeBox:
		inside = BoxPath(abs, home)
	case ModeContainer:
		inside = "/models/" + filepath.Base(abs)
		wrapper = append([]string{"podman", "run", "--rm"}, ln.gpuFlags...)
		wrapper = append(wrapper, "-v", filepath.Dir(abs)+":/models:ro,z")
	}
	depths := req.Depths
	if len(depths) == 0 || b.Tiny {
		depths = []int{0}
	}
	ds := make([]string, len(depths))
	for i, d := range depths {
		if d < 0 {
			return fmt.Errorf("--depths: %d is not a context depth", d)
		}
		ds[i] = strconv.Itoa(d)
	}
	sizes := benchSizes
	if b.Tiny {
		sizes = tinyBenchSizes
	}
	b.Command = append([]string{"llama-bench", "-m", inside, "-o", "jsonl", "-r", "3", "-fa", "1", "-ngl", "999"}, sizes...)
	b.Command = append(b.Command, "-d", strings.Join(ds, ","))
	if req.NoGPU {
		b.Env["GGML_VK_VISIBLE_DEVICES"] = "0"
		b.Command = append(b.Command, "-dev", "Vulkan0")
	}
	if ln.mode == ModeContainer {
		if env := envPrefix(b.Env); len(env) > 0 {
			for _, kv := range env[1:] {
				wrapper = append(wrapper, "-e", kv)
			}
		}
		b.Wrapper = append(wrapper, b.In)
	}
	b.Result = "llama-bench.jsonl"
	return nil
}

// vllmBench is `vllm bench serve` against a running server: random 1024
// token prompts, 128 generated, one request at a time (the figure a chat
// user sees), its JSON saved in the run directory.
func (b *BenchLaunch) vllmBench(ln launcher, req BenchRequest) error {
	if req.URL == "" {
		return errors.New("vLLM's benchmark measures a running server: start one with haloforge serve, then give its --url")
	}
	model := req.Model
	if model == "" {
		model = req.Pins[ln.modelPin]
	}
	if model == "" {
		return fmt.Errorf("%w: give the served model's name with --model", ErrNoModel)
	}
	b.Model = model
	b.Result = "vllm-bench.json"
	b.Command = []string{"vllm", "bench", "serve", "--backend", "openai", "--base-url", req.URL, "--model", model,
		"--dataset-name", "random", "--random-input-len", "1024", "--random-output-len", "128",
		"--num-prompts", "16", "--max-concurrency", "1",
		"--save-result", "--result-dir", RunDirWord, "--result-filename", b.Result}
	if ln.mode == ModeContainer {
		cache := os.Getenv("HF_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache", "huggingface")
		}
		b.Wrapper = []string{"podman", "run", "--rm", "--network", "host", "-v", cache + ":/root/.cache/huggingface:z",
			"-v", RunDirWord + ":" + RunDirWord + ":z", b.In}
	}
	return nil
}

// RunDirWord stands for the run directory in a bench command: the bench
// script puts the directory in its place (it is known once the run is).
const RunDirWord = "{run_dir}"

// NewBenchRunner makes the runner of a bench run: one step running the
// track's bench script; its results land in <run-dir>/<Result>.
func NewBenchRunner(b BenchLaunch, o RunOptions) (*runner.Runner, error) {
	if o.Plan == nil {
		return nil, fmt.Errorf("bench: no plan of track %s", b.Track)
	}
	tool := b.Command[0]
	if tool == "vllm" {
		tool = "vllm bench serve"
	}
	title := fmt.Sprintf("Benchmark %s with %s", filepath.Base(b.Model), tool)
	p := onePlan(o.Plan, BenchStepID, title, BenchScript(b.Track), map[string]string{"HALOFORGE_BENCH_RESULT": b.Result})
	ro := runner.Options{Plan: p, StateDir: o.StateDir, ScriptsDir: o.ScriptsDir, ToolboxDir: o.ToolboxDir, PinsFile: o.PinsFile,
		Kind: runner.RunBench, NoHistory: true, Args: map[string][]string{BenchStepID: b.ScriptArgs()}, Analyzer: runner.Diagnosis, KeepColor: o.KeepColor}
	if o.Tune != nil {
		o.Tune(&ro)
	}
	return runner.New(ro)
}
