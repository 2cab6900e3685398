// Package standin serves stand-ins for the OpenAI-compatible servers that
// cannot run on a machine without an AMD GPU (vLLM on ROCm above all), for
// the tests of steps/verify and of `haloforge verify`: real HTTP servers
// on loopback (net/http/httptest) that answer /v1/models,
// /v1/completions and /v1/chat/completions the way vLLM (legacy
// completions logprobs, no token IDs) or llama-server (a content list with
// token IDs) does, from a canned "model" that answers the built-in prompt
// set, right or in one of the ways broken stacks answer. Nothing here is
// a model: the answers are fixed tables; the protocol, the formats and
// the failures are the real ones.
package standin

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/haloforge/haloforge/steps/verify"
)

// Mode is how the stand-in answers.
type Mode string

// The modes.
const (
	// Right answers every prompt right, with exact logprobs.
	Right Mode = "right"
	// Noisy answers right with GPU-like noise on every logprob
	// (uniform within ±NoiseGPU): another backend's rounding.
	Noisy Mode = "noisy"
	// Flip answers right but chooses the second token at a near-tie of
	// the story prompt and goes on differently from there.
	Flip Mode = "flip"
	// Shifted answers the same tokens with every logprob off by up to
	// ±NoiseWrong: a different computation that happens to agree on the
	// greedy choices.
	Shifted Mode = "shifted"
	// Bangs answers "!" for every token (vLLM on ROCm, vllm#37996).
	Bangs Mode = "bangs"
	// Unused answers <unused49> tokens (a ROCm nightly, TheRock#7714).
	Unused Mode = "unused"
	// Repeat collapses to one repeated token after the first.
	Repeat Mode = "repeat"
	// NaN answers right tokens with NaN logprobs (null from llama-server,
	// bare NaN from a Python server).
	NaN Mode = "nan"
	// Flat answers with all-equal distributions (uniform logits).
	Flat Mode = "flat"
	// Random answers fluent text that is not the answer: what a
	// random-weights or base model says.
	Random Mode = "random"
	// NoLogprobs answers right but returns no logprobs.
	NoLogprobs Mode = "no-logprobs"
	// RejectLogprobs answers right but refuses requests with logprobs
	// (400, as a server without them may).
	RejectLogprobs Mode = "reject-logprobs"
	// Hostile answers right, with escape sequences, C1 controls and a
	// bidi override in its text, tokens, model name and errors.
	Hostile Mode = "hostile"
	// NotOpenAI is a web server that is not OpenAI-compatible (404 on
	// /v1/, an HTML page).
	NotOpenAI Mode = "not-openai"
	// Hang accepts requests and never answers.
	Hang Mode = "hang"
	// Endless answers with a body that never ends.
	Endless Mode = "endless"
	// Failing answers every completion with a 500 and an error object.
	Failing Mode = "failing"
)

// Modes are all the modes, for a command line.
var Modes = []Mode{Right, Noisy, Flip, Shifted, Bangs, Unused, Repeat, NaN, Flat, Random, NoLogprobs, RejectLogprobs, Hostile, NotOpenAI, Hang, Endless, Failing}

// Flavour is whose format the stand-in answers in.
type Flavour string

// The flavours.
const (
	// VLLM answers as vLLM does: legacy completions logprobs (parallel
	// lists, alternatives as a map), no token IDs, Server: uvicorn.
	VLLM Flavour = "vllm"
	// Llama answers as llama-server does: a content list with token IDs
	// for both endpoints, a system_fingerprint, Server: llama.cpp.
	Llama Flavour = "llama"
)

// Noise amplitudes, in nats. NoiseGPU is a third of
// verify.DefaultTolerance.Logprob: rounding well inside the tolerance;
// NoiseWrong is over three times the tolerance.
const (
	NoiseGPU   = 0.1
	NoiseWrong = 1.0
)

// ModelName is the model the stand-in lists.
const ModelName = "standin-model"

