package cluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/internal/text"
)

// Bounds on what a node may send back: probes are a few KiB; the facts
// haloforge prints there hold a doctor report.
const (
	MaxProbeBytes = 1 << 20
	maxProbeLine  = 512 << 10
	maxFactValue  = 4096
)

// Facts is what a node's probe reported.
type Facts struct {
	Hostname, User, Kernel, OSID, OSVersion string
	UID                                     int
	// ClockOffset is the node's clock minus the local one, the SSH round
	// trip's half subtracted; ClockError is that half (the uncertainty).
	ClockOffset, ClockError time.Duration
	HaveClock               bool
	Memlock                 string // ulimit -l: "unlimited" or KiB
	KFD                     string // /dev/kfd: ok, missing, denied
	Systemd                 string // yes when systemd runs the node (logind applies)
	Linger                  string // loginctl's Linger of the login user: yes, no, ?
	RemoveIPC               string // logind.conf: yes, no, default (yes)
	KillUserProcesses       string // logind.conf: yes, no, default (no on most distributions)
	GFX                     []string
	Addrs                   []IfAddr
	Net                     map[string]NetIf
	RDMA                    []RDMAPort
	Packages                map[string]string
	Firewalld               string            // running, not running, absent
	Zones                   map[string]string // interface → firewalld zone
	Bins                    map[string]string // engine → path on the node
	Missing                 []string          // tools node.sh needs that the node lacks
	RCCL                    map[string]bool   // librccl path → holds gfx1151 code
	PinsPath, PinsSHA256    string
	PinsError               string
	Haloforge               *NodeFacts // from `haloforge cluster node-facts` on the node
	HaloforgeRaw            string     // its output when it was not JSON
	ImageRef, ImageDigest   string
	SelfIPs                 []net.IP
	TCP                     map[string]string // "host:port" → open, refused, timeout, unreachable, error …
	Services                map[string]Service
	Complete                bool // the probe ran to its end
}

// NetIf is an interface's sysfs facts.
type NetIf struct {
	MTU   int
	Speed int // Mb/s; 0 when unknown (virtual links report -1)
	Oper  string
}

// RDMAPort is one port of an RDMA device.
type RDMAPort struct {
	Device, Port string
	State        string // e.g. "4: ACTIVE"
	LinkLayer    string // InfiniBand or Ethernet (RoCE)
}

// Active says whether the port's state is ACTIVE.
func (p RDMAPort) Active() bool { return strings.Contains(strings.ToUpper(p.State), "ACTIVE") }

// Name is device:port, as NCCL_IB_HCA takes it.
func (p RDMAPort) Name() string { return p.Device + ":" + p.Port }

// Service is a process haloforge started on a node.
type Service struct {
	Name  string
	State string // running, exited, stopped
	PID   int
	Code  string // exit code when exited
	Procs []int  // processes left in its session
}

// NodeFacts is what `haloforge cluster node-facts` prints on a node: the
// pins it would use and the doctor's verdicts.
type NodeFacts struct {
	Version string `json:"haloforge_version"`
	Pins    struct {
		Path   string `json:"path"`
		SHA256 string `json:"sha256"`
		Error  string `json:"error,omitempty"`
	} `json:"pins"`
	Kernel      string         `json:"kernel,omitempty"`
	MESFirmware string         `json:"mes_firmware,omitempty"`
	GFX         []string       `json:"gfx"`
	Checks      []detect.Check `json:"checks"`
}

