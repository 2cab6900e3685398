package cluster

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/haloforge/haloforge/detect"
)

// Check IDs of `cluster check`, in the order they are printed.
const (
	CheckSSH       = "ssh"
	CheckPins      = "versions-env"
	CheckPackages  = "packages"
	CheckImage     = "image"
	CheckKernel    = "kernel"
	CheckFirmware  = "firmware"
	CheckDoctor    = "doctor"
	CheckEngine    = "engine"
	CheckAddress   = "address"
	CheckLink      = "link"
	CheckRDMA      = "rdma"
	CheckMemlock   = "memlock"
	CheckFirewall  = "firewall"
	CheckPorts     = "ports"
	CheckClock     = "clock"
	CheckSession   = "session"
	CheckRCCL      = "rccl"
	AdvisoryRPC    = "GHSA-j8rj-fmpv-wcxw"
	advisoryURL    = "https://github.com/ggml-org/llama.cpp/security/advisories/GHSA-j8rj-fmpv-wcxw"
	slowLinkMbps   = 10000
	clockWarnAfter = time.Second
)

// Report is `cluster check --json`: per node, its checks (docs/json.md).
type Report struct {
	Engine string       `json:"engine"`
	Nodes  []NodeReport `json:"nodes"`
}

// NodeReport is one node's checks.
type NodeReport struct {
	Name    string         `json:"name"`
	Role    string         `json:"role"`
	Address string         `json:"address"`
	SSH     string         `json:"ssh"`
	Checks  []detect.Check `json:"checks"`
}

// Failed counts the checks that failed on every node.
func (r *Report) Failed() int { return r.count(detect.StatusFail) }

// Warned counts the warnings.
func (r *Report) Warned() int { return r.count(detect.StatusWarn) }

func (r *Report) count(status detect.Status) int {
	n := 0
	for _, nr := range r.Nodes {
		for _, c := range nr.Checks {
			if c.Status == status {
				n++
			}
		}
	}
	return n
}

// Probed is a node's probe result: its facts, or why there are none.
type Probed struct {
	Facts *Facts
	Err   error
	Took  time.Duration
}

// CheckOptions say what the cluster is for.
type CheckOptions struct {
	Engine string // rpc or ray
	// Blocking are the doctor check IDs whose fail fails the node (the
	// inventory track's BlockingChecks); other doctor fails warn.
	Blocking []detect.CheckID
	// SSHDescribe says how a node is reached, for fixes.
	SSHDescribe func(Node) string
}

// PeerPorts are the TCP endpoints (host:port, as node.sh takes them) a
// node's probe tests: for rpc the workers' ggml-rpc-server port and the
// head's API port; for ray every peer's Ray port (the head's GCS; on a
// worker nothing listens yet, and a refusal still proves the path).
func PeerPorts(inv *Inventory, engine string, self Node) []string {
	e := &evaluator{inv: inv, o: CheckOptions{Engine: engine}}
	var out []string
	for _, n := range inv.Nodes {
		if n.Name == self.Name || IsWildcard(n.Address) {
			continue
		}
		out = append(out, tcpKey(n.Address, e.portOf(n)))
	}
	return out
}

func hostPort(addr string, port int) string { return net.JoinHostPort(addr, strconv.Itoa(port)) }

// tcpKey is how node.sh names a probed endpoint: host:port without brackets.
func tcpKey(addr string, port int) string { return addr + ":" + strconv.Itoa(port) }

// Evaluate turns the nodes' facts into the report. It reads no clock and
// runs nothing: the same facts always give the same verdicts.
func Evaluate(inv *Inventory, probed map[string]Probed, o CheckOptions) *Report {
	if o.Engine == "" {
		o.Engine = EngineRPC
	}
	if o.SSHDescribe == nil {
		o.SSHDescribe = func(n Node) string { return "ssh " + n.SSH }
	}
	e := &evaluator{inv: inv, p: probed, o: o, head: inv.Head()}
	rep := &Report{Engine: o.Engine}
	for _, n := range inv.Nodes {
		nr := NodeReport{Name: n.Name, Role: n.Role, Address: n.Address, SSH: n.SSH}
		pr := probed[n.Name]
		nr.Checks = append(nr.Checks, e.ssh(n, pr))
		if pr.Facts == nil {
			for _, id := range e.ids()[1:] {
				nr.Checks = append(nr.Checks, detect.Check{ID: detect.CheckID(id), Status: detect.StatusSkip, Summary: "not checked: " + n.Name + " was not reachable over SSH"})
			}
		} else {
			f := pr.Facts
			nr.Checks = append(nr.Checks,
				e.pins(n, f), e.packages(n, f), e.image(n, f), e.kernel(n, f), e.firmware(n, f), e.doctor(n, f),
				e.engine(n, f), e.address(n, f), e.link(n, f), e.rdma(n, f), e.memlock(n, f), e.firewall(n, f),
				e.ports(n, f), e.clock(n, f), e.session(n, f))
			if o.Engine == EngineRay {
				nr.Checks = append(nr.Checks, e.rccl(n, f))
			}
		}
		rep.Nodes = append(rep.Nodes, nr)
	}
	return rep
}

