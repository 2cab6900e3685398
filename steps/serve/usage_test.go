package serve

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
)

// TestReadyCommandsRunAsPrinted: the export and the curl a ready server's
// usage prints, run by a shell exactly as printed against a real HTTP
// server on loopback, set OPENAI_BASE_URL to the server's /v1 and post a
// completion of the served model to it, whatever the model's name holds.
func TestReadyCommandsRunAsPrinted(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	for _, tc := range []struct{ name, host, model string }{
		{"plain model", "127.0.0.1", "tiny-random.gguf"},
		{"a model name a shell would split", "127.0.0.1", `it's a "model" $HOME`},
		{"no model name", "127.0.0.1", ""},
		{"an IPv6 address", "::1", "m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", net.JoinHostPort(tc.host, "0"))
			if err != nil {
				t.Skipf("no %s here: %v", tc.host, err)
			}
			got := make(chan map[string]any, 1)
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != SmokeEndpoint || r.Header.Get("Content-Type") != "application/json" {
					http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
					return
				}
				var body map[string]any
				b, _ := io.ReadAll(r.Body)
				if err := json.Unmarshal(b, &body); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				got <- body
				io.WriteString(w, `{"choices":[{"text":" Ada"}]}`)
			}))
			srv.Listener.Close()
			srv.Listener = ln
			srv.Start()
			defer srv.Close()

			r := Ready{URL: srv.URL, Model: tc.model}
			cmds := r.Commands()
			if len(cmds) != 2 || !strings.HasPrefix(strings.Trim(strings.TrimPrefix(cmds[0], "export "), "'"), "OPENAI_BASE_URL=") || !strings.HasPrefix(cmds[1], "curl ") {
				t.Fatalf("commands: %q", cmds)
			}
			script := strings.Join(cmds, "\n") + "\necho\necho \"base=$OPENAI_BASE_URL\"\n"
			out, err := exec.Command("sh", "-c", script).CombinedOutput()
			if err != nil {
				t.Fatalf("sh: %v\n%s\n%s", err, script, out)
			}
			if !strings.Contains(string(out), `"text":" Ada"`) || !strings.Contains(string(out), "base="+srv.URL+"/v1\n") {
				t.Errorf("output:\n%s", out)
			}
			body := <-got
			if m, _ := body["model"].(string); m != tc.model {
				t.Errorf("model %q, want %q", m, tc.model)
			}
			if _, ok := body["prompt"].(string); !ok {
				t.Errorf("no prompt: %v", body)
			}
			if u := r.Usage(); len(u) != 3 || u[0] != "OpenAI base URL: "+srv.URL+"/v1" {
				t.Errorf("usage: %q", u)
			}
		})
	}
}
