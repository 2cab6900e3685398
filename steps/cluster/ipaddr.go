package cluster

import (
	"net"
	"strconv"
	"strings"
)

// IfAddr is one address of `ip -o addr show`.
type IfAddr struct {
	Index  int
	Name   string // the interface, without an @ifN peer suffix
	Family string // inet or inet6
	IP     net.IP
	Prefix int
	Scope  string // host, link, global
}

// ParseIPAddr reads `ip -o addr show` output: one address a line,
// "N: NAME    inet|inet6 ADDR/PREFIX [brd B] scope S [flags…] [label]\ …".
// Lines that are not addresses are skipped; a line longer than 4 KiB is too.
func ParseIPAddr(out string) []IfAddr {
	var addrs []IfAddr
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 4096 {
			continue
		}
		if i := strings.IndexByte(line, '\\'); i >= 0 {
			line = line[:i] // the continuation: lifetimes
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		idx, err := strconv.Atoi(strings.TrimSuffix(f[0], ":"))
		if err != nil || idx < 0 {
			continue
		}
		if f[2] != "inet" && f[2] != "inet6" {
			continue
		}
		name := f[1]
		if i := strings.IndexByte(name, '@'); i > 0 {
			name = name[:i]
		}
		if name == "" || !reIfName.MatchString(name) {
			continue
		}
		ip, ipnet, err := net.ParseCIDR(f[3])
		if err != nil {
			ip = net.ParseIP(f[3])
			if ip == nil {
				continue
			}
		}
		a := IfAddr{Index: idx, Name: name, Family: f[2], IP: ip}
		if ipnet != nil {
			a.Prefix, _ = ipnet.Mask.Size()
		}
		for i := 4; i+1 < len(f); i++ {
			if f[i] == "scope" {
				a.Scope = f[i+1]
				break
			}
		}
		addrs = append(addrs, a)
	}
	return addrs
}

// InterfaceOf returns the interface holding one of the IPs, and that IP.
func InterfaceOf(addrs []IfAddr, ips ...net.IP) (string, net.IP, bool) {
	for _, ip := range ips {
		for _, a := range addrs {
			if a.IP.Equal(ip) {
				return a.Name, a.IP, true
			}
		}
	}
	return "", nil, false
}

// GlobalAddrs are the addresses a peer could reach: not loopback, not link-local.
func GlobalAddrs(addrs []IfAddr) []IfAddr {
	var out []IfAddr
	for _, a := range addrs {
		if a.IP.IsLoopback() || a.IP.IsLinkLocalUnicast() || a.Scope == "host" || a.Scope == "link" {
			continue
		}
		out = append(out, a)
	}
	return out
}
