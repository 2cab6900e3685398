package upstream

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haloforge/haloforge/pins"
)

func TestParseImageRef(t *testing.T) {
	dig := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		in                        string
		registry, repo, tag, digs string
		canonical                 string
		err                       string
	}{
		{in: "ubuntu", registry: "docker.io", repo: "library/ubuntu", canonical: "docker.io/library/ubuntu"},
		{in: "docker.io/library/ubuntu:24.04", registry: "docker.io", repo: "library/ubuntu", tag: "24.04"},
		{in: "docker.io/rocm/vllm-dev:nightly", registry: "docker.io", repo: "rocm/vllm-dev", tag: "nightly"},
		{in: "rocm/vllm:rocm10.0.0_ubuntu24.04_py3.14_pytorch_2.12.0_vllm_0.27.0@" + dig, registry: "docker.io", repo: "rocm/vllm",
			tag: "rocm10.0.0_ubuntu24.04_py3.14_pytorch_2.12.0_vllm_0.27.0", digs: dig},
		{in: "index.docker.io/kyuz0/amd-strix-halo-toolboxes:rocm-7.14", registry: "docker.io", repo: "kyuz0/amd-strix-halo-toolboxes", tag: "rocm-7.14"},
		{in: "registry.fedoraproject.org/fedora-toolbox:43", registry: "registry.fedoraproject.org", repo: "fedora-toolbox", tag: "43"},
		{in: "127.0.0.1:5000/hf/vllm@" + dig, registry: "127.0.0.1:5000", repo: "hf/vllm", digs: dig},
		{in: "localhost/haloforge/vllm-spoof-locked:a92fa9cb", registry: "localhost", repo: "haloforge/vllm-spoof-locked", tag: "a92fa9cb"},
		{in: "ghcr.io/ggml-org/llama.cpp:server", registry: "ghcr.io", repo: "ggml-org/llama.cpp", tag: "server"},
		{in: "Docker.io/Rocm/vllm", err: "repository can only contain"},
		{in: "rocm/vllm@sha256:abc", err: "invalid checksum digest length"},
		{in: "rocm/vllm:bad tag", err: "tag can only contain"},
		{in: "bad host!/x:1", err: "repository can only contain"},
		{in: "", err: "repository"},
		{in: strings.Repeat("a", 513), err: "longer than 512"},
		{in: strings.Repeat("a", 256), err: "between 1 and 255 characters"},
		{in: strings.Repeat("0", 250), err: "is 258 characters with Docker Hub's library/ (at most 255)"},
	}
	for _, tc := range tests {
		t.Run(tc.in[:min(len(tc.in), 40)], func(t *testing.T) {
			got, err := ParseImageRef(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("ParseImageRef(%q) error = %v, want one saying %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil || got.Registry() != tc.registry || got.Repository() != tc.repo || got.Tag != tc.tag || got.Digest != tc.digs {
				t.Errorf("ParseImageRef(%q) = %s %s %q %q, %v; want %s %s %q %q", tc.in, got.Registry(), got.Repository(), got.Tag, got.Digest, err, tc.registry, tc.repo, tc.tag, tc.digs)
			}
			if tc.canonical != "" && got.String() != tc.canonical {
				t.Errorf("String() = %s, want %s", got.String(), tc.canonical)
			}
		})
	}
	// go-containerregistry's rules for where to ask: Docker Hub's API host,
	// plain HTTP allowed for a loopback registry only
	for in, want := range map[string]string{
		"ubuntu:24.04":              "https://index.docker.io",
		"127.0.0.1:5000/x:1":        "http://127.0.0.1:5000",
		"registry.example:5000/x:1": "https://registry.example:5000",
	} {
		r, _ := ParseImageRef(in)
		if got := r.Repo.Scheme() + "://" + r.Repo.RegistryStr(); got != want {
			t.Errorf("%s is asked at %s, want %s", in, got, want)
		}
	}
}

