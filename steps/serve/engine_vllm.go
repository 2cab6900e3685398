package serve

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/haloforge/haloforge/steps"
)

// EngineVLLM is vLLM's OpenAI server (vllm serve) on a Hugging Face model
// ID or directory, benchmarked with vllm bench serve against it.
const EngineVLLM = "vllm"

// vllmOverhead is the PyTorch runtime, the profile run's activations and
// the graph pool besides weights and KV cache, with margin; vLLM's own log
// says the real figure.
const vllmOverhead = 3 << 30

// vllmColdBudget: vLLM's compile and loading phases get the 20 minutes a
// cold start on gfx1151 can take (kyuz0's warm-up waits 1200 s;
// ROCm/aiter#900 saw init take 1040 s).
var vllmColdBudget = 20 * time.Minute

type vllm struct{}

func (vllm) Name() string      { return EngineVLLM }
func (vllm) Port() int         { return 8000 }
func (vllm) Overhead() uint64  { return vllmOverhead }
func (vllm) TinyModel() string { return "" }

// Command is vllm serve on a Hugging Face model ID or a directory; in a
// container the Hugging Face cache (and a local directory) is mounted.
func (e vllm) Command(l *Launch, s steps.ServeSpec, req Request, home string) ([]string, error) {
	if err := needModel(l.Model, "Hugging Face model ID or directory", s); err != nil {
		return nil, err
	}
	model, served := l.Model, l.Model
	var mounts []string
	local := strings.HasPrefix(model, "/") || strings.HasPrefix(model, ".") || dirExists(model)
	if local {
		abs, err := filepath.Abs(model)
		if err != nil {
			return nil, err
		}
		if !dirExists(abs) {
			return nil, fmt.Errorf("--model %s: no such directory (vLLM takes a Hugging Face model ID or a directory with config.json)", l.Model)
		}
		model, served = abs, filepath.Base(abs)
		l.Model = abs
	}
	inside, bind, port := model, l.Host, l.Port
	switch l.Mode {
	case steps.ServeInBox:
		if local {
			inside = BoxPath(model, home)
		}
	case steps.ServeInContainer:
		bind, port = "0.0.0.0", e.Port()
		mounts = []string{"-v", hfCache(home) + ":/root/.cache/huggingface:z"}
		if local {
			mounts = append(mounts, "-v", model+":/models/"+served+":ro,z")
			inside = "/models/" + served
		}
	}
	l.Served = served
	l.Command = []string{"vllm", "serve", inside, "--served-model-name", served, "--host", bind, "--port", strconv.Itoa(port)}
	if req.Context > 0 {
		l.Command = append(l.Command, "--max-model-len", strconv.FormatUint(req.Context, 10))
	}
	util := req.Util
	switch {
	case util <= 0:
		util = UnifiedUtilCap // vLLM's own default is 0.9 too; said explicitly
	case util > UnifiedUtilCap && req.Unified:
		l.Warnings = append(l.Warnings, fmt.Sprintf("--util %.2f lowered to %.2f: on unified memory the rest is the system's, and more swaps (kyuz0/amd-strix-halo-vllm-toolboxes#65)", util, UnifiedUtilCap))
		util = UnifiedUtilCap
	}
	l.Command = append(l.Command, "--gpu-memory-utilization", strconv.FormatFloat(util, 'f', 2, 64))
	return mounts, nil
}

// Shape reads the model's Hugging Face config and weights: a directory,
// or a model ID already in the local Hugging Face cache.
func (vllm) Shape(model string) (ModelShape, string) {
	dir := model
	if !dirExists(dir) {
		dir = hubSnapshot(model)
	}
	if dir == "" {
		return ModelShape{}, "the model is not on disk yet (vLLM downloads it): no estimate before it runs; vLLM's own KV cache line says the real figure"
	}
	s, err := ShapeFromHF(dir)
	if err != nil {
		return ModelShape{}, "cannot size the model: " + err.Error()
	}
	return s, ""
}

// BenchesServer: vllm bench serve measures a running server.
func (vllm) BenchesServer() bool { return true }

// ResultFile: vllm bench serve's --save-result JSON.
func (vllm) ResultFile() string { return "vllm-bench.json" }

