package hostfix

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Where a plan's facts come from, as Machine.Target.
const (
	TargetHost   = "host"   // this machine, read live from /
	TargetRoot   = "root"   // the system installed under a directory (--root)
	TargetBundle = "bundle" // someone's bundle: a record, never applied
)

// ErrWrongMachine is a plan --apply refuses: made for another machine or
// from a bundle, or from facts that have changed since. Nothing is applied.
var ErrWrongMachine = errors.New("plan is not for this system as it is now")

// ErrStalePlan is the part of ErrWrongMachine that is harmless once the
// system already matches the plan: it was made on this system, but its
// facts have changed since (after its own apply, for one).
var ErrStalePlan = errors.New("stale")

// Machine is the system a plan was made for, recorded in the plan so that
// --apply refuses it anywhere else: which kind of system, the hash of its
// /etc/machine-id (never the ID itself: plans are shared in bug reports),
// its hostname for the messages, and a fingerprint of each group of facts
// the plan was computed from.
type Machine struct {
	Target   string            `json:"target"`
	Root     string            `json:"root,omitempty"`       // TargetRoot: the directory
	ID       string            `json:"machine_id,omitempty"` // sha256 of /etc/machine-id, 16 bytes hex
	Hostname string            `json:"hostname,omitempty"`
	Facts    map[string]string `json:"facts"` // fact group -> sha256 (hex, 16 bytes)
}

// The fact groups a plan depends on, as Machine.Facts keys, in the order
// messages name them.
var factGroups = []string{"boot files", "bootloader tools", "installed kernels", "groups", "kernel command line"}