// testManifest is an image manifest and its digest.
var testManifest = []byte(`{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": "sha256:` + strings.Repeat("0", 64) + `", "size": 2}, "layers": []}`)

func testDigest() string {
	sum := sha256.Sum256(testManifest)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// tokenRegistry is an in-process registry that answers only with a bearer
// token from its realm, as Docker Hub and ghcr do (token.md's flow): a
// stand-in for the answers no real registry here gives (a rate limit, a
// 500, no digest header). The real ones are in realservers_test.go.
type tokenRegistry struct {
	srv    *httptest.Server
	tokens atomic.Int32
}

func newTokenRegistry(t *testing.T) *tokenRegistry {
	r := &tokenRegistry{}
	mux := http.NewServeMux()
	mux.HandleFunc("/token", func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		if q.Get("service") != "test-registry" || !strings.HasPrefix(q.Get("scope"), "repository:lib/") || !strings.HasSuffix(q.Get("scope"), ":pull") {
			http.Error(w, "bad token request "+req.URL.RawQuery, http.StatusBadRequest)
			return
		}
		r.tokens.Add(1)
		fmt.Fprint(w, `{"access_token": "good-token", "expires_in": 300}`)
	})
	mux.HandleFunc("/v2/", func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "Bearer good-token" {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="test-registry"`, r.srv.URL))
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		if req.URL.Path == "/v2/" {
			return
		}
		repo, ref, ok := strings.Cut(strings.TrimPrefix(req.URL.Path, "/v2/"), "/manifests/")
		if !ok {
			http.NotFound(w, req)
			return
		}
		if !strings.Contains(req.Header.Get("Accept"), "application/vnd.oci.image.index.v1+json") {
			http.Error(w, "no index in Accept", http.StatusBadRequest)
			return
		}
		digest := testDigest()
		switch {
		case repo == "lib/app" && (ref == "v1" || ref == digest):
			w.Header().Set("Docker-Content-Digest", digest)
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		case repo == "lib/nodigest" && ref == "v1":
			// no Docker-Content-Digest: the client hashes the body
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		case repo == "lib/garbage" && ref == "v1":
			w.Header().Set("Content-Type", "text/html")
			if req.Method == http.MethodGet {
				fmt.Fprint(w, "<html>not a manifest</html>")
			}
			return
		case repo == "lib/private":
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		case repo == "lib/broken":
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}`)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(testManifest)))
		if req.Method == http.MethodGet {
			w.Write(testManifest)
		}
	})
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	return r
}

func (r *tokenRegistry) host() string { return strings.TrimPrefix(r.srv.URL, "http://") }

