// Package cluster prepares, checks, launches and stops llama.cpp RPC and
// vLLM-on-Ray across 2–4 boxes: the inventory (TOML), the node facts
// haloforge reads over SSH, the two-sided checks, the exact per-node
// commands, and the readiness of the head's server.
package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
)

// Roles of a node.
const (
	RoleHead   = "head"
	RoleWorker = "worker"
)

// Engines a cluster runs.
const (
	EngineRPC = "rpc" // llama.cpp: ggml-rpc-server on the workers, llama-server --rpc on the head
	EngineRay = "ray" // vLLM: a Ray cluster, vllm serve --distributed-executor-backend ray on the head
)

// Transports for vLLM's collectives (RCCL), as kyuz0's cluster manager names them.
const (
	TransportAuto       = "auto"       // InfiniBand, else RoCE, else Ethernet: resolved on the nodes at launch
	TransportEthernet   = "ethernet"   // TCP sockets, RDMA off (NCCL_IB_DISABLE=1)
	TransportRoCE       = "roce"       // RDMA over Ethernet (GID index 1)
	TransportInfiniBand = "infiniband" // native InfiniBand (GID index 0)
)

// Defaults of the inventory's optional keys.
const (
	DefaultRPCPort = 50052 // ggml-rpc-server's own default (tools/rpc/rpc-server.cpp)
	DefaultRayPort = 6379  // Ray's GCS port (ray start --head --port)
	DefaultAPIPort = 8080  // the head's OpenAI-compatible API
	MinNodes       = 2
	MaxNodes       = 4
	// MaxInventoryBytes bounds the file: an inventory of four boxes is a few hundred bytes.
	MaxInventoryBytes = 64 << 10
)

// Inventory is a cluster: its boxes and the settings every node shares.
type Inventory struct {
	Path string `toml:"-"`

	// Engine is the default of --engine ("" lets the command choose).
	Engine string `toml:"engine"`
	// Model is what the head serves: a GGUF path on the head (rpc), a
	// Hugging Face ID or a path present on every node (ray).
	Model string `toml:"model"`
	// Port is the head's API port; RPCPort the workers' ggml-rpc-server
	// port; RayPort the Ray head's GCS port.
	Port    int `toml:"port"`
	RPCPort int `toml:"rpc_port"`
	RayPort int `toml:"ray_port"`
	// Transport is vLLM's collective transport (auto, ethernet, roce, infiniband).
	Transport string `toml:"transport"`
	// Pins is the path of versions.env on every node (~/ is the login
	// directory there); empty: what the node's haloforge uses.
	Pins string `toml:"pins"`
	// Image is a container image every node must hold with the same digest.
	Image string `toml:"image"`
	// Track is the haloforge track the nodes run: its doctor blocking
	// checks fail the cluster check.
	Track string `toml:"track"`
	// Env is added to every engine command on every node (a node's own env wins).
	Env map[string]string `toml:"env"`

	Nodes []Node `toml:"node"`

	lines map[string]int // "node.2.address" → line, for messages
}

// Node is one box.
type Node struct {
	// Name is how haloforge calls the box in its output.
	Name string `toml:"name"`
	// SSH is the SSH destination: a host alias of the SSH config or user@host.
	SSH string `toml:"ssh"`
	// Address is the node's address on the cluster network: the engines
	// bind to it and the other nodes reach it there.
	Address string `toml:"address"`
	// Role is head (one) or worker.
	Role string `toml:"role"`
	// Interface is the cluster network interface (found from Address when empty).
	Interface string `toml:"interface"`
	// IBHCA pins RCCL to one RDMA device and port (NCCL_IB_HCA, e.g. rocep194s0:1).
	IBHCA string `toml:"ib_hca"`
	// Env is added to this node's engine commands (e.g. HSA_ENABLE_SDMA = "0").
	Env map[string]string `toml:"env"`

	index int // 0-based position in the file
}

// InventoryError is a problem with the inventory, with where it is.
type InventoryError struct {
	Path string
	Line int // 0 when it concerns the whole file
	Msg  string
}

