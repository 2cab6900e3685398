package cluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const threeBoxes = `model = "/models/tiny.gguf"
rpc_port = 50052
port = 8080

[[node]]
name = "halo1"
ssh = "halo1"
address = "192.168.100.1"
role = "head"
interface = "enp194s0np0"

[[node]]
name = "halo2"
ssh = "me@halo2"
address = "192.168.100.2"
role = "worker"
interface = "enp194s0np0"
env = { GGML_VK_VISIBLE_DEVICES = "0" }

[[node]]
name = "halo3"
ssh = "me@halo3"
address = "192.168.100.3"
role = "worker"
interface = "enp194s0np0"
`

func mustInv(t *testing.T, doc string) *Inventory {
	t.Helper()
	inv, err := ParseInventory("cluster.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func shells(p *Plan) []string {
	var out []string
	for _, l := range p.Launches {
		out = append(out, l.Node.Name+": "+l.Shell())
	}
	return out
}

// TestPlanRPCExact: the exact command lines per node for llama.cpp RPC.
func TestPlanRPCExact(t *testing.T) {
	p, err := PlanUp(mustInv(t, threeBoxes), UpOptions{Engine: EngineRPC})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"halo2: env GGML_VK_VISIBLE_DEVICES=0 ggml-rpc-server -H 192.168.100.2 -p 50052 -c",
		"halo3: ggml-rpc-server -H 192.168.100.3 -p 50052 -c",
		"halo1: llama-server -m /models/tiny.gguf --host 192.168.100.1 --port 8080 --rpc 192.168.100.2:50052,192.168.100.3:50052 -ngl 999",
	}
	if diff := cmp.Diff(want, shells(p)); diff != "" {
		t.Errorf("rpc commands (-want +got):\n%s", diff)
	}
	if p.URL != "http://192.168.100.1:8080" {
		t.Errorf("URL %s", p.URL)
	}
	if got := p.Launches[0].StartArgs(); strings.Join(got, " ") != "start rpc-server --env GGML_VK_VISIBLE_DEVICES=0 -- ggml-rpc-server -H 192.168.100.2 -p 50052 -c" {
		t.Errorf("start args %q", got)
	}
	if len(p.Warnings) != 0 {
		t.Errorf("warnings on a private cluster: %q", p.Warnings)
	}
	p, err = PlanUp(mustInv(t, threeBoxes), UpOptions{Engine: EngineRPC, Model: "/m/other.gguf", Port: 9000, Ctx: 4096, APIHost: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Launches[2].Shell(); got != "llama-server -m /m/other.gguf --host 127.0.0.1 --port 9000 --rpc 192.168.100.2:50052,192.168.100.3:50052 -ngl 999 -c 4096" {
		t.Errorf("head with options: %s", got)
	}
}

// TestPlanRayExact: Ray head, workers and vllm serve with every variable
// the field research lists, per node, for an explicit RoCE transport and
// for auto resolved from the nodes' RDMA ports.
func TestPlanRayExact(t *testing.T) {
	inv := mustInv(t, strings.Replace(threeBoxes, `model = "/models/tiny.gguf"`, "model = \"Qwen/Qwen3-0.6B\"\ntransport = \"roce\"", 1))
	p, err := PlanUp(inv, UpOptions{Engine: EngineRay})
	if err != nil {
		t.Fatal(err)
	}
	common := "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET NCCL_IB_TIMEOUT=23 NCCL_IB_RETRY_CNT=7 NCCL_NET_GDR_LEVEL=0 NCCL_IB_DISABLE=0 NCCL_IB_GID_INDEX=1 " +
		"RAY_EXPERIMENTAL_NOSET_ROCR_VISIBLE_DEVICES=1 RAY_DISABLE_METRICS=1 RAY_memory_monitor_refresh_ms=0"
	env := func(addr, extra string) string {
		s := "env -u VLLM_ROCM_USE_AITER -u VLLM_ROCM_USE_AITER_LINEAR NCCL_SOCKET_IFNAME==enp194s0np0 GLOO_SOCKET_IFNAME=enp194s0np0 VLLM_HOST_IP=" + addr + " " + common
		if extra != "" {
			s += " " + extra
		}
		return s
	}
	want := []string{
		"halo1: " + env("192.168.100.1", "") + " ray start --head --block --node-ip-address=192.168.100.1 --port=6379 --num-gpus=1 --disable-usage-stats --include-dashboard=false",
		"halo2: " + env("192.168.100.2", "GGML_VK_VISIBLE_DEVICES=0") + " ray start --block --address=192.168.100.1:6379 --node-ip-address=192.168.100.2 --num-gpus=1 --disable-usage-stats",
		"halo3: " + env("192.168.100.3", "") + " ray start --block --address=192.168.100.1:6379 --node-ip-address=192.168.100.3 --num-gpus=1 --disable-usage-stats",
		"halo1: " + env("192.168.100.1", "") + " vllm serve Qwen/Qwen3-0.6B --host 192.168.100.1 --port 8080 --tensor-parallel-size 3 --distributed-executor-backend ray --enforce-eager --gpu-memory-utilization 0.90",
	}
	if diff := cmp.Diff(want, shells(p)); diff != "" {
		t.Errorf("ray commands (-want +got):\n%s", diff)
	}
	if p.Transport != TransportRoCE || len(p.Warnings) != 0 {
		t.Errorf("transport %s, warnings %q", p.Transport, p.Warnings)
	}

	// auto, resolved from facts: every node has an active RoCE port; halo2
	// has two, so haloforge pins the first and says so; halo3 has no
	// interface in the inventory, so it comes from the address.
	inv = mustInv(t, strings.Replace(strings.Replace(threeBoxes, `model = "/models/tiny.gguf"`, `model = "Qwen/Qwen3-0.6B"`, 1),
		"address = \"192.168.100.3\"\nrole = \"worker\"\ninterface = \"enp194s0np0\"", "address = \"192.168.100.3\"\nrole = \"worker\"", 1))
	roce := func(ports ...string) *Facts {
		f := &Facts{Addrs: ParseIPAddr("3: enp9s0    inet 192.168.100.3/24 brd 192.168.100.255 scope global enp9s0\\       valid_lft forever")}
		for _, p := range ports {
			dev, port, _ := strings.Cut(p, ":")
			f.RDMA = append(f.RDMA, RDMAPort{Device: dev, Port: port, State: "4: ACTIVE", LinkLayer: "Ethernet"})
		}
		return f
	}
	facts := map[string]*Facts{"halo1": roce("rocep194s0:1"), "halo2": roce("rocep194s0:1", "rocep195s0:1"), "halo3": roce("rocep9s0:1")}
	p, err = PlanUp(inv, UpOptions{Engine: EngineRay, Facts: facts})
	if err != nil {
		t.Fatal(err)
	}
	if p.Transport != TransportRoCE {
		t.Errorf("auto resolved to %s", p.Transport)
	}
	got := shells(p)
	if !strings.Contains(got[1], "NCCL_IB_GID_INDEX=1 NCCL_IB_HCA==rocep194s0:1 RAY_") {
		t.Errorf("halo2 with two active ports gets no exact HCA: %s", got[1])
	}
	if strings.Contains(got[0], "NCCL_IB_HCA") {
		t.Errorf("halo1 has one port, no pin needed: %s", got[0])
	}
	if !strings.Contains(got[2], "NCCL_SOCKET_IFNAME==enp9s0 GLOO_SOCKET_IFNAME=enp9s0 VLLM_HOST_IP=192.168.100.3") {
		t.Errorf("halo3's interface from its address: %s", got[2])
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "halo2 has 2 active Ethernet ports; pinned NCCL_IB_HCA to rocep194s0:1") {
		t.Errorf("warnings %q", p.Warnings)
	}
	// one node without RDMA: sockets for all
	facts["halo3"] = &Facts{}
	if p, _ = PlanUp(inv, UpOptions{Engine: EngineRay, Facts: facts}); p.Transport != TransportEthernet || !strings.Contains(shells(p)[0], "NCCL_IB_DISABLE=1 RAY_") {
		t.Errorf("mixed RDMA resolved to %s: %s", p.Transport, shells(p)[0])
	}
	// the dry run without facts shows what is resolved at launch
	p, _ = PlanUp(inv, UpOptions{Engine: EngineRay})
	if !strings.Contains(shells(p)[2], "'NCCL_SOCKET_IFNAME==<interface of 192.168.100.3 on halo3>'") || len(p.Warnings) != 2 {
		t.Errorf("unresolved dry run: %s\n%q", shells(p)[2], p.Warnings)
	}
}

func TestPlanRefusals(t *testing.T) {
	inv := mustInv(t, threeBoxes)
	for _, tt := range []struct {
		o    UpOptions
		want string
	}{
		{UpOptions{Engine: "mpi"}, `--engine "mpi"`},
		{UpOptions{Model: "-x"}, "starts with '-'"},
		{UpOptions{Model: "a b"}, "no spaces"},
		{UpOptions{Port: 70000}, "--port 70000"},
		{UpOptions{APIHost: "0.0.0.0"}, "binds every interface: ggml-rpc-server has no authentication (GHSA-j8rj-fmpv-wcxw"},
		{UpOptions{APIHost: "a;b"}, "--api-host"},
	} {
		if _, err := PlanUp(inv, tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.o, err, tt.want)
		}
	}
	noModel := mustInv(t, strings.Replace(threeBoxes, `model = "/models/tiny.gguf"`, "", 1))
	if _, err := PlanUp(noModel, UpOptions{}); err == nil || !strings.Contains(err.Error(), "no model") {
		t.Errorf("no model: %v", err)
	}
}

// TestWildcardNeedsTheFlag: 0.0.0.0 is refused unless asked for, and
// warned about when it is (GHSA-j8rj-fmpv-wcxw).
func TestWildcardNeedsTheFlag(t *testing.T) {
	inv := mustInv(t, strings.Replace(threeBoxes, `address = "192.168.100.2"`, `address = "0.0.0.0"`, 1))
	if _, err := PlanUp(inv, UpOptions{}); err == nil || !strings.Contains(err.Error(), "halo2 address 0.0.0.0 binds every interface") || !strings.Contains(err.Error(), "--allow-wildcard") {
		t.Fatalf("wildcard accepted or unexplained: %v", err)
	}
	p, err := PlanUp(inv, UpOptions{AllowWildcard: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "allowed by --allow-wildcard") {
		t.Errorf("warnings %q", p.Warnings)
	}
	if got := p.Launches[0].Shell(); got != "env GGML_VK_VISIBLE_DEVICES=0 ggml-rpc-server -H 0.0.0.0 -p 50052 -c" {
		t.Errorf("worker: %s", got)
	}
	if got := p.Launches[2].Shell(); !strings.Contains(got, "--rpc halo2:50052,192.168.100.3:50052") {
		t.Errorf("head reaches the wildcard worker by name: %s", got)
	}
	pub := mustInv(t, strings.Replace(threeBoxes, `address = "192.168.100.3"`, `address = "203.0.113.7"`, 1))
	p, _ = PlanUp(pub, UpOptions{})
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "halo3's address 203.0.113.7 is public") {
		t.Errorf("public address: %q", p.Warnings)
	}
}

func TestPlanFormat(t *testing.T) {
	p, err := PlanUp(mustInv(t, threeBoxes), UpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := p.Format(mustInv(t, threeBoxes), func(n Node) string { return "ssh " + n.SSH })
	want := `haloforge cluster up --engine rpc: 3 commands on 3 nodes, in this order.
Each runs detached on its node in its own session (pid file and log under
~/.local/state/haloforge/cluster/ there); haloforge cluster down stops them.

# 1. halo2 (worker, ssh me@halo2): ggml-rpc-server on 192.168.100.2:50052, its devices offered to the head; tensor cache on
env GGML_VK_VISIBLE_DEVICES=0 ggml-rpc-server -H 192.168.100.2 -p 50052 -c
# then: 192.168.100.2:50052 reachable from halo1

# 2. halo3 (worker, ssh me@halo3): ggml-rpc-server on 192.168.100.3:50052, its devices offered to the head; tensor cache on
ggml-rpc-server -H 192.168.100.3 -p 50052 -c
# then: 192.168.100.3:50052 reachable from halo1; halo1 lists the RPC devices (llama-server --rpc 192.168.100.2:50052,192.168.100.3:50052 --list-devices)

# 3. halo1 (head, ssh halo1): llama-server with its own devices and the 2 workers' (layers split across them)
llama-server -m /models/tiny.gguf --host 192.168.100.1 --port 8080 --rpc 192.168.100.2:50052,192.168.100.3:50052 -ngl 999
# then: /health and /v1/models answer at http://192.168.100.1:8080

API: http://192.168.100.1:8080
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dry run (-want +got):\n%s", diff)
	}
	j := p.JSON()
	if len(j.Launches) != 3 || j.Launches[0].Env["GGML_VK_VISIBLE_DEVICES"] != "0" || j.Launches[2].Command[0] != "llama-server" {
		t.Errorf("json %+v", j)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"plain": "plain", "a b": "'a b'", "it's": `'it'\''s'`, "": "''", "=eth0": "=eth0", "$(id)": "'$(id)'", "a;b": "'a;b'",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
	if got := RemoteCommand([]string{"start", "x", "--env", "A=b c", "--", "cmd"}); got != "bash -s -- start x --env 'A=b c' -- cmd" {
		t.Errorf("RemoteCommand = %s", got)
	}
}

func TestSSHArgv(t *testing.T) {
	got := SSH{Config: "/tmp/cfg"}.Argv(Node{SSH: "me@halo2"}, "bash -s -- status")
	want := []string{"ssh", "-F", "/tmp/cfg", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=10",
		"-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3", "-o", "LogLevel=ERROR", "-T", "--", "me@halo2", "bash -s -- status"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ssh argv (-want +got):\n%s", diff)
	}
}