// TestRegistryTokenFlow checks the bearer flow and every answer a registry
// gives, against a registry that demands tokens.
func TestRegistryTokenFlow(t *testing.T) {
	r := newTokenRegistry(t)
	basic := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="basic-realm"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer basic.Close()
	t.Setenv("REGISTRY_AUTH_FILE", t.TempDir()+"/none.json") // no credentials, whatever this machine has
	h := r.host()
	env := fmt.Sprintf(`VLLM_IMAGE=%[1]s/lib/app:v1
NIGHTLY_IMAGE=%[1]s/lib/nodigest:v1
OLLAMA_IMAGE=%[1]s/lib/private:1
TOOLBOX_IMAGE=%[1]s/lib/broken:1
SOURCE_BASE_IMAGE=%[1]s/lib/app:gone
VULKAN_BASE_IMAGE=%[1]s/lib/app:v1@%[2]s
LLAMACPP_ROCM_IMAGE=%[1]s/lib/garbage:v1
GFX803_BASE_IMAGE=%[3]s/lib/x:1
`, h, testDigest(), strings.TrimPrefix(basic.URL, "http://"))
	f, err := pins.Parse("t.env", []byte(env))
	if err != nil {
		t.Fatal(err)
	}
	rep := Check(context.Background(), f, Options{})
	d := short(testDigest())
	for name, w := range map[string]struct {
		state  State
		detail string
	}{
		"VLLM_IMAGE":          {OK, `^tag v1 → ` + d + ` \(OCI manifest\)$`},
		"NIGHTLY_IMAGE":       {OK, `^tag v1 → ` + d + ` \(OCI manifest\)$`},
		"OLLAMA_IMAGE":        {Retired, `^tag 1 no longer exists in .*/lib/private: HTTP 401: no anonymous pull \(removed, or private\)$`},
		"TOOLBOX_IMAGE":       {Unreachable, `: answered HTTP 503 Service Unavailable; the server asks to wait 30s \(Retry-After: 30\)$`},
		"SOURCE_BASE_IMAGE":   {Retired, `tag gone no longer exists in .*/lib/app: HTTP 404 MANIFEST_UNKNOWN$`},
		"VULKAN_BASE_IMAGE":   {OK, `digest ` + d + ` exists in .*; tag v1 still points at it`},
		"LLAMACPP_ROCM_IMAGE": {Unchecked, `the registry sent no digest and no valid manifest`},
		"GFX803_BASE_IMAGE":   {Unchecked, `wants a login \(Basic auth\) and none for 127\.0\.0\.1:\d+ is in podman's or docker's credential files \(podman login 127\.0\.0\.1:\d+\)`},
	} {
		t.Run(name, func(t *testing.T) {
			got := find(rep, name)
			if got.State != w.state || !regexp.MustCompile(w.detail).MatchString(got.Detail) {
				t.Errorf("%s = %s %q; want %s matching %q", name, got.State, got.Detail, w.state, w.detail)
			}
		})
	}
	// one token per repository: the run's client logs in once and shares it
	if n := r.tokens.Load(); n != 5 {
		t.Errorf("%d token requests; want one per repository (app, nodigest, private, broken, garbage)", n)
	}
	if got := find(rep, "VLLM_IMAGE").Resolved; got != testDigest() {
		t.Errorf("resolved %q, want %q", got, testDigest())
	}
	if rep.NoNetwork != "" {
		t.Errorf("NoNetwork = %q: registries answered", rep.NoNetwork)
	}
}

