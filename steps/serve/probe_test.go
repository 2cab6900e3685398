package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// steadyClock advances by step at every call, starting at start+first.
func steadyClock(start time.Time, first, step time.Duration) func() time.Time {
	t := start.Add(first - step)
	return func() time.Time {
		t = t.Add(step)
		return t
	}
}

// The real stream of llama-server (Debian sid build 11669) on the tiny
// model: byte tokens make some chunks empty or half characters, so the
// engine's own count (usage, timings) is the token count.
func TestReadStreamRecordedLlamaServer(t *testing.T) {
	f, err := os.Open("testdata/llama-server-sid-stream.sse")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res := ReadStream(f, t0, steadyClock(t0, 120*time.Millisecond, 10*time.Millisecond))
	if res.Err != "" || res.Tokens != 9 || res.TTFT != 120*time.Millisecond {
		t.Fatalf("%+v", res)
	}
	if res.EngineTokensPerSecond < 586 || res.EngineTokensPerSecond > 587 {
		t.Errorf("engine tok/s %v", res.EngineTokensPerSecond)
	}
	if res.TokensPerSecond < 99 || res.TokensPerSecond > 101 { // one chunk every 10 ms
		t.Errorf("measured tok/s %v", res.TokensPerSecond)
	}
	if strings.ContainsRune(res.Text, '\uFFFD') || res.Text == "" {
		t.Errorf("text %q", res.Text)
	}
}

func TestReadStreamErrors(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"an error chunk":            {`data: {"error":{"message":"model \u001b[31mnot\u001b[0m found"}}` + "\n\n", "the server said: model not found"},
		"nothing but DONE":          {"data: [DONE]\n\n", "ended without a token"},
		"not a stream":              {"<html>busy</html>\n", "ended without a token"},
		"only empty chunks":         {`data: {"choices":[{"text":""}]}` + "\n\ndata: [DONE]\n\n", "ended without a token"},
		"a chunk that is not JSON ": {"data: {broken\n\n", "ended without a token"},
	} {
		t.Run(name, func(t *testing.T) {
			res := ReadStream(strings.NewReader(tc.in), t0, time.Now)
			if !strings.Contains(res.Err, tc.want) || strings.ContainsRune(res.Err, 0x1b) {
				t.Fatalf("%+v, want %q", res, tc.want)
			}
		})
	}
}

// The prober against a real HTTP server on the loopback: a probe, a
// refused connection, and a streamed completion timed from the request.
func TestHTTPProber(t *testing.T) {
	stream, err := os.ReadFile("testdata/llama-server-sid-stream.sse")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			w.Write([]byte(`{"status":"ok"}`))
		case SmokeEndpoint:
			if r.Method != http.MethodPost || !strings.Contains(r.Header.Get("Content-Type"), "json") {
				http.Error(w, "want a JSON POST", http.StatusBadRequest)
				return
			}
			time.Sleep(50 * time.Millisecond)
			w.Write(stream)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	p := NewHTTPProber(srv.URL)
	if status, body, err := p.Get(context.Background(), "/health"); err != nil || status != 200 || string(body) != `{"status":"ok"}` {
		t.Fatalf("health: %d %q %v", status, body, err)
	}
	if status, _, _ := p.Get(context.Background(), "/nope"); status != 404 {
		t.Fatalf("404: %d", status)
	}
	res := p.Complete(context.Background(), DefaultSmoke("tiny.gguf"))
	if res.Err != "" || res.Tokens != 9 || res.TTFT < 50*time.Millisecond {
		t.Fatalf("complete: %+v", res)
	}
	srv.Close()
	if status, _, err := p.Get(context.Background(), "/health"); status != 0 || err == nil {
		t.Fatalf("closed server: %d %v", status, err)
	}
	if res := p.Complete(context.Background(), DefaultSmoke("x")); res.Err == "" {
		t.Fatal("a closed server answered")
	}
}

// FuzzReadStream: any bytes give a bounded, printable result and no panic.
func FuzzReadStream(f *testing.F) {
	b, _ := os.ReadFile("testdata/llama-server-sid-stream.sse")
	f.Add(b)
	f.Add([]byte("data: {\"choices\":[{\"text\":\"\\u0007x\"}]}\n\ndata: [DONE]\n"))
	f.Add([]byte("data: {\"error\":{\"message\":\"\\u001b]0;title\\u0007\"}}\n"))
	f.Add([]byte("data: {\"choices\":[{\"text\":\"\u202eevil\u0085\"}]}\n\ndata: {\"error\":{\"message\":\"\u2066x\u009b\"}}\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		res := ReadStream(strings.NewReader(string(in)), t0, time.Now)
		for _, s := range []string{res.Text, res.Err} {
			if strings.ContainsAny(s, "\x1b\x07\r\n\u0085\u009b\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069") {
				t.Fatalf("control characters reach the screen: %q", s)
			}
		}
		if len([]rune(res.Text)) > 121 || res.Tokens < 0 || res.TokensPerSecond < 0 {
			t.Fatalf("%+v", res)
		}
	})
}
