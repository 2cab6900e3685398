package serve

import (
	"strconv"
	"time"

	"github.com/haloforge/haloforge/steps"
)

// EngineOllama is the Ollama server of the track's image (its entrypoint
// is `ollama serve`); it starts without a model and sizes its models itself.
const EngineOllama = "ollama"

type ollama struct{}

func (ollama) Name() string      { return EngineOllama }
func (ollama) Port() int         { return 11434 }
func (ollama) Overhead() uint64  { return llamaOverhead } // Ollama runs llama.cpp's engine
func (ollama) TinyModel() string { return "" }

// Command is the image's own entrypoint (ollama serve), listening on all
// of the container's interfaces, with the models in the volume the ollama
// track uses. The model is the name a client asks for; none is needed.
func (e ollama) Command(l *Launch, _ steps.ServeSpec, req Request, _ string) ([]string, error) {
	l.Command = []string{} // the image's own entrypoint: ollama serve
	l.Served = l.Model
	l.Env["OLLAMA_HOST"] = "0.0.0.0:" + strconv.Itoa(e.Port())
	if req.Context > 0 {
		l.Env["OLLAMA_CONTEXT_LENGTH"] = strconv.FormatUint(req.Context, 10)
	}
	return []string{"-v", "haloforge-ollama:/root/.ollama"}, nil
}

// Shape: an Ollama name is not a file haloforge can read.
func (ollama) Shape(string) (ModelShape, string) {
	return ModelShape{}, "Ollama sizes its models itself: no estimate before it runs"
}

// profile: Ollama's server start-up, its GPU discovery and /api/version
// (recorded logs in testdata).
func (ollama) profile() profile {
	return profile{
		phases: []Phase{
			{PhaseStarting, "starting Ollama", time.Minute},
			{PhaseListening, "listening: discovering GPUs", 2 * time.Minute},
			{PhaseGPUDiscovery, "discovering GPUs", 3 * time.Minute},
			{PhaseHealth, "GPUs known: waiting for /api/version", time.Minute},
			{PhaseReady, "ready", 0},
		},
		milestones: []milestone{
			{PhaseListening, []string{"Listening on "}},
			{PhaseGPUDiscovery, []string{"looking for compatible GPUs", "discovering available GPUs"}},
			{PhaseHealth, []string{"msg=\"inference compute\""}},
		},
		failures: []lineRule{
			{texts: []string{"bind: address already in use"}, reason: "the port is taken by another process"},
			{texts: []string{"Error: listen tcp"}, reason: "Ollama could not listen on its address"},
		},
		warnings: []lineRule{
			{texts: []string{"filtering device which didn't fully initialize"}, reason: "Ollama dropped a GPU that did not initialise (the gfx1151 iGPU on 0.18–0.2x: use ≥ 0.30)"},
			{all: []string{"msg=\"inference compute\"", "library=cpu"}, reason: "Ollama found no usable GPU: models will run on the CPU"},
			{texts: []string{"no compatible GPUs were discovered"}, reason: "Ollama found no usable GPU: models will run on the CPU"},
		},
		health: "/api/version",
	}
}
