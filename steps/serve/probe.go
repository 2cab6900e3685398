package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/haloforge/haloforge/internal/text"
)

// maxProbeBody bounds what a probe reads of an answer.
const maxProbeBody = 1 << 20

// Prober asks a server over HTTP. HTTPProber is the real one; the demo
// replays recorded answers.
type Prober interface {
	// Get returns the status and body of GET base+path; status 0 and an
	// error when nothing answered.
	Get(ctx context.Context, path string) (int, []byte, error)
	// Complete streams a short completion from the server.
	Complete(ctx context.Context, req SmokeRequest) SmokeResult
}

// HTTPProber probes a server at Base (http://host:port) with its own
// client: no proxy (the server is local), short timeouts.
type HTTPProber struct {
	Base   string
	Client *http.Client
}

// NewHTTPProber is a prober of base with a client that never uses a proxy.
func NewHTTPProber(base string) *HTTPProber {
	tr := &http.Transport{Proxy: nil, MaxIdleConns: 2, IdleConnTimeout: 30 * time.Second, DisableCompression: true}
	return &HTTPProber{Base: strings.TrimRight(base, "/"), Client: &http.Client{Transport: tr}}
}

// Get asks base+path with a 2-second limit.
func (p *HTTPProber) Get(ctx context.Context, path string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.Base+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxProbeBody))
	return resp.StatusCode, body, err
}

// SmokeRequest is the first request to a ready server: a short, greedy,
// streamed completion.
type SmokeRequest struct {
	Model     string // the name the server lists
	Prompt    string
	MaxTokens int
	// Timeout bounds the whole request (a cold first request on a big
	// model takes a while).
	Timeout time.Duration
}

// DefaultSmoke is the smoke request of `haloforge serve`.
func DefaultSmoke(model string) SmokeRequest {
	return SmokeRequest{Model: model, Prompt: "The capital of France is", MaxTokens: 32, Timeout: 5 * time.Minute}
}

// SmokeResult is what the smoke request measured.
type SmokeResult struct {
	Endpoint string        `json:"endpoint"`
	TTFT     time.Duration `json:"ttft_ns"`
	Tokens   int           `json:"tokens"`
	// TokensPerSecond is (tokens after the first) / (time from the first
	// token to the last): the decode speed, measured here.
	TokensPerSecond float64 `json:"tokens_per_s"`
	// EngineTokensPerSecond is the engine's own decode figure (llama.cpp's
	// timings.predicted_per_second); 0 when it gives none.
	EngineTokensPerSecond float64 `json:"engine_tokens_per_s"`
	Text                  string  `json:"text"`
	Err                   string  `json:"error,omitempty"`
	// The decode speed against the memory-bandwidth roofline (bench's):
	// the ceiling this model could reach on this device and the share of
	// it, null when either is unknown; Roofline says it in a sentence, or
	// why there is no ceiling ("" when the model's size is not known).
	RooflinePerS *float64 `json:"roofline_tokens_per_s"`
	RooflinePct  *float64 `json:"roofline_pct"`
	Roofline     string   `json:"roofline,omitempty"`
}

// SmokeEndpoint is where the smoke request goes: the OpenAI completions
// API, which llama-server, vLLM and Ollama all serve.
const SmokeEndpoint = "/v1/completions"

// Complete posts a streamed completion and times it.
func (p *HTTPProber) Complete(ctx context.Context, sr SmokeRequest) SmokeResult {
	res := SmokeResult{Endpoint: SmokeEndpoint}
	if sr.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, sr.Timeout)
		defer cancel()
	}
	body, _ := json.Marshal(map[string]any{"model": sr.Model, "prompt": sr.Prompt, "max_tokens": sr.MaxTokens,
		"temperature": 0, "stream": true})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.Base+SmokeEndpoint, bytes.NewReader(body))
	if err != nil {
		res.Err = err.Error()
		return res
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := p.Client.Do(req)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		res.Err = fmt.Sprintf("%s answered %d: %s", SmokeEndpoint, resp.StatusCode, text.Printable(string(b), 240))
		return res
	}
	return ReadStream(resp.Body, start, time.Now)
}

// ReadStream reads an OpenAI server-sent event stream of completion chunks
// and times it from start: the first chunk with text is the first token,
// and the decode speed is the chunks with text after it over their time
// (llama-server, vLLM and Ollama stream about a token a chunk); the token
// count is the engine's own (usage, timings) when it says one.
func ReadStream(r io.Reader, start time.Time, now func() time.Time) SmokeResult {
	res := SmokeResult{Endpoint: SmokeEndpoint}
	sc := bufio.NewScanner(io.LimitReader(r, 16<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var first, last time.Time
	var answer strings.Builder
	chunks, engineTokens := 0, 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			break
		}
		var chunk struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
			Timings *struct {
				PredictedN         int     `json:"predicted_n"`
				PredictedPerSecond float64 `json:"predicted_per_second"`
			} `json:"timings"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(data), &chunk) != nil {
			continue
		}
		if chunk.Error != nil {
			res.Err = "the server said: " + text.Printable(chunk.Error.Message, 240)
			return res
		}
		if chunk.Timings != nil && chunk.Timings.PredictedPerSecond > 0 {
			res.EngineTokensPerSecond = chunk.Timings.PredictedPerSecond
		}
		if chunk.Timings != nil && chunk.Timings.PredictedN > 0 {
			engineTokens = chunk.Timings.PredictedN
		}
		if chunk.Usage != nil && chunk.Usage.CompletionTokens > 0 {
			engineTokens = chunk.Usage.CompletionTokens
		}
		if len(chunk.Choices) == 0 || chunk.Choices[0].Text == "" {
			continue
		}
		t := now()
		if first.IsZero() {
			first = t
			res.TTFT = t.Sub(start)
		}
		last = t
		chunks++
		if answer.Len() < 512 {
			answer.WriteString(chunk.Choices[0].Text)
		}
	}
	if err := sc.Err(); err != nil && chunks == 0 {
		res.Err = "reading the stream: " + err.Error()
	}
	if chunks == 0 && res.Err == "" {
		res.Err = "the stream ended without a token"
	}
	// A chunk is a token, except where a token is part of a character
	// (byte tokens): the engine's own count, when it gives one, is right.
	res.Tokens = max(chunks, engineTokens)
	if chunks > 1 && last.After(first) {
		res.TokensPerSecond = float64(chunks-1) / last.Sub(first).Seconds()
	}
	// One line through the one sanitiser, as every step line goes: a
	// model's answer reaches the screen as safely as the engine's log.
	// U+FFFD (a byte token cut in the middle of a character) is left out.
	res.Text = text.Printable(strings.ReplaceAll(answer.String(), "\uFFFD", ""), 120)
	return res
}
