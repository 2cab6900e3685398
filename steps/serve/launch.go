package serve

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps"
)

// StepID is the ID of the one step of a serve run, and of a bench run.
const (
	StepID      = "serve"
	BenchStepID = "bench"
)

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
	Container string   `json:"container,omitempty"` // the container's name, in a container
	// Entrypoint is the container entrypoint haloforge sets (Command's first
	// word; Wrapper has --entrypoint before the image), "" for the image's own.
	Entrypoint string   `json:"entrypoint,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
	// roof is what the smoke request's speed is measured against (Estimate).
	roof roofline
}

// ScriptArgs are the arguments of the track's serve.sh: in a box, the
// command with its environment (the script enters the box itself); in a
// container, the whole podman run command.
func (l Launch) ScriptArgs() []string {
	inner := append(envPrefix(l.Env), l.Command...)
	if l.Mode == steps.ServeInBox {
		return inner
	}
	return append(slices.Clone(l.Wrapper), afterEntrypoint(l.Command, l.Entrypoint)...)
}

// afterEntrypoint is what follows the image in podman run: the command,
// less its first word when that word is the entrypoint haloforge set.
func afterEntrypoint(command []string, entrypoint string) []string {
	if entrypoint != "" && len(command) > 0 && command[0] == entrypoint {
		return command[1:]
	}
	return command
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
	t, e, ok := servable(req.Track)
	if !ok {
		return Launch{}, fmt.Errorf("track %s has no server to run (haloforge serve knows: %s)", req.Track, strings.Join(ServableTracks(), ", "))
	}
	s := t.Serve.ForPins(req.Pins)
	l := Launch{Track: req.Track, Engine: e.Name(), Env: map[string]string{}, Mode: s.Mode()}
	host, warn, err := checkHost(req.Host, req.Expose)
	if err != nil {
		return Launch{}, err
	}
	if warn != "" {
		l.Warnings = append(l.Warnings, warn)
	}
	l.Host = host
	l.Port = req.Port
	if l.Port == 0 {
		l.Port = port(s, e, req.Pins)
	}
	if l.Port < 1 || l.Port > 65535 {
		return Launch{}, fmt.Errorf("--port %d: a TCP port is 1 to 65535", l.Port)
	}
	l.URL = "http://" + net.JoinHostPort(probeHost(host), strconv.Itoa(l.Port))
	l.Model = req.Model
	if l.Model == "" && s.ModelPin != "" {
		l.Model = req.Pins[s.ModelPin]
	}
	home := req.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	mounts, err := e.Command(&l, s, req, home)
	if err != nil {
		return Launch{}, err
	}
	for k, v := range s.Env {
		l.Env[k] = v
	}
	if l.In, l.Wrapper, err = where(s, req.Pins, req.Root); err != nil {
		return Launch{}, err
	}
	if l.Mode == steps.ServeInContainer {
		// One server per port can run: the port names the container.
		l.Container = "haloforge-serve-" + strconv.Itoa(l.Port)
		w := []string{"podman", "run", "--rm", "--name", l.Container}
		w = append(w, s.Devices...)
		w = append(w, "-p", net.JoinHostPort(host, strconv.Itoa(l.Port))+":"+strconv.Itoa(e.Port()))
		w = append(w, mounts...)
		if env := envPrefix(l.Env); len(env) > 0 {
			for _, kv := range env[1:] {
				w = append(w, "-e", kv)
			}
		}
		if s.Entrypoint && len(l.Command) > 0 {
			l.Entrypoint = l.Command[0]
			w = append(w, "--entrypoint", l.Entrypoint)
		}
		l.Wrapper = append(w, l.In)
	}
	l.Shell = QuoteCommand(l.shellWords())
	return l, nil
}

// shellWords is the whole launch as one command line.
func (l Launch) shellWords() []string {
	if l.Mode == steps.ServeInBox {
		return append(slices.Clone(l.Wrapper), l.ScriptArgs()...)
	}
	return l.ScriptArgs()
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
	// GPU is the GPU's name as detection gives it ("" without one): the
	// device the roofline of the served model's speed is for.
	GPU string `json:"gpu"`
}

// CeilingOf reads the ceiling from a doctor report.
func CeilingOf(r *detect.Report) Ceiling {
	if r == nil {
		return Ceiling{}
	}
	if g := r.Primary(); g != nil {
		name := ""
		if g.Name != nil {
			name = *g.Name
		}
		integrated := g.Integrated != nil && *g.Integrated
		switch {
		case integrated && g.GTTBytes != nil && *g.GTTBytes > 0:
			return Ceiling{Bytes: uint64(*g.GTTBytes), Unified: true, Source: "the GTT of the integrated GPU", GPU: name}
		case !integrated && g.VRAMBytes != nil && *g.VRAMBytes > 0:
			return Ceiling{Bytes: uint64(*g.VRAMBytes), Source: "the VRAM of the GPU", GPU: name}
		}
	}
	if r.Memory.TotalBytes != nil && *r.Memory.TotalBytes > 0 {
		return Ceiling{Bytes: uint64(*r.Memory.TotalBytes), Unified: true,
			Source: "system RAM (no GPU memory figure: a CPU device, or a GPU detection could not size)"}
	}
	return Ceiling{}
}

// Estimate sizes the launch's model against the ceiling. The engine reads
// the model from its file (GGUF) or directory (Hugging Face config and
// weights); a model that is not on disk yet (a Hub ID not downloaded, an
// Ollama name) gets no estimate and a note saying why: the engine sizes it
// itself.
func (l *Launch) Estimate(req Request, c Ceiling) {
	e, ok := EngineNamed(l.Engine)
	if !ok {
		l.FitNote = "unknown engine " + l.Engine + ": no estimate"
		return
	}
	shape, note := e.Shape(l.Model)
	if note != "" {
		l.FitNote = note
		return
	}
	l.roof = roofline{device: c.GPU, weights: shape.Weights}
	if req.NoGPU {
		l.roof.device = llvmpipeDevice
	}
	f := Estimate(FitRequest{Engine: l.Engine, Model: shape, Context: req.Context, Util: req.Util,
		LimitBytes: c.Bytes, Unified: c.Unified})
	l.Fit = &f
	l.FitNote = "against " + text.Bytes(int64(c.Bytes)) + ": " + c.Source
	if c.Bytes == 0 {
		l.FitNote = "the GPU memory ceiling is unknown"
	}
}
