package cluster

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/haloforge/haloforge/internal/text"
)

// NetTransport is what RCCL (NCCL) says it uses between nodes, read from
// its NCCL_DEBUG=INFO lines: "NET/IB : Using [0]mlx5_0:1/RoCE", "Using
// network IB", "NET/Socket : Using [0]eth0:10.0.0.2<0>", "Using network
// Socket", and the per-channel "… via NET/IB/0/GDRDMA" or "via NET/Socket/0".
type NetTransport struct {
	Kind    string // "IB" or "Socket"; "" while unknown
	Devices string // what NET/IB or NET/Socket said it uses
	Line    string // the line that decided it
	// NoIB is set when NCCL said it found no InfiniBand/RoCE device.
	NoIB bool
}

var (
	reUsingNetwork = regexp.MustCompile(`NCCL INFO Using network (IB|Socket)\b`)
	reNetUsing     = regexp.MustCompile(`NCCL INFO NET/(IB|Socket) ?: Using (.*)$`)
	reViaNet       = regexp.MustCompile(` via NET/(IB|Socket)\b`)
)

// Feed takes one log line; it reports whether the verdict changed.
func (t *NetTransport) Feed(line string) bool {
	if !strings.Contains(line, "NET") && !strings.Contains(line, "network") {
		return false
	}
	line = text.Sanitize(line) // what it keeps is printed
	if strings.Contains(line, "NET/IB : No device found") || strings.Contains(line, "NET/IB : No device found.") {
		t.NoIB = true
	}
	if m := reUsingNetwork.FindStringSubmatch(line); m != nil {
		changed := t.Kind != m[1]
		t.Kind, t.Line = m[1], text.Printable(line, 240)
		return changed
	}
	if m := reNetUsing.FindStringSubmatch(line); m != nil {
		if t.Devices == "" || t.Kind == "" || t.Kind == m[1] {
			t.Devices = text.Printable(m[2], 160)
		}
		if t.Kind == "" {
			t.Kind, t.Line = m[1], text.Printable(line, 240)
			return true
		}
		return false
	}
	if m := reViaNet.FindStringSubmatch(line); m != nil && t.Kind == "" {
		t.Kind, t.Line = m[1], text.Printable(line, 240)
		return true
	}
	return false
}

// Describe says what the transport means for the user.
func (t NetTransport) Describe() string {
	switch t.Kind {
	case "IB":
		s := "RCCL uses NET/IB: RDMA between the nodes"
		if t.Devices != "" {
			s += " (" + t.Devices + ")"
		}
		return s
	case "Socket":
		s := "RCCL uses NET/Socket: plain TCP between the nodes"
		if t.Devices != "" {
			s += " (" + t.Devices + ")"
		}
		if t.NoIB {
			s += "; it found no RDMA device"
		}
		return s + " — slow for tensor parallel; with an RDMA NIC, check rdma link, memlock and transport = \"roce\""
	}
	return "RCCL has not said which transport it uses (NCCL_DEBUG=INFO lines missing)"
}

// RayNodes counts the active nodes `ray status` lists ("Active:" then one
// " 1 node_<id>" line per node, up to "Pending:").
func RayNodes(status string) int {
	active, n := false, 0
	for _, line := range strings.Split(status, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "Active:"):
			active = true
		case strings.HasPrefix(t, "Pending:"), strings.HasPrefix(t, "Recent failures:"), strings.HasPrefix(t, "Resources"):
			active = false
		case active:
			f := strings.Fields(t)
			if len(f) == 2 && strings.HasPrefix(f[1], "node_") {
				if c, err := strconv.Atoi(f[0]); err == nil && c > 0 && c < 1000 {
					n += c
				}
			}
		}
	}
	return n
}