// ParseProbe reads a probe's KEY=VALUE lines. It is strict about size and
// lenient about content: unknown keys and bad values are skipped, so a
// newer or hostile node cannot break the check, only leave facts unknown.
func ParseProbe(r io.Reader) (*Facts, error) {
	f := &Facts{Net: map[string]NetIf{}, Packages: map[string]string{}, Zones: map[string]string{},
		Bins: map[string]string{}, RCCL: map[string]bool{}, TCP: map[string]string{}, Services: map[string]Service{}}
	sc := bufio.NewScanner(io.LimitReader(r, MaxProbeBytes))
	sc.Buffer(make([]byte, 64<<10), maxProbeLine)
	var ipLines []string
	rdma := map[string]*RDMAPort{}
	seen := false
	for sc.Scan() {
		line := sc.Text()
		key, val, ok := strings.Cut(line, "=")
		if !ok || key == "" || len(key) > 512 || text.Printable(key, 0) != key {
			continue // node.sh prints plain keys; anything else is not its output
		}
		if key != "facts" && len(val) > maxFactValue {
			val = val[:maxFactValue]
		}
		// A fact is one line a screen shows: no tab or other control kept
		// (the facts JSON keeps its own layout; its strings are checked
		// where they are read).
		if key == "facts" {
			val = text.Sanitize(val)
		} else {
			val = text.Printable(val, 0)
		}
		seen = true
		switch {
		case key == "probe", key == "clock":
		case key == "end":
			f.Complete = true
		case key == "hostname":
			f.Hostname = val
		case key == "user":
			f.User = val
		case key == "uid":
			f.UID, _ = strconv.Atoi(val)
		case key == "kernel":
			f.Kernel = val
		case key == "os.id":
			f.OSID = val
		case key == "os.version":
			f.OSVersion = val
		case key == "memlock":
			f.Memlock = val
		case key == "kfd":
			f.KFD = val
		case key == "systemd":
			f.Systemd = val
		case key == "linger":
			f.Linger = val
		case key == "removeipc":
			f.RemoveIPC = strings.ToLower(val)
		case key == "killuserprocesses":
			f.KillUserProcesses = strings.ToLower(val)
		case key == "gfx_target_version":
			if v, err := strconv.Atoi(val); err == nil && v > 0 && v < 1000000 {
				f.GFX = append(f.GFX, GFXName(v))
			}
		case key == "ipaddr":
			ipLines = append(ipLines, val)
		case key == "firewalld":
			f.Firewalld = val
		case key == "pins.path":
			f.PinsPath = val
		case key == "pins.sha256":
			f.PinsSHA256 = strings.ToLower(val)
		case key == "pins.error":
			f.PinsError = val
		case key == "image.ref":
			f.ImageRef = val
		case key == "image.digest":
			f.ImageDigest = val
		case key == "self.ip":
			if ip := net.ParseIP(val); ip != nil {
				f.SelfIPs = append(f.SelfIPs, ip)
			}
		case key == "facts":
			var nf NodeFacts
			if err := json.Unmarshal([]byte(val), &nf); err == nil && nf.Version != "" {
				cleanNodeFacts(&nf)
				f.Haloforge = &nf
			} else if len(val) > 0 {
				f.HaloforgeRaw = text.Printable(val, 200)
			}
		case strings.HasPrefix(key, "net."):
			parts := strings.Split(key, ".")
			if len(parts) < 3 {
				continue
			}
			name, field := strings.Join(parts[1:len(parts)-1], "."), parts[len(parts)-1]
			n := f.Net[name]
			switch field {
			case "mtu":
				n.MTU, _ = strconv.Atoi(val)
			case "speed":
				if s, err := strconv.Atoi(val); err == nil && s > 0 {
					n.Speed = s
				}
			case "operstate":
				n.Oper = val
			default:
				continue
			}
			f.Net[name] = n
		case strings.HasPrefix(key, "rdma."):
			parts := strings.Split(key, ".")
			if len(parts) != 4 {
				continue
			}
			id := parts[1] + ":" + parts[2]
			p := rdma[id]
			if p == nil {
				p = &RDMAPort{Device: parts[1], Port: parts[2]}
				rdma[id] = p
			}
			switch parts[3] {
			case "state":
				p.State = val
			case "link_layer":
				p.LinkLayer = val
			}
		case strings.HasPrefix(key, "pkg."):
			f.Packages[strings.TrimPrefix(key, "pkg.")] = val
		case strings.HasPrefix(key, "zone."):
			f.Zones[strings.TrimPrefix(key, "zone.")] = val
		case strings.HasPrefix(key, "bin."):
			f.Bins[strings.TrimPrefix(key, "bin.")] = val
		case strings.HasPrefix(key, "missing."):
			f.Missing = append(f.Missing, strings.TrimPrefix(key, "missing."))
		case strings.HasPrefix(key, "rccl."):
			f.RCCL[strings.TrimPrefix(key, "rccl.")] = val == "gfx1151"
		case strings.HasPrefix(key, "tcp."):
			f.TCP[strings.TrimPrefix(key, "tcp.")] = val
		case strings.HasPrefix(key, "service."):
			if s, ok := parseService(strings.TrimPrefix(key, "service."), text.Sanitize(val)); ok {
				f.Services[s.Name] = s
			}
		}
	}
	if err := sc.Err(); err != nil {
		return f, fmt.Errorf("probe output: %w", err)
	}
	if !seen {
		return f, fmt.Errorf("probe output: no facts")
	}
	f.Addrs = ParseIPAddr(strings.Join(ipLines, "\n"))
	ids := make([]string, 0, len(rdma))
	for id := range rdma {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		f.RDMA = append(f.RDMA, *rdma[id])
	}
	sort.Strings(f.Missing)
	return f, nil
}

