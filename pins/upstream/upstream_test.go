package upstream

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/pins/upstream/upstreamtest"
)

// blackhole accepts connections and never answers: a host that hangs.
func blackhole(t *testing.T) (addr string, conns *atomic.Int32) {
	t.Helper()
	l, track := upstreamtest.Listen(t)
	conns = &atomic.Int32{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			track(c)
		}
	}()
	return l.Addr().String(), conns
}

func hungPins(t *testing.T, addr string) (*pins.File, []string) {
	t.Helper()
	gitconfig := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(gitconfig, []byte(fmt.Sprintf("[url \"git://%s/\"]\n\tinsteadOf = https://hung.example/\n", addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := fmt.Sprintf(`THEROCK_INDEX_URL=https://%[1]s/simple/
ROCM_VERSION=7.14.0
TORCH_VERSION=2.11.0+rocm7.14.0
VLLM_IMAGE=%[1]s/a/b:1
NIGHTLY_IMAGE=%[1]s/a/c:nightly
OLLAMA_IMAGE=%[1]s/a/d:1
TOOLBOX_IMAGE=%[1]s/a/e:1
VLLM_REPO=https://hung.example/vllm.git
VLLM_REF=b10590
GPU_TARGET=gfx1151
`, addr)
	f, err := pins.Parse("hung.env", []byte(env))
	if err != nil {
		t.Fatal(err)
	}
	return f, []string{"GIT_CONFIG_GLOBAL=" + gitconfig, "GIT_CONFIG_NOSYSTEM=1"}
}

// TestHungHostsAreBounded: hosts that accept and never answer cost one
// request timeout, not one per pin, and the run ends by its deadline.
func TestHungHostsAreBounded(t *testing.T) {
	addr, conns := blackhole(t)
	f, gitEnv := hungPins(t, addr)
	start := time.Now()
	rep := Check(context.Background(), f, Options{Deadline: 20 * time.Second, RequestTimeout: time.Second, Parallel: 2, GitEnv: gitEnv})
	took := time.Since(start)
	for _, r := range rep.Pins {
		if r.Name == "GPU_TARGET" {
			if r.State != Unchecked {
				t.Errorf("GPU_TARGET = %s", r.State)
			}
			continue
		}
		if r.State != Unreachable || !strings.Contains(r.Detail, "no answer in time") {
			t.Errorf("%s = %s %q; want unreachable, no answer in time", r.Name, r.State, r.Detail)
		}
	}
	// one host for HTTP (index and registry share 127.0.0.1:port) and one
	// for git: the first timeout marks each down, the rest are not tried
	if n := conns.Load(); n > 4 {
		t.Errorf("%d connections to the hung host; the first timeout should stop the others", n)
	}
	if took > 15*time.Second {
		t.Errorf("took %s with a 1 s request timeout", took)
	}
	if !strings.Contains(rep.NoNetwork, "no upstream answered") || !strings.Contains(rep.NoNetwork, "no answer in time") {
		t.Errorf("NoNetwork = %q", rep.NoNetwork)
	}
}

// TestDeadlineEndsTheRun: a deadline shorter than a request ends
// everything in flight, and says that it was the deadline.
func TestDeadlineEndsTheRun(t *testing.T) {
	addr, _ := blackhole(t)
	f, gitEnv := hungPins(t, addr)
	start := time.Now()
	rep := Check(context.Background(), f, Options{Deadline: 500 * time.Millisecond, RequestTimeout: time.Minute, GitEnv: gitEnv})
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s with a 0.5 s deadline", took)
	}
	for _, r := range rep.Pins {
		if r.Method != methodNone && (r.State != Unreachable || !strings.Contains(r.Detail, "deadline")) {
			t.Errorf("%s = %s %q; want unreachable by the deadline", r.Name, r.State, r.Detail)
		}
	}
}

// TestOfflineTouchesNothing: --offline answers unchecked and opens no connection.
func TestOfflineTouchesNothing(t *testing.T) {
	addr, conns := blackhole(t)
	f, gitEnv := hungPins(t, addr)
	rep := Check(context.Background(), f, Options{Offline: true, GitEnv: gitEnv})
	for _, r := range rep.Pins {
		if r.State != Unchecked {
			t.Errorf("%s = %s offline", r.Name, r.State)
		}
	}
	if find(rep, "VLLM_IMAGE").Detail != "not checked (--offline)" || find(rep, "GPU_TARGET").Detail != "local setting: nothing upstream" {
		t.Errorf("details: %q, %q", find(rep, "VLLM_IMAGE").Detail, find(rep, "GPU_TARGET").Detail)
	}
	time.Sleep(50 * time.Millisecond)
	if n := conns.Load(); n != 0 {
		t.Errorf("%d connections offline", n)
	}
	if rep.NoNetwork != "" {
		t.Errorf("NoNetwork offline: %q", rep.NoNetwork)
	}
}

// TestOnlyAsksAboutThoseNames: Only restricts the run to some pins (a
// track's), while the others still give them their context: TORCH_VERSION is
// looked up on THEROCK_INDEX_URL, which is not asked about itself, and the
// images of other tracks are never contacted.
func TestOnlyAsksAboutThoseNames(t *testing.T) {
	addr, conns := blackhole(t)
	f, gitEnv := hungPins(t, addr)
	rep := Check(context.Background(), f, Options{Only: []string{"TORCH_VERSION", "GPU_TARGET"}, GitEnv: gitEnv,
		Deadline: 3 * time.Second, RequestTimeout: time.Second})
	var names []string
	for _, r := range rep.Pins {
		names = append(names, r.Name)
	}
	if strings.Join(names, " ") != "TORCH_VERSION GPU_TARGET" {
		t.Fatalf("pins checked: %v", names)
	}
	if r := find(rep, "TORCH_VERSION"); r.Upstream != "https://"+addr+"/simple/" || r.State != Unreachable {
		t.Errorf("TORCH_VERSION: %s on %q (%s)", r.State, r.Upstream, r.Detail)
	}
	// the two project pages of torch[device-gfx1151] at most: the images and the
	// git repository on the same address were not asked
	if n := conns.Load(); n > 2 {
		t.Errorf("%d connections, want at most the index's two", n)
	}
}

// TestUnresolvableHost: a name that does not resolve is one short reason.
func TestUnresolvableHost(t *testing.T) {
	f, err := pins.Parse("dns.env", []byte("VLLM_IMAGE=registry.invalid/a/b:1\nOLLAMA_IMAGE=registry.invalid/a/c:1\n"))
	if err != nil {
		t.Fatal(err)
	}
	rep := Check(context.Background(), f, Options{Deadline: 20 * time.Second})
	for _, r := range rep.Pins {
		if r.State != Unreachable || r.Detail != "registry.invalid: could not resolve host" {
			t.Errorf("%s = %s %q", r.Name, r.State, r.Detail)
		}
	}
}

// TestCleanDropsControlBytes: what a registry or git says reaches pins
// status (terminal, JSON and the wizard) without escapes, controls or bidi
// overrides.
func TestCleanDropsControlBytes(t *testing.T) {
	got := clean(Result{Detail: "evil \x1b]52;c;AAAA\x07 \u202e txt\u009b2J\nline2\x00", Upstream: "b\u2066x", Resolved: "c\u0085"})
	if got.Detail != "evil   txt2J line2" || got.Upstream != "bx" || got.Resolved != "c" {
		t.Errorf("clean kept control bytes: %+v", got)
	}
	long := clean(Result{Detail: strings.Repeat("x", 1000)})
	if n := len([]rune(long.Detail)); n > 401 {
		t.Errorf("detail of %d runes", n)
	}
}

// TestServerErrorsSayWhatTheServerAnswered: a server that answers 500 or
// 429 answered: each pin says the status (and the Retry-After wait), and the
// run does not claim there is no network.
func TestServerErrorsSayWhatTheServerAnswered(t *testing.T) {
	failing := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer failing.Close()
	limited := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "999999")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer limited.Close()
	roots := x509.NewCertPool()
	roots.AddCert(failing.Certificate())
	roots.AddCert(limited.Certificate())
	t.Setenv("HF_ENDPOINT", failing.URL)
	env := fmt.Sprintf("THEROCK_INDEX_URL=%s/simple/\nROCM_VERSION=7.14.0\nSOURCE_TORCH_INDEX_URL=%s/simple/\nSOURCE_TORCH_VERSION=2.8.0\nVERIFY_MODEL=Qwen/Qwen3-0.6B\n", failing.URL, limited.URL)
	f, err := pins.Parse("t.env", []byte(env))
	if err != nil {
		t.Fatal(err)
	}
	rep := Check(context.Background(), f, Options{RootCAs: roots})
	fh, lh := strings.TrimPrefix(failing.URL, "https://"), strings.TrimPrefix(limited.URL, "https://")
	for name, want := range map[string]string{
		"THEROCK_INDEX_URL":      fh + ": answered HTTP 500 Internal Server Error",
		"ROCM_VERSION":           fh + ": answered HTTP 500 Internal Server Error",
		"VERIFY_MODEL":           fh + ": answered HTTP 500 Internal Server Error",
		"SOURCE_TORCH_INDEX_URL": lh + ": rate-limited (HTTP 429); the server asks to wait 11 days (Retry-After: 999999)",
		"SOURCE_TORCH_VERSION":   lh + ": rate-limited (HTTP 429); the server asks to wait 11 days (Retry-After: 999999)",
	} {
		t.Run(name, func(t *testing.T) {
			if got := find(rep, name); got.State != Unreachable || !strings.HasPrefix(got.Detail, want) {
				t.Errorf("%s = %s %q; want unreachable %q", name, got.State, got.Detail, want)
			}
		})
	}
	if rep.NoNetwork != "" {
		t.Errorf("NoNetwork = %q; both servers answered", rep.NoNetwork)
	}
}
