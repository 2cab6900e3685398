package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps/serve"
)

// Cluster runs node.sh on the inventory's nodes: the probes of `check`,
// and the launches and stops of `up` and `down`.
type Cluster struct {
	Inv    *Inventory
	Remote Remote
	// Say prints one progress line (line mode); nil prints nothing.
	Say func(format string, args ...any)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Poll is how often readiness is checked and probed (1 s when zero).
	Poll time.Duration
	// JoinTimeout bounds waiting for a worker's port or the Ray cluster (90 s when zero).
	JoinTimeout time.Duration
	// ReadyTimeout bounds the whole start-up of the head's server (60 min
	// when zero); the phases' own stall budgets usually end it sooner.
	ReadyTimeout time.Duration
	// Budgets override the serve state machine's stall budgets.
	Budgets map[serve.PhaseID]time.Duration
}

func (c *Cluster) say(format string, args ...any) {
	if c.Say != nil {
		c.Say(format, args...)
	}
}

func (c *Cluster) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Cluster) poll() time.Duration {
	if c.Poll > 0 {
		return c.Poll
	}
	return time.Second
}

// ProbeArgs are node.sh probe's arguments for a node.
func (c *Cluster) ProbeArgs(n Node, engine string) []string {
	var args []string
	if c.Inv.Pins != "" {
		args = append(args, "--pins", c.Inv.Pins)
	}
	if c.Inv.Image != "" {
		args = append(args, "--image", c.Inv.Image)
	}
	if ValidateAddress(n.Address) == nil && !isIP(n.Address) {
		args = append(args, "--self", n.Address)
	}
	if engine == EngineRay {
		args = append(args, "--rccl")
	}
	for _, ep := range PeerPorts(c.Inv, engine, n) {
		args = append(args, "--tcp", ep)
	}
	return args
}

// ProbeAll probes every node at once.
func (c *Cluster) ProbeAll(ctx context.Context, engine string) map[string]Probed {
	out := map[string]Probed{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range c.Inv.Nodes {
		wg.Add(1)
		go func(n Node) {
			defer wg.Done()
			start := time.Now()
			f, res, err := c.Remote.Probe(ctx, n, c.ProbeArgs(n, engine)...)
			if err == nil && res.Code != 0 && f != nil && !f.Complete {
				err = fmt.Errorf("node.sh probe exited %d: %s", res.Code, firstLine(res.Stderr))
			}
			mu.Lock()
			out[n.Name] = Probed{Facts: f, Err: err, Took: time.Since(start)}
			mu.Unlock()
		}(n)
	}
	wg.Wait()
	return out
}

// Check probes the nodes and evaluates them.
func (c *Cluster) Check(ctx context.Context, o CheckOptions) *Report {
	return Evaluate(c.Inv, c.ProbeAll(ctx, o.Engine), o)
}

// forEach runs fn on every node at once and collects errors by node.
func (c *Cluster) forEach(nodes []Node, fn func(Node) error) map[string]error {
	errs := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func(n Node) {
			defer wg.Done()
			if err := fn(n); err != nil {
				mu.Lock()
				errs[n.Name] = err
				mu.Unlock()
			}
		}(n)
	}
	wg.Wait()
	return errs
}

// Status lists what haloforge started on each node.
func (c *Cluster) Status(ctx context.Context) (map[string]map[string]Service, map[string]error) {
	out := map[string]map[string]Service{}
	var mu sync.Mutex
	errs := c.forEach(c.Inv.Nodes, func(n Node) error {
		res, err := c.Remote.Run(ctx, n, "status")
		if err != nil {
			return err
		}
		if res.Code != 0 {
			return fmt.Errorf("node.sh status exited %d: %s", res.Code, firstLine(res.Stderr))
		}
		mu.Lock()
		out[n.Name] = ParseStatus(string(res.Stdout))
		mu.Unlock()
		return nil
	})
	return out, errs
}

// UpResult is what a successful `cluster up` reached.
type UpResult struct {
	URL       string
	Ready     time.Duration // from the first launch to the head's readiness
	Transport NetTransport  // ray: RCCL's transport
	Devices   []string      // rpc: what llama-server said of the RPC devices
	Started   []Launch
}

