package cluster

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/haloforge/haloforge/steps/serve"
)

// Services haloforge starts on nodes (the names of their pid files).
const (
	ServiceRPC       = "rpc-server"   // ggml-rpc-server on a worker
	ServiceLlama     = "llama-server" // llama-server --rpc on the head
	ServiceRayHead   = "ray-head"     // ray start --head --block
	ServiceRayWorker = "ray-worker"   // ray start --address … --block
	ServiceVLLM      = "vllm"         // vllm serve on the head
)

// Launch is one process haloforge starts on one node.
type Launch struct {
	Node    Node
	Service string
	Env     []EnvVar // set, in this order
	Unset   []string // removed from the environment first
	Argv    []string // the engine and its arguments
	Purpose string   // what it is, for the dry run
	Then    string   // what haloforge waits for before the next launch
}

// EnvVar is one NAME=VALUE.
type EnvVar struct{ Name, Value string }

// Shell is the launch as one shell command line: what runs on the node.
func (l Launch) Shell() string {
	var parts []string
	if len(l.Env) > 0 || len(l.Unset) > 0 {
		parts = append(parts, "env")
		for _, u := range l.Unset {
			parts = append(parts, "-u", u)
		}
		for _, e := range l.Env {
			parts = append(parts, ShellQuote(e.Name+"="+e.Value))
		}
	}
	for _, a := range l.Argv {
		parts = append(parts, ShellQuote(a))
	}
	return strings.Join(parts, " ")
}

// StartArgs are node.sh's arguments that start the launch.
func (l Launch) StartArgs() []string {
	args := []string{"start", l.Service}
	for _, e := range l.Env {
		args = append(args, "--env", e.Name+"="+e.Value)
	}
	for _, u := range l.Unset {
		args = append(args, "--unset", u)
	}
	return append(append(args, "--"), l.Argv...)
}

// UpOptions are `cluster up`'s choices.
type UpOptions struct {
	Engine string
	Model  string // default: the inventory's
	Port   int    // API port; default: the inventory's
	// APIHost is where the head's API listens (default: the head's cluster address).
	APIHost string
	Ctx     int // context length (0: the engine's default)
	// AllowWildcard accepts binding 0.0.0.0 or :: (GHSA-j8rj-fmpv-wcxw).
	AllowWildcard bool
	// Facts resolve interfaces and the RDMA transport (nil: the dry run
	// shows what is resolved on the nodes at launch).
	Facts map[string]*Facts
}

// Plan is what `cluster up` runs, in order.
type Plan struct {
	Engine    string
	Launches  []Launch
	URL       string   // the head's API
	Transport string   // ray: the resolved transport
	Warnings  []string // wildcard binds, public addresses, unresolved values
}

// Placeholders the dry run prints for what only the nodes can tell.
func placeholderIface(n Node) string { return "<interface of " + n.Address + " on " + n.Name + ">" }

// VLLMUnset are AITER switches kyuz0's cluster manager removes from the Ray
// daemons: AITER is CDNA-only and must not be forced on gfx1151 workers.
var VLLMUnset = []string{"VLLM_ROCM_USE_AITER", "VLLM_ROCM_USE_AITER_LINEAR"}

