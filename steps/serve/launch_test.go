package serve

import (
	"encoding/binary"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/steps"
)

// pinsOf are the pins of versions.env the launchers read.
var pinsOf = map[string]string{
	"LLAMACPP_DISTRO_BOX": "haloforge-llamacpp", "TOOLBOX_NAME": "haloforge-therock", "VLLM_PORT": "8000",
	"VULKAN_IMAGE": "localhost/haloforge/llamacpp-vulkan:b10590", "VLLM_IMAGE": "docker.io/rocm/vllm:rocm10.0.0",
	"OLLAMA_IMAGE": "docker.io/ollama/ollama:0.32.15-rocm", "OLLAMA_PORT": "11434", "VERIFY_MODEL": "Qwen/Qwen3-0.6B", "LLAMA_MODEL": "",
}

func TestPlanEachTrack(t *testing.T) {
	home := t.TempDir()
	model := writeFile(t, home, "tiny.gguf", tinyLlama(binary.LittleEndian).bytes(t))
	other := writeFile(t, t.TempDir(), "elsewhere.gguf", tinyLlama(binary.LittleEndian).bytes(t))
	tests := []struct {
		name    string
		req     Request
		engine  string
		command []string
		env     map[string]string
		url     string
		shell   string
		args    []string          // ScriptArgs
		pins    map[string]string // nil: pinsOf
	}{
		{
			name: "llama.cpp in the distro box, a model in the home", engine: EngineLlamaCpp,
			req:     Request{Track: "llamacpp-distro", Model: model, Port: 18080, Root: true, NoGPU: true},
			command: []string{"llama-server", "-m", model, "--alias", "tiny.gguf", "--host", "127.0.0.1", "--port", "18080", "-ngl", "999", "-fa", "on", "-ub", "64"},
			env:     map[string]string{"GGML_VK_VISIBLE_DEVICES": "0"},
			url:     "http://127.0.0.1:18080",
			shell:   "distrobox enter --root haloforge-llamacpp -- env GGML_VK_VISIBLE_DEVICES=0 llama-server -m " + model + " --alias tiny.gguf --host 127.0.0.1 --port 18080 -ngl 999 -fa on -ub 64",
			args:    []string{"env", "GGML_VK_VISIBLE_DEVICES=0", "llama-server", "-m", model, "--alias", "tiny.gguf", "--host", "127.0.0.1", "--port", "18080", "-ngl", "999", "-fa", "on", "-ub", "64"},
		},
		{
			name: "llama.cpp's trusted backend for a reference: the CPU, no GPU device, in the same box", engine: EngineLlamaCpp,
			req:     Request{Track: "llamacpp-distro", Model: model, Port: 18081, Root: true, NoGPU: true, Trusted: true},
			command: []string{"llama-server", "-m", model, "--alias", "tiny.gguf", "--host", "127.0.0.1", "--port", "18081", "-ngl", "0", "--device", "none"},
			env:     map[string]string{}, url: "http://127.0.0.1:18081",
			shell: "distrobox enter --root haloforge-llamacpp -- llama-server -m " + model + " --alias tiny.gguf --host 127.0.0.1 --port 18081 -ngl 0 --device none",
		},
		{
			name: "llama.cpp's trusted backend in the Vulkan image: the same image and model, the CPU", engine: EngineLlamaCpp,
			req:     Request{Track: "llamacpp-vulkan", Model: model, Port: 18082, Trusted: true},
			command: []string{"llama-server", "-m", "/models/tiny.gguf", "--alias", "tiny.gguf", "--host", "0.0.0.0", "--port", "8080", "-ngl", "0", "--device", "none"},
			env:     map[string]string{}, url: "http://127.0.0.1:18082",
			shell: "podman run --rm --name haloforge-serve-18082 --device /dev/dri --group-add keep-groups -p 127.0.0.1:18082:8080 -v " +
				home + ":/models:ro,z localhost/haloforge/llamacpp-vulkan:b10590 llama-server -m /models/tiny.gguf --alias tiny.gguf --host 0.0.0.0 --port 8080 -ngl 0 --device none",
		},
		{
			name: "llama.cpp in the box, a model in /tmp (the box sees /tmp as it is), a context", engine: EngineLlamaCpp,
			req:     Request{Track: "llamacpp-distro", Model: other, Context: 8192},
			command: []string{"llama-server", "-m", other, "--alias", "elsewhere.gguf", "--host", "127.0.0.1", "--port", "8080", "-ngl", "999", "-fa", "on", "-c", "8192"},
			env:     map[string]string{}, url: "http://127.0.0.1:8080",
		},
		{
			name: "llama.cpp in the Vulkan image: the model dir mounted, the port published on 127.0.0.1", engine: EngineLlamaCpp,
			req:     Request{Track: "llamacpp-vulkan", Model: model},
			command: []string{"llama-server", "-m", "/models/tiny.gguf", "--alias", "tiny.gguf", "--host", "0.0.0.0", "--port", "8080", "-ngl", "999", "-fa", "on"},
			env:     map[string]string{}, url: "http://127.0.0.1:8080",
			shell: "podman run --rm --name haloforge-serve-8080 --device /dev/dri --group-add keep-groups -p 127.0.0.1:8080:8080 -v " +
				home + ":/models:ro,z localhost/haloforge/llamacpp-vulkan:b10590 llama-server -m /models/tiny.gguf --alias tiny.gguf --host 0.0.0.0 --port 8080 -ngl 999 -fa on",
		},
		{
			name: "vLLM in the TheRock box, the pinned model and port, util capped on the APU", engine: EngineVLLM,
			req:     Request{Track: "therock-toolbox", Util: 0.95, Unified: true},
			command: []string{"vllm", "serve", "Qwen/Qwen3-0.6B", "--served-model-name", "Qwen/Qwen3-0.6B", "--host", "127.0.0.1", "--port", "8000", "--gpu-memory-utilization", "0.90"},
			env:     map[string]string{}, url: "http://127.0.0.1:8000",
			shell: "distrobox enter haloforge-therock -- vllm serve Qwen/Qwen3-0.6B --served-model-name Qwen/Qwen3-0.6B --host 127.0.0.1 --port 8000 --gpu-memory-utilization 0.90",
		},
		{
			name: "vLLM image on a LAN address with a context: the entrypoint is set, so any image runs serve", engine: EngineVLLM,
			req:     Request{Track: "vllm-image", Model: "Qwen/Qwen3-0.6B", Host: "192.168.1.20", Context: 32768, Util: 0.8, Home: "/home/u"},
			command: []string{"vllm", "serve", "Qwen/Qwen3-0.6B", "--served-model-name", "Qwen/Qwen3-0.6B", "--host", "0.0.0.0", "--port", "8000", "--max-model-len", "32768", "--gpu-memory-utilization", "0.80"},
			env:     map[string]string{}, url: "http://192.168.1.20:8000",
			shell: "podman run --rm --name haloforge-serve-8000 --device /dev/kfd --device /dev/dri --group-add keep-groups --security-opt seccomp=unconfined --ipc=host " +
				"-p 192.168.1.20:8000:8000 -v /home/u/.cache/huggingface:/root/.cache/huggingface:z --entrypoint vllm docker.io/rocm/vllm:rocm10.0.0 " +
				"serve Qwen/Qwen3-0.6B --served-model-name Qwen/Qwen3-0.6B --host 0.0.0.0 --port 8000 --max-model-len 32768 --gpu-memory-utilization 0.80",
		},
		{
			name: "vLLM's own image (its entrypoint is vllm serve): serve is said once", engine: EngineVLLM,
			req:     Request{Track: "vllm-image", Model: "Qwen/Qwen3-0.6B", Home: "/home/u"},
			pins:    withPin(pinsOf, "VLLM_IMAGE", "docker.io/vllm/vllm-openai-rocm:v0.19.0"),
			command: []string{"vllm", "serve", "Qwen/Qwen3-0.6B", "--served-model-name", "Qwen/Qwen3-0.6B", "--host", "0.0.0.0", "--port", "8000", "--gpu-memory-utilization", "0.90"},
			env:     map[string]string{}, url: "http://127.0.0.1:8000",
			shell: "podman run --rm --name haloforge-serve-8000 --device /dev/kfd --device /dev/dri --group-add keep-groups --security-opt seccomp=unconfined --ipc=host " +
				"-p 127.0.0.1:8000:8000 -v /home/u/.cache/huggingface:/root/.cache/huggingface:z --entrypoint vllm docker.io/vllm/vllm-openai-rocm:v0.19.0 " +
				"serve Qwen/Qwen3-0.6B --served-model-name Qwen/Qwen3-0.6B --host 0.0.0.0 --port 8000 --gpu-memory-utilization 0.90",
		},
		{
			name: "Ollama: the image's own server, the context in its environment", engine: EngineOllama,
			req:     Request{Track: "ollama", Model: "qwen3:8b", Context: 16384},
			command: []string{}, env: map[string]string{"OLLAMA_HOST": "0.0.0.0:11434", "OLLAMA_CONTEXT_LENGTH": "16384"},
			url: "http://127.0.0.1:11434",
			shell: "podman run --rm --name haloforge-serve-11434 --device /dev/kfd --device /dev/dri --group-add keep-groups --security-opt seccomp=unconfined --ipc=host " +
				"-p 127.0.0.1:11434:11434 -v haloforge-ollama:/root/.ollama -e OLLAMA_CONTEXT_LENGTH=16384 -e OLLAMA_HOST=0.0.0.0:11434 docker.io/ollama/ollama:0.32.15-rocm",
		},
		{
			name: "Ollama on Vulkan: the plain image, /dev/dri only, Vulkan and the integrated GPU switched on", engine: EngineOllama,
			req:     Request{Track: "ollama", Model: "qwen3:8b"},
			pins:    withPin(withPin(pinsOf, "OLLAMA_BACKEND", "vulkan"), "OLLAMA_VULKAN_IMAGE", "docker.io/ollama/ollama:0.32.15"),
			command: []string{}, env: map[string]string{"OLLAMA_HOST": "0.0.0.0:11434", "OLLAMA_VULKAN": "1", "OLLAMA_IGPU_ENABLE": "1"},
			url: "http://127.0.0.1:11434",
			shell: "podman run --rm --name haloforge-serve-11434 --device /dev/dri --group-add keep-groups " +
				"-p 127.0.0.1:11434:11434 -v haloforge-ollama:/root/.ollama -e OLLAMA_HOST=0.0.0.0:11434 -e OLLAMA_IGPU_ENABLE=1 -e OLLAMA_VULKAN=1 docker.io/ollama/ollama:0.32.15",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Pins = pinsOf
			if tc.pins != nil {
				tc.req.Pins = tc.pins
			}
			if tc.req.Home == "" {
				tc.req.Home = home
			}
			l, err := Plan(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if l.Engine != tc.engine || !slices.Equal(l.Command, tc.command) || l.URL != tc.url {
				t.Fatalf("engine %s, url %s, command %q", l.Engine, l.URL, l.Command)
			}
			if len(l.Env) != len(tc.env) {
				t.Fatalf("env %v, want %v", l.Env, tc.env)
			}
			for k, v := range tc.env {
				if l.Env[k] != v {
					t.Fatalf("env %v, want %v", l.Env, tc.env)
				}
			}
			if tc.shell != "" && l.Shell != tc.shell {
				t.Errorf("shell\n got %s\nwant %s", l.Shell, tc.shell)
			}
			if tc.args != nil && !slices.Equal(l.ScriptArgs(), tc.args) {
				t.Errorf("script args %q", l.ScriptArgs())
			}
			if l.Mode == steps.ServeInContainer {
				// the image, then the engine's command; an entrypoint set
				// before the image is the command's first word
				tail := append([]string{l.In}, l.Command...)
				if l.Entrypoint != "" {
					tail = append([]string{"--entrypoint", l.Entrypoint, l.In}, l.Command[1:]...)
				}
				if args := l.ScriptArgs(); len(args) < len(tail) || !slices.Equal(args[len(args)-len(tail):], tail) {
					t.Errorf("a container's script args end in the image and the engine's command: %q", args)
				}
			}
		})
	}
}

func TestPlanRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	gguf := writeFile(t, dir, "m.gguf", []byte("GGUF"))
	notGGUF := writeFile(t, dir, "m.bin", []byte("x"))
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"a track with no server", Request{Track: "therock-aotriton"}, "has no server to run"},
		{"no model and none pinned", Request{Track: "llamacpp-distro"}, "no model"},
		{"every interface without --expose", Request{Track: "llamacpp-distro", Model: gguf, Host: "0.0.0.0"}, "add --expose"},
		{"every IPv6 interface without --expose", Request{Track: "llamacpp-distro", Model: gguf, Host: "::"}, "add --expose"},
		{"a host name", Request{Track: "llamacpp-distro", Model: gguf, Host: "example.com"}, "give an IP address"},
		{"a port out of range", Request{Track: "llamacpp-distro", Model: gguf, Port: 70000}, "1 to 65535"},
		{"llama.cpp and a file that is not GGUF", Request{Track: "llamacpp-distro", Model: notGGUF}, "serves a GGUF file"},
		{"a missing model file", Request{Track: "llamacpp-distro", Model: filepath.Join(dir, "gone.gguf")}, "no such file"},
		{"a directory named .gguf", Request{Track: "llamacpp-distro", Model: mkdir(t, dir, "d.gguf")}, "not a regular file"},
		{"vLLM and a missing local directory", Request{Track: "vllm-image", Model: "./nowhere/model"}, "no such directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Pins = pinsOf
			_, err := Plan(tc.req)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	p := map[string]string{"LLAMACPP_DISTRO_BOX": ""}
	if _, err := Plan(Request{Track: "llamacpp-distro", Model: gguf, Pins: p}); err == nil || !strings.Contains(err.Error(), "LLAMACPP_DISTRO_BOX names no box") {
		t.Errorf("no box: %v", err)
	}
	if _, err := Plan(Request{Track: "llamacpp-distro", Pins: pinsOf}); !errors.Is(err, ErrNoModel) {
		t.Errorf("no model: %v", err)
	}
}

