// Package upstream answers "does each pin still resolve where it comes
// from?" for `haloforge pins status`. It only reads: wheel pins are looked up
// on their simple index (PEP 691 JSON, else PEP 503 HTML), image pins on
// their OCI registry (a manifest HEAD with go-containerregistry, logged in
// with the user's podman or docker credentials, else anonymously), git pins with
// `git ls-remote` (and a one-commit fetch by SHA when a SHA is no branch or
// tag tip). Nothing is installed, pulled or cloned.
//
// Every check is bounded in time (a deadline for the whole run and one per
// request), runs concurrently with a bounded number of requests in flight,
// and fails soft: a host that does not answer makes its pins `unreachable`
// with one short reason, and the other pins of that host are not tried again.
// Which pin is checked where is the table in rules.go (README.md shows it).
package upstream

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/pins"
)

// State is what a check found; the values are pins status's (docs/ids.md).
type State string

// The states of `pins status --json`.
const (
	OK          State = "ok"          // resolves as pinned
	Moved       State = "moved"       // a tag or branch now points elsewhere than at the last status
	Retired     State = "retired"     // gone upstream
	Unreachable State = "unreachable" // no answer
	Unchecked   State = "unchecked"   // --offline, or nothing upstream to ask
)

// Result is one pin's line of `pins status`.
type Result struct {
	Name   string    `json:"name"`
	Value  string    `json:"value"`
	Kind   pins.Kind `json:"kind"`
	State  State     `json:"state"`
	Detail string    `json:"detail"`
	// Upstream is what was asked (an index, a registry repository, a git URL).
	Upstream string `json:"upstream,omitempty"`
	// Method is how: simple-index, index-root, oci-registry, git, none.
	Method string `json:"method"`
	// Resolved is what the pin points at now: an image digest, a commit SHA,
	// or wheel files with their sha256; it is what `moved` compares.
	Resolved string `json:"resolved,omitempty"`
}

// Options tune a run; the zero value is the CLI's default.
type Options struct {
	Offline        bool          // answer `unchecked` for every pin, touch no network
	Deadline       time.Duration // the whole run (default 30 s)
	RequestTimeout time.Duration // one request or one git command (default 10 s)
	Parallel       int           // requests in flight (default 8)
	// RootCAs replaces the system roots for HTTPS (tests); nil = system.
	RootCAs *x509.CertPool
	// Git is the git binary (default "git"); GitEnv is added to its environment.
	Git    string
	GitEnv []string
	// Previous is the last status, for `moved`; nil = none.
	Previous *Cache
	// Now is the clock (tests); nil = time.Now.
	Now func() time.Time
	// Only restricts the run to these pins (a track's, for the plan); the
	// other pins of the file are still read for context (the index a wheel is
	// on, PYTHON_VERSION) but not asked about. nil = every pin.
	Only []string
}

func (o *Options) defaults() {
	if o.Deadline <= 0 {
		o.Deadline = 30 * time.Second
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 10 * time.Second
	}
	if o.RequestTimeout > o.Deadline {
		o.RequestTimeout = o.Deadline
	}
	if o.Parallel <= 0 {
		o.Parallel = 8
	}
	if o.Git == "" {
		o.Git = "git"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Report is the outcome of a run.
type Report struct {
	CheckedAt time.Time     `json:"checked_at"`
	Duration  time.Duration `json:"-"`
	Offline   bool          `json:"offline"`
	Pins      []Result      `json:"pins"`
	// NoNetwork is one line when no upstream answered at all ("" otherwise).
	NoNetwork string `json:"no_network,omitempty"`
}

// Count returns how many results are in each state.
func (r *Report) Count() map[State]int {
	out := map[State]int{}
	for _, p := range r.Pins {
		out[p.State]++
	}
	return out
}

// Check resolves every pin of f against its upstream. It never returns an
// error: what could not be checked says so in its Result.
func Check(ctx context.Context, f *pins.File, opts Options) *Report {
	opts.defaults()
	start := opts.Now()
	rep := &Report{CheckedAt: start.UTC().Truncate(time.Second), Offline: opts.Offline}
	plans := planAll(f)
	if opts.Only != nil {
		plans = slices.DeleteFunc(plans, func(p plan) bool { return !slices.Contains(opts.Only, p.pin.Name) })
	}
	rep.Pins = make([]Result, len(plans))
	if opts.Offline {
		for i, p := range plans {
			rep.Pins[i] = p.result(Unchecked, "not checked (--offline)")
			if p.method == methodNone {
				rep.Pins[i].Detail = p.why
			}
		}
		rep.Duration = opts.Now().Sub(start)
		return rep
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Deadline)
	defer cancel()
	c := newChecker(opts)
	var wg sync.WaitGroup
	for i := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep.Pins[i] = clean(plans[i].run(ctx, c))
		}()
	}
	wg.Wait()
	compareWithPrevious(rep, opts.Previous)
	rep.NoNetwork = c.noNetwork(rep)
	rep.Duration = opts.Now().Sub(start)
	return rep
}