// UpError is a failed `cluster up`: where, why, what the log showed.
type UpError struct {
	Launch   Launch
	Reason   string
	Tail     []string           // the service's last log lines
	Findings []diagnose.Finding // known failures in them
	Stopped  string             // what was stopped again
}

func (e *UpError) Error() string {
	return fmt.Sprintf("%s on %s: %s", e.Launch.Service, e.Launch.Node.Name, e.Reason)
}

// ErrAlreadyUp means haloforge's services already run on a node.
var ErrAlreadyUp = errors.New("already running")

// Up runs the plan's launches in order, waiting after each for what it
// promises (a worker's port reachable from the head, the Ray cluster
// complete, the head's server ready). On a failure it stops what it
// started and says why, with the diagnosis of the failing log.
func (c *Cluster) Up(ctx context.Context, p *Plan) (*UpResult, error) {
	for _, l := range p.Launches {
		for _, e := range l.Env {
			if strings.HasPrefix(e.Value, "<") || strings.HasPrefix(e.Value, "=<") {
				return nil, fmt.Errorf("%s on %s: %s is not resolved (%s): probe the nodes first", l.Service, l.Node.Name, e.Name, e.Value)
			}
		}
	}
	status, errs := c.Status(ctx)
	if len(errs) > 0 {
		return nil, joinNodeErrors(errs)
	}
	var running []string
	for _, n := range c.Inv.Nodes {
		for _, s := range sortedServices(status[n.Name]) {
			if s.State == "running" || len(s.Procs) > 0 {
				running = append(running, fmt.Sprintf("%s on %s (pid %d)", s.Name, n.Name, s.PID))
			}
		}
	}
	if len(running) > 0 {
		return nil, fmt.Errorf("%w: %s; run haloforge cluster down --inventory %s first", ErrAlreadyUp, strings.Join(running, ", "), c.Inv.Path)
	}
	res := &UpResult{URL: p.URL}
	start := c.now()
	for i, l := range p.Launches {
		c.say("▶ [%d/%d] %s on %s: %s", i+1, len(p.Launches), l.Service, l.Node.Name, l.Shell())
		if err := c.start(ctx, l); err != nil {
			// It may have started and exited: its pid file is cleared with the rest.
			res.Started = append(res.Started, l)
			return nil, c.abort(ctx, res, err)
		}
		res.Started = append(res.Started, l)
		var err error
		switch {
		case l.Service == ServiceRPC:
			err = c.waitPort(ctx, l, c.Inv.Head(), l.Node.Address, c.Inv.RPCPort)
			if err == nil && i+1 < len(p.Launches) && p.Launches[i+1].Service == ServiceLlama {
				res.Devices, err = c.rpcDevices(ctx, l, p.Launches[i+1])
			}
		case l.Service == ServiceRayHead:
			for _, w := range c.Inv.Workers() {
				if err = c.waitPort(ctx, l, w, l.Node.Address, c.Inv.RayPort); err != nil {
					break
				}
			}
		case l.Service == ServiceRayWorker && (i+1 < len(p.Launches) && p.Launches[i+1].Service != ServiceRayWorker):
			err = c.waitRay(ctx, l)
		case l.Service == ServiceLlama || l.Service == ServiceVLLM:
			err = c.ready(ctx, l, p, res)
		}
		if err != nil {
			return nil, c.abort(ctx, res, err)
		}
	}
	res.Ready = c.now().Sub(start)
	return res, nil
}