func mkdir(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// A wildcard host is allowed with --expose, with a warning, and probed on loopback.
func TestPlanExposeWarns(t *testing.T) {
	gguf := writeFile(t, t.TempDir(), "m.gguf", []byte("GGUF"))
	l, err := Plan(Request{Track: "llamacpp-distro", Model: gguf, Host: "0.0.0.0", Expose: true, Pins: pinsOf})
	if err != nil {
		t.Fatal(err)
	}
	if l.URL != "http://127.0.0.1:8080" || len(l.Warnings) != 1 || !strings.Contains(l.Warnings[0], "every interface") {
		t.Fatalf("url %s, warnings %q", l.URL, l.Warnings)
	}
}

// The printed command line is one a shell reads back as the same words.
func TestQuoteCommandRoundTrip(t *testing.T) {
	argv := []string{"llama-server", "-m", "/home/u/my models/q'4.gguf", "--alias", "a$b", "", "x;y", "-c", "8192", "é"}
	line := QuoteCommand(argv)
	out, err := exec.Command("bash", "-c", "printf '%s\\0' "+line).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !slices.Equal(got, argv) {
		t.Fatalf("%s read back as %q", line, got)
	}
	if QuoteCommand([]string{"llama-server", "-m", "/a/b.gguf"}) != "llama-server -m /a/b.gguf" {
		t.Error("plain words were quoted")
	}
}

func TestBoxPath(t *testing.T) {
	for in, want := range map[string]string{
		"/home/u/m.gguf":  "/home/u/m.gguf",
		"/tmp/m.gguf":     "/tmp/m.gguf",
		"/srv/models/m":   "/run/host/srv/models/m",
		"/home/user2/m":   "/run/host/home/user2/m",
		"/home/u":         "/run/host/home/u",
		"/home/u/sub/dir": "/home/u/sub/dir",
	} {
		if got := BoxPath(in, "/home/u/"); got != want {
			t.Errorf("BoxPath(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestCeilingOf(t *testing.T) {
	yes, no := true, false
	gtt, vram, ram := int64(124<<30), int64(24<<30), int64(128<<30)
	tests := []struct {
		name    string
		r       *detect.Report
		bytes   uint64
		unified bool
	}{
		{"the APU: GTT", &detect.Report{GPUs: []detect.GPU{{Integrated: &yes, GTTBytes: &gtt, VRAMBytes: &vram, Vendor: "amd"}}, Memory: detect.Memory{TotalBytes: &ram}}, uint64(gtt), true},
		{"a discrete GPU: VRAM", &detect.Report{GPUs: []detect.GPU{{Integrated: &no, VRAMBytes: &vram, GTTBytes: &gtt, Vendor: "amd"}}}, uint64(vram), false},
		{"no GPU: system RAM, unified", &detect.Report{Memory: detect.Memory{TotalBytes: &ram}}, uint64(ram), true},
		{"nothing known", &detect.Report{}, 0, false},
		{"no report", nil, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := CeilingOf(tc.r)
			if c.Bytes != tc.bytes || c.Unified != tc.unified {
				t.Fatalf("%+v", c)
			}
		})
	}
}

// The estimate reads the model's own header; a Hub ID not on disk and an
// Ollama name get no estimate and say why.
func TestLaunchEstimate(t *testing.T) {
	home := t.TempDir()
	model := writeFile(t, home, "tiny.gguf", tinyLlama(binary.LittleEndian).bytes(t))
	req := Request{Track: "llamacpp-distro", Model: model, Pins: pinsOf, Home: home}
	l, err := Plan(req)
	if err != nil {
		t.Fatal(err)
	}
	l.Estimate(req, Ceiling{Bytes: 64 << 30, Unified: true, Source: "GTT"})
	if l.Fit == nil || !l.Fit.Fits || l.Fit.WeightsBytes == 0 || !strings.Contains(l.FitNote, "64 GiB: GTT") {
		t.Fatalf("fit %+v, note %q", l.Fit, l.FitNote)
	}
	l.Estimate(req, Ceiling{Bytes: 4 << 20, Unified: true}) // llama.cpp takes about 5.5 MB for it at its 512 tokens
	if l.Fit.Fits || !strings.HasPrefix(l.Fit.Advice, "does not fit") {
		t.Fatalf("4 MiB: %+v", l.Fit)
	}
	t.Setenv("HF_HOME", t.TempDir())
	vreq := Request{Track: "vllm-image", Model: "Qwen/Qwen3-0.6B", Pins: pinsOf}
	v, err := Plan(vreq)
	if err != nil {
		t.Fatal(err)
	}
	v.Estimate(vreq, Ceiling{Bytes: 64 << 30})
	if v.Fit != nil || !strings.Contains(v.FitNote, "not on disk") {
		t.Fatalf("vLLM Hub ID: %+v %q", v.Fit, v.FitNote)
	}
	o, _ := Plan(Request{Track: "ollama", Model: "qwen3:8b", Pins: pinsOf})
	o.Estimate(Request{}, Ceiling{Bytes: 1})
	if o.Fit != nil || !strings.Contains(o.FitNote, "Ollama sizes") {
		t.Fatalf("ollama: %+v %q", o.Fit, o.FitNote)
	}
}

// A Hub model already downloaded is sized from the cache.
func TestHubSnapshot(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("HF_HOME", cache)
	snap := filepath.Join(cache, "hub", "models--Qwen--Qwen3-0.6B", "snapshots", "abc123")
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, mkdir(t, filepath.Join(cache, "hub", "models--Qwen--Qwen3-0.6B"), "refs"), "main", []byte("abc123\n"))
	if got := hubSnapshot("Qwen/Qwen3-0.6B"); got != snap {
		t.Fatalf("snapshot %q", got)
	}
	for _, bad := range []string{"Qwen3", "../etc/x", "Other/Model"} {
		if got := hubSnapshot(bad); got != "" {
			t.Errorf("%s: %q", bad, got)
		}
	}
}

func TestPlanBench(t *testing.T) {
	home := t.TempDir()
	model := writeFile(t, home, "m.gguf", []byte("GGUF"))
	tiny := writeFile(t, home, "tiny-random.gguf", []byte("GGUF"))
	b, err := PlanBench(BenchRequest{Track: "llamacpp-distro", Pins: pinsOf, Model: model, Depths: []int{0, 32768}, Home: home, Root: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"llama-bench", "-m", model, "-o", "jsonl", "-r", "3", "-fa", "1", "-ngl", "999", "-p", "512,2048", "-n", "128", "-d", "0,32768"}
	if !slices.Equal(b.Command, want) || b.Tiny || b.Result != "llama-bench.jsonl" || !strings.HasPrefix(b.Shell, "distrobox enter --root haloforge-llamacpp -- llama-bench") {
		t.Fatalf("%+v", b)
	}
	b, err = PlanBench(BenchRequest{Track: "llamacpp-distro", Pins: pinsOf, Tiny: tiny, Home: home, NoGPU: true, Depths: []int{4096}})
	if err != nil {
		t.Fatal(err)
	}
	if !b.Tiny || !slices.Contains(b.Command, "-dev") || b.Env["GGML_VK_VISIBLE_DEVICES"] != "0" || b.Command[slices.Index(b.Command, "-d")+1] != "0" {
		t.Fatalf("tiny: %+v", b)
	}
	v, err := PlanBench(BenchRequest{Track: "vllm-image", Pins: pinsOf, URL: "http://127.0.0.1:8000"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Engine != EngineVLLM || !slices.Contains(v.Command, RunDirWord) || v.Wrapper[len(v.Wrapper)-1] != pinsOf["VLLM_IMAGE"] {
		t.Fatalf("vllm: %+v", v)
	}
	// the image's entrypoint is set to vllm, so `bench serve` follows the image
	if v.Entrypoint != "vllm" || !strings.Contains(v.Shell, "--entrypoint vllm "+pinsOf["VLLM_IMAGE"]+" bench serve --backend openai") {
		t.Fatalf("vllm bench in the image: entrypoint %q, %s", v.Entrypoint, v.Shell)
	}
	for _, bad := range []BenchRequest{
		{Track: "ollama", Pins: pinsOf},
		{Track: "vllm-image", Pins: pinsOf},
		{Track: "llamacpp-distro", Pins: pinsOf},
		{Track: "llamacpp-distro", Pins: pinsOf, Model: model, Depths: []int{-1}},
	} {
		if _, err := PlanBench(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// withPin is pins with one more value (pins itself is unchanged).
func withPin(pins map[string]string, name, value string) map[string]string {
	out := maps.Clone(pins)
	out[name] = value
	return out
}
