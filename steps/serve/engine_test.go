package serve

import (
	"bytes"
	"io/fs"
	"slices"
	"testing"

	haloforge "github.com/haloforge/haloforge"
	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/steps"
)

// TestEveryEngineIsComplete: each engine in engines has its own name and
// port, a readiness profile that starts at PhaseStarting, ends ready and
// probes a health path, whose milestones name its own phases, and a
// recorded start-up in recordedStartups (TestReadinessSuccess replays it).
// A new engine fails here until it has all of them (ARCHITECTURE.md, "A
// serve engine").
func TestEveryEngineIsComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range engines {
		t.Run(e.Name(), func(t *testing.T) {
			if e.Name() == "" || seen[e.Name()] {
				t.Fatalf("engine name %q: empty or twice", e.Name())
			}
			seen[e.Name()] = true
			if got, ok := EngineNamed(e.Name()); !ok || got != e {
				t.Errorf("EngineNamed(%q) = %v, %v", e.Name(), got, ok)
			}
			if e.Port() < 1 || e.Port() > 65535 {
				t.Errorf("port %d", e.Port())
			}
			p := e.profile()
			if len(p.phases) < 2 || p.phases[0].ID != PhaseStarting || p.phases[len(p.phases)-1].ID != PhaseReady {
				t.Errorf("phases %v: want starting first and ready last", p.phases)
			}
			ids := map[PhaseID]bool{}
			for _, ph := range p.phases {
				if ids[ph.ID] || ph.Title == "" || (ph.ID != PhaseReady && ph.Budget <= 0) {
					t.Errorf("phase %+v: twice, untitled, or without a stall budget", ph)
				}
				ids[ph.ID] = true
			}
			for _, m := range p.milestones {
				if !ids[m.phase] || len(m.texts) == 0 {
					t.Errorf("milestone %+v names no phase of the engine, or no line", m)
				}
			}
			if p.health == "" || (p.models != "" && !ids[PhaseModels]) {
				t.Errorf("probes %q, %q: a health path, and a models phase for a model list", p.health, p.models)
			}
			if len(p.failures) == 0 {
				t.Error("no failure lines: a start-up that fails would only ever stall")
			}
			if !slices.ContainsFunc(recordedStartups, func(r recordedStartup) bool { return r.engine == e.Name() }) {
				t.Error("no recorded start-up log in recordedStartups (readiness_test.go)")
			}
			if e.Overhead() == 0 {
				t.Error("no overhead: every engine takes memory besides weights and KV cache")
			}
		})
	}
}

// TestEveryServableTrackIsComplete: a track with a Serve spec names an
// engine that exists, its box or its image (one of them) and known pins,
// and has its serve script (and, when its engine benchmarks, its bench
// script) in the scripts tree the binary embeds. A new servable track
// fails here until its catalogue entry and scripts are whole
// (ARCHITECTURE.md, "A servable track").
func TestEveryServableTrackIsComplete(t *testing.T) {
	n := 0
	for _, tr := range steps.Catalogue() {
		s := tr.Serve
		if s == nil {
			continue
		}
		n++
		t.Run(tr.ID, func(t *testing.T) {
			e, ok := EngineNamed(s.Engine)
			if !ok {
				t.Fatalf("engine %q is not one of %v", s.Engine, EngineNames())
			}
			if (s.BoxPin == "") == (s.ImagePin == "") {
				t.Errorf("BoxPin %q, ImagePin %q: want exactly one", s.BoxPin, s.ImagePin)
			}
			if s.BoxPin != "" && len(s.Devices) > 0 {
				t.Errorf("devices %q for a box: a box has the host's devices", s.Devices)
			}
			for _, pin := range []string{s.BoxPin, s.ImagePin, s.PortPin, s.ModelPin} {
				if _, known := pins.Lookup(pin); pin != "" && !known {
					t.Errorf("unknown pin %s (pins/names.go)", pin)
				}
			}
			scripts := []string{ServeScript(tr.ID)}
			if _, benches := e.(Bencher); benches {
				scripts = append(scripts, BenchScript(tr.ID))
			}
			for _, sc := range scripts {
				data, err := fs.ReadFile(haloforge.Scripts, "scripts/"+sc)
				if err != nil {
					t.Errorf("%v", err)
					continue
				}
				if !bytes.HasPrefix(data, []byte("#!/usr/bin/env bash\n")) {
					t.Errorf("%s is not a bash script", sc)
				}
			}
			if EngineOf(tr.ID) != s.Engine || !slices.Contains(ServableTracks(), tr.ID) {
				t.Errorf("EngineOf %q, ServableTracks %v", EngineOf(tr.ID), ServableTracks())
			}
		})
	}
	if n == 0 {
		t.Fatal("no servable track in the catalogue")
	}
}

// TestEngineDecidesBenchAndURL: what used to be switches on the engine's
// name is the engine's: whether a track benchmarks, whether its benchmark
// needs its server, where that server is by default, and its tiny model.
func TestEngineDecidesBenchAndURL(t *testing.T) {
	for _, tc := range []struct {
		track              string
		bench, needsServer bool
		url, tiny          string
	}{
		{"llamacpp-distro", true, false, "http://127.0.0.1:8080", "/state/llamacpp-distro/tiny-random.gguf"},
		{"llamacpp-vulkan", true, false, "http://127.0.0.1:8080", "/state/llamacpp-vulkan/tiny-random.gguf"},
		{"therock-toolbox", true, true, "http://127.0.0.1:8001", ""}, // the port pin
		{"vllm-image", true, true, "http://127.0.0.1:8001", ""},
		{"ollama", false, false, "http://127.0.0.1:11434", ""},
		{"therock-aotriton", false, false, "", ""}, // serves nothing
		{"no-such-track", false, false, "", ""},
	} {
		t.Run(tc.track, func(t *testing.T) {
			pins := map[string]string{"VLLM_PORT": "8001", "OLLAMA_PORT": ""}
			bench, needsServer := CanBench(tc.track)
			if bench != tc.bench || needsServer != tc.needsServer {
				t.Errorf("CanBench = %v, %v", bench, needsServer)
			}
			if got := DefaultURL(tc.track, pins); got != tc.url {
				t.Errorf("DefaultURL = %q, want %q", got, tc.url)
			}
			if got := TinyModel("/state", tc.track); got != tc.tiny {
				t.Errorf("TinyModel = %q, want %q", got, tc.tiny)
			}
		})
	}
}

// TestSmokeSentenceIsOne: the first request is said in one wording, on the
// line mode's line (README.md's "Line mode output") and in the step's
// verdict alike.
func TestSmokeSentenceIsOne(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   SmokeResult
		want string
	}{
		{"with the engine's own figure", SmokeResult{Endpoint: SmokeEndpoint, TTFT: 80e6, Tokens: 9, TokensPerSecond: 534.24, EngineTokensPerSecond: 463.5},
			"/v1/completions answered: first token after 80 ms, 9 tokens at 534.2 tok/s (engine: 463.5 tok/s)"},
		{"one token: no speed", SmokeResult{Endpoint: SmokeEndpoint, TTFT: 12e6, Tokens: 1},
			"/v1/completions answered: first token after 12 ms, 1 token"},
		{"failed", SmokeResult{Endpoint: SmokeEndpoint, Err: "the stream ended without a token"},
			"first request failed: the stream ended without a token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.Sentence(); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if got := (Smoke{Step: StepID, SmokeResult: tc.in}).Sentence(); got != tc.want {
				t.Errorf("the event says %q", got)
			}
		})
	}
}
