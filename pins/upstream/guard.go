package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/haloforge/haloforge/internal/text"
)

// What every request of `pins status` is held to, whoever sends it (this
// package's own GETs, or go-containerregistry's ping, token and manifest
// requests): no clear text except to this machine (loopback registries
// speak plain HTTP, as podman and Docker treat them), no redirect from
// https down to http, at most maxRedirects redirects, and no answer read
// past a bound.

// maxRedirects is how many redirects one request may follow.
const maxRedirects = 5

// refusedError is a request haloforge would not send.
type refusedError struct{ Reason string }

func (e *refusedError) Error() string { return e.Reason }

// checkHop says whether req may be sent. A redirect's request carries the
// response that caused it (req.Response), so a downgrade is seen whichever
// client follows it.
func checkHop(req *http.Request) error {
	hops := 0
	for r := req.Response; r != nil && r.Request != nil; r = r.Request.Response {
		if hops == 0 && r.Request.URL.Scheme == "https" && req.URL.Scheme != "https" {
			return &refusedError{Reason: fmt.Sprintf("refused a redirect from https://%s to %s://%s (a downgrade to clear text)", r.Request.URL.Host, req.URL.Scheme, req.URL.Host)}
		}
		if hops++; hops > maxRedirects {
			return &refusedError{Reason: fmt.Sprintf("more than %d redirects", maxRedirects)}
		}
	}
	if req.URL.Scheme == "http" && !loopback(req.URL.Host) {
		return &refusedError{Reason: fmt.Sprintf("refused to ask %s in clear text (http://): only https, or http on this machine", req.URL.Host)}
	}
	return nil
}

// checkRedirect is the CheckRedirect of this package's own client.
func checkRedirect(req *http.Request, _ []*http.Request) error { return checkHop(req) }

// guard is the RoundTripper under the registry client: checkHop on every
// request, a bound on every answer's body, and what the call should know
// of the answers (noteAnswer).
type guard struct {
	inner   http.RoundTripper
	maxBody int64
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := checkHop(req); err != nil {
		return nil, err
	}
	resp, err := g.inner.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if n, ok := req.Context().Value(noteKey{}).(*callNote); ok {
		n.saw(resp)
	}
	resp.Body = &cappedBody{rc: resp.Body, left: g.maxBody, limit: g.maxBody}
	return resp, nil
}

// tooLargeError is an answer longer than its bound.
type tooLargeError struct{ limit int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("an answer larger than %d MiB (not read further)", e.limit>>20)
}

// cappedBody fails once more than limit bytes were read: a registry that
// sends an endless body costs at most the bound, whoever reads it.
type cappedBody struct {
	rc          io.ReadCloser
	left, limit int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, &tooLargeError{limit: b.limit}
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, &tooLargeError{limit: b.limit}
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// callNote is what one check learns from the answers it got besides their
// status, which the registry client's errors do not carry: how the last
// 401 asked for a login, and how long the server asked to wait.
type callNote struct {
	mu         sync.Mutex
	challenge  string // "basic", "bearer", …: the scheme of the last 401's WWW-Authenticate
	retryAfter string // the last Retry-After header, as sent
}

type noteKey struct{}

func withNote(ctx context.Context) (context.Context, *callNote) {
	n := &callNote{}
	return context.WithValue(ctx, noteKey{}, n), n
}

func (n *callNote) saw(resp *http.Response) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if resp.StatusCode == http.StatusUnauthorized {
		scheme, _, _ := strings.Cut(strings.TrimSpace(resp.Header.Get("WWW-Authenticate")), " ")
		n.challenge = strings.ToLower(scheme)
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		n.retryAfter = ra
	}
}

func (n *callNote) get() (challenge, retryAfter string) {
	if n == nil {
		return "", ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.challenge, n.retryAfter
}

// waitText says how long a Retry-After header (RFC 9110 10.2.3: seconds,
// or an HTTP date) asks to wait: "; the server asks to wait 16m40s
// (Retry-After: 1000)"; "" when there is none. A value that is neither is
// shown as sent, shortened.
func waitText(retryAfter string, now time.Time) string {
	v := strings.TrimSpace(retryAfter)
	if v == "" {
		return ""
	}
	shown := v
	if len(shown) > 40 {
		shown = shown[:40] + "…"
	}
	var wait time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs >= 0 {
		wait = time.Duration(min(secs, int64(100*365*24*3600))) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		wait = max(at.Sub(now), 0)
	} else {
		return "; the server sent Retry-After: " + shown + " (not a wait haloforge can read)"
	}
	return fmt.Sprintf("; the server asks to wait %s (Retry-After: %s)", text.Duration(wait), shown)
}

// statusReason is what a server's unexpected status says: "HTTP 503
// Service Unavailable; the server asks to wait 30s (Retry-After: 30)".
func statusReason(status int, retryAfter string, now time.Time) string {
	s := fmt.Sprintf("HTTP %d", status)
	if t := http.StatusText(status); t != "" {
		s += " " + t
	}
	return s + waitText(retryAfter, now)
}

// isRefusal is an error of this package's own bounds, not of the network.
func isRefusal(err error) (string, bool) {
	var ref *refusedError
	var big *tooLargeError
	switch {
	case errors.As(err, &ref):
		return ref.Reason, true
	case errors.As(err, &big):
		return big.Error(), true
	}
	return "", false
}
