package upstream

import (
	"context"
	"errors"
	"net"
	"time"
)

// A lost DNS packet costs five seconds with the usual resolver settings
// (resolv.conf's default timeout), on a good network as much as on none:
// measured here, about one lookup in forty. So the HTTP side resolves each
// host once per run, with short attempts repeated until the request's own
// timeout, and dials the addresses itself.

// dnsAttempt is how long one lookup attempt may take before it is sent
// again; dnsBudget is how long a host may take to resolve at all. A resolver
// that has not answered in three attempts is no answer: measured here, the
// resolver of a machine without network sometimes takes five seconds to say
// so, which is the whole of `pins status`'s budget when nothing answers.
const (
	dnsAttempt = time.Second
	dnsBudget  = 3 * time.Second
)

var resolver = &net.Resolver{PreferGo: true}

// lookup resolves host once per run, retrying attempts that time out. An
// answer is kept for the run; a lookup cut short by its request's context
// is not (another request may still want the host, a proxy's say).
func (c *checker) lookup(ctx context.Context, host string) ([]net.IPAddr, error) {
	c.mu.Lock()
	r, ok := c.dns[host]
	c.mu.Unlock()
	if ok {
		return r.addrs, r.err
	}
	budget, stop := context.WithTimeout(ctx, dnsBudget)
	defer stop()
	for {
		actx, cancel := context.WithTimeout(budget, dnsAttempt)
		addrs, err := resolver.LookupIPAddr(actx, host)
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var dns *net.DNSError
		timedOut := err != nil && errors.As(err, &dns) && dns.IsTimeout
		if !timedOut || budget.Err() != nil {
			if timedOut {
				err = &net.DNSError{Err: "no answer", Name: host, IsTimeout: true}
			}
			c.mu.Lock()
			c.dns[host] = dnsAnswer{addrs, err}
			c.mu.Unlock()
			return addrs, err
		}
	}
}

type dnsAnswer struct {
	addrs []net.IPAddr
	err   error
}

// dial is the HTTP transport's dialer: the run's DNS answer, then each
// address in turn.
func (c *checker) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: c.opts.RequestTimeout, KeepAlive: 30 * time.Second}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || net.ParseIP(host) != nil {
		return d.DialContext(ctx, network, addr)
	}
	ips, err := c.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	var first error
	for _, ip := range ips {
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}
