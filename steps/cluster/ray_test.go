package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Stand-ins for Ray and vLLM, which cannot run here (no GPU): shell
// scripts named ray and vllm in a directory named for what they are.
// They record the environment and arguments haloforge gave them, listen
// where the real ones would, and replay recorded real output (testdata).
const rayStandin = `#!/usr/bin/env bash
# STAND-IN for Ray (haloforge's ray_test.go): records its environment and arguments,
# listens on the GCS port for a "ray start --head", replays a real "ray status".
set -eu
env | sort > "$HOME/ray-$1-$2.env" 2>/dev/null || true
printf '%s\n' "$*" > "$HOME/ray-$1-$2.args"
if [[ $1 == status ]]; then
  cat "$STANDIN_DATA/ray-status-vllm-12670.txt"
  exit 0
fi
echo "Local node IP: $VLLM_HOST_IP"
echo "Ray runtime started."
for a in "$@"; do
  case $a in
    --port=*) port=${a#--port=} ;;
    --node-ip-address=*) ip=${a#--node-ip-address=} ;;
  esac
done
if [[ " $* " == *" --head "* ]]; then
  exec python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(8)
while True:
    c, _ = s.accept(); c.close()' "$ip" "$port"
fi
exec sleep 3600
`

const vllmStandin = `#!/usr/bin/env bash
# STAND-IN for vLLM (haloforge's ray_test.go): records its environment and arguments,
# replays recorded real vLLM, Ray and NCCL output, then answers /health and /v1/models.
set -eu
env | sort > "$HOME/vllm.env"
printf '%s\n' "$*" > "$HOME/vllm.args"
while (($#)); do
  case $1 in
    --host) host=$2; shift ;;
    --port) port=$2; shift ;;
  esac
  shift
done
cat "$STANDIN_DATA/vllm-ray-connect-vllm-13521.log" "$STANDIN_DATA/nccl-socket-vllm-9329.log"
# vLLM's own line (vllm/platforms/__init__.py) when it finds no platform: a readiness warning.
echo 'INFO 02-24 16:11:22 __init__.py:187] No platform detected, vLLM is running on UnspecifiedPlatform'
sed -n '1,/Application startup complete/p' "$STANDIN_DATA/vllm-0.13-gb10-success.log"
exec python3 -c 'import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"{}" if self.path == "/health" else b"{\"object\": \"list\", \"data\": [{\"id\": \"Qwen/Qwen3-0.6B\"}]}"
        self.send_response(200 if self.path in ("/health", "/v1/models") else 404)
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer((sys.argv[1], int(sys.argv[2])), H).serve_forever()' "$host" "$port"
`

func freePort(t *testing.T, host string) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", host, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestRayUpDownWithStandins runs cluster up --engine ray end to end on two
// local "nodes" (their own HOME, the real node.sh, real sessions and pid
// files, loopback addresses) with stand-ins for ray and vllm: the head
// starts, its GCS port is reached from the worker, the worker joins, ray
// status lists both, vllm serve starts with every variable, the serve
// state machine follows the replayed real log to ready through node.sh's
// HTTP probes, and RCCL's transport is read from it. Down leaves nothing.
func TestRayUpDownWithStandins(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed (the stand-ins listen with it)")
	}
	r, _, _ := localNode(t)
	bin := filepath.Join(t.TempDir(), "vllm-ray-standins")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"ray": rayStandin, "vllm": vllmStandin} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := filepath.Abs("testdata")
	rayPort, apiPort := freePort(t, "127.0.0.1"), freePort(t, "127.0.0.2")
	inv := mustInv(t, fmt.Sprintf(`model = "Qwen/Qwen3-0.6B"
transport = "ethernet"
ray_port = %d
port = %d
[[node]]
name = "halo1"
ssh = "halo1"
address = "127.0.0.1"
role = "head"
interface = "lo"
[[node]]
name = "halo2"
ssh = "halo2"
address = "127.0.0.2"
role = "worker"
interface = "lo"
`, rayPort, apiPort))
	homes := map[string]string{"halo1": t.TempDir(), "halo2": t.TempDir()}
	r.T = Local{Home: homes, Env: []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "STANDIN_DATA=" + data}}
	var mu sync.Mutex
	var said []string
	c := &Cluster{Inv: inv, Remote: r, Poll: 100 * time.Millisecond, JoinTimeout: 20 * time.Second, ReadyTimeout: time.Minute,
		Say: func(f string, a ...any) { mu.Lock(); said = append(said, fmt.Sprintf(f, a...)); mu.Unlock() }}
	t.Cleanup(func() { c.Down(context.Background()) })
	p, err := PlanUp(inv, UpOptions{Engine: EngineRay, APIHost: "127.0.0.2"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := c.Up(ctx, p)
	out := strings.Join(said, "\n")
	if err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	for _, want := range []string{
		"▶ [1/3] ray-head on halo1",
		fmt.Sprintf("✓ 127.0.0.1:%d reachable from halo2", rayPort),
		"▶ [2/3] ray-worker on halo2",
		"✓ ray status lists 2 nodes",
		"▶ [3/3] vllm on halo1",
		"RCCL uses NET/Socket",
		"! vLLM found no ROCm platform (amdsmi missing?): it will not use the GPU: INFO 02-24 16:11:22 __init__.py:187] No platform detected",
		"ready in",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("up's progress lacks %q:\n%s", want, out)
		}
	}
	t.Logf("cluster up said:\n%s", out)
	if res.Transport.Kind != "Socket" || res.URL != fmt.Sprintf("http://127.0.0.2:%d", apiPort) {
		t.Errorf("result %+v", res)
	}
	// What the daemons really received, per node.
	headEnv, _ := os.ReadFile(filepath.Join(homes["halo1"], "ray-start---head.env"))
	workerEnv, _ := os.ReadFile(filepath.Join(homes["halo2"], "ray-start---block.env"))
	vllmEnv, _ := os.ReadFile(filepath.Join(homes["halo1"], "vllm.env"))
	vllmArgs, _ := os.ReadFile(filepath.Join(homes["halo1"], "vllm.args"))
	for what, tt := range map[string]struct {
		got  []byte
		want []string
	}{
		"head":   {headEnv, []string{"NCCL_SOCKET_IFNAME==lo", "GLOO_SOCKET_IFNAME=lo", "VLLM_HOST_IP=127.0.0.1", "NCCL_IB_DISABLE=1", "NCCL_DEBUG=INFO", "RAY_memory_monitor_refresh_ms=0"}},
		"worker": {workerEnv, []string{"VLLM_HOST_IP=127.0.0.2", "NCCL_IB_DISABLE=1", "RAY_EXPERIMENTAL_NOSET_ROCR_VISIBLE_DEVICES=1"}},
		"vllm":   {vllmEnv, []string{"VLLM_HOST_IP=127.0.0.1", "GLOO_SOCKET_IFNAME=lo"}},
		"vllm args": {vllmArgs, []string{"serve Qwen/Qwen3-0.6B --host 127.0.0.2 --port " + fmt.Sprint(apiPort) +
			" --tensor-parallel-size 2 --distributed-executor-backend ray --enforce-eager --gpu-memory-utilization 0.90"}},
	} {
		for _, w := range tt.want {
			if !strings.Contains(string(tt.got), w) {
				t.Errorf("%s lacks %q:\n%s", what, w, tt.got)
			}
		}
	}
	if strings.Contains(string(vllmEnv), "VLLM_ROCM_USE_AITER=") {
		t.Error("the AITER switches were not removed from vllm's environment")
	}
	// The readiness went through vLLM's own phases on the replayed log.
	for _, ph := range []string{"initialising the engine", "loading weights", "starting the API server", "healthy: waiting for /v1/models"} {
		if !strings.Contains(out, "▸ "+ph) {
			t.Errorf("phase %q not seen:\n%s", ph, out)
		}
	}
	d := c.Down(context.Background())
	if !d.Clean() {
		t.Fatalf("down left: %+v", d.Nodes)
	}
	for _, n := range d.Nodes {
		if len(n.Stopped) == 0 {
			t.Errorf("%s: nothing stopped", n.Name)
		}
	}
	if st, errs := c.Status(context.Background()); len(errs) > 0 || len(st["halo1"])+len(st["halo2"]) != 0 {
		t.Errorf("status after down: %v %v", st, errs)
	}
}