type evaluator struct {
	inv  *Inventory
	p    map[string]Probed
	o    CheckOptions
	head Node
}

func (e *evaluator) ids() []string {
	ids := []string{CheckSSH, CheckPins, CheckPackages, CheckImage, CheckKernel, CheckFirmware, CheckDoctor, CheckEngine,
		CheckAddress, CheckLink, CheckRDMA, CheckMemlock, CheckFirewall, CheckPorts, CheckClock, CheckSession}
	if e.o.Engine == EngineRay {
		ids = append(ids, CheckRCCL)
	}
	return ids
}

func (e *evaluator) facts(n Node) *Facts { return e.p[n.Name].Facts }

// peers are the reachable nodes other than n, head first.
func (e *evaluator) peers(n Node) []Node {
	var out []Node
	for _, m := range e.inv.Nodes {
		if m.Name != n.Name && e.facts(m) != nil {
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Role == RoleHead && out[j].Role != RoleHead })
	return out
}

// reference is the node the others are compared with: the head when it
// answered, else the first node that did.
func (e *evaluator) reference() (Node, *Facts) {
	if f := e.facts(e.head); f != nil {
		return e.head, f
	}
	for _, n := range e.inv.Nodes {
		if f := e.facts(n); f != nil {
			return n, f
		}
	}
	return Node{}, nil
}

func ok(id, summary string) detect.Check {
	return detect.Check{ID: detect.CheckID(id), Status: detect.StatusOK, Summary: summary}
}

func warn(id, summary, fix string) detect.Check {
	return detect.Check{ID: detect.CheckID(id), Status: detect.StatusWarn, Summary: summary, Fix: fix}
}

func fail(id, summary, fix string) detect.Check {
	return detect.Check{ID: detect.CheckID(id), Status: detect.StatusFail, Summary: summary, Fix: fix}
}

func skip(id, summary, fix string) detect.Check {
	return detect.Check{ID: detect.CheckID(id), Status: detect.StatusSkip, Summary: summary, Fix: fix}
}

func (e *evaluator) ssh(n Node, pr Probed) detect.Check {
	if pr.Err == nil && pr.Facts != nil {
		s := fmt.Sprintf("connected as %s (host key verified, no password) in %.1f s", orUnknown(pr.Facts.User), pr.Took.Seconds())
		if !pr.Facts.Complete {
			return warn(CheckSSH, s+", but the probe was cut short", "run it by hand to see why: "+e.o.SSHDescribe(n)+" true")
		}
		if len(pr.Facts.Missing) > 0 {
			return fail(CheckSSH, s+"; the node lacks "+strings.Join(pr.Facts.Missing, ", "), "install them on "+n.Name+": sudo apt-get install procps coreutils iproute2   # Fedora: sudo dnf install procps-ng coreutils iproute")
		}
		return ok(CheckSSH, s)
	}
	msg := "no answer"
	if pr.Err != nil {
		msg = pr.Err.Error()
	}
	return fail(CheckSSH, "cannot run commands on "+n.Name+": "+msg, sshFix(n, msg, e.o.SSHDescribe(n)))
}

// sshFix turns ssh's own words into what to do.
func sshFix(n Node, msg, how string) string {
	switch {
	case strings.Contains(msg, "REMOTE HOST IDENTIFICATION HAS CHANGED"):
		return "the node's host key changed since you last connected: if you reinstalled it, check the new key's fingerprint\n" +
			"on its console (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub), then: ssh-keygen -R " + hostOf(n.SSH) + "; " + how + " true"
	case strings.Contains(msg, "Host key verification failed"), strings.Contains(msg, "No ED25519 host key is known"),
		strings.Contains(msg, "host key is known"):
		return "haloforge never accepts an unknown host key. Compare the fingerprint with the node's console\n" +
			"(ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub there), then connect once by hand and answer yes: " + how
	case strings.Contains(msg, "Permission denied"):
		return "install your public key on the node (no passwords: haloforge runs with BatchMode=yes):\nssh-copy-id " + n.SSH
	case strings.Contains(msg, "Could not resolve hostname"):
		return "add a Host " + hostOf(n.SSH) + " entry with its HostName to ~/.ssh/config, or use user@IP in the inventory"
	case strings.Contains(msg, "Connection refused"):
		return "sshd does not listen on " + n.Name + ": sudo systemctl enable --now ssh   # Fedora: sshd"
	case strings.Contains(msg, "timed out"), strings.Contains(msg, "No route to host"), strings.Contains(msg, "Network is unreachable"):
		return "the node does not answer: is it on, and is the SSH destination its management address? ping " + hostOf(n.SSH)
	}
	return "run the same by hand to see ssh's own message: " + how + " true"
}

