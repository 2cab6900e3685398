package hostfix

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"github.com/haloforge/haloforge/detect"
)

// Action kinds, as doctor --plan --json names them; the user's own steps
// (packages, firmware) are detect's step kinds.
const (
	KindKernelArg = "kernel-arg"
	KindModprobe  = "modprobe"
	KindGroup     = "group"
	KindPackage   = string(detect.StepPackage)
	KindFirmware  = string(detect.StepFirmware)
)

// PlanVersion is the plan file format; --apply refuses any other.
const PlanVersion = 1

// Plan is what `doctor --plan` prints and `doctor --apply` reads: the host
// changes that make the warning and failing checks pass, how this machine's
// bootloader takes them, and what --verify checks after the reboot.
type Plan struct {
	Version    int        `json:"version"`
	CreatedBy  string     `json:"created_by"`
	Source     string     `json:"source"` // "this machine", a bundle path, or a root directory
	Bootloader string     `json:"bootloader"`
	Boot       Boot       `json:"boot"`
	Reboot     bool       `json:"reboot"`
	Actions    []Action   `json:"actions"`
	Initramfs  [][]string `json:"initramfs,omitempty"` // rebuilds the initramfs after modprobe.d edits
	Script     []string   `json:"script"`              // every command, in order, to do it by hand
	Files      []FileDiff `json:"files"`               // the file edits, as unified diffs
	Target     Target     `json:"target"`              // what --verify expects after the reboot
	Skipped    []Skipped  `json:"skipped,omitempty"`   // warnings with no host change to make
	Notes      []string   `json:"notes,omitempty"`
	// Machine is the system the plan was made for: --apply refuses it
	// on any other, or once the facts it was made from have changed.
	Machine Machine `json:"machine"`

	bundle   string // the --bundle file the facts came from, for the follow-up commands
	stateDir string // the --state-dir given, for the follow-up commands
}

// Action is one host change (or, with Advice, one thing for the user to do:
// --apply never runs advice). Arg, Modprobe and Group hold the change itself;
// --apply builds its commands from them, never from Command.
type Action struct {
	ID       string         `json:"id"`
	Kind     string         `json:"kind"`
	Check    detect.CheckID `json:"check"`
	Change   string         `json:"change"`
	Command  string         `json:"command"`
	Advice   bool           `json:"advice,omitempty"`
	Arg      *KernelArg     `json:"arg,omitempty"`
	Modprobe *ModprobeEdit  `json:"modprobe,omitempty"`
	Group    *GroupChange   `json:"group,omitempty"`
}

// GroupChange adds a user to groups.
type GroupChange struct {
	User   string   `json:"user"`
	Groups []string `json:"groups"`
}

// FileDiff is one file's planned edit.
type FileDiff struct {
	Path string `json:"path"`
	Diff string `json:"diff"`
}

// Target is the state the plan leads to, for --verify.
type Target struct {
	Args       []KernelArg `json:"args"`                  // on /proc/cmdline after the reboot (set) or not (remove)
	TTMModule  string      `json:"ttm_module,omitempty"`  // ttm or amdttm
	PagesLimit int64       `json:"pages_limit,omitempty"` // /sys/module/<ttm>/parameters/pages_limit
	GTTBytes   int64       `json:"gtt_bytes,omitempty"`   // mem_info_gtt_total
	User       string      `json:"user,omitempty"`
	Groups     []string    `json:"groups,omitempty"`
}

// Skipped is a warning or failure the plan has no host change for.
type Skipped struct {
	Check  detect.CheckID `json:"check"`
	Status string         `json:"status"`
	Reason string         `json:"reason"`
}

// Options tune a plan.
type Options struct {
	GTTGiB  int64  // GTT to give the GPU, in GiB; 0: the gtt-size check's figure
	User    string // whose groups to fix; "": the user the facts were collected as
	Source  string // where the facts come from, for the plan's header
	Version string // haloforge's version
	// BundleFacts says the hardware facts come from a bundle (--bundle
	// with --root): the plan is then never applied to the live machine.
	BundleFacts bool
	// Bundle is the --bundle file, repeated in the follow-up commands the
	// plan prints ("" when the facts are this machine's).
	Bundle string
	// StateDir is the --state-dir the user gave ("" for the default),
	// repeated in the follow-up --apply and --verify.
	StateDir string
}

var userRe = regexp.MustCompile(`^[a-z_][a-z0-9_.-]{0,31}\$?$`)

// want is one kernel argument a check's remedy asks for.
type want struct {
	arg   KernelArg
	check detect.CheckID
	why   string
}

// Build turns an analysed report and the boot evidence into a plan: the
// remedies of the warning and failing checks, placed for this machine's
// bootloader and distribution. It reads only its inputs: the same report
// and evidence give the same plan.
func Build(r *detect.Report, e *Evidence, o Options) (*Plan, error) {
	if e == nil {
		e = &Evidence{}
	}
	p := &Plan{Version: PlanVersion, CreatedBy: "haloforge " + o.Version, Source: o.Source, Actions: []Action{}, Script: []string{}, Files: []FileDiff{}}
	p.Boot = DetectBoot(e)
	p.Machine = machineOf(e, o.BundleFacts)
	p.bundle, p.stateDir = o.Bundle, o.StateDir
	p.Bootloader = p.Boot.Name
	// Without an AMD GPU there is nothing for haloforge to set up: no
	// kernel argument, group or package on such a host serves it.
	if status(r, detect.CheckGPU) == detect.StatusFail {
		skippedChecks(p, r, nil, "no AMD GPU here, so nothing for haloforge to set up")
		return p, nil
	}
	wants, err := wantedArgs(r, o, p)
	if err != nil {
		return nil, err
	}
	kb := newKernelArgBuilder(p, e, r)
	wants = append(wants, kb.pendingRemovals(wants)...)
	for _, w := range wants {
		p.Target.Args = append(p.Target.Args, w.arg)
		kb.add(w)
	}
	kb.finish()
	modprobeActions(p, e, wants)
	groupAction(p, r, e, o)
	adviceActions(p, r, e)
	skippedChecks(p, r, wants, "")
	p.Reboot = p.Reboot || slices.ContainsFunc(p.Actions, func(a Action) bool {
		return !a.Advice && (a.Kind == KindKernelArg || a.Kind == KindModprobe)
	})
	return p, nil
}

