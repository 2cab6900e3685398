package demo

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/haloforge/haloforge/steps/serve"
)

// The demo's serve screen replays the serve and bench runs of the
// llamacpp-distro proof (make integration-distro, Debian sid's llama.cpp on
// lavapipe, 2026-11-24): the demo track has no recorded vLLM server, and a
// replay of a real run is worth more than an invented one.
const (
	// ServeTrack is the track whose recorded serve the demo replays.
	ServeTrack = "llamacpp-distro"
	// ServeNote says so on the serve screen.
	ServeNote = "demo: replays a real llama-server and llama-bench run of the llamacpp-distro proof (Debian sid, Mesa lavapipe); nothing starts. " +
		"There is no recorded vLLM serve of " + TrackID + ": on your machine, s serves the track you built, with its engine's phases."
	// tinyModelSize is the proof's tiny-random.gguf, in bytes.
	tinyModelSize = 738560
	// listeningMarker is what the serve replay leaves once it "listens"
	// (scripts/serve/llamacpp-distro/serve.sh), under the state dir.
	listeningMarker = "demo/serve-listening"
)

//go:embed serve
var serveData embed.FS

func serveFile(name string) []byte {
	b, err := serveData.ReadFile("serve/" + name)
	if err != nil {
		panic(err) // embedded
	}
	return b
}

// WriteTinyModel writes the proof's tiny model under dir: its real GGUF
// header (the metadata and tensor table python3-gguf wrote) and zeros in
// place of its random weights, a sparse file of the real size. The fit
// estimate reads it as it reads any GGUF.
func WriteTinyModel(dir string) (string, error) {
	path := filepath.Join(dir, "tiny-random.gguf")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	_, werr := f.Write(serveFile("tiny-random.gguf.head"))
	terr := f.Truncate(tinyModelSize)
	cerr := f.Close()
	for _, err := range []error{werr, terr, cerr} {
		if err != nil {
			return "", fmt.Errorf("demo: tiny model: %w", err)
		}
	}
	return path, nil
}

// Prober answers the serve screen's probes as the proof's llama-server did:
// nothing until the replay says it listens, then its recorded /health,
// /v1/models and streamed completion, at the recorded pace.
func Prober(stateDir string) serve.Prober {
	return &recordedProber{marker: filepath.Join(stateDir, filepath.FromSlash(listeningMarker))}
}

type recordedProber struct{ marker string }

func (p *recordedProber) listening() bool {
	_, err := os.Stat(p.marker)
	return err == nil
}

func (p *recordedProber) Get(_ context.Context, path string) (int, []byte, error) {
	if !p.listening() {
		return 0, nil, fmt.Errorf("connection refused (the replay does not listen yet)")
	}
	switch path {
	case "/health":
		return 200, []byte(`{"status":"ok"}`), nil
	case "/v1/models":
		return 200, serveFile("v1-models.json"), nil
	}
	return 404, []byte("not found"), nil
}

// Complete replays the recorded stream (serve/stream.sse, captured from the
// proof's llama-server): the first token after 118 ms and the rest at the
// 586 tokens a second that stream's own timings say.
func (p *recordedProber) Complete(ctx context.Context, _ serve.SmokeRequest) serve.SmokeResult {
	start := time.Now()
	r := &pacedReader{ctx: ctx, chunks: strings.SplitAfter(string(serveFile("stream.sse")), "\n\n"),
		first: 118 * time.Millisecond, gap: time.Second / 586}
	return serve.ReadStream(r, start, time.Now)
}

// pacedReader hands out one chunk at a time after its delay.
type pacedReader struct {
	ctx        context.Context
	chunks     []string
	first, gap time.Duration
	buf        bytes.Buffer
	n          int
}

func (r *pacedReader) Read(b []byte) (int, error) {
	if r.buf.Len() == 0 {
		if r.n >= len(r.chunks) {
			return 0, io.EOF
		}
		wait := r.gap
		if r.n == 0 {
			wait = r.first
		}
		select {
		case <-r.ctx.Done():
			return 0, r.ctx.Err()
		case <-time.After(wait):
		}
		r.buf.WriteString(r.chunks[r.n])
		r.n++
	}
	return r.buf.Read(b)
}
