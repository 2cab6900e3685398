package cluster

import (
	"bytes"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzParseInventory: any bytes either parse into a valid inventory or
// are refused with the file named; nothing panics, and what is accepted
// holds only validated values (no option-like or shell-bearing words).
func FuzzParseInventory(f *testing.F) {
	f.Add([]byte(twoBoxes))
	f.Add([]byte(threeBoxes))
	f.Add([]byte("[[node]]\nname = \"a\"\nssh = \"-oProxyCommand=x\"\naddress = \"1.2.3.4\"\nrole = \"head\"\n"))
	f.Add([]byte("env = { A = \"\\u001b]0;x\\u0007\" }\n[[node]]\n"))
	f.Add([]byte("[node]\nname = 1\n[[node]]\n[[node.env]]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		inv, err := ParseInventory("f.toml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.toml") {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		if n := len(inv.Nodes); n < MinNodes || n > MaxNodes {
			t.Fatalf("%d nodes accepted", n)
		}
		heads := 0
		for _, n := range inv.Nodes {
			if n.Role == RoleHead {
				heads++
			}
			for _, v := range []string{n.Name, n.SSH, n.Address, n.Interface, n.IBHCA} {
				if strings.HasPrefix(v, "-") || strings.ContainsAny(v, " ;|&$`'\"\\\n\r\t<>(){}") {
					t.Fatalf("accepted a dangerous word %q", v)
				}
			}
			if ValidateSSHDestination(n.SSH) != nil || ValidateAddress(n.Address) != nil {
				t.Fatalf("accepted an invalid node %+v", n)
			}
		}
		if heads != 1 {
			t.Fatalf("%d heads accepted", heads)
		}
		if inv.Model != "" && checkWord("model", inv.Model) != nil {
			t.Fatalf("accepted model %q", inv.Model)
		}
		// every accepted inventory plans without panicking
		_, _ = PlanUp(inv, UpOptions{Engine: EngineRPC, Model: "m"})
		_, _ = PlanUp(inv, UpOptions{Engine: EngineRay, Model: "m"})
	})
}

// FuzzParseIPAddr: `ip -o addr` parsing never panics and yields only
// well-formed interfaces and addresses.
func FuzzParseIPAddr(f *testing.F) {
	f.Add("1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n" +
		"4: eth0    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0\\       valid_lft forever preferred_lft forever\n" +
		"4: eth0    inet6 fd00::2/64 scope global nodad \\       valid_lft forever preferred_lft forever\n" +
		"7: eth0@if12    inet 10.89.77.10/24 brd 10.89.77.255 scope global eth0\n")
	f.Add("x: y inet z\n: :\n99999999999999999999: a inet 1.2.3.4/99\n")
	f.Fuzz(func(t *testing.T, out string) {
		for _, a := range ParseIPAddr(out) {
			if a.IP == nil || !reIfName.MatchString(a.Name) || a.Prefix < 0 || a.Prefix > 128 {
				t.Fatalf("bad address %+v", a)
			}
		}
	})
}

// FuzzParseProbe: a node's probe output is untrusted: parsing is bounded,
// never panics, and keeps no control bytes or bidi controls in what it
// reports.
func FuzzParseProbe(f *testing.F) {
	f.Add([]byte("probe=1\nhostname=halo1\nipaddr=2: eth0    inet 10.0.0.1/24 scope global eth0\\\nnet.eth0.mtu=9000\nnet.eth0.speed=100000\n" +
		"rdma.rocep194s0.1.state=4: ACTIVE\nrdma.rocep194s0.1.link_layer=Ethernet\npkg.libggml0=0.27.0-1\ntcp.10.0.0.2:50052=refused\n" +
		"service.rpc-server=running pid=12 code=- procs=12 13\nfacts={\"haloforge_version\":\"dev\",\"pins\":{\"sha256\":\"ab\"},\"checks\":[{\"id\":\"gpu\",\"status\":\"fail\"}]}\nend=1\n"))
	f.Add([]byte("hostname=\x1b[2Jevil\x07\nfacts={\"haloforge_version\":\"\\u001b[31m\"}\nrdma.a.b.c.d=x\nnet.=1\nservice.X=running pid=-1\n"))
	f.Add([]byte("hostname=a\u202eb\u009b\nkernel=6.18\u2066\nfacts={\"kernel\":\"\\u202e\\u009b\",\"checks\":[{\"id\":\"gpu\",\"fix\":\"a\\u202e\\nb\\u2067\"}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fa, err := ParseProbe(bytes.NewReader(data))
		if err != nil || fa == nil {
			return
		}
		check := func(what, s string) {
			for _, r := range s {
				if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Bidi_Control, r) {
					t.Fatalf("%s keeps a control character: %q", what, s)
				}
			}
		}
		check("hostname", fa.Hostname)
		check("kernel", fa.Kernel)
		for k, v := range fa.Packages {
			check("package", k+v)
		}
		for k, v := range fa.TCP {
			check("tcp", k+v)
		}
		if fa.Haloforge != nil {
			check("haloforge version", fa.Haloforge.Version)
			for _, c := range fa.Haloforge.Checks {
				check("doctor check", string(c.ID)+string(c.Status)+c.Summary+strings.ReplaceAll(c.Fix, "\n", " "))
			}
		}
		for _, s := range fa.Services {
			if !reName.MatchString(s.Name) || s.PID < 0 {
				t.Fatalf("bad service %+v", s)
			}
		}
		if !utf8.ValidString(fa.Hostname) && len(fa.Hostname) > 0 {
			_ = fa.Hostname // invalid UTF-8 is kept as bytes; printing cleans it
		}
	})
}

// FuzzTransport: NCCL lines of any shape never panic the transport watcher.
func FuzzTransport(f *testing.F) {
	f.Add("host:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.1<0>")
	f.Add("NCCL INFO Using network Socket")
	f.Add("Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/1/GDRDMA")
	f.Fuzz(func(t *testing.T, line string) {
		var tr NetTransport
		tr.Feed(line)
		if tr.Kind != "" && tr.Kind != "IB" && tr.Kind != "Socket" {
			t.Fatalf("kind %q", tr.Kind)
		}
		_ = tr.Describe()
		_ = RayNodes(line)
	})
}