// PlanUp builds the per-node commands. Errors are bad input (exit 2).
func PlanUp(inv *Inventory, o UpOptions) (*Plan, error) {
	if o.Engine == "" {
		o.Engine = inv.Engine
	}
	if o.Engine == "" {
		o.Engine = EngineRPC
	}
	if o.Engine != EngineRPC && o.Engine != EngineRay {
		return nil, fmt.Errorf("--engine %q: want rpc or ray", o.Engine)
	}
	if o.Model == "" {
		o.Model = inv.Model
	}
	if o.Model == "" {
		return nil, fmt.Errorf("no model: set model = \"…\" in %s or pass --model (a GGUF path on the head for rpc; a Hugging Face ID or a path on every node for ray)", inv.Path)
	}
	if err := checkWord("--model", o.Model); err != nil {
		return nil, err
	}
	if o.Port == 0 {
		o.Port = inv.Port
	}
	if o.Port < 1 || o.Port > 65535 {
		return nil, fmt.Errorf("--port %d: a TCP port is 1 to 65535", o.Port)
	}
	if o.Ctx < 0 {
		return nil, fmt.Errorf("--ctx %d: must be positive", o.Ctx)
	}
	head := inv.Head()
	if o.APIHost == "" {
		o.APIHost = head.Address
	} else if err := ValidateAddress(o.APIHost); err != nil {
		return nil, fmt.Errorf("--api-host: %v", err)
	}
	p := &Plan{Engine: o.Engine}
	var wild []string
	for _, n := range inv.Nodes {
		if IsWildcard(n.Address) {
			wild = append(wild, n.Name+" address "+n.Address)
		}
	}
	if IsWildcard(o.APIHost) {
		wild = append(wild, "the API host "+o.APIHost)
	}
	if len(wild) > 0 {
		msg := fmt.Sprintf("%s binds every interface: ggml-rpc-server has no authentication (%s: remote code execution) and Ray's ports take any connection", strings.Join(wild, ", "), AdvisoryRPC)
		if !o.AllowWildcard {
			return nil, fmt.Errorf("%s; bind the cluster address instead, or pass --allow-wildcard on a network only you use (%s)", msg, advisoryURL)
		}
		p.Warnings = append(p.Warnings, msg+" — allowed by --allow-wildcard")
	}
	for _, n := range inv.Nodes {
		if !IsWildcard(n.Address) && net.ParseIP(n.Address) != nil && !IsPrivate(n.Address) {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s's address %s is public: the %s ports have no authentication (%s); use a private link", n.Name, n.Address, o.Engine, AdvisoryRPC))
		}
	}
	p.URL = "http://" + hostPort(urlHost(o.APIHost, head.Address), o.Port)
	switch o.Engine {
	case EngineRPC:
		planRPC(inv, o, p)
	case EngineRay:
		planRay(inv, o, p)
	}
	return p, nil
}

// urlHost is where a client reaches a server bound to host.
func urlHost(host, fallback string) string {
	if IsWildcard(host) {
		return fallback
	}
	return host
}

func sortedEnv(m map[string]string) []EnvVar {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]EnvVar, 0, len(keys))
	for _, k := range keys {
		out = append(out, EnvVar{k, m[k]})
	}
	return out
}

func planRPC(inv *Inventory, o UpOptions, p *Plan) {
	var endpoints []string
	for _, w := range inv.Workers() {
		ep := hostPort(w.Address, inv.RPCPort)
		if IsWildcard(w.Address) {
			ep = hostPort(w.Name, inv.RPCPort)
		}
		endpoints = append(endpoints, ep)
		p.Launches = append(p.Launches, Launch{
			Node: w, Service: ServiceRPC, Env: sortedEnv(inv.EnvFor(w)),
			// -H binds the cluster address only (the default is 127.0.0.1, and
			// the advisory is about anything wider); -c keeps a local tensor
			// cache, so a restart does not resend the weights.
			Argv:    []string{"ggml-rpc-server", "-H", w.Address, "-p", strconv.Itoa(inv.RPCPort), "-c"},
			Purpose: fmt.Sprintf("ggml-rpc-server on %s, its devices offered to the head; tensor cache on", hostPort(w.Address, inv.RPCPort)),
			Then:    fmt.Sprintf("%s reachable from %s", hostPort(w.Address, inv.RPCPort), inv.Head().Name),
		})
	}
	head := inv.Head()
	if n := len(p.Launches); n > 0 {
		p.Launches[n-1].Then += fmt.Sprintf("; %s lists the RPC devices (llama-server --rpc %s --list-devices)", head.Name, strings.Join(endpoints, ","))
	}
	argv := []string{"llama-server", "-m", o.Model, "--host", o.APIHost, "--port", strconv.Itoa(o.Port),
		"--rpc", strings.Join(endpoints, ","), "-ngl", "999"}
	if o.Ctx > 0 {
		argv = append(argv, "-c", strconv.Itoa(o.Ctx))
	}
	workers := "the worker's"
	if len(endpoints) != 1 {
		workers = fmt.Sprintf("the %d workers'", len(endpoints))
	}
	p.Launches = append(p.Launches, Launch{
		Node: head, Service: ServiceLlama, Env: sortedEnv(inv.EnvFor(head)), Argv: argv,
		Purpose: "llama-server with its own devices and " + workers + " (layers split across them)",
		Then:    "/health and /v1/models answer at " + p.URL,
	})
}