func hostOf(dest string) string {
	d := strings.TrimPrefix(dest, "ssh://")
	if i := strings.LastIndexByte(d, '@'); i >= 0 {
		d = d[i+1:]
	}
	if h, _, ok := cutPort(d); ok && strings.HasPrefix(dest, "ssh://") {
		d = h
	}
	return strings.Trim(d, "[]")
}

// pinsHash is the node's versions.env hash and where it came from.
func (e *evaluator) pinsHash(f *Facts) (hash, path, problem string) {
	switch {
	case e.inv.Pins != "" && f.PinsError != "":
		return "", f.PinsPath, f.PinsError
	case e.inv.Pins != "":
		return f.PinsSHA256, f.PinsPath, ""
	case f.Haloforge != nil && f.Haloforge.Pins.Error != "":
		return "", f.Haloforge.Pins.Path, f.Haloforge.Pins.Error
	case f.Haloforge != nil:
		return strings.ToLower(f.Haloforge.Pins.SHA256), f.Haloforge.Pins.Path, ""
	}
	return "", "", ""
}

func (e *evaluator) pins(n Node, f *Facts) detect.Check {
	hash, path, problem := e.pinsHash(f)
	if problem != "" {
		return fail(CheckPins, "versions.env: "+problem, "copy the head's versions.env to "+n.Name+": scp -3 "+e.head.SSH+":"+orDefault(path, "versions.env")+" "+n.SSH+":"+orDefault(path, "versions.env"))
	}
	if hash == "" {
		return skip(CheckPins, "no versions.env to compare: haloforge is not installed on "+n.Name+" and the inventory names no pins file",
			"set pins = \"~/haloforge/versions.env\" in the inventory (the same path on every node), or install haloforge on the node")
	}
	ref, rf := e.reference()
	refHash, _, _ := e.pinsHash(rf)
	same := 0
	for _, m := range e.inv.Nodes {
		if mf := e.facts(m); mf != nil {
			if h, _, _ := e.pinsHash(mf); h == hash {
				same++
			}
		}
	}
	where := ""
	if path != "" {
		where = " (" + path + ")"
	}
	if ref.Name == n.Name || refHash == hash {
		return ok(CheckPins, fmt.Sprintf("sha256 %s%s, the same on %d of %d nodes", short(hash), where, same, len(e.inv.Nodes)))
	}
	if refHash == "" {
		return skip(CheckPins, fmt.Sprintf("sha256 %s%s; %s has none to compare with", short(hash), where, ref.Name), "")
	}
	return fail(CheckPins, fmt.Sprintf("sha256 %s%s differs from %s's %s: the nodes would build or run different pins", short(hash), where, ref.Name, short(refHash)),
		fmt.Sprintf("haloforge pins diff on the two files shows what differs; to take the head's:\nscp -3 %s:%s %s:%s",
			ref.SSH, orDefault(path, "versions.env"), n.SSH, orDefault(path, "versions.env")))
}