func (e *InventoryError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// LoadInventory reads and validates an inventory file.
func LoadInventory(path string) (*Inventory, error) {
	// Opened without blocking: a FIFO named as the inventory used to hang
	// os.Open until something wrote to it.
	data, err := safefile.ReadRegular(path, MaxInventoryBytes, safefile.Follow)
	var notRegular *safefile.NotRegularError
	var tooLarge *safefile.TooLargeError
	switch {
	case errors.As(err, &notRegular):
		return nil, &InventoryError{Path: path, Msg: safefile.Kind(notRegular.Mode) + ", not a regular file"}
	case errors.As(err, &tooLarge):
		return nil, tooLargeInventory(path)
	case err != nil:
		return nil, fmt.Errorf("inventory: %w", err)
	}
	return ParseInventory(path, data)
}

func tooLargeInventory(path string) error {
	return &InventoryError{Path: path, Msg: "larger than " + text.Bytes(MaxInventoryBytes) + ": not an inventory"}
}

// ParseInventory parses and validates an inventory. Unknown keys, wrong
// types and bad values are refused with the file and line.
func ParseInventory(path string, data []byte) (*Inventory, error) {
	if len(data) > MaxInventoryBytes {
		return nil, tooLargeInventory(path)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, &InventoryError{Path: path, Msg: "holds a NUL byte: not a text file"}
	}
	inv := &Inventory{Path: path}
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(inv); err != nil {
		return nil, tomlError(path, err)
	}
	inv.lines = keyLines(data)
	for i := range inv.Nodes {
		inv.Nodes[i].index = i
	}
	inv.Path = path
	if err := inv.validate(); err != nil {
		return nil, err
	}
	return inv, nil
}

// tomlError turns the TOML library's errors into file:line messages.
func tomlError(path string, err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		e := strict.Errors[0]
		row, _ := e.Position()
		key := strings.Join(e.Key(), ".")
		return &InventoryError{Path: path, Line: row, Msg: fmt.Sprintf("unknown key %q (known: %s)", key, knownKeys(e.Key()))}
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		return &InventoryError{Path: path, Line: row, Msg: de.Error()}
	}
	return &InventoryError{Path: path, Msg: err.Error()}
}

func knownKeys(key []string) string {
	if len(key) > 1 && key[0] == "node" {
		return "name, ssh, address, role, interface, ib_hca, env"
	}
	return "engine, model, port, rpc_port, ray_port, transport, pins, image, track, env, [[node]]"
}

// keyLines indexes where each key is written: "model", "node.0.address",
// "node.1" (the table header). Used only to point messages at a line.
func keyLines(data []byte) map[string]int {
	out := map[string]int{}
	p := unstable.Parser{}
	p.Reset(data)
	node := -1
	inNode := false
	line := func(r unstable.Range) int { return p.Shape(r).Start.Line }
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.ArrayTable, unstable.Table:
			name := joinKey(e.Key())
			inNode = name == "node" && e.Kind == unstable.ArrayTable
			if _, seen := out[name]; !seen && !inNode {
				if it := e.Key(); it.Next() && it.Node().Raw.Length > 0 {
					out[name] = line(it.Node().Raw) // a [env] table: its header's line
				}
			}
			if inNode {
				node++
				out[fmt.Sprintf("node.%d", node)] = line(e.Raw)
				if first := e.Child(); first != nil {
					out[fmt.Sprintf("node.%d", node)] = line(first.Raw)
				}
			}
		case unstable.KeyValue:
			it := e.Key()
			var raw unstable.Range
			var parts []string
			for it.Next() {
				n := it.Node()
				if len(parts) == 0 {
					raw = n.Raw
				}
				parts = append(parts, string(n.Data))
			}
			key := strings.Join(parts, ".")
			if inNode {
				key = fmt.Sprintf("node.%d.%s", node, key)
			}
			if _, seen := out[key]; !seen && raw.Length > 0 {
				out[key] = line(raw)
			}
		}
	}
	return out
}

func joinKey(it unstable.Iterator) string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return strings.Join(parts, ".")
}

func (inv *Inventory) lineOf(key string) int { return inv.lines[key] }

func (inv *Inventory) errAt(key, format string, args ...any) error {
	return &InventoryError{Path: inv.Path, Line: inv.lineOf(key), Msg: fmt.Sprintf(format, args...)}
}