// Bench is `vllm bench serve` against a running server: random 1024
// token prompts, 128 generated, one request at a time (the figure a chat
// user sees), its JSON saved in the run directory.
func (vllm) Bench(b *BenchLaunch, s steps.ServeSpec, req BenchRequest, home string) error {
	if req.URL == "" {
		return errors.New("vLLM's benchmark measures a running server: start one with haloforge serve, then give its --url")
	}
	model := req.Model
	if model == "" {
		model = req.Pins[s.ModelPin]
	}
	if model == "" {
		return fmt.Errorf("%w: give the served model's name with --model", ErrNoModel)
	}
	b.Model = model
	b.Command = []string{"vllm", "bench", "serve", "--backend", "openai", "--base-url", req.URL, "--model", model,
		"--dataset-name", "random", "--random-input-len", "1024", "--random-output-len", "128",
		"--num-prompts", "16", "--max-concurrency", "1",
		"--save-result", "--result-dir", RunDirWord, "--result-filename", b.Result}
	if b.Mode == steps.ServeInContainer {
		b.Wrapper = []string{"podman", "run", "--rm", "--network", "host", "-v", hfCache(home) + ":/root/.cache/huggingface:z",
			"-v", RunDirWord + ":" + RunDirWord + ":z"}
		if s.Entrypoint {
			b.Entrypoint = b.Command[0]
			b.Wrapper = append(b.Wrapper, "--entrypoint", b.Entrypoint)
		}
		b.Wrapper = append(b.Wrapper, b.In)
	}
	return nil
}

// hfCache is the Hugging Face cache a container mounts: $HF_HOME, else
// ~/.cache/huggingface.
func hfCache(home string) string {
	if cache := os.Getenv("HF_HOME"); cache != "" {
		return cache
	}
	return filepath.Join(home, ".cache", "huggingface")
}

// profile: vLLM's V1 engine start-up, from cold (compile, graph capture)
// to the API server (recorded logs in testdata).
func (vllm) profile() profile {
	return profile{
		phases: []Phase{
			{PhaseStarting, "starting vLLM", 5 * time.Minute},
			{PhaseEngine, "initialising the engine", 5 * time.Minute},
			{PhaseLoading, "loading weights", vllmColdBudget},
			{PhaseCompile, "torch.compile", vllmColdBudget},
			{PhaseKVCache, "profiling and sizing the KV cache", 10 * time.Minute},
			{PhaseGraphCapture, "capturing graphs", 10 * time.Minute},
			{PhaseAPI, "starting the API server", 5 * time.Minute},
			{PhaseHealth, "application started: waiting for /health", 2 * time.Minute},
			{PhaseModels, "healthy: waiting for /v1/models", time.Minute},
			{PhaseReady, "ready", 0},
		},
		milestones: []milestone{
			{PhaseEngine, []string{"Initializing a V1 LLM engine", "Initializing a V0 LLM engine", "Initializing an LLM engine", "Waiting for init message from front-end"}},
			{PhaseLoading, []string{"Starting to load model", "Loading safetensors checkpoint shards", "Loading weights took", "Loading model weights"}},
			{PhaseCompile, []string{"for vLLM's torch.compile", "Dynamo bytecode transform time", "Compiling a graph", "Directly load the compiled graph"}},
			{PhaseKVCache, []string{"Available KV cache memory", "GPU KV cache size", "Memory profiling takes", "# cuda blocks:", "# rocm blocks:"}},
			{PhaseGraphCapture, []string{"Capturing CUDA graph", "Capturing cudagraphs"}},
			{PhaseAPI, []string{"init engine (profile, create kv cache, warmup model) took", "Graph capturing finished", "Starting vLLM API server", "Available routes are:"}},
			{PhaseHealth, []string{"Application startup complete", "Uvicorn running on"}},
		},
		failures: []lineRule{
			{texts: []string{"estimated maximum model length is"}, reason: "the KV cache cannot hold one request of the model's length"},
			{texts: []string{"Engine core initialization failed", "EngineCore failed to start", "Engine process failed to start"}, reason: "vLLM's engine core failed to start"},
			{texts: []string{"CUDA out of memory", "HIP out of memory", "hipErrorOutOfMemory", "torch.OutOfMemoryError"}, reason: "out of GPU memory"},
			{texts: []string{"No available memory for the cache blocks"}, reason: "no GPU memory left for the KV cache"},
		},
		warnings: []lineRule{
			{texts: []string{"UnspecifiedPlatform", "No platform detected, vLLM is running on UnspecifiedPlatform"}, reason: "vLLM found no ROCm platform (amdsmi missing?): it will not use the GPU"},
		},
		heartbeats: []string{"Waiting for 1 local, 0 remote core engine proc", "core engine proc(s) to start"},
		health:     "/health", models: "/v1/models",
	}
}