// ResolveTransport picks the collective transport from the nodes' RDMA
// ports: InfiniBand when every node has an active InfiniBand port, RoCE
// when every node has an active Ethernet-layer one, else TCP sockets.
func ResolveTransport(want string, inv *Inventory, facts map[string]*Facts) (string, bool) {
	if want != TransportAuto {
		return want, true
	}
	if facts == nil {
		return TransportAuto, false
	}
	all := func(layer string) bool {
		for _, n := range inv.Nodes {
			f := facts[n.Name]
			if f == nil {
				return false
			}
			found := false
			for _, p := range f.RDMA {
				found = found || (p.Active() && strings.EqualFold(p.LinkLayer, layer))
			}
			if !found {
				return false
			}
		}
		return true
	}
	switch {
	case all("InfiniBand"):
		return TransportInfiniBand, true
	case all("Ethernet"):
		return TransportRoCE, true
	}
	return TransportEthernet, true
}

// rayEnv is the environment of every Ray daemon and of vllm serve on a
// node: kyuz0's cluster manager's set (rdma_cluster/setup_guide.md,
// scripts/cluster_manager.py) with NCCL_DEBUG=INFO so the log says which
// transport RCCL took (NET/IB or NET/Socket).
func rayEnv(inv *Inventory, n Node, transport string, f *Facts, p *Plan) []EnvVar {
	iface := n.Interface
	if iface == "" && f != nil {
		iface, _ = f.InterfaceFor(n)
	}
	if iface == "" {
		iface = placeholderIface(n)
	}
	env := []EnvVar{
		// "=" makes NCCL match the name exactly instead of as a prefix.
		{"NCCL_SOCKET_IFNAME", "=" + iface},
		{"GLOO_SOCKET_IFNAME", iface},
		{"VLLM_HOST_IP", n.Address},
		{"NCCL_DEBUG", "INFO"},
		{"NCCL_DEBUG_SUBSYS", "INIT,NET"},
		{"NCCL_IB_TIMEOUT", "23"},
		{"NCCL_IB_RETRY_CNT", "7"},
		{"NCCL_NET_GDR_LEVEL", "0"},
	}
	switch transport {
	case TransportEthernet:
		env = append(env, EnvVar{"NCCL_IB_DISABLE", "1"})
	case TransportRoCE, TransportInfiniBand:
		gid := "1"
		layer := "Ethernet"
		if transport == TransportInfiniBand {
			gid, layer = "0", "InfiniBand"
		}
		env = append(env, EnvVar{"NCCL_IB_DISABLE", "0"}, EnvVar{"NCCL_IB_GID_INDEX", gid})
		hca := n.IBHCA
		if hca == "" && f != nil {
			var active []RDMAPort
			for _, port := range f.RDMA {
				if port.Active() && strings.EqualFold(port.LinkLayer, layer) {
					active = append(active, port)
				}
			}
			if len(active) > 1 {
				hca = active[0].Name()
				p.Warnings = append(p.Warnings, fmt.Sprintf("%s has %d active %s ports; pinned NCCL_IB_HCA to %s (set ib_hca in the inventory to choose)", n.Name, len(active), layer, hca))
			}
		}
		if hca != "" {
			env = append(env, EnvVar{"NCCL_IB_HCA", "=" + hca})
		}
	default: // auto, unresolved: the dry run says so
		env = append(env, EnvVar{"NCCL_IB_DISABLE", "<0 with an ACTIVE RDMA port on every node, else 1>"})
	}
	env = append(env,
		EnvVar{"RAY_EXPERIMENTAL_NOSET_ROCR_VISIBLE_DEVICES", "1"},
		EnvVar{"RAY_DISABLE_METRICS", "1"},
		EnvVar{"RAY_memory_monitor_refresh_ms", "0"},
	)
	return append(env, sortedEnv(inv.EnvFor(n))...)
}