// Server is a running stand-in.
type Server struct {
	*httptest.Server
	mode     Mode
	flavour  Flavour
	requests atomic.Int64
	stop     chan struct{}
}

// New starts a stand-in on loopback. Close it when done.
func New(mode Mode, flavour Flavour) *Server {
	s := &Server{mode: mode, flavour: flavour, stop: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Close stops the stand-in, ending any request it holds.
func (s *Server) Close() {
	close(s.stop)
	s.Server.CloseClientConnections()
	s.Server.Close()
}

// Requests is how many completion requests it has received.
func (s *Server) Requests() int64 { return s.requests.Load() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch s.flavour {
	case Llama:
		w.Header().Set("Server", "llama.cpp")
	default:
		w.Header().Set("Server", "uvicorn")
	}
	if s.mode == NotOpenAI {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, "<html><body><h1>404 Not Found</h1>nginx</body></html>")
		return
	}
	switch r.URL.Path {
	case "/v1/models":
		name := ModelName
		if s.mode == Hostile {
			name = "standin\x1b]0;pwned\x07-\u202emodel"
		}
		writeJSON(w, http.StatusOK, map[string]any{"object": "list",
			"data": []map[string]any{{"id": name, "object": "model", "owned_by": string(s.flavour)}}})
	case "/v1/completions", "/v1/chat/completions":
		s.requests.Add(1)
		s.complete(w, r)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{"message": "no such route", "code": 404}})
	}
}

// request is what the stand-in reads of a completion request.
type request struct {
	Model    string `json:"model"`
	Prompt   any    `json:"prompt"`
	Messages []struct {
		Content string `json:"content"`
	} `json:"messages"`
	MaxTokens   int  `json:"max_tokens"`
	Logprobs    any  `json:"logprobs"`
	TopLogprobs *int `json:"top_logprobs"`
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	chat := r.URL.Path == "/v1/chat/completions"
	var req request
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"message": "bad JSON: " + err.Error()}})
		return
	}
	wantProbs := req.Logprobs != nil && req.Logprobs != false
	switch s.mode {
	case Hang:
		select {
		case <-r.Context().Done():
		case <-s.stop:
		}
		return
	case Endless:
		s.endless(w, r)
		return
	case Failing:
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": map[string]any{"message": "HIP error: invalid device function", "code": 500}})
		return
	case RejectLogprobs:
		if wantProbs {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"message": "logprobs are not supported", "code": 400}})
			return
		}
	}
	text := ""
	if chat && len(req.Messages) > 0 {
		text = req.Messages[len(req.Messages)-1].Content
	} else if p, ok := req.Prompt.(string); ok {
		text = p
	}
	ans, ok := answers[text]
	if !ok {
		ans = answer{tokens: words("I", " do", " not", " know", "."), finish: "stop"}
	}
	toks := s.generate(ans, text)
	if req.MaxTokens > 0 && len(toks) > req.MaxTokens {
		toks = toks[:req.MaxTokens]
	}
	finish := ans.finish
	if len(toks) < len(ans.tokens) || finish == "" {
		finish = "length"
	}
	if s.mode == NoLogprobs {
		wantProbs = false
	}
	s.respond(w, chat, toks, finish, wantProbs)
}

// tok is one generated position: the chosen token and the alternatives.
type tok struct {
	text  string
	lp    float64
	alts  []alt
	isNaN bool
}

type alt struct {
	text string
	lp   float64
}

// answer is a canned answer: tokens, and where the story's near-tie is.
type answer struct {
	tokens []string
	finish string
	// tieAt is a position whose second choice is within 0.04 of the
	// first (-1: none); flip is how a Flip server goes on from there.
	tieAt int
	flip  []string
}

func words(ws ...string) []string { return ws }