// TestRateLimitedRegistry: a 429 is said as such with its wait, and the
// registry is not asked again in the run.
func TestRateLimitedRegistry(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		w.Header().Set("Retry-After", "999999")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}`)
	}))
	defer srv.Close()
	t.Setenv("REGISTRY_AUTH_FILE", t.TempDir()+"/none.json")
	h := strings.TrimPrefix(srv.URL, "http://")
	f, err := pins.Parse("t.env", []byte(fmt.Sprintf("VLLM_IMAGE=%[1]s/a/b:1\nOLLAMA_IMAGE=%[1]s/a/c:1\nNIGHTLY_IMAGE=%[1]s/a/d:1\n", h)))
	if err != nil {
		t.Fatal(err)
	}
	rep := Check(context.Background(), f, Options{Parallel: 1})
	for _, r := range rep.Pins {
		if want := h + ": rate-limited (HTTP 429); the server asks to wait 11 days (Retry-After: 999999)"; r.State != Unreachable || r.Detail != want {
			t.Errorf("%s = %s %q; want unreachable %q", r.Name, r.State, r.Detail, want)
		}
	}
	if rep.NoNetwork != "" {
		t.Errorf("NoNetwork = %q: the registry answered", rep.NoNetwork)
	}
	// the ping answered 429 over https and http (go-containerregistry tries
	// both for a loopback registry); nothing after
	if n := asked.Load(); n > 2 {
		t.Errorf("asked %d times; a rate-limited registry is left alone for the run", n)
	}
}

// TestHostileRegistryIsBounded: answers that never end, grow, or hang are
// cut at their bounds, and each pin says why.
func TestHostileRegistryIsBounded(t *testing.T) {
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zero := make([]byte, 1<<20)
	for range 64 {
		zw.Write(zero) // 64 MiB of zeros, 64 KiB on the wire
	}
	zw.Close()
	stop := make(chan struct{})
	var tokenSrv *httptest.Server
	tokenSrv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/token" {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="x"`, tokenSrv.URL))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		// a token answer that never ends
		w.Write([]byte(`{"token": "`))
		for {
			if _, err := w.Write(bytes.Repeat([]byte("a"), 1<<16)); err != nil {
				return
			}
		}
	}))
	defer tokenSrv.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		repo, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v2/"), "/manifests/")
		switch repo {
		case "endless":
			// no digest header: the client must GET, and the body never ends
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			if r.Method == http.MethodHead {
				return
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := w.Write(bytes.Repeat([]byte(" "), 1<<16)); err != nil {
					return
				}
			}
		case "bomb":
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			w.Header().Set("Content-Encoding", "gzip")
			if r.Method == http.MethodGet {
				w.Write(bomb.Bytes())
			}
		}
	}))
	defer srv.Close()
	// The hang has a host of its own: a host that leaves one request
	// unanswered is marked down and its other requests stop, which is right
	// for a real registry but would make the other cases here race it.
	hangSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	defer hangSrv.Close()
	defer close(stop)
	t.Setenv("REGISTRY_AUTH_FILE", t.TempDir()+"/none.json")
	h := strings.TrimPrefix(srv.URL, "http://")
	f, err := pins.Parse("t.env", []byte(fmt.Sprintf("VLLM_IMAGE=%[1]s/endless:1\nOLLAMA_IMAGE=%[1]s/bomb:1\nNIGHTLY_IMAGE=%[3]s/hang:1\nTOOLBOX_IMAGE=%[2]s/token:1\n", h, strings.TrimPrefix(tokenSrv.URL, "http://"), strings.TrimPrefix(hangSrv.URL, "http://"))))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep := Check(context.Background(), f, Options{RequestTimeout: 3 * time.Second, Deadline: 30 * time.Second})
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %s with a 3 s request timeout", took)
	}
	for name, want := range map[string]struct {
		state  State
		detail string
	}{
		"VLLM_IMAGE":    {Unchecked, `an answer larger than 4 MiB`},
		"OLLAMA_IMAGE":  {Unchecked, `an answer larger than 4 MiB`},
		"NIGHTLY_IMAGE": {Unreachable, `no answer in time`},
		"TOOLBOX_IMAGE": {Unchecked, `body exceeds 65536 byte limit`}, // go-containerregistry bounds a token to 64 KiB
	} {
		got := find(rep, name)
		if got.State != want.state || !regexp.MustCompile(want.detail).MatchString(got.Detail) {
			t.Errorf("%s = %s %q; want %s matching %q", name, got.State, got.Detail, want.state, want.detail)
		}
	}
}

