package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/haloforge/haloforge/pins"
)

func TestParseImageRef(t *testing.T) {
	dig := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		in   string
		want ImageRef
		err  string
	}{
		{"ubuntu", ImageRef{Registry: "docker.io", Repository: "library/ubuntu"}, ""},
		{"docker.io/library/ubuntu:24.04", ImageRef{Registry: "docker.io", Repository: "library/ubuntu", Tag: "24.04"}, ""},
		{"docker.io/rocm/vllm-dev:nightly", ImageRef{Registry: "docker.io", Repository: "rocm/vllm-dev", Tag: "nightly"}, ""},
		{"rocm/vllm:rocm10.0.0_ubuntu24.04_py3.14_pytorch_2.12.0_vllm_0.27.0@" + dig,
			ImageRef{Registry: "docker.io", Repository: "rocm/vllm", Tag: "rocm10.0.0_ubuntu24.04_py3.14_pytorch_2.12.0_vllm_0.27.0", Digest: dig}, ""},
		{"index.docker.io/kyuz0/amd-strix-halo-toolboxes:rocm-7.14", ImageRef{Registry: "docker.io", Repository: "kyuz0/amd-strix-halo-toolboxes", Tag: "rocm-7.14"}, ""},
		{"registry.fedoraproject.org/fedora-toolbox:43", ImageRef{Registry: "registry.fedoraproject.org", Repository: "fedora-toolbox", Tag: "43"}, ""},
		{"127.0.0.1:5000/hf/vllm@" + dig, ImageRef{Registry: "127.0.0.1:5000", Repository: "hf/vllm", Digest: dig}, ""},
		{"localhost/haloforge/vllm-spoof-locked:a92fa9cb", ImageRef{Registry: "localhost", Repository: "haloforge/vllm-spoof-locked", Tag: "a92fa9cb"}, ""},
		{"ghcr.io/ggml-org/llama.cpp:server", ImageRef{Registry: "ghcr.io", Repository: "ggml-org/llama.cpp", Tag: "server"}, ""},
		{"Docker.io/Rocm/vllm", ImageRef{}, "not lower-case"},
		{"rocm/vllm@sha256:abc", ImageRef{}, "digest"},
		{"rocm/vllm:bad tag", ImageRef{}, "tag"},
		{"bad host!/x:1", ImageRef{}, "not lower-case"},
		{"", ImageRef{}, "repository"},
	}
	for _, tc := range tests {
		got, err := ParseImageRef(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseImageRef(%q) error = %v, want one saying %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseImageRef(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	if r, _ := ParseImageRef("ubuntu:24.04"); r.apiBase() != "https://registry-1.docker.io" {
		t.Errorf("Docker Hub API base = %s", r.apiBase())
	}
	if r, _ := ParseImageRef("127.0.0.1:5000/x:1"); r.apiBase() != "http://127.0.0.1:5000" {
		t.Errorf("loopback API base = %s (a loopback registry speaks plain HTTP)", r.apiBase())
	}
	if r, _ := ParseImageRef("registry.example:5000/x:1"); r.apiBase() != "https://registry.example:5000" {
		t.Errorf("remote API base = %s", r.apiBase())
	}
}

func TestParseChallenge(t *testing.T) {
	tests := []struct {
		in     string
		scheme string
		params map[string]string
	}{
		{`Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:samalba/my-app:pull,push"`,
			"bearer", map[string]string{"realm": "https://auth.docker.io/token", "service": "registry.docker.io", "scope": "repository:samalba/my-app:pull,push"}},
		{`Bearer realm="https://ghcr.io/token",service="ghcr.io",scope="repository:user/image:pull"`,
			"bearer", map[string]string{"realm": "https://ghcr.io/token", "service": "ghcr.io", "scope": "repository:user/image:pull"}},
		{`Basic realm="basic-realm"`, "basic", map[string]string{"realm": "basic-realm"}},
		{`Bearer realm=https://x/token, service=svc`, "bearer", map[string]string{"realm": "https://x/token", "service": "svc"}},
		{`Bearer realm="a\"b"`, "bearer", map[string]string{"realm": `a"b`}},
		{``, "", map[string]string{}},
	}
	for _, tc := range tests {
		scheme, params := ParseChallenge(tc.in)
		if scheme != tc.scheme || !cmp.Equal(params, tc.params) {
			t.Errorf("ParseChallenge(%q) = %q %v; want %q %v", tc.in, scheme, params, tc.scheme, tc.params)
		}
	}
}

func TestParseTokenResponse(t *testing.T) {
	for body, want := range map[string]string{
		`{"token": "abc", "expires_in": 300}`:   "abc",
		`{"access_token": "xyz"}`:               "xyz",
		`{"token": "t1", "access_token": "t2"}`: "t1",
	} {
		if got, err := ParseTokenResponse([]byte(body)); err != nil || got != want {
			t.Errorf("ParseTokenResponse(%s) = %q, %v; want %q", body, got, err, want)
		}
	}
	for _, bad := range []string{`{}`, `{"token": ""}`, `nope`, `{"token": "a\nb"}`} {
		if _, err := ParseTokenResponse([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestParseManifestAndErrors(t *testing.T) {
	index := `{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [
		{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:aa", "platform": {"os": "linux", "architecture": "amd64"}}]}`
	m, err := ParseManifest([]byte(index))
	if err != nil || len(m.Manifests) != 1 || m.Manifests[0].Platform.Architecture != "amd64" {
		t.Errorf("index: %+v, %v", m, err)
	}
	if _, err := ParseManifest([]byte(`{"schemaVersion": 1}`)); err == nil {
		t.Error("accepted schema 1")
	}
	if _, err := ParseManifest([]byte(`{"schemaVersion": 2}`)); err == nil {
		t.Error("accepted a manifest with neither config nor manifests")
	}
	errs := ParseRegistryErrors([]byte(`{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"},{"code":"x\u001b[31m"}]}`))
	if len(errs) != 1 || errs[0].Code != "MANIFEST_UNKNOWN" {
		t.Errorf("errors = %+v (a code with control characters must be dropped)", errs)
	}
	if ParseRegistryErrors([]byte(`<html>`)) != nil {
		t.Error("an HTML body is no error list")
	}
}

// tokenRegistry is a registry that answers only with a bearer token from
// its realm, as Docker Hub and ghcr do (token.md's flow).
type tokenRegistry struct {
	srv      *httptest.Server
	tokens   atomic.Int32
	manifest []byte
}

func newTokenRegistry(t *testing.T) *tokenRegistry {
	r := &tokenRegistry{manifest: []byte(`{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": {"digest": "sha256:00"}, "layers": []}`)}
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
		parts := strings.SplitN(strings.TrimPrefix(req.URL.Path, "/v2/"), "/manifests/", 2)
		if len(parts) != 2 {
			http.NotFound(w, req)
			return
		}
		repo, ref := parts[0], parts[1]
		if req.Header.Get("Authorization") != "Bearer good-token" {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="test-registry",scope="repository:%s:pull"`, r.srv.URL, repo))
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		if !strings.Contains(req.Header.Get("Accept"), "application/vnd.oci.image.index.v1+json") {
			http.Error(w, "no index in Accept", http.StatusBadRequest)
			return
		}
		sum := sha256.Sum256(r.manifest)
		digest := "sha256:" + hex.EncodeToString(sum[:])
		switch {
		case repo == "lib/app" && (ref == "v1" || ref == digest):
			w.Header().Set("Docker-Content-Digest", digest)
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		case repo == "lib/nodigest" && ref == "v1":
			// no Docker-Content-Digest: the client hashes the body
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		case repo == "lib/private":
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		case repo == "lib/limited":
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}`)
			return
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}`)
			return
		}
		if req.Method == http.MethodGet {
			w.Write(r.manifest)
		}
	})
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	return r
}

func (r *tokenRegistry) host() string { return strings.TrimPrefix(r.srv.URL, "http://") }

func (r *tokenRegistry) digest() string {
	sum := sha256.Sum256(r.manifest)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestRegistryTokenFlow checks the bearer flow and every answer a registry
// gives, against a registry that demands tokens.
func TestRegistryTokenFlow(t *testing.T) {
	r := newTokenRegistry(t)
	basic := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="basic-realm"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer basic.Close()
	h := r.host()
	env := fmt.Sprintf(`VLLM_IMAGE=%[1]s/lib/app:v1
NIGHTLY_IMAGE=%[1]s/lib/nodigest:v1
OLLAMA_IMAGE=%[1]s/lib/private:1
TOOLBOX_IMAGE=%[1]s/lib/limited:1
SOURCE_BASE_IMAGE=%[1]s/lib/app:gone
VULKAN_BASE_IMAGE=%[1]s/lib/app:v1@%[2]s
GFX803_BASE_IMAGE=%[3]s/lib/x:1
`, h, r.digest(), strings.TrimPrefix(basic.URL, "http://"))
	f, err := pins.Parse("t.env", []byte(env))
	if err != nil {
		t.Fatal(err)
	}
	rep := Check(context.Background(), f, Options{})
	d := short(r.digest())
	for name, w := range map[string]struct {
		state  State
		detail string
	}{
		"VLLM_IMAGE":        {OK, `tag v1 → ` + d + ` \(OCI manifest\)`},
		"NIGHTLY_IMAGE":     {OK, `tag v1 → ` + d},
		"OLLAMA_IMAGE":      {Retired, `HTTP 401 UNAUTHORIZED: no anonymous pull \(removed, or private\)`},
		"TOOLBOX_IMAGE":     {Unreachable, `rate-limited \(HTTP 429\)`},
		"SOURCE_BASE_IMAGE": {Retired, `tag gone no longer exists in .*/lib/app: HTTP 404 MANIFEST_UNKNOWN`},
		"VULKAN_BASE_IMAGE": {OK, `digest ` + d + ` exists in .*; tag v1 still points at it`},
		"GFX803_BASE_IMAGE": {Unchecked, `wants a login \(Basic auth\)`},
	} {
		got := find(rep, name)
		if got.State != w.state || !regexp.MustCompile(w.detail).MatchString(got.Detail) {
			t.Errorf("%s = %s %q; want %s matching %q", name, got.State, got.Detail, w.state, w.detail)
		}
	}
	if n := r.tokens.Load(); n != 4 {
		t.Errorf("%d token requests; want one per repository (app, nodigest, private, limited)", n)
	}
	if got := find(rep, "VLLM_IMAGE").Resolved; got != r.digest() {
		t.Errorf("resolved %q, want %q", got, r.digest())
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
		if err != nil || again != r {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, r, r.String(), again, err)
		}
		if strings.ContainsAny(r.apiBase(), " \n\t?#") {
			t.Fatalf("API base %q", r.apiBase())
		}
	})
}

func FuzzParseChallenge(f *testing.F) {
	f.Add(`Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:a/b:pull"`)
	f.Add(`Basic realm=x`)
	f.Add(`Bearer realm="\`)
	f.Fuzz(func(t *testing.T, h string) {
		scheme, params := ParseChallenge(h)
		if scheme != strings.ToLower(scheme) {
			t.Fatalf("scheme %q not lower-cased", scheme)
		}
		for k := range params {
			if k == "" {
				t.Fatal("empty parameter name")
			}
		}
	})
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"schemaVersion": 2, "manifests": [{"digest": "sha256:00", "platform": {"os": "linux", "architecture": "amd64"}}]}`))
	f.Add([]byte(`{"errors":[{"code":"MANIFEST_UNKNOWN"}]}`))
	f.Add([]byte(`{"token": "x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if m, err := ParseManifest(data); err == nil && m.SchemaVersion != 2 {
			t.Fatalf("accepted schema %d", m.SchemaVersion)
		}
		for _, e := range ParseRegistryErrors(data) {
			if strings.ContainsAny(e.Code, "\x1b\n") {
				t.Fatalf("code %q", e.Code)
			}
		}
		if tok, err := ParseTokenResponse(data); err == nil && (tok == "" || strings.ContainsAny(tok, "\r\n")) {
			t.Fatalf("token %q", tok)
		}
	})
}
