package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const twoBoxes = `# two Framework Desktops on a direct 100 GbE link
model = "/models/qwen3-30b-a3b-q4_k_m.gguf"
transport = "roce"

[[node]]
name = "halo1"
ssh = "halo1"
address = "192.168.100.1"
role = "head"
interface = "enp194s0np0"

[[node]]
name = "halo2"
ssh = "me@halo2.lan"
address = "192.168.100.2"
role = "worker"
env = { HSA_ENABLE_SDMA = "0" }
`

func TestParseInventory(t *testing.T) {
	inv, err := ParseInventory("cluster.toml", []byte(twoBoxes))
	if err != nil {
		t.Fatal(err)
	}
	if got := inv.Head(); got.Name != "halo1" || got.Interface != "enp194s0np0" {
		t.Errorf("head = %+v", got)
	}
	w := inv.Workers()
	if len(w) != 1 || w[0].SSH != "me@halo2.lan" || w[0].Env["HSA_ENABLE_SDMA"] != "0" {
		t.Errorf("workers = %+v", w)
	}
	if inv.Port != DefaultAPIPort || inv.RPCPort != DefaultRPCPort || inv.RayPort != DefaultRayPort {
		t.Errorf("defaults: port %d rpc %d ray %d", inv.Port, inv.RPCPort, inv.RayPort)
	}
	if inv.Transport != TransportRoCE || inv.Model != "/models/qwen3-30b-a3b-q4_k_m.gguf" {
		t.Errorf("settings: %+v", inv)
	}
}