func (inv *Inventory) nodeErr(n Node, key, format string, args ...any) error {
	line := inv.lineOf(fmt.Sprintf("node.%d.%s", n.index, key))
	if line == 0 {
		line = inv.lineOf(fmt.Sprintf("node.%d", n.index))
	}
	who := fmt.Sprintf("node %d", n.index+1)
	if n.Name != "" && key != "name" {
		who = fmt.Sprintf("node %q", n.Name)
	}
	return &InventoryError{Path: inv.Path, Line: line, Msg: who + ": " + fmt.Sprintf(format, args...)}
}

var (
	reName      = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)
	reSSHUser   = regexp.MustCompile(`^[a-z_][a-z0-9_.-]{0,31}$`)
	reHostLabel = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)
	reAlias     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$`)
	reIfName    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,14}$`)
	reHCA       = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}(:[0-9]{1,3})?$`)
	reEnvName   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	reTrack     = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	reImage     = regexp.MustCompile(`^[a-z0-9][a-z0-9._/:@-]{0,254}$`)
	rePath      = regexp.MustCompile(`^[A-Za-z0-9_./~+@%,:=-]+$`)
)

func (inv *Inventory) validate() error {
	if len(inv.Nodes) < MinNodes || len(inv.Nodes) > MaxNodes {
		return &InventoryError{Path: inv.Path, Msg: fmt.Sprintf("%d [[node]] tables: a cluster has %d to %d nodes", len(inv.Nodes), MinNodes, MaxNodes)}
	}
	if inv.Engine != "" && inv.Engine != EngineRPC && inv.Engine != EngineRay {
		return inv.errAt("engine", "engine %q: want %q or %q", inv.Engine, EngineRPC, EngineRay)
	}
	for _, p := range []struct {
		key string
		v   *int
		def int
	}{{"port", &inv.Port, DefaultAPIPort}, {"rpc_port", &inv.RPCPort, DefaultRPCPort}, {"ray_port", &inv.RayPort, DefaultRayPort}} {
		if *p.v == 0 {
			*p.v = p.def
		} else if *p.v < 1 || *p.v > 65535 {
			return inv.errAt(p.key, "%s %d: a TCP port is 1 to 65535", p.key, *p.v)
		}
	}
	switch inv.Transport {
	case "":
		inv.Transport = TransportAuto
	case TransportAuto, TransportEthernet, TransportRoCE, TransportInfiniBand:
	default:
		return inv.errAt("transport", "transport %q: want auto, ethernet, roce or infiniband", inv.Transport)
	}
	if inv.Model != "" {
		if err := checkWord("model", inv.Model); err != nil {
			return inv.errAt("model", "%v", err)
		}
	}
	if inv.Pins != "" {
		if err := checkWord("pins", inv.Pins); err != nil {
			return inv.errAt("pins", "%v", err)
		}
	}
	if inv.Image != "" && (!reImage.MatchString(inv.Image) || strings.Contains(inv.Image, "..")) {
		return inv.errAt("image", "image %q is not an image reference (registry/name:tag or @sha256:…)", inv.Image)
	}
	if inv.Track != "" && !reTrack.MatchString(inv.Track) {
		return inv.errAt("track", "track %q is not a track ID (see haloforge tracks)", inv.Track)
	}
	if err := checkEnv(inv.Env); err != nil {
		return inv.errAt("env", "%v", err)
	}
	names, addrs, dests := map[string]int{}, map[string]int{}, map[string]int{}
	heads := 0
	for i := range inv.Nodes {
		n := &inv.Nodes[i]
		if n.Name == "" {
			return inv.nodeErr(*n, "name", "no name (a short name such as halo1)")
		}
		if !reName.MatchString(n.Name) {
			return inv.nodeErr(*n, "name", "name %q: lower-case letters, digits and '-', at most 32", n.Name)
		}
		if j, dup := names[n.Name]; dup {
			return inv.nodeErr(*n, "name", "name %q is also node %d's", n.Name, j+1)
		}
		names[n.Name] = i
		if n.SSH == "" {
			return inv.nodeErr(*n, "ssh", "no ssh destination (a host alias of your SSH config, or user@host)")
		}
		if err := ValidateSSHDestination(n.SSH); err != nil {
			return inv.nodeErr(*n, "ssh", "%v", err)
		}
		box := sshBox(n.SSH)
		if j, dup := dests[box]; dup {
			return inv.nodeErr(*n, "ssh", "ssh %q reaches the same box as node %d's %q: two nodes cannot be the same box", n.SSH, j+1, inv.Nodes[j].SSH)
		}
		dests[box] = i
		if n.Address == "" {
			return inv.nodeErr(*n, "address", "no address (the node's IP on the cluster network, which the engines bind to)")
		}
		if err := ValidateAddress(n.Address); err != nil {
			return inv.nodeErr(*n, "address", "%v", err)
		}
		key := strings.ToLower(n.Address)
		if ip := net.ParseIP(n.Address); ip != nil {
			key = ip.String()
		}
		if j, dup := addrs[key]; dup && !IsWildcard(n.Address) {
			return inv.nodeErr(*n, "address", "address %s is also node %d's", n.Address, j+1)
		}
		addrs[key] = i
		switch n.Role {
		case RoleHead:
			heads++
		case RoleWorker:
		case "":
			return inv.nodeErr(*n, "role", "no role (head or worker)")
		default:
			return inv.nodeErr(*n, "role", "role %q: want head or worker", n.Role)
		}
		if n.Interface != "" && !reIfName.MatchString(n.Interface) {
			return inv.nodeErr(*n, "interface", "interface %q is not a network interface name", n.Interface)
		}
		if n.IBHCA != "" && !reHCA.MatchString(n.IBHCA) {
			return inv.nodeErr(*n, "ib_hca", "ib_hca %q: want an RDMA device, optionally :port (e.g. rocep194s0:1)", n.IBHCA)
		}
		if err := checkEnv(n.Env); err != nil {
			return inv.nodeErr(*n, "env", "%v", err)
		}
	}
	if heads != 1 {
		return &InventoryError{Path: inv.Path, Msg: fmt.Sprintf("%d nodes have role = \"head\": a cluster has exactly one head", heads)}
	}
	return nil
}

// checkWord refuses what could turn into an option or carry bytes no
// command line should hold.
func checkWord(what, v string) error {
	if strings.HasPrefix(v, "-") {
		return fmt.Errorf("%s %q starts with '-': it would read as an option", what, v)
	}
	if len(v) > 4096 {
		return fmt.Errorf("%s: longer than 4096 bytes", what)
	}
	if !rePath.MatchString(v) {
		return fmt.Errorf("%s %q: only letters, digits and . _ / ~ + @ %% , : = - (no spaces, quotes or shell characters)", what, v)
	}
	return nil
}

func checkEnv(env map[string]string) error {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !reEnvName.MatchString(k) {
			return fmt.Errorf("env name %q: letters, digits and '_', not starting with a digit", k)
		}
		if envNameRefused(k) {
			return fmt.Errorf("env %s: a variable that changes how every program or shell on the node runs cannot be set from an inventory", k)
		}
		v := env[k]
		if len(v) > 4096 {
			return fmt.Errorf("env %s: longer than 4096 bytes", k)
		}
		for _, r := range v {
			if r < 0x20 || r == 0x7f {
				return fmt.Errorf("env %s: holds a control character", k)
			}
		}
	}
	return nil
}

// envNameRefused names the variables an inventory's env may not set: they
// load code into every process (LD_PRELOAD, PYTHONSTARTUP, BASH_ENV), or
// change which programs run (PATH), so an inventory from someone else would
// run their code on every node. The same list the step scripts refuse in env
// files (scripts/lib/common.sh _hf_env_name_refused).
func envNameRefused(name string) bool {
	switch name {
	case "PATH", "IFS", "HOME", "SHELL", "ENV", "CDPATH", "GLOBIGNORE", "SHELLOPTS", "PS4", "PROMPT_COMMAND", "TMPDIR",
		"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP":
		return true
	}
	for _, p := range []string{"LD_", "BASH", "HALOFORGE_", "_HF_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// ValidateSSHDestination accepts [user@]host, where host is an SSH config
// alias, a hostname or an IP address, and ssh://[user@]host[:port]. It
// refuses anything ssh could read as an option or a shell could expand.
func ValidateSSHDestination(dest string) error {
	if strings.HasPrefix(dest, "-") {
		return fmt.Errorf("ssh %q starts with '-': ssh would read it as an option", dest)
	}
	rest := dest
	if r, ok := strings.CutPrefix(dest, "ssh://"); ok {
		rest = r
		if h, port, ok := cutPort(rest); ok {
			if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
				return fmt.Errorf("ssh %q: bad port %q", dest, port)
			}
			rest = h
		}
	}
	host := rest
	if user, h, ok := strings.Cut(rest, "@"); ok {
		if !reSSHUser.MatchString(user) {
			return fmt.Errorf("ssh %q: user %q is not a login name", dest, user)
		}
		host = h
	}
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		if ip := net.ParseIP(host[1 : len(host)-1]); ip != nil && ip.To4() == nil {
			return nil
		}
		return fmt.Errorf("ssh %q: %s is not an IPv6 address", dest, host)
	}
	if net.ParseIP(host) != nil {
		return nil
	}
	if !reAlias.MatchString(host) || strings.Contains(host, "..") {
		return fmt.Errorf("ssh %q: %q is not a host alias, hostname or IP address", dest, host)
	}
	return nil
}

// sshBox is what identifies the box an ssh destination reaches, as far as
// the destination itself tells: its host and port, whatever the user, the
// ssh:// form or the brackets of an IPv6 address, an address in its
// canonical form, and every loopback name and address as one
// ("root@[::1]", "::1", "127.0.0.1" and "localhost" are one box). Two
// names that DNS or an ssh_config alias maps to one box are not told
// apart here.
func sshBox(dest string) string {
	rest, port := dest, "22"
	if r, ok := strings.CutPrefix(dest, "ssh://"); ok {
		rest = r
		if h, p, ok := cutPort(rest); ok {
			rest, port = h, strings.TrimLeft(p, "0")
		}
	}
	if _, h, ok := strings.Cut(rest, "@"); ok {
		rest = h
	}
	host := strings.TrimSuffix(strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(rest, "["), "]")), ".")
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
		if ip.IsLoopback() {
			host = "loopback"
		}
	}
	switch host {
	case "localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback":
		host = "loopback"
	}
	return host + " port " + port
}

// cutPort splits host:port where host may be [v6].
func cutPort(s string) (host, port string, ok bool) {
	if strings.HasPrefix(s, "[") || strings.Contains(s, "@[") {
		i := strings.LastIndex(s, "]")
		if i >= 0 && i+1 < len(s) && s[i+1] == ':' {
			return s[:i+1], s[i+2:], true
		}
		return s, "", false
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

// ValidateAddress accepts an IP address or a DNS hostname.
func ValidateAddress(a string) error {
	if ip := net.ParseIP(a); ip != nil {
		return nil
	}
	if len(a) > 253 {
		return fmt.Errorf("address %q: longer than a hostname may be", a)
	}
	for _, label := range strings.Split(strings.TrimSuffix(a, "."), ".") {
		if !reHostLabel.MatchString(label) {
			return fmt.Errorf("address %q is neither an IP address nor a hostname", a)
		}
	}
	if _, err := strconv.Atoi(strings.ReplaceAll(a, ".", "")); err == nil {
		return fmt.Errorf("address %q looks like an IP address but is not one", a)
	}
	return nil
}

// IsWildcard says whether an address binds every interface (0.0.0.0, ::).
func IsWildcard(a string) bool {
	ip := net.ParseIP(a)
	return ip != nil && ip.IsUnspecified()
}

// IsPrivate says whether an address is on a private, link-local, loopback
// or CGNAT (Tailscale's 100.64/10) network: not one the open internet reaches.
func IsPrivate(a string) bool {
	ip := net.ParseIP(a)
	if ip == nil {
		return false
	}
	if ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
		return true
	}
	_, cgnat, _ := net.ParseCIDR("100.64.0.0/10")
	return cgnat.Contains(ip)
}

// Head returns the head node.
func (inv *Inventory) Head() Node {
	for _, n := range inv.Nodes {
		if n.Role == RoleHead {
			return n
		}
	}
	return Node{}
}

// Workers returns the worker nodes in file order.
func (inv *Inventory) Workers() []Node {
	var out []Node
	for _, n := range inv.Nodes {
		if n.Role == RoleWorker {
			out = append(out, n)
		}
	}
	return out
}

// Node returns the node with a name.
func (inv *Inventory) Node(name string) (Node, bool) {
	for _, n := range inv.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return Node{}, false
}

// EnvFor is the environment the inventory adds to a node's engine
// commands: the shared env, then the node's own (which wins).
func (inv *Inventory) EnvFor(n Node) map[string]string {
	out := map[string]string{}
	for k, v := range inv.Env {
		out[k] = v
	}
	for k, v := range n.Env {
		out[k] = v
	}
	return out
}