var (
	machineIDRe = regexp.MustCompile(`^[0-9a-f]{32}$`)
	hostnameRe  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$`)
	factHashRe  = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

// identify reads the identity of the system under root: the hash of its
// machine ID ("" when it has none) and its hostname.
func identify(root string) (id, hostname string) {
	r := rootFS{root: root}
	for _, p := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id"} {
		data, err := r.readFile(p, maxEvidenceFile)
		if v := strings.TrimSpace(string(data)); err == nil && machineIDRe.MatchString(v) {
			id = shortHash("haloforge machine-id\x00" + v)
			break
		}
	}
	if data, err := r.readFile("/etc/hostname", maxEvidenceFile); err == nil {
		hostname = strings.TrimSpace(string(data))
	}
	if hostname == "" && root == "/" {
		hostname, _ = os.Hostname()
	}
	if !hostnameRe.MatchString(hostname) {
		hostname = ""
	}
	return id, hostname
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// fingerprint hashes each group of boot facts in e.
func fingerprint(e *Evidence) map[string]string {
	var files, tools, kernels, groups strings.Builder
	// The configuration under /etc only: what the plan edits, readable by
	// any user. Boot entries and grub.cfg are outputs, and on many systems
	// only root reads them (/efi, /boot/grub2): a plan made as the user and
	// applied as root must not look stale for that.
	paths := make([]string, 0, len(e.Files))
	for p := range e.Files {
		if strings.HasPrefix(p, "/etc/") {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	for _, p := range paths {
		fmt.Fprintf(&files, "%s\x00%d\x00%s\x00", p, len(e.Files[p]), e.Files[p])
	}
	for _, m := range sortedKeys(e.Tools) {
		fmt.Fprintf(&tools, "tool %s=%s\x00", m, e.Tools[m])
	}
	for _, m := range sortedKeys(e.Markers) {
		fmt.Fprintf(&tools, "marker %s=%v\x00", m, e.Markers[m])
	}
	for _, k := range e.Kernels {
		fmt.Fprintf(&kernels, "%s=%s\x00", k.Version, k.Image)
	}
	for _, g := range []string{"render", "video"} { // the groups a plan changes
		fmt.Fprintf(&groups, "%s:%s\x00", g, strings.Join(e.Groups[g], ","))
	}
	return map[string]string{
		"boot files":          shortHash(files.String()),
		"bootloader tools":    shortHash(tools.String()),
		"installed kernels":   shortHash(kernels.String()),
		"groups":              shortHash(groups.String()),
		"kernel command line": shortHash(e.ProcCmdline),
	}
}

// machineOf is the Machine a plan made from e records; bundleFacts says
// the hardware facts came from a bundle even though e is a root's.
func machineOf(e *Evidence, bundleFacts bool) Machine {
	m := Machine{Facts: fingerprint(e)}
	switch {
	case e.Root == "" || (bundleFacts && e.Root == "/"):
		m.Target = TargetBundle
	case e.Root == "/":
		m.Target = TargetHost
	default:
		m.Target, m.Root = TargetRoot, e.Root
	}
	if e.Root != "" {
		m.ID, m.Hostname = identify(e.Root)
	}
	return m
}

// validate checks a plan file's machine: known target, hashes and names
// of the expected shape.
func (m Machine) validate() error {
	switch {
	case m.Target == "":
		return nil // refused by CheckMachine, with what to do
	case !slices.Contains([]string{TargetHost, TargetRoot, TargetBundle}, m.Target):
		return fmt.Errorf("machine: unknown target %q", m.Target)
	case m.ID != "" && !factHashRe.MatchString(m.ID):
		return errors.New("machine: machine_id is not a hash")
	case m.Hostname != "" && !hostnameRe.MatchString(m.Hostname):
		return errors.New("machine: hostname is not a host name")
	case len(m.Facts) > len(factGroups):
		return errors.New("machine: too many facts")
	}
	if err := plainText(m.Root, false); err != nil {
		return fmt.Errorf("machine: root: %v", err)
	}
	for k, v := range m.Facts {
		if !slices.Contains(factGroups, k) || !factHashRe.MatchString(v) {
			return fmt.Errorf("machine: fact %q is not one haloforge records", k)
		}
	}
	return nil
}

// CheckMachine refuses a plan that is not for the system under root ("/"
// for this machine) as it is now: made from a bundle, on another machine,
// for a root when applied to the machine (or the other way round), or from
// facts that have changed since (a boot file edited, a kernel installed, a
// reboot with other arguments). The error says what differs and how to
// make a plan that fits; it wraps ErrWrongMachine (exit 2: nothing ran).
func CheckMachine(p *Plan, root string) error {
	m := p.Machine
	again := "make a new plan here: haloforge doctor --plan --json > plan.json"
	if root != "/" {
		again = "make a new plan for it: haloforge doctor --plan --json --root " + shellQuote(root) + " > plan.json"
	}
	where := "this machine"
	if root != "/" {
		where = "the system under " + root
	}
	switch {
	case m.Target == "":
		return fmt.Errorf("%w: the plan records no machine (made by an older haloforge, or by hand), so haloforge cannot tell it was made for %s: %s", ErrWrongMachine, where, again)
	case m.Target == TargetBundle:
		return fmt.Errorf("%w: the plan was made from a bundle (%s): it describes the machine that bundle was collected on, as it was then; haloforge applies only a plan made from the system it changes: %s", ErrWrongMachine, p.Source, again)
	case m.Target == TargetHost && root != "/":
		return fmt.Errorf("%w: the plan was made for the machine itself%s, not for the system under %s: %s", ErrWrongMachine, named(m.Hostname), root, again)
	case m.Target == TargetRoot && root == "/":
		return fmt.Errorf("%w: the plan was made for the system under %s, not for this machine: apply it with --root %s, or %s", ErrWrongMachine, m.Root, m.Root, again)
	}
	ev, err := FromRoot(root)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrWrongMachine, err)
	}
	now := machineOf(ev, false)
	if m.ID != now.ID || (m.ID == "" && m.Hostname != now.Hostname) {
		this := where + " is another"
		if now.Hostname != "" {
			this = where + " is " + now.Hostname
		}
		return fmt.Errorf("%w: the plan was made on another machine%s; %s: %s", ErrWrongMachine, named(m.Hostname), this, again)
	}
	var changed []string
	for _, g := range factGroups {
		if m.Facts[g] != now.Facts[g] {
			changed = append(changed, g)
		}
	}
	if len(changed) > 0 {
		return fmt.Errorf("%w: the plan is %w: %s changed since it was made (%s); %s", ErrWrongMachine, ErrStalePlan, joinAnd(changed), where, again)
	}
	return nil
}

// appliesTo says where --apply takes the plan, for its text form.
func (m Machine) appliesTo() string {
	switch m.Target {
	case TargetHost:
		return "this machine" + named(m.Hostname) + " only, as it is now (--apply refuses it elsewhere, or once its boot files, kernels, groups or command line change)"
	case TargetRoot:
		return "the system under " + m.Root + " only (--apply --root " + m.Root + "), as it is now"
	case TargetBundle:
		return "nothing: it is made from a bundle, a record of another machine; --apply refuses it (run doctor --plan on that machine)"
	}
	return ""
}

// named is " (NAME)" for a known host name.
func named(hostname string) string {
	if hostname == "" {
		return ""
	}
	return " (" + hostname + ")"
}

// joinAnd is "a", "a and b", "a, b and c".
func joinAnd(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