// TestInventoryRefusals: every refusal names the file and the line of the
// offending key, so a user can go straight to it.
func TestInventoryRefusals(t *testing.T) {
	node := func(name, ssh, addr, role string) string {
		return "[[node]]\nname = \"" + name + "\"\nssh = \"" + ssh + "\"\naddress = \"" + addr + "\"\nrole = \"" + role + "\"\n"
	}
	ok2 := node("a", "a", "10.0.0.1", "head") + node("b", "b", "10.0.0.2", "worker")
	for _, tt := range []struct {
		name, doc, want string
	}{
		{"unknown top-level key", "modle = \"x\"\n" + ok2, "cluster.toml:1: unknown key \"modle\""},
		{"unknown node key", ok2 + "adress = \"10.0.0.3\"\n", "cluster.toml:11: unknown key \"node.adress\""},
		{"syntax", "model = \n" + ok2, "cluster.toml:1:"},
		{"wrong type", "port = \"80\"\n" + ok2, "cluster.toml:1:"},
		{"one node", node("a", "a", "10.0.0.1", "head"), "1 [[node]] tables: a cluster has 2 to 4 nodes"},
		{"five nodes", ok2 + node("c", "c", "10.0.0.3", "worker") + node("d", "d", "10.0.0.4", "worker") + node("e", "e", "10.0.0.5", "worker"), "5 [[node]] tables"},
		{"no head", node("a", "a", "10.0.0.1", "worker") + node("b", "b", "10.0.0.2", "worker"), "0 nodes have role = \"head\""},
		{"two heads", node("a", "a", "10.0.0.1", "head") + node("b", "b", "10.0.0.2", "head"), "2 nodes have role = \"head\""},
		{"duplicate name", node("a", "a", "10.0.0.1", "head") + node("a", "b", "10.0.0.2", "worker"), "cluster.toml:7: node 2: name \"a\" is also node 1's"},
		{"duplicate address", node("a", "a", "10.0.0.1", "head") + node("b", "b", "10.0.0.01", "worker"), "address"},
		{"same address spelt twice", node("a", "a", "fd00::1", "head") + node("b", "b", "fd00:0::1", "worker"), "cluster.toml:9: node \"b\": address fd00:0::1 is also node 1's"},
		{"duplicate ssh", node("a", "x", "10.0.0.1", "head") + node("b", "x", "10.0.0.2", "worker"), "ssh \"x\" reaches the same box as node 1's \"x\""},
		{"one IPv6 box, with and without a user and brackets", node("a", "root@[::1]", "10.0.0.1", "head") + node("b", "::1", "10.0.0.2", "worker"), "ssh \"::1\" reaches the same box as node 1's \"root@[::1]\""},
		{"loopback by name and by address", node("a", "localhost", "10.0.0.1", "head") + node("b", "me@127.0.0.1", "10.0.0.2", "worker"), "reaches the same box as node 1's \"localhost\""},
		{"loopback v4 and v6", node("a", "127.0.0.1", "10.0.0.1", "head") + node("b", "[::1]", "10.0.0.2", "worker"), "reaches the same box"},
		{"one address spelt twice", node("a", "fd00::2", "10.0.0.1", "head") + node("b", "me@[fd00:0:0::2]", "10.0.0.2", "worker"), "reaches the same box"},
		{"one host, two users, case", node("a", "alice@Halo1.lan", "10.0.0.1", "head") + node("b", "bob@halo1.lan.", "10.0.0.2", "worker"), "reaches the same box"},
		{"ssh:// and a plain name, port 22", node("a", "ssh://me@halo1:22", "10.0.0.1", "head") + node("b", "halo1", "10.0.0.2", "worker"), "reaches the same box"},
		{"ssh option smuggled", node("a", "-oProxyCommand=sh", "10.0.0.1", "head") + node("b", "b", "10.0.0.2", "worker"), "cluster.toml:3: node \"a\": ssh \"-oProxyCommand=sh\" starts with '-'"},
		{"ssh with a space", node("a", "a b", "10.0.0.1", "head") + node("b", "b", "10.0.0.2", "worker"), "not a host alias"},
		{"ssh with shell", node("a", "a;reboot", "10.0.0.1", "head") + node("b", "b", "10.0.0.2", "worker"), "not a host alias"},
		{"ssh bad user", node("a", "$(id)@h", "10.0.0.1", "head") + node("b", "b", "10.0.0.2", "worker"), "is not a login name"},
		{"address with shell", node("a", "a", "10.0.0.1;id", "head") + node("b", "b", "10.0.0.2", "worker"), "cluster.toml:4: node \"a\": address \"10.0.0.1;id\" is neither"},
		{"address not an IP", node("a", "a", "10.0.0.300", "head") + node("b", "b", "10.0.0.2", "worker"), "looks like an IP address but is not one"},
		{"bad role", node("a", "a", "10.0.0.1", "boss") + node("b", "b", "10.0.0.2", "worker"), "cluster.toml:5: node \"a\": role \"boss\""},
		{"bad name", node("Halo 1", "a", "10.0.0.1", "head") + node("b", "b", "10.0.0.2", "worker"), "name \"Halo 1\""},
		{"no address", "[[node]]\nname = \"a\"\nssh = \"a\"\nrole = \"head\"\n" + node("b", "b", "10.0.0.2", "worker"), "cluster.toml:1: node \"a\": no address"},
		{"port out of range", "rpc_port = 70000\n" + ok2, "cluster.toml:1: rpc_port 70000"},
		{"bad transport", "transport = \"carrier-pigeon\"\n" + ok2, "cluster.toml:1: transport \"carrier-pigeon\""},
		{"model option", "model = \"--help\"\n" + ok2, "cluster.toml:1: model \"--help\" starts with '-'"},
		{"model with quote", "model = \"a'b\"\n" + ok2, "no spaces, quotes or shell characters"},
		{"env name", "env = { \"A-B\" = \"1\" }\n" + ok2, "cluster.toml:1: env name \"A-B\""},
		{"env control", ok2 + "env = { A = \"x\\u001b[2J\" }\n", "env A: holds a control character"},
		{"env LD_PRELOAD", "env = { LD_PRELOAD = \"/tmp/x.so\" }\n" + ok2, "cluster.toml:1: env LD_PRELOAD: a variable that changes how every program"},
		{"env PATH on a node", ok2 + "env = { PATH = \"/tmp/evil:/usr/bin\" }\n", "env PATH: a variable that changes"},
		{"env BASH_ENV", "env = { BASH_ENV = \"/tmp/x\" }\n" + ok2, "env BASH_ENV"},
		{"env table LD_LIBRARY_PATH", ok2 + "\n[env]\nLD_LIBRARY_PATH = \"/tmp\"\n", "cluster.toml:12: env LD_LIBRARY_PATH"},
		{"env PYTHONSTARTUP", "env = { PYTHONSTARTUP = \"/tmp/x.py\" }\n" + ok2, "env PYTHONSTARTUP"},
		{"interface", ok2 + "interface = \"eth0;x\"\n", "interface \"eth0;x\""},
		{"ib_hca", ok2 + "ib_hca = \"mlx5_0:a\"\n", "ib_hca \"mlx5_0:a\""},
		{"NUL", ok2 + "\x00", "NUL byte"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseInventory("cluster.toml", []byte(tt.doc))
			if err == nil {
				t.Fatalf("accepted:\n%s", tt.doc)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

// TestSSHBoxesApart: destinations that reach different boxes (another
// port counts: a forwarded port on one host reaches another box) pass.
func TestSSHBoxesApart(t *testing.T) {
	node := func(name, ssh, addr, role string) string {
		return "[[node]]\nname = \"" + name + "\"\nssh = \"" + ssh + "\"\naddress = \"" + addr + "\"\nrole = \"" + role + "\"\n"
	}
	for _, pair := range [][2]string{{"halo1", "halo2"}, {"ssh://127.0.0.1:2201", "ssh://127.0.0.1:2202"}, {"fd00::1", "fd00::2"}, {"me@10.0.0.1", "me@10.0.0.10"}} {
		doc := node("a", pair[0], "10.0.0.1", "head") + node("b", pair[1], "10.0.0.2", "worker")
		if _, err := ParseInventory("cluster.toml", []byte(doc)); err != nil {
			t.Errorf("%q and %q: %v", pair[0], pair[1], err)
		}
	}
}

func TestValidateSSHDestination(t *testing.T) {
	for _, ok := range []string{"halo1", "root@10.0.0.2", "me@halo2.lan", "ssh://me@halo2:2222", "[fd00::2]", "me@[fd00::2]", "ssh://[fd00::2]:22", "halo_2"} {
		if err := ValidateSSHDestination(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"-F/etc/passwd", "-oProxyCommand=x", "a b", "a;b", "a|b", "`x`", "a@b@c", "ssh://h:0", "ssh://h:99999", "[1.2.3.4]", "h..", "a\nb", ""} {
		if err := ValidateSSHDestination(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestAddresses(t *testing.T) {
	for _, a := range []string{"0.0.0.0", "::"} {
		if !IsWildcard(a) {
			t.Errorf("%s is a wildcard", a)
		}
	}
	if IsWildcard("10.0.0.1") || IsWildcard("halo1") {
		t.Error("a real address taken for a wildcard")
	}
	for _, a := range []string{"192.168.100.1", "10.89.0.2", "172.16.0.1", "100.101.102.103", "fd00::1", "fe80::1", "127.0.0.1"} {
		if !IsPrivate(a) {
			t.Errorf("%s is private", a)
		}
	}
	for _, a := range []string{"8.8.8.8", "2001:db8::1", "halo1"} {
		if IsPrivate(a) {
			t.Errorf("%s is not known to be private", a)
		}
	}
}

func TestLoadInventory(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(p, []byte(twoBoxes), 0o600); err != nil {
		t.Fatal(err)
	}
	inv, err := LoadInventory(p)
	if err != nil || inv.Path != p {
		t.Fatalf("%v %v", inv, err)
	}
	if _, err := LoadInventory(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, []byte(twoBoxes+"# "+strings.Repeat("x", MaxInventoryBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadInventory(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a huge file: %v", err)
	}
	if _, err := LoadInventory(filepath.Join(dir, "missing.toml")); err == nil {
		t.Error("a missing file was read")
	}
	// A FIFO is refused at once (os.Open waited for a writer forever), and a
	// link to a device is named for what it is.
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := LoadInventory(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "a FIFO (named pipe), not a regular file") {
			t.Errorf("a FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("LoadInventory waits on a FIFO")
	}
	zero := filepath.Join(dir, "zero.toml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadInventory(zero); err == nil || !strings.Contains(err.Error(), "a character device, not a regular file") {
		t.Errorf("a link to /dev/zero: %v", err)
	}
}

func TestEnvForNodeWins(t *testing.T) {
	inv, err := ParseInventory("c.toml", []byte("env = { A = \"1\", B = \"2\" }\n"+twoBoxes[strings.Index(twoBoxes, "[[node]]"):]))
	if err != nil {
		t.Fatal(err)
	}
	w := inv.Workers()[0]
	w.Env = map[string]string{"B": "3"}
	got := inv.EnvFor(w)
	if got["A"] != "1" || got["B"] != "3" || len(got) != 2 {
		t.Errorf("EnvFor = %v", got)
	}
}