// answers are the canned right answers to the built-in prompt set.
var answers = map[string]answer{
	"The capital of France is":                            {tokens: words(" Paris", ".", " It", " is", " the", " largest", " city", "."), tieAt: -1},
	"17 + 25 =":                                           {tokens: words(" 42", "\n", "17", " +", " 26", " =", " 43", "\n"), tieAt: -1},
	"Monday, Tuesday, Wednesday, Thursday,":               {tokens: words(" Friday", ",", " Saturday", ",", " and", " Sunday", ".", "\n"), tieAt: -1},
	"What is the capital of Japan? Answer with one word.": {tokens: words("Tokyo", "."), finish: "stop", tieAt: -1},
	"Once upon a time": {tokens: words(",", " there", " was", " a", " little", " girl", " named", " Lily", ".", " She", " loved", " to", " play", " in", " the", " park"),
		tieAt: 6, flip: words(" called", " Rose", ".", " Every", " day", " she", " walked", " to", " the", " river")},
	"def fibonacci(n):": {tokens: words("\n", "   ", " if", " n", " <=", " 1", ":", "\n", "       ", " return", " n", "\n", "   ", " return", " fibonacci", "(n"), tieAt: -1},
}

// randomText is what the Random mode says to every prompt.
var randomText = words(" the", " halo", "s", " of", " tea", "t", " on", " a", " sno", "wy", " e", "ve", " is", " not", " o", "n")

// generate turns a canned answer into positions, as the mode has it.
func (s *Server) generate(ans answer, prompt string) []tok {
	texts := ans.tokens
	switch s.mode {
	case Flip:
		if ans.tieAt >= 0 {
			texts = append(append([]string(nil), texts[:ans.tieAt]...), ans.flip...)
		}
	case Random:
		texts = randomText
	case Bangs:
		texts = make([]string, len(ans.tokens)+8)
		for i := range texts {
			texts[i] = "!"
		}
	case Unused:
		texts = make([]string, len(ans.tokens))
		for i := range texts {
			texts[i] = "<unused49>"
		}
	case Repeat:
		texts = append([]string{ans.tokens[0]}, repeatOf(ans.tokens[min(1, len(ans.tokens)-1)], 15)...)
	case Hostile:
		texts = append(append([]string(nil), texts...), "\x1b[2J", "\u202e", "\u009b31m")
	}
	out := make([]tok, 0, len(texts))
	for i, t := range texts {
		out = append(out, s.position(prompt, i, t, ans))
	}
	return out
}

func repeatOf(t string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = t
	}
	return out
}

// alternatives are the tokens other than the chosen one at a position.
var alternatives = []string{" the", " a", ",", "\n", " of", " and", " to", " in"}

// position is the distribution at position i: the chosen token clearly
// first (alternatives at least 1.5 nats below), except at the canned
// near-tie, where the second choice is 0.04 below. Noise modes add
// their noise to every logprob.
func (s *Server) position(prompt string, i int, chosen string, ans answer) tok {
	base := -0.05 - 0.1*float64(i%3)
	t := tok{text: chosen, lp: base}
	n := 0
	for _, a := range alternatives {
		if a == chosen || n == verify.TopK-1 {
			continue
		}
		t.alts = append(t.alts, alt{text: a, lp: base - 1.5 - float64(n)*(0.7+0.1*float64(i%4))})
		n++
	}
	if i == ans.tieAt && (s.mode == Flip || s.mode == Right || s.mode == Noisy) {
		other := ans.flip[0]
		if s.mode == Flip {
			other = ans.tokens[i]
		}
		t.alts[0] = alt{text: other, lp: base - 0.04}
	}
	switch s.mode {
	case Noisy:
		t.lp += noise(prompt, i, -1, NoiseGPU)
		for j := range t.alts {
			t.alts[j].lp += noise(prompt, i, j, NoiseGPU)
		}
	case Shifted:
		t.lp += noise(prompt, i, -1, NoiseWrong) * 0.05 // the chosen token stays first
		for j := range t.alts {
			t.alts[j].lp += math.Abs(noise(prompt, i, j, NoiseWrong))
		}
	case Flat:
		t.lp = -math.Log(270)
		for j := range t.alts {
			t.alts[j].lp = t.lp
		}
	case NaN:
		t.isNaN = true
	}
	t.lp = math.Min(t.lp, 0)
	return t
}