// TestUpFailsWithDiagnosis: a head server that dies with a known failure
// in its log is named, and everything started is stopped again.
func TestUpFailsWithDiagnosis(t *testing.T) {
	r, _, _ := localNode(t)
	bin := filepath.Join(t.TempDir(), "vllm-ray-standins")
	_ = os.MkdirAll(bin, 0o755)
	// a vllm stand-in replaying the real no-placement log, then exiting
	_ = os.WriteFile(filepath.Join(bin, "vllm"), []byte("#!/usr/bin/env bash\n# STAND-IN for vLLM: replays a recorded real failure\ncat \"$STANDIN_DATA/vllm-ray-noplacement-vllm-14186.log\"\nexit 1\n"), 0o755)
	_ = os.WriteFile(filepath.Join(bin, "ray"), []byte(rayStandin), 0o755)
	data, _ := filepath.Abs("testdata")
	rayPort := freePort(t, "127.0.0.1")
	inv := mustInv(t, fmt.Sprintf("model = \"m\"\ntransport = \"ethernet\"\nray_port = %d\n[[node]]\nname = \"halo1\"\nssh = \"halo1\"\naddress = \"127.0.0.1\"\nrole = \"head\"\ninterface = \"lo\"\n[[node]]\nname = \"halo2\"\nssh = \"halo2\"\naddress = \"127.0.0.2\"\nrole = \"worker\"\ninterface = \"lo\"\n", rayPort))
	r.T = Local{Home: map[string]string{"halo1": t.TempDir(), "halo2": t.TempDir()}, Env: []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "STANDIN_DATA=" + data}}
	c := &Cluster{Inv: inv, Remote: r, Poll: 100 * time.Millisecond, JoinTimeout: 20 * time.Second, ReadyTimeout: time.Minute}
	t.Cleanup(func() { c.Down(context.Background()) })
	p, err := PlanUp(inv, UpOptions{Engine: EngineRay})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Up(context.Background(), p)
	ue, ok := err.(*UpError)
	if !ok {
		t.Fatalf("up: %v", err)
	}
	families := ""
	for _, f := range ue.Findings {
		families += f.Family + " "
	}
	if ue.Launch.Service != ServiceVLLM || !strings.Contains(families, "ray-node-ip-mismatch") {
		t.Errorf("failure %q on %s, findings %q", ue.Reason, ue.Launch.Service, families)
	}
	if !strings.Contains(ue.Stopped, "vllm on halo1") || !strings.Contains(ue.Stopped, "ray-worker on halo2") || !strings.Contains(ue.Stopped, "ray-head on halo1") {
		t.Errorf("stopped again: %q", ue.Stopped)
	}
	if st, _ := c.Status(context.Background()); func() bool {
		for _, m := range st {
			for _, s := range m {
				if s.State == "running" || len(s.Procs) > 0 {
					return true
				}
			}
		}
		return false
	}() {
		t.Errorf("something still runs after the failed up: %v", st)
	}
}
