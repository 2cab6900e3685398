package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of Options.
const (
	// DefaultTimeout bounds one request: a cold first request on a big
	// model (weights paged in, kernels compiled) takes a while; a server
	// that says nothing for this long is not usable.
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxBody bounds one response. The largest answer of the
	// prompt set (48 tokens, top-5 each) is about 25 KB.
	DefaultMaxBody = 4 << 20
)

// Options say which server to check and how.
type Options struct {
	// URL is the server's base URL, with or without /v1
	// (http://127.0.0.1:8080, http://127.0.0.1:8000/v1).
	URL string
	// Model is the model to ask; "" for the first that /v1/models lists.
	Model string
	// Timeout bounds each request (0: DefaultTimeout).
	Timeout time.Duration
	// MaxBody bounds each response (0: DefaultMaxBody).
	MaxBody int64
	// Client makes the requests; nil for one that never uses a proxy
	// (the server is usually on this machine or the local network).
	Client *http.Client
	// Backend is what the server computes on, in the user's words,
	// recorded in a reference ("CPU", "Vulkan on the 8060S").
	Backend string
	// Version is haloforge's version, recorded in a reference.
	Version string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// ErrBadInput marks an error in what the user gave (a URL that is not
// one, a reference that cannot be used): nothing was judged.
var ErrBadInput = errors.New("bad input")

// ErrUnusable marks a server that cannot be checked: unreachable, not
// OpenAI-compatible, answering with errors, too slowly or too much.
var ErrUnusable = errors.New("no usable server")

// unusable wraps why a server cannot be checked.
type unusable struct {
	why string
}

func (e *unusable) Error() string { return e.why }
func (e *unusable) Is(t error) bool {
	return t == ErrUnusable
}

func unusableErr(format string, a ...any) error {
	return &unusable{why: fmt.Sprintf(format, a...)}
}

type badInput struct{ error }

func (e badInput) Is(t error) bool { return t == ErrBadInput }
func (e badInput) Unwrap() error   { return e.error }

// NormaliseURL is the server's base URL: http or https, a host, no query
// or fragment, any trailing /v1 or slash removed (requests add /v1/…).
func NormaliseURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", badInput{fmt.Errorf("--url %q: want the server's http:// or https:// URL, with or without /v1 (e.g. http://127.0.0.1:8080)", printable(raw, 200))}
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", badInput{fmt.Errorf("--url %q: want the server's URL without a user, query or fragment (e.g. http://127.0.0.1:8080/v1)", printable(raw, 200))}
	}
	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, "/v1")
	u.Path, u.RawPath = strings.TrimRight(p, "/"), ""
	return u.String(), nil
}

// Server is an OpenAI-compatible server being checked.
type Server struct {
	base    string
	model   string
	ident   string
	opts    Options
	client  *http.Client
	noProbs bool // the server refused logprobs once: ask without them
}

