package upstreamtest

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// HostIndex serves simple indexes under their real addresses
// (https://stable.repo.amd.com/rocm/whl-next/ …) on the loopback interface,
// so that a test can check the built-in pins, unchanged: a TLS server whose
// certificate names those hosts, and an HTTP CONNECT proxy (HTTPS_PROXY)
// that tunnels them to it and closes every other tunnel at once, as a
// machine whose only upstream is this one sees it. Everything stops with the
// test.
type HostIndex struct {
	Proxy    string // http://127.0.0.1:port, for HTTPS_PROXY
	CertFile string // the server's certificate in PEM, for SSL_CERT_FILE
	Roots    *x509.CertPool
	mu       sync.Mutex
	routes   map[string]string // "host/path/" of an index -> its directory
	hosts    []string
	server   *httptest.Server
}

// StartHostIndex serves each index URL of routes (an https URL ending in
// "/") from its directory of wheels.
func StartHostIndex(t testing.TB, routes map[string]string) *HostIndex {
	t.Helper()
	hi := &HostIndex{routes: map[string]string{}}
	for u, dir := range routes {
		pu, err := url.Parse(u)
		if err != nil || pu.Scheme != "https" || !strings.HasSuffix(pu.Path, "/") {
			t.Fatalf("StartHostIndex: %q is not an https index URL ending in /", u)
		}
		hi.routes[pu.Host+pu.Path] = dir
		if !slices.Contains(hi.hosts, pu.Host) {
			hi.hosts = append(hi.hosts, pu.Host)
		}
	}
	cert, pemCert := selfSigned(t, hi.hosts)
	hi.CertFile = filepath.Join(t.TempDir(), "hosts-cert.pem")
	if err := os.WriteFile(hi.CertFile, pemCert, 0o644); err != nil {
		t.Fatal(err)
	}
	hi.Roots = x509.NewCertPool()
	hi.Roots.AppendCertsFromPEM(pemCert)
	hi.server = httptest.NewUnstartedServer(http.HandlerFunc(hi.serve))
	hi.server.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	hi.server.StartTLS()
	t.Cleanup(hi.server.Close)
	hi.Proxy = hi.startProxy(t)
	return hi
}

// Route changes (or adds) the directory an index URL is served from: what
// upstream holds changes between two checks.
func (hi *HostIndex) Route(u, dir string) {
	pu, _ := url.Parse(u)
	hi.mu.Lock()
	defer hi.mu.Unlock()
	hi.routes[pu.Host+pu.Path] = dir
}

func (hi *HostIndex) serve(w http.ResponseWriter, r *http.Request) {
	hi.mu.Lock()
	var root, dir string
	for k, d := range hi.routes {
		host, p, _ := strings.Cut(k, "/")
		p = "/" + p
		if host == r.Host && strings.HasPrefix(r.URL.Path, p) && len(p) > len(root) {
			root, dir = p, d
		}
	}
	hi.mu.Unlock()
	if root == "" {
		http.NotFound(w, r)
		return
	}
	serveSimple(w, r, root, dir, true) // AMD's indexes are static PEP 503 pages
}

// startProxy listens for CONNECT requests: a tunnel to one of the served
// hosts on 443 reaches the TLS server; any other request closes its
// connection unanswered (no upstream there).
func (hi *HostIndex) startProxy(t testing.TB) string {
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // runs after Listen's cleanup has closed every connection
	l, track := Listen(t)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			track(c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil || req.Method != http.MethodConnect {
					return
				}
				host, port, err := net.SplitHostPort(req.Host)
				if err != nil || port != "443" || !slices.Contains(hi.hosts, host) {
					return
				}
				up, err := net.Dial("tcp", hi.server.Listener.Addr().String())
				if err != nil {
					return
				}
				track(up)
				defer up.Close()
				if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
					return
				}
				done := make(chan struct{}, 2)
				go func() { io.Copy(up, br); done <- struct{}{} }()
				go func() { io.Copy(c, up); done <- struct{}{} }()
				<-done
			}()
		}
	}()
	return "http://" + l.Addr().String()
}

// selfSigned makes a certificate for hosts (and 127.0.0.1) that is its own
// root, valid for a day.
func selfSigned(t testing.TB, hosts []string) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{Organization: []string{"haloforge test upstream"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              hosts,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	return cert, certPEM
}
