package serve

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
)

// Where an engine runs, as a launcher's mode.
const (
	ModeBox       = "box"       // a distrobox the track made: distrobox enter BOX -- …
	ModeContainer = "container" // a container of the track's image: podman run … IMAGE …
)

// StepID is the ID of the one step of a serve run, and of a bench run.
const (
	StepID      = "serve"
	BenchStepID = "bench"
)

// launcher is how a track serves: its engine, where the engine runs, and
// the pins that name the box or image, the port and a default model.
type launcher struct {
	engine   string
	mode     string
	boxPin   string // ModeBox: the pin naming the box
	imagePin string // ModeContainer: the pin naming the image
	portPin  string // the pin with the default port ("" for the engine's own)
	modelPin string // the pin with a default model ("" for none)
	// gpuFlags are the container flags that hand the GPU in.
	gpuFlags []string
	// benchable says the track's scripts can run the engine's benchmark.
	benchable bool
}

// Container flags for the GPU, as the tracks' own scripts pass them
// (scripts/vllm-image/launcher-body.sh, scripts/ollama/run_ollama.sh).
var (
	rocmFlags   = []string{"--device", "/dev/kfd", "--device", "/dev/dri", "--group-add", "keep-groups", "--security-opt", "seccomp=unconfined", "--ipc=host"}
	vulkanFlags = []string{"--device", "/dev/dri", "--group-add", "keep-groups"}
)

// launchers are the tracks haloforge can serve from, by track ID.
var launchers = map[string]launcher{
	"llamacpp-distro": {engine: EngineLlamaCpp, mode: ModeBox, boxPin: "LLAMACPP_DISTRO_BOX", modelPin: "LLAMA_MODEL", benchable: true},
	"llamacpp-vulkan": {engine: EngineLlamaCpp, mode: ModeContainer, imagePin: "VULKAN_IMAGE", modelPin: "LLAMA_MODEL", gpuFlags: vulkanFlags, benchable: true},
	"therock-toolbox": {engine: EngineVLLM, mode: ModeBox, boxPin: "TOOLBOX_NAME", portPin: "VLLM_PORT", modelPin: "VERIFY_MODEL", benchable: true},
	"vllm-image":      {engine: EngineVLLM, mode: ModeContainer, imagePin: "VLLM_IMAGE", portPin: "VLLM_PORT", modelPin: "VERIFY_MODEL", gpuFlags: rocmFlags, benchable: true},
	"ollama":          {engine: EngineOllama, mode: ModeContainer, imagePin: "OLLAMA_IMAGE", portPin: "OLLAMA_PORT", gpuFlags: rocmFlags},
}

// where names the track's box or image from its pins; for a box, the
// wrapper that runs a command in it (distrobox enter [--root] BOX --).
func (ln launcher) where(pins map[string]string, root bool) (string, []string, error) {
	if ln.mode == ModeContainer {
		if pins[ln.imagePin] == "" {
			return "", nil, fmt.Errorf("%s names no image: set it in versions.env or with --set %s=IMAGE", ln.imagePin, ln.imagePin)
		}
		return pins[ln.imagePin], nil, nil
	}
	box := pins[ln.boxPin]
	if box == "" {
		return "", nil, fmt.Errorf("%s names no box: set it in versions.env or with --set %s=NAME", ln.boxPin, ln.boxPin)
	}
	w := []string{"distrobox", "enter"}
	if root {
		w = append(w, "--root")
	}
	return box, append(w, box, "--"), nil
}