// Connect checks that the server at o.URL answers GET /v1/models as an
// OpenAI-compatible server does and picks the model (o.Model, else the
// first listed). Its error wraps ErrBadInput or ErrUnusable, or is the
// context's.
func Connect(ctx context.Context, o Options) (*Server, error) {
	base, err := NormaliseURL(o.URL)
	if err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Server{base: base, opts: o, client: o.Client}
	if s.client == nil {
		tr := &http.Transport{Proxy: nil, MaxIdleConns: 2, IdleConnTimeout: 30 * time.Second, DisableCompression: true,
			DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext}
		s.client = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	status, hdr, body, err := s.do(ctx, http.MethodGet, "/v1/models", nil)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, unusableErr("%s is not an OpenAI-compatible server: GET /v1/models answered %d%s", base, status, excerpt(body))
	}
	var models struct {
		Data []struct {
			ID      string `json:"id"`
			OwnedBy string `json:"owned_by"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &models); err != nil || models.Data == nil {
		return nil, unusableErr("%s is not an OpenAI-compatible server: GET /v1/models is not a model list%s", base, excerpt(body))
	}
	s.model = o.Model
	if s.model == "" {
		if len(models.Data) == 0 || models.Data[0].ID == "" {
			return nil, unusableErr("%s serves no model (GET /v1/models lists none): give one with --model", base)
		}
		s.model = models.Data[0].ID
	}
	s.ident = strings.TrimSpace(hdr.Get("Server"))
	if s.ident == "" && len(models.Data) > 0 {
		s.ident = models.Data[0].OwnedBy
	}
	return s, nil
}

// Close lets go of the connections kept for the next request.
func (s *Server) Close() { s.client.CloseIdleConnections() }

// Model is the model asked.
func (s *Server) Model() string { return s.model }

// URL is the server's base URL.
func (s *Server) URL() string { return s.base }

// Ident is what the server says it is, as it said it (not yet printable).
func (s *Server) Ident() string { return s.ident }

// excerpt is ": " and the start of a body, printable, or "".
func excerpt(body []byte) string {
	t := printable(string(body), 100)
	if t == "" {
		return ""
	}
	return ": " + t
}

// do makes one request, time-bounded by the options' timeout and
// size-bounded by MaxBody. A transport failure, a timeout or an oversized
// body is ErrUnusable; the context's own end is returned as it is.
func (s *Server) do(ctx context.Context, method, path string, payload any) (int, http.Header, []byte, error) {
	rctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	var body io.Reader
	if payload != nil {
		b, err := json.Marshal(payload)
		if err != nil {
			return 0, nil, nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(rctx, method, s.base+path, body)
	if err != nil {
		return 0, nil, nil, badInput{err}
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, nil, s.transportErr(ctx, rctx, method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, s.opts.MaxBody+1))
	if err != nil {
		return 0, nil, nil, s.transportErr(ctx, rctx, method, path, err)
	}
	if int64(len(data)) > s.opts.MaxBody {
		return 0, nil, nil, unusableErr("%s %s%s: the answer is larger than %d bytes: not a completion", method, s.base, path, s.opts.MaxBody)
	}
	return resp.StatusCode, resp.Header, data, nil
}

func (s *Server) transportErr(ctx, rctx context.Context, method, path string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return unusableErr("%s %s%s: no complete answer within %s", method, s.base, path, s.opts.Timeout)
	}
	return unusableErr("%s %s%s: %s", method, s.base, path, printable(err.Error(), maxShown))
}

// request is the body of one prompt's request: greedy (temperature 0,
// top_p 1), the fixed seed, top-TopK logprobs, no streaming, and no reuse
// of an earlier request's prompt cache (llama-server's cache_prompt; the
// others ignore the field), so the numbers do not depend on what the
// server was asked before.
func (s *Server) request(p Prompt, withProbs bool) map[string]any {
	r := map[string]any{"model": s.model, "max_tokens": p.MaxTokens, "temperature": 0, "top_p": 1,
		"seed": Seed, "stream": false, "cache_prompt": false}
	if p.Endpoint == Chat {
		r["messages"] = []map[string]string{{"role": "user", "content": p.Text}}
		if withProbs {
			r["logprobs"], r["top_logprobs"] = true, TopK
		}
	} else {
		r["prompt"] = p.Text
		if withProbs {
			r["logprobs"] = TopK
		}
	}
	return r
}

// Ask sends one prompt and reads the answer. A server that refuses the
// logprobs fields (400 or 422 naming them) is asked again without them,
// and from then on; its answers then have no logprobs.
func (s *Server) Ask(ctx context.Context, p Prompt) (Answer, error) {
	status, _, body, err := s.do(ctx, http.MethodPost, p.Endpoint.path(), s.request(p, !s.noProbs))
	if err != nil {
		return Answer{}, err
	}
	if (status == http.StatusBadRequest || status == http.StatusUnprocessableEntity) && !s.noProbs &&
		bytes.Contains(bytes.ToLower(body), []byte("logprob")) {
		s.noProbs = true
		status, _, body, err = s.do(ctx, http.MethodPost, p.Endpoint.path(), s.request(p, false))
		if err != nil {
			return Answer{}, err
		}
	}
	if status != http.StatusOK {
		msg := excerpt(body)
		var w wire
		if json.Unmarshal(body, &w) == nil && len(w.Error) > 0 {
			msg = ": " + errorMessage(w.Error)
		}
		return Answer{}, unusableErr("POST %s%s answered %d%s", s.base, p.Endpoint.path(), status, msg)
	}
	a, err := ParseAnswer(p, body)
	if err != nil {
		return a, unusableErr("POST %s%s: %v", s.base, p.Endpoint.path(), err)
	}
	if fp := a.fingerprint; fp != "" && !strings.Contains(s.ident, fp) {
		s.ident = strings.TrimSpace(s.ident + " " + fp)
	}
	return a, nil
}

// Run asks the whole prompt set, in order, and returns the answers as a
// record. Its error is ErrUnusable (wrapped) or the context's.
func (s *Server) Run(ctx context.Context) (*Record, error) {
	rec := &Record{Schema: ReferenceSchema, PromptSet: PromptSetID, Model: s.model, Backend: s.opts.Backend,
		Recorded: s.opts.Now().UTC().Truncate(time.Second), Haloforge: s.opts.Version, TopK: TopK}
	for _, p := range prompts {
		a, err := s.Ask(ctx, p)
		if err != nil {
			return nil, err
		}
		rec.Answers = append(rec.Answers, a)
	}
	rec.Server = s.ident
	return rec, nil
}