// cleanNodeFacts sanitises what the JSON decoding may have produced from
// \u escapes (controls, escape sequences, bidi overrides): the node is not
// trusted to send printable text.
func cleanNodeFacts(nf *NodeFacts) {
	one := func(s string) string { return text.Printable(s, 0) }
	nf.Version, nf.Kernel, nf.MESFirmware = one(nf.Version), one(nf.Kernel), one(nf.MESFirmware)
	nf.Pins.Path, nf.Pins.SHA256, nf.Pins.Error = one(nf.Pins.Path), one(nf.Pins.SHA256), one(nf.Pins.Error)
	for i := range nf.GFX {
		nf.GFX[i] = one(nf.GFX[i])
	}
	if len(nf.Checks) > 200 {
		nf.Checks = nf.Checks[:200]
	}
	for i := range nf.Checks {
		c := &nf.Checks[i]
		c.ID, c.Summary, c.Detail = detect.CheckID(one(string(c.ID))), one(c.Summary), one(c.Detail)
		c.Status = detect.Status(one(string(c.Status)))
		c.Fix = text.Sanitize(strings.Join(strings.FieldsFunc(c.Fix, func(r rune) bool { return r == '\n' }), "\n"))
	}
}

// GFXName turns KFD's gfx_target_version into an LLVM target: major in
// decimal, minor and stepping in hex (110501 → gfx1151, 90010 → gfx90a).
func GFXName(v int) string {
	return fmt.Sprintf("gfx%d%x%x", v/10000, (v/100)%100, v%100)
}

// parseService reads "running pid=12 code=- procs=12 13".
func parseService(name, val string) (Service, bool) {
	if !reName.MatchString(name) {
		return Service{}, false
	}
	s := Service{Name: name}
	f := strings.Fields(val)
	if len(f) == 0 {
		return s, false
	}
	s.State = f[0]
	inProcs := false
	for _, w := range f[1:] {
		switch {
		case strings.HasPrefix(w, "pid="):
			if pid, err := strconv.Atoi(strings.TrimPrefix(w, "pid=")); err == nil && pid > 0 {
				s.PID = pid
			}
			inProcs = false
		case strings.HasPrefix(w, "code="):
			if c := strings.TrimPrefix(w, "code="); c != "-" {
				s.Code = c
			}
			inProcs = false
		case strings.HasPrefix(w, "procs="):
			inProcs = true
			w = strings.TrimPrefix(w, "procs=")
			fallthrough
		case inProcs:
			if p, err := strconv.Atoi(w); err == nil && p > 0 {
				s.Procs = append(s.Procs, p)
			}
		}
	}
	return s, true
}

// ParseStatus reads `node.sh status`.
func ParseStatus(out string) map[string]Service {
	m := map[string]Service{}
	for _, line := range strings.Split(out, "\n") {
		key, val, ok := strings.Cut(line, "=")
		if !ok || !strings.HasPrefix(key, "service.") {
			continue
		}
		if s, ok := parseService(strings.TrimPrefix(key, "service."), text.Sanitize(val)); ok {
			m[s.Name] = s
		}
	}
	return m
}

// InterfaceFor is the node's cluster interface: the inventory's, else the
// one holding the node's address.
func (f *Facts) InterfaceFor(n Node) (string, bool) {
	if n.Interface != "" {
		return n.Interface, true
	}
	ips := f.SelfIPs
	if ip := net.ParseIP(n.Address); ip != nil {
		ips = []net.IP{ip}
	}
	name, _, ok := InterfaceOf(f.Addrs, ips...)
	return name, ok
}