func planRay(inv *Inventory, o UpOptions, p *Plan) {
	transport, resolved := ResolveTransport(inv.Transport, inv, o.Facts)
	p.Transport = transport
	if !resolved {
		p.Warnings = append(p.Warnings, "transport auto: resolved on the nodes at launch (ACTIVE InfiniBand on every node → infiniband, RoCE → roce, else ethernet)")
	}
	head := inv.Head()
	gcs := hostPort(head.Address, inv.RayPort)
	fact := func(n Node) *Facts {
		if o.Facts == nil {
			return nil
		}
		return o.Facts[n.Name]
	}
	for _, n := range inv.Nodes {
		if n.Interface == "" && fact(n) == nil {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s's interface is found from %s on the node at launch (set interface = \"…\" to fix it here)", n.Name, n.Address))
		}
	}
	p.Launches = append(p.Launches, Launch{
		Node: head, Service: ServiceRayHead, Env: rayEnv(inv, head, transport, fact(head), p), Unset: VLLMUnset,
		Argv: []string{"ray", "start", "--head", "--block", "--node-ip-address=" + head.Address, "--port=" + strconv.Itoa(inv.RayPort),
			"--num-gpus=1", "--disable-usage-stats", "--include-dashboard=false"},
		Purpose: "the Ray head (GCS on " + gcs + ")",
		Then:    gcs + " reachable from every worker",
	})
	for _, w := range inv.Workers() {
		p.Launches = append(p.Launches, Launch{
			Node: w, Service: ServiceRayWorker, Env: rayEnv(inv, w, transport, fact(w), p), Unset: VLLMUnset,
			Argv: []string{"ray", "start", "--block", "--address=" + gcs, "--node-ip-address=" + w.Address,
				"--num-gpus=1", "--disable-usage-stats"},
			Purpose: "a Ray worker joining " + gcs,
		})
	}
	argv := []string{"vllm", "serve", o.Model, "--host", o.APIHost, "--port", strconv.Itoa(o.Port),
		"--tensor-parallel-size", strconv.Itoa(len(inv.Nodes)), "--distributed-executor-backend", "ray",
		// Graph capture hangs on distributed APU nodes (kyuz0 setup_guide §7).
		"--enforce-eager", "--gpu-memory-utilization", strconv.FormatFloat(serve.UnifiedUtilCap, 'f', 2, 64)}
	if o.Ctx > 0 {
		argv = append(argv, "--max-model-len", strconv.Itoa(o.Ctx))
	}
	p.Launches[len(p.Launches)-1].Then = fmt.Sprintf("ray status on %s lists %d nodes", head.Name, len(inv.Nodes))
	p.Launches = append(p.Launches, Launch{
		Node: head, Service: ServiceVLLM, Env: rayEnv(inv, head, transport, fact(head), p), Unset: VLLMUnset, Argv: argv,
		Purpose: fmt.Sprintf("vLLM with tensor parallel over the %d nodes' GPUs, through Ray", len(inv.Nodes)),
		Then:    "/health and /v1/models answer at " + p.URL + "; the log says NET/IB or NET/Socket",
	})
}

// Format writes the plan as the dry run prints it: per launch, a comment
// naming the node, then the exact command.
func (p *Plan) Format(inv *Inventory, describe func(Node) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "haloforge cluster up --engine %s: %d commands on %d nodes, in this order.\n", p.Engine, len(p.Launches), len(inv.Nodes))
	b.WriteString("Each runs detached on its node in its own session (pid file and log under\n")
	b.WriteString("~/.local/state/haloforge/cluster/ there); haloforge cluster down stops them.\n")
	for _, w := range p.Warnings {
		b.WriteString("warning: " + w + "\n")
	}
	for i, l := range p.Launches {
		fmt.Fprintf(&b, "\n# %d. %s (%s, %s): %s\n", i+1, l.Node.Name, l.Node.Role, describe(l.Node), l.Purpose)
		b.WriteString(l.Shell() + "\n")
		if l.Then != "" {
			b.WriteString("# then: " + l.Then + "\n")
		}
	}
	fmt.Fprintf(&b, "\nAPI: %s\n", p.URL)
	return b.String()
}

// JSONPlan is the dry run's --json.
type JSONPlan struct {
	Engine    string       `json:"engine"`
	URL       string       `json:"url"`
	Transport string       `json:"transport,omitempty"`
	Launches  []JSONLaunch `json:"launches"`
	Warnings  []string     `json:"warnings"`
}

// JSONLaunch is one launch in --json.
type JSONLaunch struct {
	Node    string            `json:"node"`
	Role    string            `json:"role"`
	SSH     string            `json:"ssh"`
	Service string            `json:"service"`
	Env     map[string]string `json:"env"`
	Unset   []string          `json:"unset"`
	Command []string          `json:"command"`
	Shell   string            `json:"shell"`
}

// JSON is the plan for --json.
func (p *Plan) JSON() JSONPlan {
	j := JSONPlan{Engine: p.Engine, URL: p.URL, Transport: p.Transport, Warnings: append([]string{}, p.Warnings...)}
	for _, l := range p.Launches {
		env := map[string]string{}
		for _, e := range l.Env {
			env[e.Name] = e.Value
		}
		j.Launches = append(j.Launches, JSONLaunch{Node: l.Node.Name, Role: l.Node.Role, SSH: l.Node.SSH, Service: l.Service,
			Env: env, Unset: append([]string{}, l.Unset...), Command: append([]string{}, l.Argv...), Shell: l.Shell()})
	}
	return j
}
