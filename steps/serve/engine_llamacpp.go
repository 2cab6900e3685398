package serve

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/steps"
)

// EngineLlamaCpp is llama.cpp's llama-server on a GGUF file, benchmarked
// with llama-bench.
const EngineLlamaCpp = "llama.cpp"

// llamaOverhead is llama.cpp's compute and output buffers besides weights
// and KV cache: hundreds of MB at the default batch of 512, with margin.
const llamaOverhead = 1 << 30

// llamaLoadingBudget: llama.cpp's loading phase is quiet at the default
// verbosity for the whole read of the weights, so it gets twice diagnose's
// hang window.
var llamaLoadingBudget = 2 * diagnose.DefaultStallTimeout

// Benchmark sizes: llama-bench's standard prompt and generation lengths
// (the reference table's pp512, pp2048 and tg128), fewer for the tiny model.
var (
	benchSizes     = []string{"-p", "512,2048", "-n", "128"}
	tinyBenchSizes = []string{"-p", "64", "-n", "16"}
)

type llamaCpp struct{}

func (llamaCpp) Name() string      { return EngineLlamaCpp }
func (llamaCpp) Port() int         { return 8080 }
func (llamaCpp) Overhead() uint64  { return llamaOverhead }
func (llamaCpp) TinyModel() string { return "tiny-random.gguf" }

// Command is llama-server on a GGUF file, every layer on the GPU, flash
// attention on; in a container the model's directory is mounted read-only.
func (e llamaCpp) Command(l *Launch, s steps.ServeSpec, req Request, home string) ([]string, error) {
	if err := needModel(l.Model, "GGUF file", s); err != nil {
		return nil, err
	}
	model, err := filepath.Abs(l.Model)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(strings.ToLower(model), ".gguf") {
		return nil, fmt.Errorf("--model %s: llama.cpp serves a GGUF file (…/model.gguf)", l.Model)
	}
	st, err := os.Stat(model)
	if err != nil {
		return nil, fmt.Errorf("--model %s: %w", l.Model, safefile.Cause(err))
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("--model %s: not a regular file", l.Model)
	}
	l.Model = model
	l.Served = filepath.Base(model)
	var mounts []string
	inside, port, bind := model, l.Port, l.Host
	switch l.Mode {
	case steps.ServeInBox:
		inside = BoxPath(model, home)
	case steps.ServeInContainer:
		mounts = []string{"-v", filepath.Dir(model) + ":/models:ro,z"}
		inside, port, bind = "/models/"+filepath.Base(model), e.Port(), "0.0.0.0"
	}
	l.Command = []string{"llama-server", "-m", inside, "--alias", l.Served, "--host", bind, "--port", strconv.Itoa(port),
		"-ngl", "999", "-fa", "on"}
	if req.Context > 0 {
		l.Command = append(l.Command, "-c", strconv.FormatUint(req.Context, 10))
	}
	if req.NoGPU {
		// No GPU here: ggml skips CPU-type Vulkan devices unless named.
		l.Env["GGML_VK_VISIBLE_DEVICES"] = "0"
		l.Warnings = append(l.Warnings, "no GPU: the Vulkan device is Mesa's llvmpipe, a CPU device (HALOFORGE_ALLOW_NO_GPU=1); the numbers are no speed claim")
	}
	return mounts, nil
}

// Shape reads the GGUF header.
func (llamaCpp) Shape(model string) (ModelShape, string) {
	g, err := ReadGGUFModel(model)
	if err != nil {
		return ModelShape{}, "cannot read the GGUF header: " + err.Error()
	}
	s := ShapeFromGGUF(g)
	if w, err := WeightsFromGGUF(g, filepath.Base(model)); err == nil {
		s.Weights = w
	}
	return s, ""
}

// BenchesServer: llama-bench loads the model itself.
func (llamaCpp) BenchesServer() bool { return false }

// ResultFile: llama-bench's JSONL (-o jsonl).
func (llamaCpp) ResultFile() string { return "llama-bench.jsonl" }

// Bench is llama-bench with JSONL output, three repetitions, flash
// attention and every layer on the GPU; the bench script adds the switch
// that turns mmap off, which the build's --help names (-mmp 0 or -lm none).
func (llamaCpp) Bench(b *BenchLaunch, s steps.ServeSpec, req BenchRequest, home string) error {
	model := req.Model
	if model == "" {
		model = req.Pins[s.ModelPin]
	}
	if model == "" && req.Tiny != "" {
		if _, err := os.Stat(req.Tiny); err == nil {
			model, b.Tiny = req.Tiny, true
		}
	}
	if model == "" {
		return fmt.Errorf("%w: give a GGUF file with --model, set %s, or build the track first (its verify step writes a tiny model)", ErrNoModel, s.ModelPin)
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
	switch b.Mode {
	case steps.ServeInBox:
		inside = BoxPath(abs, home)
	case steps.ServeInContainer:
		inside = "/models/" + filepath.Base(abs)
		wrapper = append([]string{"podman", "run", "--rm"}, s.Devices...)
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
	if b.Mode == steps.ServeInContainer {
		if env := envPrefix(b.Env); len(env) > 0 {
			for _, kv := range env[1:] {
				wrapper = append(wrapper, "-e", kv)
			}
		}
		b.Wrapper = append(wrapper, b.In)
	}
	b.Note = "the bench script adds the switch that turns mmap off: -mmp 0 or -lm none, as the build's --help names it"
	return nil
}

// profile: llama-server's start-up at its default verbosity and at -lv 4
// (Debian sid's build on lavapipe, recorded in testdata).
func (llamaCpp) profile() profile {
	return profile{
		phases: []Phase{
			{PhaseStarting, "starting llama-server", 2 * time.Minute},
			{PhaseLoading, "loading the model", llamaLoadingBudget},
			{PhaseModelLoaded, "model loaded, setting up slots", 2 * time.Minute},
			{PhaseHealth, "listening: waiting for /health", time.Minute},
			{PhaseModels, "healthy: waiting for /v1/models", time.Minute},
			{PhaseReady, "ready", 0},
		},
		milestones: []milestone{
			{PhaseLoading, []string{"load_model: loading model", "llama_model_loader: loaded meta data", "load_tensors:", "main: loading model", "srv    load_model:"}},
			{PhaseModelLoaded, []string{"llama_server: model loaded", "main: model loaded"}},
			{PhaseHealth, []string{"llama_server: listening on", "main: server is listening on"}},
		},
		failures: []lineRule{
			{texts: []string{"failed to load model", "error loading model", "llama_init_from_model: failed", "failed to allocate"}, reason: "llama.cpp could not load the model"},
			{texts: []string{"couldn't bind HTTP server socket", "address already in use"}, reason: "the port is taken by another process"},
		},
		warnings: []lineRule{
			{texts: []string{"Device type is CPU"}, reason: "the Vulkan device is a CPU (llvmpipe), not a GPU"},
			{texts: []string{"no usable GPU found", "--gpu-layers option will be ignored"}, reason: "llama.cpp found no GPU: it runs on the CPU"},
		},
		health: "/health", models: "/v1/models",
	}
}
