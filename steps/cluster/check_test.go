package cluster

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/haloforge/haloforge/detect"
)

// probeText is a node's probe output as node.sh prints it.
func probeText(addr, iface string, extra ...string) string {
	lines := []string{
		"probe=1", "hostname=h", "user=halo", "kernel=6.18.9-200.fc43.x86_64", "os.id=fedora", "memlock=unlimited",
		"ipaddr=1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever",
		"ipaddr=2: enp191s0    inet 192.168.1.20/24 brd 192.168.1.255 scope global enp191s0\\       valid_lft forever",
		"ipaddr=3: " + iface + "    inet " + addr + "/30 brd 192.168.100.3 scope global noprefixroute " + iface + "\\       valid_lft forever",
		"net." + iface + ".mtu=9000", "net." + iface + ".speed=100000", "net." + iface + ".operstate=up",
		"pkg.llama.cpp-tools=1:0.7.0+dfsg-2", "pkg.libggml0=0.27.0-1", "pkg.mesa-vulkan-drivers=25.2.0-1",
		"bin.ggml-rpc-server=/usr/libexec/x86_64-linux-gnu/llama/bin/ggml-rpc-server", "bin.llama-server=/usr/bin/llama-server",
		"pins.path=/home/halo/versions.env", "pins.sha256=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"firewalld=absent",
	}
	lines = append(lines, extra...)
	return strings.Join(append(lines, "end=1"), "\n") + "\n"
}