func sortedServices(m map[string]Service) []Service {
	out := make([]Service, 0, len(m))
	for _, s := range m {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func joinNodeErrors(errs map[string]error) error {
	names := make([]string, 0, len(errs))
	for n := range errs {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, n+": "+errs[n].Error())
	}
	return errors.New(strings.Join(parts, "; "))
}

// start runs node.sh start; a launch that exits at once is a failure with its log.
func (c *Cluster) start(ctx context.Context, l Launch) error {
	r, err := c.Remote.Run(ctx, l.Node, l.StartArgs()...)
	if err != nil {
		return &UpError{Launch: l, Reason: err.Error()}
	}
	if r.Code != 0 {
		var tail []string
		reason := "it did not start"
		for _, line := range strings.Split(strings.TrimRight(string(r.Stdout), "\n"), "\n") {
			switch {
			case strings.HasPrefix(line, "| "):
				tail = append(tail, line[2:])
			case strings.HasPrefix(line, "error="):
				reason = strings.TrimPrefix(line, "error=")
			case strings.HasPrefix(line, "exited="):
				reason = "it exited at once with code " + strings.TrimPrefix(line, "exited=")
			}
		}
		return &UpError{Launch: l, Reason: reason, Tail: tail, Findings: diagnoseLines(tail)}
	}
	return nil
}

// waitPort waits until from can open addr:port, while the launch still runs.
func (c *Cluster) waitPort(ctx context.Context, l Launch, from Node, addr string, port int) error {
	deadline := c.now().Add(c.joinTimeout())
	last := ""
	for {
		r, err := c.Remote.Run(ctx, from, "tcp", addr, strconv.Itoa(port), "3")
		if err != nil {
			return &UpError{Launch: l, Reason: "testing the port from " + from.Name + ": " + err.Error()}
		}
		last = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(r.Stdout)), "tcp="))
		if last == "open" {
			c.say("  ✓ %s reachable from %s", hostPort(addr, port), from.Name)
			return nil
		}
		if err := c.stillRunning(ctx, l); err != nil {
			return err
		}
		if c.now().After(deadline) {
			reason := fmt.Sprintf("%s is not reachable from %s after %s (last: %s)", hostPort(addr, port), from.Name, c.joinTimeout(), last)
			if last == "timeout" || last == "unreachable" {
				reason += ": a firewall drops or rejects the port; haloforge cluster check shows which"
			}
			return c.failWithLog(ctx, l, reason)
		}
		if err := sleepCtx(ctx, c.poll()); err != nil {
			return err
		}
	}
}

func (c *Cluster) joinTimeout() time.Duration {
	if c.JoinTimeout > 0 {
		return c.JoinTimeout
	}
	return 90 * time.Second
}

// stillRunning fails with the service's log when it has exited.
func (c *Cluster) stillRunning(ctx context.Context, l Launch) error {
	r, err := c.Remote.Run(ctx, l.Node, "status")
	if err != nil {
		return &UpError{Launch: l, Reason: err.Error()}
	}
	s, ok := ParseStatus(string(r.Stdout))[l.Service]
	if ok && s.State == "running" {
		return nil
	}
	why := "it stopped"
	if ok && s.State == "exited" {
		why = "it exited with code " + s.Code
	}
	return c.failWithLog(ctx, l, why)
}

// failWithLog is an UpError carrying the service's log tail and its diagnosis.
func (c *Cluster) failWithLog(ctx context.Context, l Launch, reason string) error {
	tail := c.logTail(ctx, l, 200)
	return &UpError{Launch: l, Reason: reason, Tail: lastN(tail, 30), Findings: diagnoseLines(tail)}
}

func (c *Cluster) logTail(ctx context.Context, l Launch, n int) []string {
	r, err := c.Remote.Run(ctx, l.Node, "log", l.Service, strconv.Itoa(n))
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(r.Stdout), "\n") {
		if strings.HasPrefix(line, "| ") {
			out = append(out, line[2:])
		}
	}
	return out
}