// checker holds what the checks of one run share: the HTTP client, a
// bound on requests in flight, memoised upstream answers (several pins read
// one index page, one registry manifest or one ls-remote) and the hosts that
// did not answer.
type checker struct {
	opts   Options
	http   *http.Client
	slots  chan struct{}
	mu     sync.Mutex
	memo   map[string]*memoEntry
	down   map[string]string // host -> why it did not answer
	tokens map[string]string // bearer tokens by realm+service+scope
	flying map[string]map[uint64]context.CancelFunc
	seq    uint64
	dns    map[string]dnsAnswer
	// answered: hosts that sent an HTTP answer this run, whatever it said
	answered map[string]bool
	puller   *remote.Puller // the registry client, shared by the image pins
	keys     *keychain      // the user's registry credentials, as podman finds them
}

type memoEntry struct {
	once sync.Once
	val  any
	err  error
}

func newChecker(opts Options) *checker {
	c := &checker{
		opts:   opts,
		slots:  make(chan struct{}, opts.Parallel),
		memo:   map[string]*memoEntry{},
		down:   map[string]string{},
		tokens: map[string]string{},
		flying: map[string]map[uint64]context.CancelFunc{},
		dns:    map[string]dnsAnswer{},

		answered: map[string]bool{},
		keys:     newKeychain(),
	}
	c.http = newHTTPClient(opts, c.dial)
	c.puller = newPuller(c)
	return c
}

// once runs fn a single time per key for the whole run; callers of the
// same key share its answer.
func (c *checker) once(key string, fn func() (any, error)) (any, error) {
	c.mu.Lock()
	e, ok := c.memo[key]
	if !ok {
		e = &memoEntry{}
		c.memo[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.val, e.err = fn() })
	return e.val, e.err
}

// unreachableError is "no answer from host", with a short reason.
// soft: the host answered, badly (an HTTP 5xx); its other pins are still
// tried. Not soft: the host is not asked again this run (it did not
// answer, or asked to be left alone: a 429).
type unreachableError struct {
	Host, Reason string
	soft         bool
}

func (e *unreachableError) Error() string { return e.Host + ": " + e.Reason }

// goneError is "the upstream answered: it is not there".
type goneError struct{ Reason string }

func (e *goneError) Error() string { return e.Reason }

// uncheckableError is "the upstream answered, but cannot tell".
type uncheckableError struct{ Reason string }

func (e *uncheckableError) Error() string { return e.Reason }

// network runs one request to host within a slot and the per-request
// timeout. When host already failed to answer, it does not try again. A
// failure that fn reports as *unreachableError marks the host down.
func (c *checker) network(ctx context.Context, host string, fn func(ctx context.Context) error) error {
	c.mu.Lock()
	why, isDown := c.down[host]
	c.mu.Unlock()
	if isDown {
		return &unreachableError{Host: host, Reason: why}
	}
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return &unreachableError{Host: host, Reason: fmt.Sprintf("no answer within %s (the run's deadline)", c.opts.Deadline)}
	}
	defer func() { <-c.slots }()
	c.mu.Lock()
	why, isDown = c.down[host]
	c.mu.Unlock()
	if isDown {
		return &unreachableError{Host: host, Reason: why}
	}
	rctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	hctx, release := c.inFlight(rctx, host)
	defer release()
	err := fn(hctx)
	var gone *goneError
	var unc *uncheckableError
	if err != nil && hctx.Err() != nil && !errors.As(err, &gone) && !errors.As(err, &unc) {
		// stopped: either another request found the host down while this
		// one waited (a slow resolver, say), and its answer stands for this
		// one too, or this request's own time ran out
		c.mu.Lock()
		why, down := c.down[host]
		c.mu.Unlock()
		if down {
			return &unreachableError{Host: host, Reason: why}
		}
		err = &unreachableError{Host: host, Reason: "no answer in time"}
	}
	var ue *unreachableError
	if errors.As(err, &ue) && !ue.soft {
		// the run's deadline, not this host, when it has passed (its timer
		// and a transport's own timeout can fire in either order)
		if dl, ok := ctx.Deadline(); ctx.Err() != nil || (ok && !time.Now().Before(dl)) {
			ue.Reason = fmt.Sprintf("no answer within %s (the run's deadline)", c.opts.Deadline)
		}
		c.markDown(host, ue.Reason)
	}
	return err
}