func parsed(t *testing.T, text string) *Facts {
	t.Helper()
	f, err := ParseProbe(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	f.HaveClock, f.ClockError = true, 5*time.Millisecond
	return f
}

const pinsInv = `pins = "~/versions.env"
[[node]]
name = "halo1"
ssh = "halo1"
address = "192.168.100.1"
role = "head"
[[node]]
name = "halo2"
ssh = "halo2"
address = "192.168.100.2"
role = "worker"
`

func checkOf(t *testing.T, r *Report, node, id string) detect.Check {
	t.Helper()
	for _, n := range r.Nodes {
		if n.Name != node {
			continue
		}
		for _, c := range n.Checks {
			if string(c.ID) == id {
				return c
			}
		}
	}
	t.Fatalf("no %s check on %s", id, node)
	return detect.Check{}
}

func TestEvaluateMatchingNodes(t *testing.T) {
	inv := mustInv(t, pinsInv)
	p := map[string]Probed{
		"halo1": {Facts: parsed(t, probeText("192.168.100.1", "enp194s0np0", "tcp.192.168.100.2:50052=refused"))},
		"halo2": {Facts: parsed(t, probeText("192.168.100.2", "enp194s0np0", "tcp.192.168.100.1:8080=open"))},
	}
	r := Evaluate(inv, p, CheckOptions{Engine: EngineRPC})
	if r.Failed() != 0 {
		for _, n := range r.Nodes {
			for _, c := range n.Checks {
				if c.Status == detect.StatusFail {
					t.Errorf("%s %s: %s", n.Name, c.ID, c.Summary)
				}
			}
		}
	}
	if c := checkOf(t, r, "halo2", CheckLink); c.Status != detect.StatusOK || !strings.Contains(c.Summary, "enp194s0np0: MTU 9000, 100000 Mb/s, the same at the other ends") {
		t.Errorf("link: %+v", c)
	}
	if c := checkOf(t, r, "halo2", CheckAddress); !strings.Contains(c.Summary, "192.168.100.2 on enp194s0np0; 2 addresses (192.168.1.20, 192.168.100.2): haloforge pins VLLM_HOST_IP") {
		t.Errorf("address: %+v", c)
	}
	if c := checkOf(t, r, "halo1", CheckPorts); c.Status != detect.StatusOK || !strings.Contains(c.Summary, "halo2 192.168.100.2:50052 reachable (nothing listens yet)") {
		t.Errorf("ports: %+v", c)
	}
}

// TestEvaluateFindsDifferences: each planted difference fails or warns the
// right node with a fix.
func TestEvaluateFindsDifferences(t *testing.T) {
	inv := mustInv(t, pinsInv)
	head := probeText("192.168.100.1", "enp194s0np0",
		"tcp.192.168.100.2:6379=timeout", "rdma.rocep194s0.1.state=4: ACTIVE", "rdma.rocep194s0.1.link_layer=Ethernet",
		"rdma.rocep195s0.1.state=4: ACTIVE", "rdma.rocep195s0.1.link_layer=Ethernet")
	worker := probeText("192.168.100.2", "enp194s0np0", "tcp.192.168.100.1:8080=unreachable")
	worker = strings.NewReplacer(
		"pins.sha256=aaaa", "pins.sha256=bbbb",
		"pkg.libggml0=0.27.0-1", "pkg.libggml0=0.26.0-1",
		"pkg.mesa-vulkan-drivers=25.2.0-1\n", "",
		"net.enp194s0np0.mtu=9000", "net.enp194s0np0.mtu=1500",
		"memlock=unlimited", "memlock=8192",
		"kernel=6.18.9-200.fc43.x86_64", "kernel=7.1.3-100.fc43.x86_64",
		"firewalld=absent", "firewalld=running\nzone.enp194s0np0=public",
		"rdma.", "rdma.",
	).Replace(worker) + "rdma.rocep194s0.1.state=4: ACTIVE\nrdma.rocep194s0.1.link_layer=Ethernet\n"
	wf := parsed(t, worker)
	wf.ClockOffset = 3 * time.Second
	p := map[string]Probed{"halo1": {Facts: parsed(t, head)}, "halo2": {Facts: wf}}
	r := Evaluate(inv, p, CheckOptions{Engine: EngineRay})
	for _, tt := range []struct {
		node, id string
		status   detect.Status
		summary  string
		fix      string
	}{
		{"halo2", CheckPins, detect.StatusFail, "differs from halo1's aaaaaaaaaaaa…", "scp -3 halo1:/home/halo/versions.env halo2:/home/halo/versions.env"},
		{"halo2", CheckPackages, detect.StatusFail, "libggml0 0.26.0-1 here, 0.27.0-1 on halo1; mesa-vulkan-drivers absent here, 25.2.0-1 on halo1", "sudo dnf install libggml0-0.27.0-1 mesa-vulkan-drivers-25.2.0-1"},
		{"halo2", CheckKernel, detect.StatusWarn, "Linux 7.1.3-100.fc43.x86_64 here, 6.18.9-200.fc43.x86_64 on halo1", ""},
		{"halo2", CheckLink, detect.StatusFail, "MTU 1500 here, 9000 on halo1's enp194s0np0", "mtu 9000"},
		{"halo1", CheckLink, detect.StatusFail, "MTU 9000 here, 1500 on halo2's enp194s0np0", ""},
		{"halo2", CheckMemlock, detect.StatusWarn, "RDMA pins its buffers", "memlock unlimited"},
		{"halo2", CheckFirewall, detect.StatusWarn, "enp194s0np0 is in the public zone", "--zone=trusted --add-interface=enp194s0np0"},
		{"halo1", CheckPorts, detect.StatusFail, "halo2 192.168.100.2:6379 dropped", ""},
		{"halo2", CheckClock, detect.StatusWarn, "+3.000 s", "timedatectl set-ntp true"},
		{"halo1", CheckRDMA, detect.StatusWarn, "several active ports", `ib_hca = "rocep194s0:1"`},
		{"halo2", CheckRDMA, detect.StatusOK, "rocep194s0:1 (Ethernet)", ""},
		{"halo1", CheckRCCL, detect.StatusSkip, "no librccl", ""},
		{"halo2", CheckEngine, detect.StatusFail, "not found on halo2: ray, vllm", ""},
	} {
		c := checkOf(t, r, tt.node, tt.id)
		if c.Status != tt.status || !strings.Contains(c.Summary, tt.summary) || !strings.Contains(c.Fix, tt.fix) {
			t.Errorf("%s %s = %s %q\nfix %q\nwant %s %q / fix %q", tt.node, tt.id, c.Status, c.Summary, c.Fix, tt.status, tt.summary, tt.fix)
		}
	}
}

// TestEvaluateQuotesNodeFactsSafely: a node is not trusted to send
// printable text. A right-to-left override, an isolate and a C1 CSI in its
// probe lines and in its doctor's JSON facts reach no check of the report
// (what cluster check prints and writes as JSON).
func TestEvaluateQuotesNodeFactsSafely(t *testing.T) {
	inv := mustInv(t, pinsInv)
	head := probeText("192.168.100.1", "enp194s0np0")
	worker := strings.NewReplacer(
		"kernel=6.18.9-200.fc43.x86_64", "kernel=7.1.3\u202e-100\u009b31m.fc43\u2066",
		"pkg.libggml0=0.27.0-1", "pkg.libggml0=0.26.0\u202e-1",
	).Replace(probeText("192.168.100.2", "enp194s0np0")) +
		`facts={"haloforge_version":"dev\u202e","checks":[{"id":"gpu","status":"fail","summary":"no GPU \u202eevil\u009b","fix":"sudo \u2067x\u009b\nline 2"}]}` + "\n"
	p := map[string]Probed{"halo1": {Facts: parsed(t, head)}, "halo2": {Facts: parsed(t, worker)}}
	r := Evaluate(inv, p, CheckOptions{})
	if c := checkOf(t, r, "halo2", CheckKernel); !strings.Contains(c.Summary, "Linux 7.1.3-10031m.fc43 here") {
		t.Errorf("kernel check: %q", c.Summary)
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if i := strings.IndexFunc(string(js), func(r rune) bool {
		return (r >= 0x80 && r <= 0x9f) || unicode.Is(unicode.Bidi_Control, r)
	}); i >= 0 {
		t.Errorf("a hostile character reaches the report: %q", js[max(0, i-60):min(len(js), i+20)])
	}
	if !strings.Contains(string(js), "0.26.0-1 here") {
		t.Errorf("the package check does not quote the node's version:\n%s", js)
	}
}

func TestEvaluateUnreachableAndTrack(t *testing.T) {
	inv := mustInv(t, pinsInv)
	head := parsed(t, probeText("192.168.100.1", "enp194s0np0", `facts={"haloforge_version":"0.9","pins":{"sha256":"cc"},"checks":[{"id":"kfd-access","status":"fail","summary":"denied","fix":"sudo usermod -aG render,video $USER"},{"id":"npu","status":"fail","summary":"x","fix":"y"}]}`))
	p := map[string]Probed{
		"halo1": {Facts: head},
		"halo2": {Err: errors.New("ssh failed: ssh halo2: Permission denied (publickey).")},
	}
	r := Evaluate(inv, p, CheckOptions{Engine: EngineRPC, Blocking: []detect.CheckID{detect.CheckGPU, detect.CheckKFDAccess}})
	c := checkOf(t, r, "halo2", CheckSSH)
	if c.Status != detect.StatusFail || !strings.Contains(c.Fix, "ssh-copy-id halo2") {
		t.Errorf("ssh: %+v", c)
	}
	if c := checkOf(t, r, "halo2", CheckPins); c.Status != detect.StatusSkip || !strings.Contains(c.Summary, "not reachable") {
		t.Errorf("unreachable node's checks: %+v", c)
	}
	c = checkOf(t, r, "halo1", CheckDoctor)
	if c.Status != detect.StatusFail || !strings.Contains(c.Summary, "doctor fails kfd-access, which the track blocks on") || !strings.Contains(c.Fix, "usermod") {
		t.Errorf("doctor with a blocking fail: %+v", c)
	}
	// the inventory pins path wins over what haloforge would use
	if c := checkOf(t, r, "halo1", CheckPins); !strings.Contains(c.Summary, "aaaaaaaaaaaa") {
		t.Errorf("pins: %+v", c)
	}
}

func TestEvaluateAddressProblems(t *testing.T) {
	inv := mustInv(t, strings.Replace(pinsInv, `address = "192.168.100.2"`, `address = "192.168.100.9"`, 1))
	p := map[string]Probed{
		"halo1": {Facts: parsed(t, probeText("192.168.100.1", "enp194s0np0"))},
		"halo2": {Facts: parsed(t, probeText("192.168.100.2", "enp194s0np0"))},
	}
	r := Evaluate(inv, p, CheckOptions{})
	if c := checkOf(t, r, "halo2", CheckAddress); c.Status != detect.StatusFail || !strings.Contains(c.Summary, "192.168.100.9 is not an address of halo2 (it has: 192.168.1.20 (enp191s0), 192.168.100.2 (enp194s0np0))") {
		t.Errorf("address: %+v", c)
	}
	if c := checkOf(t, r, "halo2", CheckLink); c.Status != detect.StatusSkip {
		t.Errorf("link without an interface: %+v", c)
	}
	slow := probeText("192.168.100.1", "enp194s0np0")
	slow = strings.Replace(slow, "speed=100000", "speed=2500", 1)
	p["halo1"] = Probed{Facts: parsed(t, slow)}
	r = Evaluate(mustInv(t, pinsInv), map[string]Probed{"halo1": p["halo1"], "halo2": {Facts: parsed(t, probeText("192.168.100.2", "enp194s0np0"))}}, CheckOptions{})
	if c := checkOf(t, r, "halo1", CheckLink); c.Status != detect.StatusWarn || !strings.Contains(c.Summary, "2500 Mb/s is slow for a cluster") || !strings.Contains(c.Summary, "2500 Mb/s here, 100000 Mb/s on halo2") {
		t.Errorf("slow link: %+v", c)
	}
}

func TestSSHFixes(t *testing.T) {
	n := Node{Name: "halo2", SSH: "me@halo2"}
	for msg, want := range map[string]string{
		"Host key verification failed.":                                    "never accepts an unknown host key",
		"No ED25519 host key is known for 10.0.0.2 and you have requested": "never accepts an unknown host key",
		"REMOTE HOST IDENTIFICATION HAS CHANGED":                           "ssh-keygen -R halo2",
		"Permission denied (publickey).":                                   "ssh-copy-id me@halo2",
		"Could not resolve hostname halo2":                                 "Host halo2 entry",
		"connect to host 10.0.0.2 port 22: Connection refused":             "systemctl enable --now ssh",
		"connect to host 10.0.0.2 port 22: Connection timed out":           "ping halo2",
	} {
		if got := sshFix(n, msg, "ssh me@halo2"); !strings.Contains(got, want) {
			t.Errorf("%q: %q, want %q", msg, got, want)
		}
	}
	if got := sshReason("@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n@@@@\nHost key for 10.0.0.2 has changed and you have requested strict checking.\nHost key verification failed.\n"); !strings.Contains(got, "has changed and you have requested strict checking") {
		t.Errorf("sshReason: %q", got)
	}
}

// TestSessionCheck: logind must not take the engines or their shared
// memory away when haloforge's SSH login ends.
func TestSessionCheck(t *testing.T) {
	inv := mustInv(t, pinsInv)
	for _, tt := range []struct {
		extra  string
		engine string
		status detect.Status
		want   string
	}{
		{"systemd=yes\nuid=1000\nlinger=no\nremoveipc=default\nkilluserprocesses=default", EngineRay, detect.StatusFail, "RemoveIPC, systemd's default"},
		{"systemd=yes\nuid=1000\nlinger=no\nremoveipc=default\nkilluserprocesses=default", EngineRPC, detect.StatusOK, "llama.cpp RPC keeps no shared memory"},
		{"systemd=yes\nuid=1000\nlinger=no\nremoveipc=no\nkilluserprocesses=yes", EngineRPC, detect.StatusFail, "KillUserProcesses=yes"},
		{"systemd=yes\nuid=1000\nlinger=yes\nremoveipc=default", EngineRay, detect.StatusOK, "lingers"},
		{"systemd=yes\nuid=0\nlinger=no\nremoveipc=default", EngineRay, detect.StatusOK, "system user"},
		{"systemd=no", EngineRay, detect.StatusSkip, "no systemd-logind"},
	} {
		text := strings.Replace(probeText("192.168.100.1", "enp194s0np0"), "uid=", "olduid=", 1) + tt.extra + "\n"
		p := map[string]Probed{"halo1": {Facts: parsed(t, text)}, "halo2": {Facts: parsed(t, probeText("192.168.100.2", "enp194s0np0"))}}
		c := checkOf(t, Evaluate(inv, p, CheckOptions{Engine: tt.engine}), "halo1", CheckSession)
		if c.Status != tt.status || !strings.Contains(c.Summary, tt.want) {
			t.Errorf("%q %s: %s %q", tt.extra, tt.engine, c.Status, c.Summary)
		}
		if c.Status == detect.StatusFail && !strings.Contains(c.Fix, "loginctl enable-linger halo") {
			t.Errorf("fix %q", c.Fix)
		}
	}
}