func status(r *detect.Report, id detect.CheckID) detect.Status {
	if c, ok := r.Check(id); ok {
		return c.Status
	}
	return ""
}

// remedies are the warning and failing checks whose remedy the plan
// places, in doctor's order.
func remedies(r *detect.Report) []detect.Check {
	var out []detect.Check
	for _, c := range r.Checks {
		if c.Flagged() && c.Remedy.Changes() && c.Remedy.Manual == "" {
			out = append(out, c)
		}
	}
	return out
}

// wantedArgs are the kernel arguments the checks' remedies ask for (--gtt-gib
// first), each key once, and what --verify reads back for them.
func wantedArgs(r *detect.Report, o Options, p *Plan) ([]want, error) {
	var out []want
	seen := map[string]bool{}
	var gttBytes int64
	add := func(c detect.CheckID, m *detect.Remedy, args []detect.ArgChange) {
		set := map[string]bool{}
		for _, a := range args {
			if a.Arg.Op == OpSet {
				set[a.Arg.Key] = true
			}
		}
		for _, a := range args {
			arg := a.Arg
			if arg.Op == OpRemove {
				if set[arg.Key] {
					continue // a new value replaces the old one
				}
				arg.Value = safeOld(arg.Value)
			}
			if seen[arg.Key] {
				continue
			}
			if err := ValidateArg(arg); err != nil {
				p.Notes = append(p.Notes, fmt.Sprintf("%s asks for %s, which haloforge does not place (%v): set it by hand", c.Label(), printable(arg.String()), err))
				continue
			}
			seen[arg.Key] = true
			out = append(out, want{arg, c, a.Why})
		}
		if m != nil && m.GTTBytes > 0 && gttBytes == 0 {
			gttBytes = m.GTTBytes
		}
	}
	if o.GTTGiB > 0 {
		var ram int64
		if r.Memory.TotalBytes != nil {
			ram = *r.Memory.TotalBytes
		}
		if ram > 0 && o.GTTGiB*(1<<30) > ram-2*(1<<30) {
			return nil, fmt.Errorf("--gtt-gib %d leaves the OS less than 2 GiB of the %.1f GiB RAM", o.GTTGiB, float64(ram)/(1<<30))
		}
		if o.GTTGiB > maxPages/detect.PagesPerGiB {
			return nil, fmt.Errorf("--gtt-gib %d is more than any machine has", o.GTTGiB)
		}
		pages := o.GTTGiB * detect.PagesPerGiB
		add(detect.CheckGTTSize, &detect.Remedy{GTTBytes: pages * 4096}, detect.GTTArgs(r, pages, fmt.Sprintf("GTT %d GiB, as asked (--gtt-gib)", o.GTTGiB)))
	}
	for _, c := range remedies(r) {
		add(c.ID, c.Remedy, c.Remedy.Args)
	}
	// What --verify reads back: the TTM module's limit the plan sets (amdttm
	// when amdgpu-dkms brings it), and the GTT it gives the GPU.
	for _, mod := range []string{"amdttm", "ttm"} {
		for _, w := range out {
			if w.arg.Op == OpSet && w.arg.Key == mod+".pages_limit" && p.Target.PagesLimit == 0 {
				n, _ := strconv.ParseInt(w.arg.Value, 10, 64)
				p.Target.TTMModule, p.Target.PagesLimit = mod, n
			}
		}
	}
	if p.Target.PagesLimit > 0 && gttBytes > 0 {
		p.Target.GTTBytes = gttBytes
	}
	return out, nil
}

// safeOld keeps a value seen on a command line only when it is safe to
// print in a command; otherwise the key alone is used.
func safeOld(v string) string {
	if oldValueRe.MatchString(v) {
		return v
	}
	return ""
}

// actionID names an action stably: the same plan gives the same IDs.
func argActionID(a KernelArg) string { return a.Op + ":" + a.Key }

func argChange(w want) string {
	switch w.arg.Op {
	case OpSet:
		return "set " + w.arg.String() + " (" + w.why + ")"
	}
	return "remove " + w.arg.String() + " (" + w.why + ")"
}

// HaloforgeApplies says whether --apply makes this change itself: not
// advice, and not a kernel argument on a bootloader haloforge does not edit
// (those are printed for the user to set by hand).
func (p *Plan) HaloforgeApplies(a Action) bool {
	return !a.Advice && (a.Kind != KindKernelArg || p.Boot.Editable())
}

// Counts are how many of the plan's changes haloforge applies and how many
// are left to the user (by hand: kernel arguments it cannot place, advice).
func (p *Plan) Counts() (applied, byHand int) {
	for _, a := range p.Actions {
		if p.HaloforgeApplies(a) {
			applied++
		} else {
			byHand++
		}
	}
	return applied, byHand
}