func lastN(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// reRPCDevice is a line of llama-server --list-devices naming an RPC
// device: "  RPC0: 10.89.77.11:50052 (24105 MiB, 23288 MiB free)".
var reRPCDevice = regexp.MustCompile(`^\s*(RPC\d+): (\S+) \((.*)\)\s*$`)

// rpcDevices asks llama-server on the head to list the devices it sees
// through --rpc, before it serves: each worker must answer the RPC
// handshake (same protocol version), not only accept a TCP connection.
func (c *Cluster) rpcDevices(ctx context.Context, last Launch, head Launch) ([]string, error) {
	var endpoints string
	for i, a := range head.Argv {
		if a == "--rpc" && i+1 < len(head.Argv) {
			endpoints = head.Argv[i+1]
		}
	}
	r, err := c.Remote.Run(ctx, head.Node, "run", "60", "--", "llama-server", "--rpc", endpoints, "--list-devices")
	if err != nil {
		return nil, &UpError{Launch: head, Reason: "listing the RPC devices: " + err.Error()}
	}
	var devices []string
	seen := map[string]bool{}
	for _, line := range strings.Split(string(r.Stdout), "\n") {
		if m := reRPCDevice.FindStringSubmatch(text.Sanitize(line)); m != nil {
			devices = append(devices, m[1]+": "+m[2]+" ("+m[3]+")")
			seen[m[2]] = true
		}
	}
	var missing []string
	for _, ep := range strings.Split(endpoints, ",") {
		if !seen[ep] {
			missing = append(missing, ep)
		}
	}
	if len(missing) > 0 {
		var tail []string
		for _, line := range strings.Split(strings.TrimSpace(string(r.Stdout)+"\n"+r.Stderr), "\n") {
			tail = append(tail, text.Screen(line))
		}
		return nil, &UpError{Launch: last, Reason: fmt.Sprintf("llama-server on %s lists no RPC device for %s: the worker accepts connections but does not answer the RPC handshake (a different ggml version?)", head.Node.Name, strings.Join(missing, ", ")),
			Tail: lastN(tail, 20), Findings: diagnoseLines(tail)}
	}
	for _, d := range devices {
		c.say("  ✓ the head sees %s", d)
	}
	return devices, nil
}

// waitRay waits until `ray status` on the head lists every node.
func (c *Cluster) waitRay(ctx context.Context, l Launch) error {
	head := c.Inv.Head()
	addr := "--address=" + hostPort(head.Address, c.Inv.RayPort)
	deadline := c.now().Add(c.joinTimeout())
	seen := 0
	for {
		r, err := c.Remote.Run(ctx, head, "run", "30", "--", "ray", "status", addr)
		if err != nil {
			return &UpError{Launch: l, Reason: err.Error()}
		}
		if seen = RayNodes(string(r.Stdout)); seen >= len(c.Inv.Nodes) {
			c.say("  ✓ ray status lists %d nodes", seen)
			return nil
		}
		for _, w := range c.Inv.Workers() {
			if err := c.stillRunning(ctx, Launch{Node: w, Service: ServiceRayWorker}); err != nil {
				return err
			}
		}
		if c.now().After(deadline) {
			return c.failWithLog(ctx, l, fmt.Sprintf("ray status lists %d of %d nodes after %s: a worker could not join (firewalled ports, or a wrong --node-ip-address)", seen, len(c.Inv.Nodes), c.joinTimeout()))
		}
		if err := sleepCtx(ctx, c.poll()); err != nil {
			return err
		}
	}
}

// ready follows the head server's log through the serve state machine,
// probing /health and /v1/models from the head, until it is ready, fails,
// stalls or exits. A known failure in the log is named at once.
func (c *Cluster) ready(ctx context.Context, l Launch, p *Plan, res *UpResult) error {
	engine := serve.EngineLlamaCpp
	if l.Service == ServiceVLLM {
		engine = serve.EngineVLLM
	}
	start := c.now()
	budgets := map[serve.PhaseID]time.Duration{}
	if l.Service == ServiceLlama {
		// The weights cross the network to every worker while llama-server
		// says nothing at its default verbosity: minutes on a 10 GbE link for
		// a big model (the workers' -c cache makes the next start fast).
		budgets[serve.PhaseLoading] = rpcLoadingBudget
	}
	for k, v := range c.Budgets {
		budgets[k] = v
	}
	rd, err := serve.NewReadiness(serve.ReadinessOptions{Engine: engine, Budgets: budgets}, start)
	if err != nil {
		return &UpError{Launch: l, Reason: err.Error()}
	}
	limit := c.ReadyTimeout
	if limit <= 0 {
		limit = time.Hour
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lines := make(chan string, 4096)
	streamDone := make(chan error, 1)
	go func() {
		_, err := c.Remote.Stream(fctx, l.Node, func(s string) {
			select {
			case lines <- s:
			case <-fctx.Done():
			}
		}, "follow", l.Service, strconv.Itoa(int(limit.Seconds())+60))
		streamDone <- err
		close(lines)
	}()
	m := diagnose.NewMatcher(diagnose.MatcherOptions{})
	var tail []string
	lineNo := 0
	host := urlHost(hostOfURL(p.URL), l.Node.Address)
	port := portOfURL(p.URL)
	ticks := time.NewTicker(c.poll())
	defer ticks.Stop()
	polls := 0
	fail := func(reason string) error {
		cancel()
		if more := c.logTail(ctx, l, 200); len(more) > len(tail) {
			tail = more
		}
		fs := m.End()
		if len(fs) == 0 {
			fs = diagnoseLines(tail)
		}
		return &UpError{Launch: l, Reason: reason, Tail: lastN(tail, 30), Findings: fs}
	}
	handle := func(evs []serve.ReadinessEvent) error {
		for _, ev := range evs {
			switch ev := ev.(type) {
			case serve.PhaseEntered:
				c.say("  ▸ %s (%s)", ev.Title, text.Duration(ev.Elapsed))
			case serve.PhaseWarning:
				c.say("  ! %s: %s", ev.Text, ev.Line) // the readiness machine made it printable
			case serve.ServerReady:
				c.say("  ✓ ready in %s: %s", text.Duration(ev.Elapsed), p.URL)
				return errReady
			case serve.StartFailed:
				return fail(ev.Reason)
			case serve.PhaseStalled:
				return fail(ev.Reason)
			}
		}
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case s, open := <-lines:
			if !open {
				lines = nil
				continue
			}
			now := c.now()
			switch {
			case strings.HasPrefix(s, "| "):
				// A log line from the node, as a terminal would show it:
				// kept, matched and printed only so.
				line := text.Screen(s[2:])
				lineNo++
				tail = append(tail, line)
				if len(tail) > 400 {
					tail = tail[len(tail)-300:]
				}
				if f := m.Line(lineNo, line); f != nil {
					c.say("  ! known failure %s: %s (line %d of the log)", f.Family, f.Summary, f.Line)
				}
				if res.Transport.Feed(line) {
					c.say("  ▸ %s", res.Transport.Describe())
				}
				if err := handle(rd.Lines(now, []string{line})); err != nil {
					return done(err)
				}
			case strings.HasPrefix(s, "state="):
				st := strings.TrimPrefix(s, "state=")
				if code, ok := strings.CutPrefix(st, "exited "); ok {
					n, _ := strconv.Atoi(code)
					if err := handle(rd.Exited(now, n)); err != nil {
						return done(err)
					}
				}
			}
		case err := <-streamDone:
			streamDone = nil
			if rd.Done() {
				continue
			}
			if err != nil {
				return fail("lost the log stream: " + err.Error())
			}
		case <-ticks.C:
			now := c.now()
			if now.Sub(start) > limit {
				return fail(fmt.Sprintf("not ready after %s", limit))
			}
			if err := handle(rd.Tick(now)); err != nil {
				return done(err)
			}
			polls++
			ph := rd.Phase().ID
			if path := rd.NextProbe(); path != "" && (ph == serve.PhaseHealth || ph == serve.PhaseModels || polls%5 == 0) {
				status, body := c.httpGet(ctx, l.Node, host, port, path)
				if err := handle(rd.Probe(c.now(), path, status, body)); err != nil {
					return done(err)
				}
				if path == "/health" && status == 200 && rd.NextProbe() == "/v1/models" {
					status, body = c.httpGet(ctx, l.Node, host, port, "/v1/models")
					if err := handle(rd.Probe(c.now(), "/v1/models", status, body)); err != nil {
						return done(err)
					}
				}
			}
			if streamDone == nil && lines == nil && !rd.Done() {
				return fail("the log stream ended before the server was ready")
			}
		}
	}
}

var errReady = errors.New("ready")

// rpcLoadingBudget is the silence llama-server may keep while it loads a
// model across RPC workers.
const rpcLoadingBudget = 30 * time.Minute

// done turns the readiness loop's sentinel into success.
func done(err error) error {
	if errors.Is(err, errReady) {
		return nil
	}
	return err
}

// httpGet asks node.sh on the node for an HTTP GET: status 0 when nothing answered.
func (c *Cluster) httpGet(ctx context.Context, n Node, host, port, path string) (int, []byte) {
	r, err := c.Remote.Run(ctx, n, "http", host, port, path)
	if err != nil || r.Code != 0 {
		return 0, nil
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(r.Stdout)), nil)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body
}

