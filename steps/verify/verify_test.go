package verify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/haloforge/haloforge/steps/verify"
	"github.com/haloforge/haloforge/steps/verify/standin"
)

// These tests ask real HTTP servers on loopback: the stand-ins of
// package standin, for the servers that cannot run here (vLLM on ROCm).
// The real llama-server is asked by scripts/tests/integration-verify.sh.

var flavours = []standin.Flavour{standin.VLLM, standin.Llama}

func run(t testing.TB, s *standin.Server, ref *verify.Record, o verify.Options) (verify.Result, *verify.Record, error) {
	t.Helper()
	o.URL = s.URL
	return verify.Verify(context.Background(), o, ref, "ref.json")
}

func TestKnownAnswers(t *testing.T) {
	tests := []struct {
		mode    standin.Mode
		verdict verify.Verdict
		reason  string
	}{
		{standin.Right, verify.Right, "the 4 known answers are there (Paris, 42, Friday, Tokyo)"},
		{standin.Noisy, verify.Right, "no answer of 6 is degenerate"},
		{standin.NoLogprobs, verify.Right, "known answers are there"},
		{standin.RejectLogprobs, verify.Right, "known answers are there"},
		{standin.Hostile, verify.Right, "known answers are there"},
		{standin.Bangs, verify.Wrong, `prompt 1 (capital, "The capital of France is"): degenerate output: a run of 8 or more "!"`},
		{standin.Unused, verify.Wrong, "placeholder token"},
		{standin.Repeat, verify.Wrong, "one token repeated"},
		{standin.NaN, verify.Wrong, "NaN"},
		{standin.Flat, verify.Wrong, "all-equal distributions"},
		{standin.Random, verify.NotVerified, `4 of 4 known answers missing (prompt 1 "The capital of France is": no "Paris"`},
	}
	for _, fl := range flavours {
		for _, tt := range tests {
			t.Run(string(fl)+"/"+string(tt.mode), func(t *testing.T) {
				s := standin.New(tt.mode, fl)
				defer s.Close()
				res, _, err := run(t, s, nil, verify.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if res.Verdict != tt.verdict || !strings.Contains(res.Reason, tt.reason) {
					t.Fatalf("%s\nwant %s: …%s…", res.Line(), tt.verdict, tt.reason)
				}
				if res.Check != verify.CheckKnownAnswers || len(res.Prompts) != len(verify.Prompts()) {
					t.Errorf("check %s, %d prompts", res.Check, len(res.Prompts))
				}
				assertPrintable(t, res)
			})
		}
	}
}

// assertPrintable fails when anything the server sent reaches the line,
// the details or the JSON unsanitised.
func assertPrintable(t *testing.T, res verify.Result) {
	t.Helper()
	js, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var decoded any
	_ = json.Unmarshal(js, &decoded)
	texts := append([]string{res.Line(), res.Model, res.Server}, res.Details()...)
	texts = append(texts, strings.Fields(string(js))...)
	walk(decoded, func(s string) { texts = append(texts, s) })
	for _, s := range texts {
		for _, r := range s {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
				t.Fatalf("unsanitised %U in %q", r, s)
			}
		}
	}
}

func walk(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case []any:
		for _, e := range x {
			walk(e, f)
		}
	case map[string]any:
		for _, e := range x {
			walk(e, f)
		}
	}
}

