package upstream

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/haloforge/haloforge/pins"
)

// TestModelPinOnTheHub checks VERIFY_MODEL against a stand-in for the
// Hugging Face Hub's model API (HF_ENDPOINT, as huggingface_hub honours it).
func TestModelPinOnTheHub(t *testing.T) {
	sha := strings.Repeat("c", 40)
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/models/Qwen/Qwen3-0.6B/revision/main" {
			fmt.Fprintf(w, `{"_id": "x", "id": "Qwen/Qwen3-0.6B", "sha": %q, "siblings": []}`, sha)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error": "Repository not found"}`)
	}))
	defer hub.Close()
	t.Setenv("HF_ENDPOINT", hub.URL)
	for value, want := range map[string]struct {
		state  State
		detail string
	}{
		"Qwen/Qwen3-0.6B":   {OK, "model Qwen/Qwen3-0.6B is on the Hub (main at cccccccccccc)"},
		"Qwen/Gone-Model":   {Retired, "model Qwen/Gone-Model is gone from the Hub: HTTP 401: no such public model (removed, renamed or private)"},
		"/srv/models/qwen3": {Unchecked, "a local model file or directory: nothing upstream"},
	} {
		f := &pins.File{Path: "t.env", Pins: []pins.Pin{{Name: "VERIFY_MODEL", Value: value, Kind: "model"}}}
		got := Check(context.Background(), f, Options{}).Pins[0]
		if got.State != want.state || got.Detail != want.detail {
			t.Errorf("VERIFY_MODEL=%s: %s %q; want %s %q", value, got.State, got.Detail, want.state, want.detail)
		}
	}
}

// TestHubEndpointOfAnotherScheme: an HF_ENDPOINT that is no http(s) URL
// is refused with what to do, and nothing is asked in its place (the
// CLI's pins_status.txtar shows huggingface.co is not asked either).
func TestHubEndpointOfAnotherScheme(t *testing.T) {
	for endpoint, want := range map[string]string{
		"ftp://mirror.example/hf":  `HF_ENDPOINT="ftp://mirror.example/hf" is not an http(s) URL: the Hub was not asked (set HF_ENDPOINT to your mirror's https:// URL, or unset it to ask https://huggingface.co)`,
		"mirror.example":           `HF_ENDPOINT="mirror.example" is not an http(s) URL`,
		"https://mirror.example\n": `HF_ENDPOINT="https://mirror.example\n" is not an http(s) URL`,
		"https://":                 `HF_ENDPOINT="https://" is not an http(s) URL`,
	} {
		t.Run(endpoint, func(t *testing.T) {
			t.Setenv("HF_ENDPOINT", endpoint)
			f := &pins.File{Path: "t.env", Pins: []pins.Pin{{Name: "VERIFY_MODEL", Value: "Qwen/Qwen3-0.6B", Kind: "model"}}}
			got := Check(context.Background(), f, Options{}).Pins[0]
			if got.State != Unchecked || !strings.HasPrefix(got.Detail, want) || got.Upstream != "HF_ENDPOINT" {
				t.Errorf("HF_ENDPOINT=%s: %s %q (upstream %s); want unchecked %q", endpoint, got.State, got.Detail, got.Upstream, want)
			}
		})
	}
}

func FuzzParseModelInfo(f *testing.F) {
	f.Add([]byte(`{"id": "a/b", "sha": "` + strings.Repeat("a", 40) + `"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if sha, err := ParseModelInfo(data); err == nil && !reSHA.MatchString(sha) {
			t.Fatalf("sha %q", sha)
		}
	})
}