// enginePackage says whether a package must match exactly across nodes:
// the engines, ggml (the RPC protocol is checked by version) and the
// RDMA/RCCL stack; others (Mesa, firmware) only warn.
func enginePackage(name string) bool {
	for _, p := range []string{"llama", "libggml", "ggml", "libllama", "rccl", "librccl", "rdma-core", "ibverbs", "libibverbs"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func (e *evaluator) packages(n Node, f *Facts) detect.Check {
	ref, rf := e.reference()
	if len(f.Packages) == 0 && (rf == nil || len(rf.Packages) == 0) {
		return skip(CheckPackages, "no llama.cpp, ggml, RDMA or firmware package is installed from the distribution here", "")
	}
	if ref.Name == n.Name {
		return ok(CheckPackages, fmt.Sprintf("%d packages, the reference for the others: %s", len(f.Packages), pkgList(f.Packages, 4)))
	}
	names := map[string]bool{}
	for k := range f.Packages {
		names[k] = true
	}
	for k := range rf.Packages {
		names[k] = true
	}
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var diffs []string
	hard := false
	for _, k := range keys {
		here, there := f.Packages[k], rf.Packages[k]
		if here == there {
			continue
		}
		hard = hard || enginePackage(k)
		switch {
		case here == "":
			diffs = append(diffs, fmt.Sprintf("%s absent here, %s on %s", k, there, ref.Name))
		case there == "":
			diffs = append(diffs, fmt.Sprintf("%s %s here, absent on %s", k, here, ref.Name))
		default:
			diffs = append(diffs, fmt.Sprintf("%s %s here, %s on %s", k, here, there, ref.Name))
		}
	}
	if len(diffs) == 0 {
		return ok(CheckPackages, fmt.Sprintf("the same %d package versions as %s", len(f.Packages), ref.Name))
	}
	fix := "install the same versions on every node, e.g. on " + n.Name + ":\n" + installCmd(f, rf, keys)
	if hard {
		return fail(CheckPackages, strings.Join(diffs, "; ")+" (the engines and ggml must match: RPC checks its protocol version)", fix)
	}
	return warn(CheckPackages, strings.Join(diffs, "; "), fix)
}

func installCmd(f, rf *Facts, keys []string) string {
	var pkgs []string
	for _, k := range keys {
		if v := rf.Packages[k]; v != "" && f.Packages[k] != v {
			if f.OSID == "fedora" || strings.Contains(f.OSID, "rhel") {
				pkgs = append(pkgs, k+"-"+v)
			} else {
				pkgs = append(pkgs, k+"="+v)
			}
		}
	}
	if len(pkgs) == 0 {
		return "remove what the reference node does not have, or install it there too"
	}
	if f.OSID == "fedora" || strings.Contains(f.OSID, "rhel") {
		return "sudo dnf install " + strings.Join(pkgs, " ")
	}
	return "sudo apt-get install " + strings.Join(pkgs, " ")
}

func pkgList(m map[string]string, n int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for i, k := range keys {
		if i == n {
			parts = append(parts, fmt.Sprintf("… %d more", len(keys)-n))
			break
		}
		parts = append(parts, k+" "+m[k])
	}
	return strings.Join(parts, ", ")
}

func (e *evaluator) image(n Node, f *Facts) detect.Check {
	if e.inv.Image == "" {
		return skip(CheckImage, "the inventory names no container image", "")
	}
	d := f.ImageDigest
	if !strings.HasPrefix(d, "sha256:") {
		if d == "" {
			d = "no podman or docker on the node"
		}
		return fail(CheckImage, e.inv.Image+" is not on "+n.Name+": "+d, "podman pull "+e.inv.Image+"   # on "+n.Name)
	}
	ref, rf := e.reference()
	if ref.Name == n.Name || rf.ImageDigest == d {
		return ok(CheckImage, e.inv.Image+" "+short(d))
	}
	return fail(CheckImage, fmt.Sprintf("%s is %s here, %s on %s: the nodes would run different builds", e.inv.Image, short(d), short(rf.ImageDigest), ref.Name),
		"pin the image by digest in the inventory (image = \"…@"+rf.ImageDigest+"\") and pull it on every node")
}

// kernelClass is major.minor of a kernel release.
func kernelClass(r string) string {
	parts := strings.SplitN(r, ".", 3)
	if len(parts) < 2 {
		return r
	}
	minor := parts[1]
	if i := strings.IndexFunc(minor, func(c rune) bool { return c < '0' || c > '9' }); i >= 0 {
		minor = minor[:i]
	}
	return parts[0] + "." + minor
}

func (e *evaluator) kernel(n Node, f *Facts) detect.Check {
	ref, rf := e.reference()
	if f.Kernel == "" {
		return skip(CheckKernel, "kernel release unknown", "")
	}
	if ref.Name == n.Name || rf.Kernel == f.Kernel {
		return ok(CheckKernel, "Linux "+f.Kernel+" (class "+kernelClass(f.Kernel)+")")
	}
	if kernelClass(rf.Kernel) == kernelClass(f.Kernel) {
		return ok(CheckKernel, fmt.Sprintf("Linux %s, the same class (%s) as %s's %s", f.Kernel, kernelClass(f.Kernel), ref.Name, rf.Kernel))
	}
	return warn(CheckKernel, fmt.Sprintf("Linux %s here, %s on %s: different kernel lines differ in KFD, CWSR and MES handling", f.Kernel, rf.Kernel, ref.Name),
		"run the same kernel line on every node (haloforge doctor on each says whether it has gfx1151's KFD fixes: "+detect.FixedKernelsText()+")")
}

// firmwareClass is what the node says of its GPU firmware: MES version
// from its haloforge, and the firmware package.
func firmwareClass(f *Facts) string {
	var parts []string
	if f.Haloforge != nil && f.Haloforge.MESFirmware != "" {
		parts = append(parts, "MES "+f.Haloforge.MESFirmware)
	}
	for _, p := range []string{"firmware-amd-graphics", "linux-firmware", "amd-gpu-firmware"} {
		if v := f.Packages[p]; v != "" {
			parts = append(parts, p+" "+v)
		}
	}
	return strings.Join(parts, ", ")
}

func (e *evaluator) firmware(n Node, f *Facts) detect.Check {
	c := firmwareClass(f)
	if c == "" {
		return skip(CheckFirmware, "GPU firmware unknown: no firmware package from the distribution, and MES not readable (no GPU, or not root)", "")
	}
	ref, rf := e.reference()
	if ref.Name == n.Name || firmwareClass(rf) == c {
		return ok(CheckFirmware, c)
	}
	return warn(CheckFirmware, fmt.Sprintf("%s here, %s on %s", c, orUnknown(firmwareClass(rf)), ref.Name),
		"run the same linux-firmware on every node; avoid 20251125 (MES 0x83 hangs) — haloforge doctor on each node checks it")
}

func (e *evaluator) doctor(n Node, f *Facts) detect.Check {
	if f.Haloforge == nil {
		var facts []string
		if f.KFD != "" {
			facts = append(facts, "/dev/kfd "+f.KFD)
		}
		if len(f.GFX) > 0 {
			facts = append(facts, "GPU "+strings.Join(f.GFX, ", "))
		}
		s := "haloforge is not installed on " + n.Name + ", so doctor's checks did not run there"
		if len(facts) > 0 {
			s += " (seen directly: " + strings.Join(facts, "; ") + ")"
		}
		fix := "copy haloforge there (scp bin/haloforge " + n.SSH + ":.local/bin/) and run haloforge doctor on it"
		if f.KFD == "denied" {
			return warn(CheckDoctor, s, "the login user cannot open /dev/kfd: sudo usermod -aG render,video $USER on "+n.Name+", then log in again\n"+fix)
		}
		if f.HaloforgeRaw != "" {
			s += "; its haloforge said: " + f.HaloforgeRaw
		}
		return skip(CheckDoctor, s, fix)
	}
	var failed, blocking []string
	var fixes []string
	for _, c := range f.Haloforge.Checks {
		if c.Status != detect.StatusFail {
			continue
		}
		if slices.Contains(e.o.Blocking, c.ID) {
			blocking = append(blocking, string(c.ID))
			if c.Fix != "" {
				fixes = append(fixes, string(c.ID)+": "+firstLine(c.Fix))
			}
		} else {
			failed = append(failed, string(c.ID))
		}
	}
	v := "haloforge " + f.Haloforge.Version
	switch {
	case len(blocking) > 0:
		return fail(CheckDoctor, fmt.Sprintf("%s: doctor fails %s, which the track blocks on", v, strings.Join(blocking, ", ")),
			strings.Join(fixes, "\n")+"\nhaloforge doctor on "+n.Name+" prints every fix")
	case len(failed) > 0 && len(e.o.Blocking) == 0:
		return warn(CheckDoctor, fmt.Sprintf("%s: doctor fails %s (no track in the inventory, so none blocks)", v, strings.Join(failed, ", ")),
			"haloforge doctor on "+n.Name+" prints each fix; set track = \"ID\" in the inventory to make its blocking checks fail the cluster")
	case len(failed) > 0:
		return warn(CheckDoctor, fmt.Sprintf("%s: doctor fails %s (not blocking for the track)", v, strings.Join(failed, ", ")), "haloforge doctor on "+n.Name+" prints each fix")
	}
	return ok(CheckDoctor, v+": no doctor check fails")
}

// EngineBinaries are the programs each role needs, per engine.
func EngineBinaries(engine, role string) []string {
	switch {
	case engine == EngineRay:
		return []string{"ray", "vllm"}
	case role == RoleHead:
		return []string{"llama-server"}
	default:
		return []string{"ggml-rpc-server"}
	}
}

func (e *evaluator) engine(n Node, f *Facts) detect.Check {
	var have, missing []string
	renamed := false
	for _, b := range EngineBinaries(e.o.Engine, n.Role) {
		if p := f.Bins[b]; p != "" {
			have = append(have, p)
			continue
		}
		if b == "ggml-rpc-server" && f.Bins["rpc-server"] != "" {
			have = append(have, f.Bins["rpc-server"]+" (the old name)")
			renamed = true
			continue
		}
		missing = append(missing, b)
	}
	if len(missing) > 0 {
		fix := "sudo apt-get install llama.cpp-tools llama.cpp-tools-extra libggml0-backend-rpc   # Debian sid / Ubuntu 26.04; or haloforge build --track llamacpp-distro on " + n.Name
		if e.o.Engine == EngineRay {
			fix = "install vLLM and Ray on every node (the same image or environment): haloforge build --track vllm-image, or kyuz0's vLLM toolbox"
		}
		return fail(CheckEngine, "not found on "+n.Name+": "+strings.Join(missing, ", "), fix)
	}
	if renamed {
		return warn(CheckEngine, strings.Join(have, ", ")+": llama.cpp renamed rpc-server to ggml-rpc-server; haloforge uses the old name here",
			"update llama.cpp on "+n.Name+" to the same build as the other nodes")
	}
	return ok(CheckEngine, strings.Join(have, ", "))
}

func (e *evaluator) address(n Node, f *Facts) detect.Check {
	if IsWildcard(n.Address) {
		return warn(CheckAddress, n.Address+" binds every interface: ggml-rpc-server has no authentication ("+AdvisoryRPC+": remote code execution) and Ray's ports are open to anyone on those networks",
			"set address to the node's IP on the private cluster link; haloforge cluster up refuses a wildcard without --allow-wildcard\nsee "+advisoryURL)
	}
	ifname, found := f.InterfaceFor(n)
	var addrs []string
	for _, a := range GlobalAddrs(f.Addrs) {
		addrs = append(addrs, a.IP.String()+" ("+a.Name+")")
	}
	ips := f.SelfIPs
	if ip := net.ParseIP(n.Address); ip != nil {
		ips = []net.IP{ip}
	}
	_, _, present := InterfaceOf(f.Addrs, ips...)
	if !present {
		return fail(CheckAddress, n.Address+" is not an address of "+n.Name+" (it has: "+orUnknown(strings.Join(addrs, ", "))+")",
			"set address to the node's IP on the cluster network (ip -o addr on "+n.Name+"); the engines bind to it")
	}
	if n.Interface != "" && found {
		if name, _, _ := InterfaceOf(f.Addrs, ips...); name != n.Interface {
			return fail(CheckAddress, fmt.Sprintf("%s is on %s, but the inventory says interface = %q", n.Address, name, n.Interface),
				fmt.Sprintf("set interface = %q for %s, or drop the key (haloforge finds it from the address)", name, n.Name))
		}
	}
	s := n.Address + " on " + ifname
	if !IsPrivate(n.Address) && net.ParseIP(n.Address) != nil {
		return warn(CheckAddress, s+": a public address; ggml-rpc-server and Ray have no authentication ("+AdvisoryRPC+")",
			"use a private link for the cluster (a direct cable, a VLAN, or a Tailscale 100.x address); see "+advisoryURL)
	}
	if v4 := globalV4(f.Addrs); len(v4) > 1 {
		s += fmt.Sprintf("; %d addresses (%s): haloforge pins VLLM_HOST_IP and Ray's --node-ip-address to %s", len(v4), strings.Join(v4, ", "), n.Address)
	}
	return ok(CheckAddress, s)
}

func globalV4(addrs []IfAddr) []string {
	var out []string
	for _, a := range GlobalAddrs(addrs) {
		if a.IP.To4() != nil {
			out = append(out, a.IP.String())
		}
	}
	return out
}

func (e *evaluator) link(n Node, f *Facts) detect.Check {
	ifname, found := f.InterfaceFor(n)
	if !found || IsWildcard(n.Address) {
		return skip(CheckLink, "cluster interface unknown (see address)", "")
	}
	nf, known := f.Net[ifname]
	if !known {
		return skip(CheckLink, ifname+": no sysfs facts", "")
	}
	if nf.Oper != "" && nf.Oper != "up" && nf.Oper != "unknown" {
		return fail(CheckLink, ifname+" is "+nf.Oper, "bring it up on "+n.Name+": sudo ip link set "+ifname+" up (and check the cable)")
	}
	speed := "speed not reported (a virtual link)"
	if nf.Speed > 0 {
		speed = fmt.Sprintf("%d Mb/s", nf.Speed)
	}
	s := fmt.Sprintf("%s: MTU %d, %s", ifname, nf.MTU, speed)
	var problems []string
	status := detect.StatusOK
	var fixes []string
	for _, m := range e.peers(n) {
		mf := e.facts(m)
		mif, ok := mf.InterfaceFor(m)
		if !ok {
			continue
		}
		mn, ok := mf.Net[mif]
		if !ok {
			continue
		}
		if mn.MTU != nf.MTU && mn.MTU > 0 && nf.MTU > 0 {
			problems = append(problems, fmt.Sprintf("MTU %d here, %d on %s's %s: frames larger than the smaller MTU are dropped", nf.MTU, mn.MTU, m.Name, mif))
			fixes = append(fixes, fmt.Sprintf("set the same MTU at both ends, e.g. sudo ip link set %s mtu %d on %s (nmcli connection modify … ethernet.mtu %d to keep it)", ifname, mn.MTU, n.Name, mn.MTU))
			status = detect.StatusFail
		}
		if mn.Speed > 0 && nf.Speed > 0 && mn.Speed != nf.Speed {
			problems = append(problems, fmt.Sprintf("%d Mb/s here, %d Mb/s on %s", nf.Speed, mn.Speed, m.Name))
			if status == detect.StatusOK {
				status = detect.StatusWarn
			}
			fixes = append(fixes, "the link negotiated different speeds at its two ends: check the cable and ethtool "+ifname)
		}
	}
	if nf.Speed > 0 && nf.Speed < slowLinkMbps {
		problems = append(problems, fmt.Sprintf("%d Mb/s is slow for a cluster: RPC on 2.5 GbE lost 28–55 %% of decode speed against one box, and tensor parallel wants RDMA", nf.Speed))
		if status == detect.StatusOK {
			status = detect.StatusWarn
		}
		fixes = append(fixes, "a 10 GbE or faster direct link (USB4/Thunderbolt networking reaches 10–20 Gb/s)")
	}
	if len(problems) > 0 {
		return detect.Check{ID: CheckLink, Status: status, Summary: s + "; " + strings.Join(problems, "; "), Fix: strings.Join(dedupe(fixes), "\n")}
	}
	return ok(CheckLink, s+", the same at the other ends")
}

func (e *evaluator) rdma(n Node, f *Facts) detect.Check {
	var active []RDMAPort
	for _, p := range f.RDMA {
		if p.Active() {
			active = append(active, p)
		}
	}
	peerActive := 0
	for _, m := range e.peers(n) {
		for _, p := range e.facts(m).RDMA {
			if p.Active() {
				peerActive++
				break
			}
		}
	}
	switch {
	case len(f.RDMA) == 0 && peerActive > 0:
		return warn(CheckRDMA, "no RDMA device here while other nodes have one: RCCL falls back to TCP sockets for the whole cluster",
			"give every node the same RDMA NIC setup (rdma link on each must show ACTIVE)")
	case len(f.RDMA) == 0:
		return skip(CheckRDMA, "no RDMA device: ggml RPC and RCCL use TCP", "")
	case len(active) == 0:
		var states []string
		for _, p := range f.RDMA {
			states = append(states, p.Name()+" "+p.State)
		}
		return warn(CheckRDMA, "RDMA ports present but none ACTIVE: "+strings.Join(states, ", "), "check the cable and link: rdma link; ip link set <iface> up; the NIC's firmware")
	}
	var names []string
	for _, p := range active {
		names = append(names, p.Name()+" ("+orUnknown(p.LinkLayer)+")")
	}
	s := "ACTIVE: " + strings.Join(names, ", ")
	if len(active) > 1 && n.IBHCA == "" && e.o.Engine == EngineRay {
		return warn(CheckRDMA, s+": several active ports, and an NCCL_IB_HCA prefix matching more than one gives ncclCommInitRank internal errors",
			fmt.Sprintf("pin one port for %s in the inventory: ib_hca = %q (haloforge passes NCCL_IB_HCA==%s, an exact match)", n.Name, active[0].Name(), active[0].Name()))
	}
	return ok(CheckRDMA, s)
}

func (e *evaluator) memlock(n Node, f *Facts) detect.Check {
	if f.Memlock == "" {
		return skip(CheckMemlock, "memlock limit unknown", "")
	}
	if f.Memlock == "unlimited" {
		return ok(CheckMemlock, "unlimited")
	}
	s := "ulimit -l " + f.Memlock + " KiB"
	hasRDMA := false
	for _, p := range f.RDMA {
		hasRDMA = hasRDMA || p.Active()
	}
	if hasRDMA {
		return warn(CheckMemlock, s+": RDMA pins its buffers and fails to register memory under a limit",
			"printf '* soft memlock unlimited\\n* hard memlock unlimited\\n' | sudo tee /etc/security/limits.d/90-haloforge-rdma.conf   # then log in again\n"+
				"containers: --ulimit memlock=-1")
	}
	return ok(CheckMemlock, s+" (only RDMA needs it unlimited, and this node has none active)")
}

func (e *evaluator) firewall(n Node, f *Facts) detect.Check {
	ifname, found := f.InterfaceFor(n)
	switch {
	case f.Firewalld == "" || f.Firewalld == "absent":
		return ok(CheckFirewall, "no firewalld (the ports check below tests the path itself)")
	case f.Firewalld != "running":
		return ok(CheckFirewall, "firewalld "+f.Firewalld)
	case !found:
		return skip(CheckFirewall, "firewalld running; the cluster interface is unknown", "")
	}
	zone := f.Zones[ifname]
	switch {
	case zone == "trusted":
		return ok(CheckFirewall, "firewalld: "+ifname+" is in the trusted zone")
	case zone == "" || strings.Contains(zone, "no zone") || strings.Contains(strings.ToLower(zone), "error") || strings.Contains(zone, "Authorization"):
		return warn(CheckFirewall, "firewalld is running and "+ifname+"'s zone is unknown ("+orUnknown(zone)+"): Ray and RCCL use random ports",
			"sudo firewall-cmd --permanent --zone=trusted --add-interface="+ifname+" && sudo firewall-cmd --reload")
	}
	return warn(CheckFirewall, "firewalld: "+ifname+" is in the "+zone+" zone, which drops Ray's and RCCL's random ports",
		"trust the private cluster link only: sudo firewall-cmd --permanent --zone=trusted --add-interface="+ifname+" && sudo firewall-cmd --reload")
}

func (e *evaluator) ports(n Node, f *Facts) detect.Check {
	var good, bad []string
	var fixes []string
	for _, m := range e.inv.Nodes {
		if m.Name == n.Name || IsWildcard(m.Address) {
			continue
		}
		port := e.portOf(m)
		key := tcpKey(m.Address, port)
		res, tested := f.TCP[key]
		if !tested {
			continue
		}
		label := fmt.Sprintf("%s %s", m.Name, hostPort(m.Address, port))
		switch {
		case res == "open":
			good = append(good, label+" open")
		case res == "refused":
			good = append(good, label+" reachable (nothing listens yet)")
		case res == "timeout":
			bad = append(bad, label+" dropped (no answer in 3 s)")
			fixes = append(fixes, fmt.Sprintf("a firewall on %s (or between) drops the port: sudo firewall-cmd --permanent --zone=trusted --add-interface=<its cluster interface> && sudo firewall-cmd --reload", m.Name))
		case res == "unreachable":
			bad = append(bad, label+" rejected (no route to host: a firewall's reject, or a missing route)")
			fixes = append(fixes, fmt.Sprintf("put %s's cluster interface in the trusted zone, and check both ends are on the same subnet (ip route get %s on %s)", m.Name, m.Address, n.Name))
		default:
			bad = append(bad, label+" "+res)
		}
	}
	if len(good)+len(bad) == 0 {
		return skip(CheckPorts, "no peer port tested", "")
	}
	if len(bad) > 0 {
		return fail(CheckPorts, "from "+n.Name+": "+strings.Join(append(bad, good...), ", "), strings.Join(dedupe(fixes), "\n"))
	}
	return ok(CheckPorts, "from "+n.Name+": "+strings.Join(good, ", "))
}

// portOf is the engine port tested on a peer (see PeerPorts).
func (e *evaluator) portOf(m Node) int {
	switch {
	case e.o.Engine == EngineRay:
		return e.inv.RayPort
	case m.Role == RoleHead:
		return e.inv.Port
	}
	return e.inv.RPCPort
}

func (e *evaluator) clock(n Node, f *Facts) detect.Check {
	if !f.HaveClock {
		return skip(CheckClock, "clock not measured", "")
	}
	off := f.ClockOffset
	abs := off
	if abs < 0 {
		abs = -abs
	}
	s := fmt.Sprintf("%+.3f s against this machine (± %.3f s, half the SSH round trip)", off.Seconds(), f.ClockError.Seconds())
	if abs-f.ClockError > clockWarnAfter {
		return warn(CheckClock, s+": logs across nodes will not line up, and Ray's and NCCL's timeouts are measured on skewed clocks",
			"turn on time sync on every node: sudo timedatectl set-ntp true (chrony or systemd-timesyncd)")
	}
	return ok(CheckClock, s)
}

// session: what systemd-logind does to haloforge's processes once the SSH
// login that started them ends. KillUserProcesses kills them; RemoveIPC
// (systemd's default) deletes the user's shared memory and semaphores,
// which Ray's object store and vLLM's workers use — a later collective
// then blocks for ever (eugr/spark-vllm-docker#352). Lingering users keep both.
func (e *evaluator) session(n Node, f *Facts) detect.Check {
	if f.Systemd != "yes" {
		return skip(CheckSession, "no systemd-logind on the node: nothing ends with the SSH login", "")
	}
	if f.Linger == "yes" {
		return ok(CheckSession, f.User+" lingers: what haloforge starts outlives the SSH login")
	}
	if f.UID < 1000 {
		return ok(CheckSession, fmt.Sprintf("%s is a system user (uid %d): logind neither kills its processes nor removes its IPC", f.User, f.UID))
	}
	fix := "sudo loginctl enable-linger " + orDefault(f.User, "$USER") + "   # on " + n.Name + ": the user's processes and IPC then outlive its logins"
	if isYes(f.KillUserProcesses) {
		return fail(CheckSession, "logind has KillUserProcesses=yes and "+f.User+" does not linger: the engines would die when haloforge's SSH login ends", fix)
	}
	if f.RemoveIPC != "no" && e.o.Engine == EngineRay {
		return fail(CheckSession, "logind removes "+f.User+"'s shared memory and semaphores when its last login ends (RemoveIPC, systemd's default) and "+f.User+" does not linger: Ray and vLLM hang on their next collective",
			fix+"\n(or RemoveIPC=no in /etc/systemd/logind.conf)")
	}
	return ok(CheckSession, fmt.Sprintf("%s does not linger; llama.cpp RPC keeps no shared memory, so logind's RemoveIPC does not touch it", f.User))
}

func isYes(v string) bool { return v == "yes" || v == "true" || v == "1" || v == "on" }

func (e *evaluator) rccl(n Node, f *Facts) detect.Check {
	if len(f.RCCL) == 0 {
		return skip(CheckRCCL, "no librccl on the node's library path (inside an image? check the image's with: podman run --rm IMAGE ldconfig -p | grep rccl)", "")
	}
	var with, without []string
	for p, has := range f.RCCL {
		if has {
			with = append(with, p)
		} else {
			without = append(without, p)
		}
	}
	sort.Strings(with)
	sort.Strings(without)
	if len(with) > 0 {
		return ok(CheckRCCL, "gfx1151 code in "+strings.Join(with, ", "))
	}
	return fail(CheckRCCL, "no gfx1151 code in "+strings.Join(without, ", ")+": upstream RCCL does not build gfx1151 (ROCm/rccl#2026), so collectives fail on Strix Halo",
		"use an image or environment with a gfx1151 RCCL: kyuz0's vLLM toolbox bundles librccl built from kyuz0/rocm-systems (branch gfx1151-rccl)")
}

func short(h string) string {
	h = strings.TrimPrefix(h, "sha256:")
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return h
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