// record asks a Right stand-in of the flavour and makes its answers a
// reference, through the file format.
func record(t testing.TB, fl standin.Flavour) *verify.Record {
	t.Helper()
	s := standin.New(standin.Right, fl)
	defer s.Close()
	srv, err := verify.Connect(context.Background(), verify.Options{URL: s.URL, Backend: "CPU"})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := srv.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	data, err := verify.MarshalReference(rec)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := verify.ParseReference(data)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func TestAgainstReference(t *testing.T) {
	tests := []struct {
		mode     standin.Mode
		verdict  verify.Verdict
		reason   string
		minD     float64
		maxD     float64
		evidence bool
	}{
		{standin.Right, verify.Right, "6 prompts agree with the reference recorded on CPU", 0, 0, false},
		// GPU-like noise of up to ±0.1 on every logprob: right.
		{standin.Noisy, verify.Right, "max logprob distance 0.", 0.05, 0.2, false},
		// A near-tie chosen the other way: right, and said.
		{standin.Flip, verify.Right, "1 near-tie ended a comparison early", 0.03, 0.05, false},
		// The same tokens, the numbers off by up to a nat: wrong.
		{standin.Shifted, verify.Wrong, "the distributions differ by", 0.3, 1.1, true},
		{standin.Random, verify.Wrong, "position 0: expected", 0, 100, true},
		{standin.Bangs, verify.Wrong, `degenerate output: a run of 8 or more "!"`, 0, 100, false},
		{standin.NoLogprobs, verify.NotVerified, "the server returned no logprobs (prompt 1, capital)", 0, 0, false},
		{standin.RejectLogprobs, verify.NotVerified, "no logprobs", 0, 0, false},
	}
	for _, refFl := range flavours {
		ref := record(t, refFl)
		for _, fl := range flavours {
			for _, tt := range tests {
				t.Run("ref "+string(refFl)+"/"+string(fl)+"/"+string(tt.mode), func(t *testing.T) {
					s := standin.New(tt.mode, fl)
					defer s.Close()
					res, _, err := run(t, s, ref, verify.Options{})
					if err != nil {
						t.Fatal(err)
					}
					if res.Verdict != tt.verdict || !strings.Contains(res.Reason, tt.reason) {
						t.Fatalf("%s\nwant %s: …%s…", res.Line(), tt.verdict, tt.reason)
					}
					if res.Verdict == verify.Right {
						if res.MaxDistance == nil || *res.MaxDistance < tt.minD || *res.MaxDistance > tt.maxD {
							t.Errorf("max distance %v, want %v..%v", res.MaxDistance, tt.minD, tt.maxD)
						}
					}
					if tt.evidence {
						var ev *verify.Disagreement
						for _, p := range res.Prompts {
							if p.Evidence != nil {
								ev = p.Evidence
								break
							}
						}
						if ev == nil || ev.Why == "" {
							t.Fatalf("no evidence in %+v", res.Prompts)
						}
						if ev.Distance != nil && (*ev.Distance < tt.minD || *ev.Distance > tt.maxD) {
							t.Errorf("evidence distance %v, want %v..%v", *ev.Distance, tt.minD, tt.maxD)
						}
					}
					assertPrintable(t, res)
				})
			}
		}
	}
}

func TestUnusableServers(t *testing.T) {
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr
	}()
	tests := []struct {
		name string
		mode standin.Mode
		url  string
		opts verify.Options
		want string
	}{
		{"not OpenAI-compatible", standin.NotOpenAI, "", verify.Options{}, "is not an OpenAI-compatible server: GET /v1/models answered 404: <html>"},
		{"hangs", standin.Hang, "", verify.Options{Timeout: 300 * time.Millisecond}, "no complete answer within 300ms"},
		{"an endless answer", standin.Endless, "", verify.Options{MaxBody: 1 << 20}, "the answer is larger than 1048576 bytes"},
		{"errors", standin.Failing, "", verify.Options{}, "answered 500: HIP error: invalid device function"},
		{"nothing listens", standin.Right, closed, verify.Options{}, "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := standin.New(tt.mode, standin.VLLM)
			defer s.Close()
			o := tt.opts
			o.URL = s.URL
			if tt.url != "" {
				o.URL = tt.url
			}
			start := time.Now()
			_, _, err := verify.Verify(context.Background(), o, nil, "")
			if !errors.Is(err, verify.ErrUnusable) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want no usable server: …%s…", err, tt.want)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

func TestBadInputAndInterrupt(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8080", "ftp://x/", "http://", "http://h:1/?q=1", "http://u:p@h:1"} {
		if _, err := verify.Connect(context.Background(), verify.Options{URL: u}); !errors.Is(err, verify.ErrBadInput) {
			t.Errorf("URL %q: %v", u, err)
		}
	}
	s := standin.New(standin.Hang, standin.Llama)
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, _, err := verify.Verify(ctx, verify.Options{URL: s.URL}, nil, "")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted: %v", err)
	}
}

func TestNormaliseURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8080":     "http://127.0.0.1:8080",
		"http://127.0.0.1:8080/":    "http://127.0.0.1:8080",
		"http://127.0.0.1:8000/v1":  "http://127.0.0.1:8000",
		"http://127.0.0.1:8000/v1/": "http://127.0.0.1:8000",
		"https://box.lan/llm/v1":    "https://box.lan/llm",
		" http://[::1]:11434/v1 ":   "http://[::1]:11434",
	} {
		got, err := verify.NormaliseURL(in)
		if err != nil || got != want {
			t.Errorf("NormaliseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// The request a server gets: greedy, seeded, top-5 logprobs, no prompt
// cache, not streamed, to the right endpoint.
func TestRequests(t *testing.T) {
	var bodies []map[string]any
	var paths []string
	srv := http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			_, _ = io.WriteString(w, `{"data":[{"id":"m"}]}`)
			return
		}
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		bodies, paths = append(bodies, m), append(paths, r.URL.Path)
		if r.URL.Path == "/v1/chat/completions" {
			_, _ = io.WriteString(w, `{"choices":[{"message":{"content":"Tokyo"},"finish_reason":"stop"}]}`)
			return
		}
		_, _ = io.WriteString(w, `{"choices":[{"text":" Paris","finish_reason":"stop"}]}`)
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	if _, _, err := verify.Verify(context.Background(), verify.Options{URL: "http://" + l.Addr().String() + "/v1"}, nil, ""); err != nil {
		t.Fatal(err)
	}
	if len(bodies) != len(verify.Prompts()) {
		t.Fatalf("%d requests", len(bodies))
	}
	for i, p := range verify.Prompts() {
		b := bodies[i]
		if b["model"] != "m" || b["temperature"] != 0.0 || b["seed"] != float64(verify.Seed) || b["stream"] != false || b["cache_prompt"] != false ||
			b["max_tokens"] != float64(p.MaxTokens) {
			t.Errorf("prompt %s: %v", p.ID, b)
		}
		switch p.Endpoint {
		case verify.Chat:
			msgs, _ := json.Marshal(b["messages"])
			if paths[i] != "/v1/chat/completions" || b["logprobs"] != true || b["top_logprobs"] != float64(verify.TopK) ||
				!bytes.Contains(msgs, []byte(p.Text)) {
				t.Errorf("chat prompt %s: %s %v", p.ID, paths[i], b)
			}
		default:
			if paths[i] != "/v1/completions" || b["logprobs"] != float64(verify.TopK) || b["prompt"] != p.Text {
				t.Errorf("prompt %s: %s %v", p.ID, paths[i], b)
			}
		}
	}
}

// BenchmarkVerify is what a verify costs against a server that answers at
// once (the stand-in, with a reference): the requests, the parsing and
// the judgement. BenchmarkRoundTrips is the baseline: the same requests
// with their answers read and thrown away. Their ratio is what haloforge
// adds to the requests themselves; next to a real server's seconds of
// generation, both are small.
func BenchmarkVerify(b *testing.B) {
	ref := record(b, standin.Llama)
	s := standin.New(standin.Noisy, standin.Llama)
	defer s.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, _, err := run(b, s, ref, verify.Options{})
		if err != nil || res.Verdict != verify.Right {
			b.Fatal(err, res.Line())
		}
	}
}

func BenchmarkRoundTrips(b *testing.B) {
	s := standin.New(standin.Noisy, standin.Llama)
	defer s.Close()
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConns: 2}}
	req := func(path string, body any) {
		var rd io.Reader
		method := http.MethodGet
		if body != nil {
			data, _ := json.Marshal(body)
			rd, method = bytes.NewReader(data), http.MethodPost
		}
		r, _ := http.NewRequest(method, s.URL+path, rd)
		resp, err := client.Do(r)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req("/v1/models", nil)
		for _, p := range verify.Prompts() {
			if p.Endpoint == verify.Chat {
				req("/v1/chat/completions", map[string]any{"model": standin.ModelName, "messages": []map[string]string{{"role": "user", "content": p.Text}},
					"max_tokens": p.MaxTokens, "logprobs": true, "top_logprobs": verify.TopK})
			} else {
				req("/v1/completions", map[string]any{"model": standin.ModelName, "prompt": p.Text, "max_tokens": p.MaxTokens, "logprobs": verify.TopK})
			}
		}
	}
}