// inFlight registers a request to host, cancelled when the host is found
// down by another request; release unregisters it.
func (c *checker) inFlight(ctx context.Context, host string) (context.Context, func()) {
	hctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	c.seq++
	id := c.seq
	if c.flying[host] == nil {
		c.flying[host] = map[uint64]context.CancelFunc{}
	}
	c.flying[host][id] = cancel
	c.mu.Unlock()
	return hctx, func() {
		c.mu.Lock()
		delete(c.flying[host], id)
		c.mu.Unlock()
		cancel()
	}
}

// markAnswered remembers that host sent an HTTP answer: the run had a
// network, whatever the answer said.
func (c *checker) markAnswered(host string) {
	c.mu.Lock()
	c.answered[host] = true
	c.mu.Unlock()
}

// markDown remembers why host did not answer and stops its other requests.
func (c *checker) markDown(host, why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, seen := c.down[host]; seen {
		return
	}
	c.down[host] = why
	for _, cancel := range c.flying[host] {
		cancel()
	}
}

// noNetwork is the one line for a run where every remote pin was
// unreachable: the hosts and why, not one error per pin.
func (c *checker) noNetwork(rep *Report) string {
	remote, unreachable := 0, 0
	for _, p := range rep.Pins {
		if p.Method != methodNone {
			remote++
			if p.State == Unreachable {
				unreachable++
			}
		}
	}
	c.mu.Lock()
	answered := len(c.answered)
	c.mu.Unlock()
	if remote == 0 || unreachable < remote || answered > 0 {
		// a host that answered, even with an error, is a network: each
		// pin says what its server answered
		return ""
	}
	byReason := map[string][]string{}
	c.mu.Lock()
	for host, why := range c.down {
		byReason[why] = append(byReason[why], host)
	}
	c.mu.Unlock()
	var parts []string
	for why, hosts := range byReason {
		sort.Strings(hosts)
		parts = append(parts, strings.Join(hosts, ", ")+": "+why)
	}
	sort.Strings(parts)
	return "no upstream answered (" + strings.Join(parts, "; ") + "): no network? Every remote pin is unreachable; nothing was learnt about them"
}

// newHTTPClient is a client with bounded connection phases, the user's
// proxy settings, and no cookies or credentials.
func newHTTPClient(opts Options, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dial,
		TLSHandshakeTimeout:   opts.RequestTimeout,
		ResponseHeaderTimeout: opts.RequestTimeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	if opts.RootCAs != nil {
		tr.TLSClientConfig = tlsConfig(opts.RootCAs)
	}
	return &http.Client{Transport: tr, CheckRedirect: checkRedirect}
}

// httpError classifies a transport error (not an HTTP status) of host.
func httpError(host string, err error) error {
	return &unreachableError{Host: host, Reason: netReason(err)}
}

// netReason is a short, human reason for a network error.
func netReason(err error) string {
	if strings.Contains(err.Error(), "proxyconnect") {
		// the user's HTTPS_PROXY did not answer: say so, it is what to fix
		return "proxy from the environment: " + directReason(err)
	}
	return directReason(err)
}

func directReason(err error) string {
	var dns *net.DNSError
	var certErr *x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	switch {
	case errors.As(err, &dns):
		if dns.IsTimeout {
			return "DNS lookup timed out"
		}
		return "could not resolve host"
	case errors.Is(err, context.DeadlineExceeded), os.IsTimeout(err):
		return "no answer in time"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "network unreachable"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &certErr):
		return "TLS certificate from an unknown authority"
	case errors.As(err, &hostErr):
		return "TLS certificate for another host"
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && i+2 < len(msg) {
		msg = msg[i+2:]
	}
	return msg
}

// clean keeps a result printable: upstream text (a registry's error, git's
// stderr) goes through the one sanitiser, and stays short.
func clean(r Result) Result {
	r.Detail = text.Printable(r.Detail, 400)
	r.Upstream = text.Printable(r.Upstream, 300)
	r.Resolved = text.Printable(r.Resolved, 2000)
	return r
}

// short abbreviates a digest or SHA for a detail line.
func short(s string) string {
	if d, ok := strings.CutPrefix(s, "sha256:"); ok && len(d) > 12 {
		return "sha256:" + d[:12]
	}
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