// TestRedirectsAreHeldToTheRules: no downgrade from https to http, no clear
// text to another machine, at most 5 redirects, for the registry client and
// the index alike.
func TestRedirectsAreHeldToTheRules(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<a href='rocm-7.14.0-py3-none-linux_x86_64.whl#sha256=00'>x</a>")
	}))
	defer plain.Close()
	var loops atomic.Int32
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/down/"):
			http.Redirect(w, r, plain.URL+r.URL.Path, http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/away/"):
			http.Redirect(w, r, "http://registry.invalid"+r.URL.Path, http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/loop/"):
			loops.Add(1)
			http.Redirect(w, r, r.URL.Path, http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer tlsSrv.Close()
	roots := x509Pool(t, tlsSrv)
	for _, tc := range []struct{ path, want string }{
		{"down", `refused a redirect from https://127\.0\.0\.1:\d+ to http://127\.0\.0\.1:\d+ \(a downgrade to clear text\)`},
		{"away", `refused a redirect from https://127\.0\.0\.1:\d+ to http://registry\.invalid \(a downgrade to clear text\)`},
		{"loop", `more than 5 redirects`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			env := fmt.Sprintf("THEROCK_INDEX_URL=%s/%s/simple/\nROCM_VERSION=7.14.0\n", tlsSrv.URL, tc.path)
			f, err := pins.Parse("t.env", []byte(env))
			if err != nil {
				t.Fatal(err)
			}
			rep := Check(context.Background(), f, Options{RootCAs: roots})
			for _, r := range rep.Pins {
				if r.State == OK || !regexp.MustCompile(tc.want).MatchString(r.Detail) {
					t.Errorf("%s = %s %q; want %q", r.Name, r.State, r.Detail, tc.want)
				}
			}
		})
	}
	if n := loops.Load(); n > 2*6 {
		t.Errorf("%d requests in the redirect loop", n)
	}
	// the registry client's own requests: a token realm in clear text on
	// another machine is refused before anything is sent
	realm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="http://auth.invalid/token",service="x"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer realm.Close()
	t.Setenv("REGISTRY_AUTH_FILE", t.TempDir()+"/none.json")
	f, err := pins.Parse("t.env", []byte("VLLM_IMAGE="+strings.TrimPrefix(realm.URL, "http://")+"/a/b:1\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := Check(context.Background(), f, Options{}).Pins[0]
	if got.State != Unchecked || got.Detail != "refused to ask auth.invalid in clear text (http://): only https, or http on this machine" {
		t.Errorf("clear-text realm: %s %q", got.State, got.Detail)
	}
}

func TestWaitText(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]string{
		"":                              "",
		"30":                            "; the server asks to wait 30s (Retry-After: 30)",
		"1000":                          "; the server asks to wait 16m40s (Retry-After: 1000)",
		"7200":                          "; the server asks to wait 2h00m (Retry-After: 7200)",
		"999999":                        "; the server asks to wait 11 days (Retry-After: 999999)",
		"99999999999999999999":          "; the server sent Retry-After: 99999999999999999999 (not a wait haloforge can read)",
		"Sun, 29 Nov 2026 12:05:00 GMT": "; the server asks to wait 5m00s (Retry-After: Sun, 29 Nov 2026 12:05:00 GMT)",
		"Sat, 28 Nov 2026 12:05:00 GMT": "; the server asks to wait 0s (Retry-After: Sat, 28 Nov 2026 12:05:00 GMT)",
		"soon":                          "; the server sent Retry-After: soon (not a wait haloforge can read)",
		strings.Repeat("9x", 100):       "; the server sent Retry-After: " + strings.Repeat("9x", 20) + "… (not a wait haloforge can read)",
	} {
		t.Run(in[:min(len(in), 20)], func(t *testing.T) {
			if got := waitText(in, now); got != want {
				t.Errorf("waitText(%q) = %q, want %q", in, got, want)
			}
		})
	}
}

func find(rep *Report, name string) Result {
	for _, r := range rep.Pins {
		if r.Name == name {
			return r
		}
	}
	return Result{}
}

func FuzzParseImageRef(f *testing.F) {
	for _, s := range []string{"ubuntu", "docker.io/rocm/vllm:tag@sha256:" + strings.Repeat("0", 64), "127.0.0.1:5000/a/b", "[::1]:5000/x:y", "a:b:c/d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseImageRef(s)
		if err != nil {
			return
		}
		again, err := ParseImageRef(r.String())
		if err != nil || again.String() != r.String() || again.Repo.Name() != r.Repo.Name() || again.Tag != r.Tag || again.Digest != r.Digest {
			t.Fatalf("%q → %q → %q, %v", s, r.String(), again.String(), err)
		}
		if strings.ContainsAny(r.Repo.RegistryStr(), " \n\t?#/@") {
			t.Fatalf("registry host %q", r.Repo.RegistryStr())
		}
	})
}

func x509Pool(t *testing.T, srv *httptest.Server) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	p.AddCert(srv.Certificate())
	return p
}