// ServableTracks lists the tracks `haloforge serve` knows, sorted.
func ServableTracks() []string {
	out := make([]string, 0, len(launchers))
	for id := range launchers {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// EngineOf names the engine a track serves with ("" when it serves none).
func EngineOf(track string) string { return launchers[track].engine }

// Default ports of the engines, used when no pin names one.
var enginePorts = map[string]int{EngineLlamaCpp: 8080, EngineVLLM: 8000, EngineOllama: 11434}

// Request is what the user asked `haloforge serve` for.
type Request struct {
	Track string
	// Pins are the track's resolved pins and variables (the plan's Env).
	Pins    map[string]string
	Model   string  // a GGUF file, a Hugging Face model ID or directory, an Ollama model; "" for the track's default
	Context uint64  // 0: the model's trained context, else 4096
	Util    float64 // 0: the default share (0.90 on unified memory)
	Port    int     // 0: the track's or engine's default
	Host    string  // "": 127.0.0.1
	// Expose allows a wildcard host (0.0.0.0, ::): every interface.
	Expose bool
	// Root runs distrobox as root (HALOFORGE_DISTROBOX_ROOT=1).
	Root bool
	// Home is the user's home (where a box sees host paths unchanged); "" means $HOME.
	Home string
	// NoGPU selects a CPU Vulkan device (Mesa llvmpipe) when the machine has
	// no GPU: the tests' HALOFORGE_ALLOW_NO_GPU=1.
	NoGPU bool
	// Unified says the GPU shares the system's memory (the APU): Util is
	// capped at UnifiedUtilCap.
	Unified bool
}

// Launch is everything decided before an engine starts: docs/json.md's
// `serve --dry-run --json` (engine, command, env, url, fit) and how it runs.
type Launch struct {
	Track  string `json:"track"`
	Engine string `json:"engine"`
	// Command is the engine's own command line, as it runs in its box or
	// container; Env the variables haloforge sets for it.
	Command []string          `json:"command"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	Fit     *Fit              `json:"fit"` // null when the model's size cannot be known before the engine runs
	// FitNote says why there is no fit, or what the estimate assumed.
	FitNote string `json:"fit_note,omitempty"`
	Model   string `json:"model"`
	// Served is the name the model list must show ("" accepts any).
	Served string `json:"served_model"`
	Host   string `json:"host"`
	Port   int    `json:"port"`
	// Mode is where it runs (box or container), In the box or image name.
	Mode string `json:"mode"`
	In   string `json:"in"`
	// Wrapper is what runs Command there: "distrobox enter BOX --" or
	// "podman run … IMAGE"; Shell is the whole thing as one line to paste.
	Wrapper   []string `json:"wrapper"`
	Shell     string   `json:"shell"`
	Container string   `json:"container,omitempty"` // the container's name, ModeContainer
	Warnings  []string `json:"warnings,omitempty"`
}

// ScriptArgs are the arguments of the track's serve.sh: in a box, the
// command with its environment (the script enters the box itself); in a
// container, the whole podman run command.
func (l Launch) ScriptArgs() []string {
	inner := append(envPrefix(l.Env), l.Command...)
	if l.Mode == ModeBox {
		return inner
	}
	return append(slices.Clone(l.Wrapper), l.Command...)
}

// envPrefix is "env K=V …" for a non-empty environment, sorted.
func envPrefix(env map[string]string) []string {
	if len(env) == 0 {
		return nil
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := []string{"env"}
	for _, k := range keys {
		out = append(out, k+"="+env[k])
	}
	return out
}

// ErrNoModel says no model was given and the track has no default.
var ErrNoModel = errors.New("no model")

// Plan decides the launch of req: the engine's command, environment, URL
// and where it runs. Every error is bad input: nothing has run.
func Plan(req Request) (Launch, error) {
	ln, ok := launchers[req.Track]
	if !ok {
		return Launch{}, fmt.Errorf("track %s has no server to run (haloforge serve knows: %s)", req.Track, strings.Join(ServableTracks(), ", "))
	}
	l := Launch{Track: req.Track, Engine: ln.engine, Env: map[string]string{}, Mode: ln.mode}
	host, warn, err := checkHost(req.Host, req.Expose)
	if err != nil {
		return Launch{}, err
	}
	if warn != "" {
		l.Warnings = append(l.Warnings, warn)
	}
	l.Host = host
	l.Port = req.Port
	if l.Port == 0 && ln.portPin != "" {
		if p, err := strconv.Atoi(req.Pins[ln.portPin]); err == nil {
			l.Port = p
		}
	}
	if l.Port == 0 {
		l.Port = enginePorts[ln.engine]
	}
	if l.Port < 1 || l.Port > 65535 {
		return Launch{}, fmt.Errorf("--port %d: a TCP port is 1 to 65535", l.Port)
	}
	l.URL = "http://" + net.JoinHostPort(probeHost(host), strconv.Itoa(l.Port))
	l.Model = req.Model
	if l.Model == "" && ln.modelPin != "" {
		l.Model = req.Pins[ln.modelPin]
	}
	if l.Model == "" && ln.engine != EngineOllama {
		return Launch{}, fmt.Errorf("%w: give one with --model (a %s), or set %s", ErrNoModel, modelKind(ln.engine), ln.modelPin)
	}
	if l.In, l.Wrapper, err = ln.where(req.Pins, req.Root); err != nil {
		return Launch{}, err
	}
	if ln.mode == ModeContainer {
		// One server per port can run: the port names the container.
		l.Container = "haloforge-serve-" + strconv.Itoa(l.Port)
	}
	home := req.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	var mounts []string
	switch ln.engine {
	case EngineLlamaCpp:
		mounts, err = l.llamaCommand(ln, req, home)
	case EngineVLLM:
		mounts, err = l.vllmCommand(ln, req, home)
	case EngineOllama:
		mounts = l.ollamaCommand(req)
	}
	if err != nil {
		return Launch{}, err
	}
	if ln.mode == ModeContainer {
		w := []string{"podman", "run", "--rm", "--name", l.Container}
		w = append(w, ln.gpuFlags...)
		w = append(w, "-p", net.JoinHostPort(host, strconv.Itoa(l.Port))+":"+strconv.Itoa(enginePorts[ln.engine]))
		w = append(w, mounts...)
		if env := envPrefix(l.Env); len(env) > 0 {
			for _, kv := range env[1:] {
				w = append(w, "-e", kv)
			}
		}
		l.Wrapper = append(w, l.In)
	}
	l.Shell = QuoteCommand(l.shellWords())
	return l, nil
}

// shellWords is the whole launch as one command line.
func (l Launch) shellWords() []string {
	if l.Mode == ModeBox {
		return append(slices.Clone(l.Wrapper), l.ScriptArgs()...)
	}
	return l.ScriptArgs()
}

func modelKind(engine string) string {
	switch engine {
	case EngineVLLM:
		return "Hugging Face model ID or directory"
	case EngineOllama:
		return "Ollama model name"
	}
	return "GGUF file"
}

// llamaCommand is llama-server on a GGUF file; it returns the container
// mounts the model needs.
func (l *Launch) llamaCommand(ln launcher, req Request, home string) ([]string, error) {
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
	switch ln.mode {
	case ModeBox:
		inside = BoxPath(model, home)
	case ModeContainer:
		mounts = []string{"-v", filepath.Dir(model) + ":/models:ro,z"}
		inside, port, bind = "/models/"+filepath.Base(model), enginePorts[EngineLlamaCpp], "0.0.0.0"
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

// vllmCommand is vllm serve on a Hugging Face model ID or directory.
func (l *Launch) vllmCommand(ln launcher, req Request, home string) ([]string, error) {
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
	switch ln.mode {
	case ModeBox:
		if local {
			inside = BoxPath(model, home)
		}
	case ModeContainer:
		bind, port = "0.0.0.0", enginePorts[EngineVLLM]
		cache := os.Getenv("HF_HOME")
		if cache == "" {
			cache = filepath.Join(home, ".cache", "huggingface")
		}
		mounts = []string{"-v", cache + ":/root/.cache/huggingface:z"}
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

// ollamaCommand is the Ollama server of the image (its entrypoint is
// `ollama serve`), with the models in the volume the ollama track uses.
func (l *Launch) ollamaCommand(req Request) []string {
	l.Command = []string{} // the image's own entrypoint: ollama serve
	l.Served = l.Model
	l.Env["OLLAMA_HOST"] = "0.0.0.0:" + strconv.Itoa(enginePorts[EngineOllama])
	if req.Context > 0 {
		l.Env["OLLAMA_CONTEXT_LENGTH"] = strconv.FormatUint(req.Context, 10)
	}
	return []string{"-v", "haloforge-ollama:/root/.ollama"}
}

// checkHost validates --host: an IP address, "" for 127.0.0.1; a wildcard
// needs expose and earns a warning.
func checkHost(h string, expose bool) (string, string, error) {
	if h == "" || h == "localhost" {
		return "127.0.0.1", "", nil
	}
	a, err := netip.ParseAddr(h)
	if err != nil {
		return "", "", fmt.Errorf("--host %s: give an IP address of this machine (127.0.0.1, a LAN address, or 0.0.0.0 with --expose)", h)
	}
	if a.IsUnspecified() {
		if !expose {
			return "", "", fmt.Errorf("--host %s listens on every interface: anyone who can reach this machine could use the server; add --expose if that is what you want", h)
		}
		return a.String(), fmt.Sprintf("--host %s: the server listens on every interface, with no API key; keep it behind a firewall", a), nil
	}
	return a.String(), "", nil
}

// probeHost is where haloforge itself reaches a server bound to host.
func probeHost(host string) string {
	if a, err := netip.ParseAddr(host); err == nil && a.IsUnspecified() {
		if a.Is6() {
			return "::1"
		}
		return "127.0.0.1"
	}
	return host
}

// BoxPath is where a distrobox sees a host path: the home and /tmp at the
// same place, everything else under /run/host (lib/box.sh's box_path).
func BoxPath(p, home string) string {
	if (home != "" && strings.HasPrefix(p, strings.TrimSuffix(home, "/")+"/")) || strings.HasPrefix(p, "/tmp/") {
		return p
	}
	return "/run/host" + p
}

// ServeScript is a track's serve script in the scripts tree; BenchScript
// its bench script. They live in scripts/serve, outside the track's own
// folder, because they are no input of its build (no cache key changes).
func ServeScript(track string) string { return "serve/" + track + "/serve.sh" }

// BenchScript is a track's bench script in the scripts tree.
func BenchScript(track string) string { return "serve/" + track + "/bench.sh" }

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// QuoteCommand is one line a shell reads back as argv: each word quoted
// only when it needs it (lib/common.sh's quote_cmd).
func QuoteCommand(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=@%+,-") == "" {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

// Ceiling is the most GPU memory an engine may use on this machine, from
// detection: GTT on the APU (what the kernel lets the iGPU map), VRAM on a
// discrete GPU, or system RAM when there is no GPU memory figure.
type Ceiling struct {
	Bytes   uint64 `json:"bytes"`
	Unified bool   `json:"unified"`
	Source  string `json:"source"`
}

// CeilingOf reads the ceiling from a doctor report.
func CeilingOf(r *detect.Report) Ceiling {
	if r == nil {
		return Ceiling{}
	}
	if g := r.Primary(); g != nil {
		integrated := g.Integrated != nil && *g.Integrated
		switch {
		case integrated && g.GTTBytes != nil && *g.GTTBytes > 0:
			return Ceiling{Bytes: uint64(*g.GTTBytes), Unified: true, Source: "the GTT of the integrated GPU"}
		case !integrated && g.VRAMBytes != nil && *g.VRAMBytes > 0:
			return Ceiling{Bytes: uint64(*g.VRAMBytes), Source: "the VRAM of the GPU"}
		}
	}
	if r.Memory.TotalBytes != nil && *r.Memory.TotalBytes > 0 {
		return Ceiling{Bytes: uint64(*r.Memory.TotalBytes), Unified: true,
			Source: "system RAM (no GPU memory figure: a CPU device, or a GPU detection could not size)"}
	}
	return Ceiling{}
}

// Estimate sizes the launch's model against the ceiling. The model is read
// from its file (GGUF) or directory (Hugging Face config and weights); a
// model that is not on disk yet (a Hub ID not downloaded, an Ollama name)
// gets no estimate and a note saying why: the engine sizes it itself.
func (l *Launch) Estimate(req Request, c Ceiling) {
	shape, note := l.shape()
	if note != "" {
		l.FitNote = note
		return
	}
	f := Estimate(FitRequest{Engine: l.Engine, Model: shape, Context: req.Context, Util: req.Util,
		LimitBytes: c.Bytes, Unified: c.Unified})
	l.Fit = &f
	l.FitNote = "against " + text.Bytes(int64(c.Bytes)) + ": " + c.Source
	if c.Bytes == 0 {
		l.FitNote = "the GPU memory ceiling is unknown"
	}
}

// shape reads the model's shape, or says why it cannot.
func (l *Launch) shape() (ModelShape, string) {
	switch l.Engine {
	case EngineLlamaCpp:
		g, err := ReadGGUFModel(l.Model)
		if err != nil {
			return ModelShape{}, "cannot read the GGUF header: " + err.Error()
		}
		return ShapeFromGGUF(g), ""
	case EngineVLLM:
		dir := l.Model
		if !dirExists(dir) {
			dir = hubSnapshot(l.Model)
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
	return ModelShape{}, "Ollama sizes its models itself: no estimate before it runs"
}

// hubSnapshot finds a downloaded Hugging Face model ID in the local cache
// ($HF_HOME/hub or ~/.cache/huggingface/hub), "" when it is not there.
func hubSnapshot(id string) string {
	if !strings.Contains(id, "/") || strings.Contains(id, "..") {
		return ""
	}
	cache := os.Getenv("HF_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		cache = filepath.Join(home, ".cache", "huggingface")
	}
	base := filepath.Join(cache, "hub", "models--"+strings.ReplaceAll(id, "/", "--"))
	if ref, err := os.ReadFile(filepath.Join(base, "refs", "main")); err == nil {
		dir := filepath.Join(base, "snapshots", strings.TrimSpace(string(ref)))
		if dirExists(dir) {
			return dir
		}
	}
	snaps, _ := filepath.Glob(filepath.Join(base, "snapshots", "*", "config.json"))
	if len(snaps) == 0 {
		return ""
	}
	return filepath.Dir(snaps[0])
}
