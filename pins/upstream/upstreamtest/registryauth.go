package upstreamtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// ---- logins: a token service and Basic auth in front of the registry ----------
//
// Each of these is another docker-registry process serving the storage of a
// Registry (read-only): the test pushes to the Registry, and asks the
// same images through the login it wants. The registry itself checks every
// token and password; only the token service is the test's own (no
// packaged one exists), written to distribution's docs/spec/auth/token.md
// and jwt.md as docker-registry 2.8 verifies them.

// TokenService issues registry tokens (token.md): anonymous pull of every
// repository except those under private/, and pull of everything for the
// one user it knows, whose password comes with the request as Basic auth.
type TokenService struct {
	URL      string // http://localhost:port/token: a host name, as a separate service has
	Service  string
	Issuer   string
	User     string
	Password string
	certFile string
	key      *ecdsa.PrivateKey
	cert     []byte
	issued   atomic.Int32
	mu       sync.Mutex
	asked    []string // "user scope" per request, for assertions
}

// StartTokenService starts the service on a free loopback port.
func StartTokenService(t testing.TB, user, password string) *TokenService {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "haloforge test token issuer"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ts := &TokenService{Service: "haloforge-test-registry", Issuer: "haloforge-test-issuer", User: user, Password: password, key: key, cert: der}
	ts.certFile = filepath.Join(t.TempDir(), "token-issuer.pem")
	if err := os.WriteFile(ts.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(ts.serve))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	ts.URL = "http://localhost:" + port + "/token"
	return ts
}

// Issued is how many tokens the service gave.
func (ts *TokenService) Issued() int { return int(ts.issued.Load()) }

// Asked lists the requests: "anonymous repository:a/b:pull", "alice …".
func (ts *TokenService) Asked() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.asked...)
}

type resourceActions struct {
	Type    string   `json:"type"`
	Name    string   `json:"name"`
	Actions []string `json:"actions"`
}

func (ts *TokenService) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/token" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	if q.Get("service") != ts.Service {
		http.Error(w, "unknown service", http.StatusBadRequest)
		return
	}
	who := "anonymous"
	if u, p, ok := r.BasicAuth(); ok {
		if u != ts.User || p != ts.Password {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]}`)
			return
		}
		who = u
	}
	var access []resourceActions
	for _, scope := range q["scope"] {
		for _, s := range strings.Fields(scope) {
			ts.mu.Lock()
			ts.asked = append(ts.asked, who+" "+s)
			ts.mu.Unlock()
			typ, rest, _ := strings.Cut(s, ":")
			name, actions, _ := strings.Cut(rest, ":")
			if typ != "repository" {
				continue
			}
			if strings.HasPrefix(name, "private/") && who == "anonymous" {
				continue // no access: the registry answers 401 with this token
			}
			var granted []string
			for _, a := range strings.Split(actions, ",") {
				if a == "pull" {
					granted = append(granted, a)
				}
			}
			access = append(access, resourceActions{Type: typ, Name: name, Actions: granted})
		}
	}
	now := time.Now()
	tok, err := ts.sign(map[string]any{
		"iss": ts.Issuer, "sub": who, "aud": ts.Service,
		"exp": now.Add(5 * time.Minute).Unix(), "nbf": now.Add(-time.Minute).Unix(), "iat": now.Unix(),
		"jti": fmt.Sprintf("t%d", ts.issued.Add(1)), "access": access,
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"token": tok, "expires_in": 300, "issued_at": now.UTC().Format(time.RFC3339)})
}

// sign makes an ES256 JWT whose x5c carries the issuer certificate, which
// the registry's rootcertbundle trusts.
func (ts *TokenService) sign(claims map[string]any) (string, error) {
	enc := base64.RawURLEncoding
	header, err := json.Marshal(map[string]any{"typ": "JWT", "alg": "ES256", "x5c": []string{base64.StdEncoding.EncodeToString(ts.cert)}})
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signed := enc.EncodeToString(header) + "." + enc.EncodeToString(body)
	sum := sha256.Sum256([]byte(signed))
	r, s, err := ecdsa.Sign(rand.Reader, ts.key, sum[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signed + "." + enc.EncodeToString(sig), nil
}

// WithToken starts another docker-registry on r's storage that wants a
// token from ts for everything (as Docker Hub and ghcr do); its address.
func (r *Registry) WithToken(t testing.TB, ts *TokenService) string {
	t.Helper()
	return serveRegistry(t, r.dir, fmt.Sprintf(`auth:
  token:
    realm: %s
    service: %s
    issuer: %s
    rootcertbundle: %s
`, ts.URL, ts.Service, ts.Issuer, ts.certFile))
}

// WithBasic starts another docker-registry on r's storage that wants user
// and password (Basic auth, an htpasswd file of bcrypt hashes); its address.
func (r *Registry) WithBasic(t testing.TB, user, password string) string {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	htpasswd := filepath.Join(t.TempDir(), "htpasswd")
	if err := os.WriteFile(htpasswd, []byte(user+":"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return serveRegistry(t, r.dir, fmt.Sprintf(`auth:
  htpasswd:
    realm: haloforge-test
    path: %s
`, htpasswd))
}

// AuthFile writes a containers-auth.json (podman login's format) holding
// user:password for each registry key, and returns its path.
func AuthFile(t testing.TB, creds map[string][2]string) string {
	t.Helper()
	auths := map[string]map[string]string{}
	for key, up := range creds {
		auths[key] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(up[0] + ":" + up[1]))}
	}
	data, err := json.MarshalIndent(map[string]any{"auths": auths}, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// ---- a rate limit ------------------------------------------------------------------

// RateLimiter is a reverse proxy in front of a registry that answers 429
// Too Many Requests with a Retry-After for the manifests of the
// repositories it is told to limit, as Docker Hub's edge does once a
// client's pull limit is spent (a stand-in: no packaged registry limits
// rates). Everything else is passed through.
type RateLimiter struct {
	Addr       string // host:port to use as the registry
	RetryAfter string
	limited    sync.Map
	answered   atomic.Int32
}

// StartRateLimiter proxies to the registry at target (host:port).
func StartRateLimiter(t testing.TB, target, retryAfter string) *RateLimiter {
	t.Helper()
	rl := &RateLimiter{RetryAfter: retryAfter}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		repo, _, isManifest := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v2/"), "/manifests/")
		if _, limited := rl.limited.Load(repo); limited && isManifest {
			rl.answered.Add(1)
			w.Header().Set("Retry-After", rl.RetryAfter)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"errors":[{"code":"TOOMANYREQUESTS","message":"You have reached your pull rate limit."}]}`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rl.Addr = strings.TrimPrefix(srv.URL, "http://")
	return rl
}

// Limit makes repo's manifests answer 429.
func (rl *RateLimiter) Limit(repo string) { rl.limited.Store(repo, true) }

// Answered429 is how many 429s were sent.
func (rl *RateLimiter) Answered429() int { return int(rl.answered.Load()) }