func hostOfURL(u string) string {
	h := strings.TrimPrefix(u, "http://")
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		h = h[:i]
	}
	return strings.Trim(h, "[]")
}

func portOfURL(u string) string {
	if i := strings.LastIndexByte(u, ':'); i >= 0 {
		return u[i+1:]
	}
	return "80"
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// abort stops what Up started and returns the failure with what was stopped.
func (c *Cluster) abort(ctx context.Context, res *UpResult, err error) error {
	var ue *UpError
	if !errors.As(err, &ue) {
		ue = &UpError{Reason: err.Error()}
	}
	sctx := context.WithoutCancel(ctx)
	var stopped []string
	for i := len(res.Started) - 1; i >= 0; i-- {
		l := res.Started[i]
		r, err := c.Remote.Run(sctx, l.Node, "stop", l.Service)
		switch {
		case err != nil:
			stopped = append(stopped, fmt.Sprintf("%s on %s: %v", l.Service, l.Node.Name, err))
		case r.Code != 0:
			stopped = append(stopped, fmt.Sprintf("%s on %s: %s", l.Service, l.Node.Name, text.Printable(string(r.Stdout), 300)))
		default:
			stopped = append(stopped, l.Service+" on "+l.Node.Name)
		}
	}
	ue.Stopped = strings.Join(stopped, ", ")
	return ue
}

func diagnoseLines(lines []string) []diagnose.Finding {
	if len(lines) == 0 {
		return nil
	}
	fs, err := diagnose.Scan(strings.NewReader(strings.Join(lines, "\n")), diagnose.MatcherOptions{})
	if err != nil {
		return nil
	}
	return fs
}

// DownResult is what `cluster down` did on each node.
type DownResult struct {
	Nodes []NodeDown
}

// NodeDown is one node's stops.
type NodeDown struct {
	Name    string
	Stopped []string // "rpc-server (pid 123)", "llama-server: not running"
	Left    []string // processes still there afterwards
	Err     error
}

// Clean says nothing was left on any node and every node answered.
func (d *DownResult) Clean() bool {
	for _, n := range d.Nodes {
		if n.Err != nil || len(n.Left) > 0 {
			return false
		}
	}
	return true
}

// Down stops everything haloforge started on every node (by pid file and
// session), then checks with status that nothing of it is left.
func (c *Cluster) Down(ctx context.Context) *DownResult {
	out := &DownResult{}
	var mu sync.Mutex
	// The head's server first: it is the client of the workers' servers,
	// and stopping them under it would make its shutdown wait on them.
	var first []string
	if r, err := c.Remote.Run(ctx, c.Inv.Head(), "stop", ServiceLlama, ServiceVLLM); err == nil {
		for _, line := range strings.Split(string(r.Stdout), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "stop.") && strings.HasPrefix(v, "stopped") {
				first = append(first, strings.TrimPrefix(k, "stop.")+": "+v)
			}
		}
	}
	c.forEach(c.Inv.Nodes, func(n Node) error {
		nd := NodeDown{Name: n.Name}
		if n.Role == RoleHead {
			nd.Stopped = append(nd.Stopped, first...)
		}
		r, err := c.Remote.Run(ctx, n, "stop", "--all")
		if err != nil {
			nd.Err = err
		} else {
			for _, line := range strings.Split(string(r.Stdout), "\n") {
				k, v, ok := strings.Cut(line, "=")
				if !ok || !strings.HasPrefix(k, "stop.") {
					continue
				}
				name := strings.TrimPrefix(k, "stop.")
				if left, ok := strings.CutPrefix(v, "left "); ok {
					nd.Left = append(nd.Left, name+": "+left)
					continue
				}
				nd.Stopped = append(nd.Stopped, name+": "+v)
			}
			if r.Code != 0 && len(nd.Left) == 0 {
				nd.Err = fmt.Errorf("node.sh stop exited %d: %s", r.Code, firstLine(r.Stderr))
			}
			// Verify: nothing of ours runs in any recorded session.
			st, err := c.Remote.Run(ctx, n, "status")
			if err != nil {
				nd.Err = err
			} else {
				for _, s := range sortedServices(ParseStatus(string(st.Stdout))) {
					if len(s.Procs) > 0 || s.State == "running" {
						nd.Left = append(nd.Left, fmt.Sprintf("%s: pids %v", s.Name, s.Procs))
					}
				}
			}
		}
		mu.Lock()
		out.Nodes = append(out.Nodes, nd)
		mu.Unlock()
		return nil
	})
	order := map[string]int{}
	for i, n := range c.Inv.Nodes {
		order[n.Name] = i
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return order[out.Nodes[i].Name] < order[out.Nodes[j].Name] })
	return out
}

func isIP(s string) bool { return net.ParseIP(s) != nil }