// noise is a deterministic value in [-amp, amp] for a position.
func noise(prompt string, i, j int, amp float64) float64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%d|%d", prompt, i, j)
	return (float64(h.Sum64()%2001)/1000 - 1) * amp
}

// tokenID is a stable vocabulary ID for a token's text (llama flavour).
func tokenID(text string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(text))
	return int(h.Sum32() % 150000)
}

func (s *Server) respond(w http.ResponseWriter, chat bool, toks []tok, finish string, wantProbs bool) {
	var text strings.Builder
	for _, t := range toks {
		text.WriteString(t.text)
	}
	choice := map[string]any{"index": 0, "finish_reason": finish}
	if chat {
		choice["message"] = map[string]any{"role": "assistant", "content": text.String()}
	} else {
		choice["text"] = text.String()
	}
	body := map[string]any{"id": "cmpl-standin", "created": time.Now().Unix(), "model": ModelName, "choices": []any{choice}}
	if s.flavour == Llama {
		body["system_fingerprint"] = "b0-standin"
	}
	if chat {
		body["object"] = "chat.completion"
	} else {
		body["object"] = "text_completion"
	}
	nanMarker := false
	if wantProbs {
		if chat || s.flavour == Llama {
			choice["logprobs"] = map[string]any{"content": s.contentList(toks)}
		} else {
			choice["logprobs"], nanMarker = s.legacy(toks)
		}
	}
	b, _ := json.Marshal(body)
	if nanMarker {
		// Python's json writes NaN bare: not JSON, but what arrives.
		b = []byte(strings.ReplaceAll(string(b), `"__NaN__"`, "NaN"))
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// contentList is the logprobs as a content list (chat; llama-server for
// both endpoints): llama-server writes NaN as null.
func (s *Server) contentList(toks []tok) []map[string]any {
	var out []map[string]any
	for _, t := range toks {
		top := []map[string]any{s.entry(t.text, t.lp, t.isNaN)}
		for _, a := range t.alts {
			top = append(top, s.entry(a.text, a.lp, t.isNaN))
		}
		e := s.entry(t.text, t.lp, t.isNaN)
		e["top_logprobs"] = top
		out = append(out, e)
	}
	return out
}

func (s *Server) entry(text string, lp float64, isNaN bool) map[string]any {
	b := []byte(text)
	ints := make([]int, len(b))
	for i, c := range b {
		ints[i] = int(c)
	}
	e := map[string]any{"token": text, "bytes": ints, "logprob": lp}
	if isNaN {
		e["logprob"] = nil
	}
	if s.flavour == Llama {
		e["id"] = tokenID(text)
	}
	return e
}

// legacy is vLLM's completions logprobs; NaN is marked for the bare NaN
// a Python server writes.
func (s *Server) legacy(toks []tok) (map[string]any, bool) {
	var tokens []string
	var lps []any
	var tops []map[string]any
	offsets := []int{}
	off := 0
	for _, t := range toks {
		tokens = append(tokens, t.text)
		top := map[string]any{t.text: t.lp}
		for _, a := range t.alts {
			top[a.text] = a.lp
		}
		if t.isNaN {
			lps = append(lps, "__NaN__")
			for k := range top {
				top[k] = "__NaN__"
			}
		} else {
			lps = append(lps, t.lp)
		}
		tops = append(tops, top)
		offsets = append(offsets, off)
		off += len(t.text)
	}
	return map[string]any{"tokens": tokens, "token_logprobs": lps, "top_logprobs": tops, "text_offset": offsets}, len(toks) > 0 && toks[0].isNaN
}

// endless writes the start of an answer and then never ends it, until the
// client goes away or the stand-in closes.
func (s *Server) endless(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"choices":[{"index":0,"text":"`)
	chunk := []byte(strings.Repeat("na", 16<<10))
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.stop:
			return
		default:
		}
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
