package upstream_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/pins/upstream"
	"github.com/haloforge/haloforge/pins/upstream/upstreamtest"
)

// The image pins of the shipped versions.env, each on a loopback registry:
// tags, a tag with its digest, a repository with its digest pin, several
// pins of one repository (as rocm/vllm-dev and kyuz0's toolboxes are).
const benchImagePins = `TOOLBOX_IMAGE=%[1]s/library/ubuntu:24.04
VLLM_IMAGE=%[1]s/rocm/vllm:v1@%[2]s
NIGHTLY_IMAGE=%[1]s/rocm/vllm-dev:nightly
SPOOF_BASE_IMAGE=%[1]s/rocm/vllm-dev
SPOOF_BASE_DIGEST=%[3]s
SOURCE_BASE_IMAGE=%[1]s/fedora:43
VULKAN_BASE_IMAGE=%[1]s/fedora:43
LLAMACPP_ROCM_IMAGE=%[1]s/kyuz0/amd-strix-halo-toolboxes:rocm-7.14
LLAMACPP_ROCM_NIGHTLY_IMAGE=%[1]s/kyuz0/amd-strix-halo-toolboxes:therock-nightly
OLLAMA_IMAGE=%[1]s/ollama/ollama:0.32.15-rocm
GFX803_BASE_IMAGE=%[1]s/rocm/dev-ubuntu-24.04:6.4.1
LLAMACPP_DISTRO_IMAGE=%[1]s/library/debian:sid
`

// benchCheck runs `pins status`'s checks on f b.N times and fails when a
// pin is not ok (a benchmark of failures measures nothing).
func benchCheck(b *testing.B, f *pins.File) {
	b.Helper()
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		rep := upstream.Check(ctx, f, upstream.Options{})
		for _, r := range rep.Pins {
			if r.State != upstream.OK {
				b.Fatalf("%s = %s %q", r.Name, r.State, r.Detail)
			}
		}
	}
}

// BenchmarkPinsStatusRealRegistry: the image pins against Debian's
// docker-registry holding images podman pushed (no login).
func BenchmarkPinsStatusRealRegistry(b *testing.B) {
	upstreamtest.Require(b)
	reg := upstreamtest.StartRegistry(b)
	digests := map[string]string{}
	for _, img := range []string{"library/ubuntu:24.04", "rocm/vllm:v1", "rocm/vllm-dev:nightly", "fedora:43",
		"kyuz0/amd-strix-halo-toolboxes:rocm-7.14", "kyuz0/amd-strix-halo-toolboxes:therock-nightly",
		"ollama/ollama:0.32.15-rocm", "rocm/dev-ubuntu-24.04:6.4.1", "library/debian:sid"} {
		repo, tag, _ := strings.Cut(img, ":")
		digests[img] = reg.Push(b, repo, tag, img)
	}
	f, err := pins.Parse("bench.env", []byte(fmt.Sprintf(benchImagePins, reg.Addr, digests["rocm/vllm:v1"], digests["rocm/vllm-dev:nightly"])))
	if err != nil {
		b.Fatal(err)
	}
	benchCheck(b, f)
}

// BenchmarkPinsStatusTokenRegistry: the same pins against an in-process
// registry that, like Docker Hub, answers only with a bearer token from its
// realm (a stand-in: no packaged registry here runs a token service).
func BenchmarkPinsStatusTokenRegistry(b *testing.B) {
	manifest := []byte(`{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": "sha256:` + strings.Repeat("0", 64) + `", "size": 2}, "layers": []}`)
	sum := sha256.Sum256(manifest)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			fmt.Fprint(w, `{"token": "bench-token", "expires_in": 300}`)
			return
		}
		if r.Header.Get("Authorization") != "Bearer bench-token" {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="bench"`, srv.URL))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/v2/" {
			return
		}
		if strings.Contains(r.URL.Path, "/tags/list") {
			fmt.Fprint(w, `{"name": "x", "tags": ["nightly"]}`)
			return
		}
		w.Header().Set("Docker-Content-Digest", digest)
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Content-Length", fmt.Sprint(len(manifest)))
		if r.Method == http.MethodGet {
			w.Write(manifest)
		}
	}))
	b.Cleanup(srv.Close)
	f, err := pins.Parse("bench.env", []byte(fmt.Sprintf(benchImagePins, strings.TrimPrefix(srv.URL, "http://"), digest, digest)))
	if err != nil {
		b.Fatal(err)
	}
	benchCheck(b, f)
}
