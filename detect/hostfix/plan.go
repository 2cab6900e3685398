package hostfix

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"github.com/haloforge/haloforge/detect"
)

// Action kinds of the plan file (docs/json.md).
const (
	KindKernelArg = "kernel-arg"
	KindModprobe  = "modprobe"
	KindGroup     = "group"
	KindPackage   = "package"
	KindFirmware  = "firmware"
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

	bundle string // the --bundle file the facts came from, for the follow-up commands
}

// Action is one host change (or, with Advice, one thing for the user to do:
// --apply never runs advice). Arg, Modprobe and Group hold the change itself;
// --apply builds its commands from them, never from Command.
type Action struct {
	ID       string        `json:"id"`
	Kind     string        `json:"kind"`
	Check    string        `json:"check"`
	Change   string        `json:"change"`
	Command  string        `json:"command"`
	Advice   bool          `json:"advice,omitempty"`
	Arg      *KernelArg    `json:"arg,omitempty"`
	Modprobe *ModprobeEdit `json:"modprobe,omitempty"`
	Group    *GroupChange  `json:"group,omitempty"`
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
	Check  string `json:"check"`
	Status string `json:"status"`
	Reason string `json:"reason"`
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
}

// lockupTimeoutMS is the GPU watchdog for long prompts: LLMKube's 20 s,
// twice the default; -1 (no watchdog, as fak sets) would turn a real hang
// into a frozen machine.
const lockupTimeoutMS = "20000"

var userRe = regexp.MustCompile(`^[a-z_][a-z0-9_.-]{0,31}\$?$`)

// want is one kernel argument the checks ask for.
type want struct {
	arg   KernelArg
	check string
	why   string
}

// Build turns an analysed report and the boot evidence into a plan. It
// reads only its inputs: the same report and evidence give the same plan.
func Build(r *detect.Report, e *Evidence, o Options) (*Plan, error) {
	if e == nil {
		e = &Evidence{}
	}
	p := &Plan{Version: PlanVersion, CreatedBy: "haloforge " + o.Version, Source: o.Source, Actions: []Action{}, Script: []string{}, Files: []FileDiff{}}
	p.Boot = DetectBoot(e)
	p.Machine = machineOf(e, o.BundleFacts)
	p.bundle = o.Bundle
	p.Bootloader = p.Boot.Name
	// Without an AMD GPU there is nothing for haloforge to set up: no
	// kernel argument, group or package on such a host serves it.
	if status(r, "gpu") == detect.StatusFail {
		skippedChecks(p, r, nil)
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
	skippedChecks(p, r, wants)
	p.Reboot = p.Reboot || slices.ContainsFunc(p.Actions, func(a Action) bool {
		return !a.Advice && (a.Kind == KindKernelArg || a.Kind == KindModprobe)
	})
	return p, nil
}

func status(r *detect.Report, id string) detect.Status {
	if c, ok := r.Check(id); ok {
		return c.Status
	}
	return ""
}

func flagged(r *detect.Report, id string) bool {
	s := status(r, id)
	return s == detect.StatusWarn || s == detect.StatusFail
}

// wantedArgs are the kernel arguments the checks ask for, in a stable order.
func wantedArgs(r *detect.Report, o Options, p *Plan) ([]want, error) {
	var out []want
	seen := map[string]bool{}
	add := func(w want) {
		if !seen[w.arg.Key] {
			seen[w.arg.Key] = true
			out = append(out, w)
		}
	}
	cmd := r.Kernel.Cmdline
	var ram int64
	if r.Memory.TotalBytes != nil {
		ram = *r.Memory.TotalBytes
	}
	var pages int64
	pagesCheck, pagesWhy := "gtt-size", ""
	if o.GTTGiB > 0 {
		if ram > 0 && o.GTTGiB*(1<<30) > ram-2*(1<<30) {
			return nil, fmt.Errorf("--gtt-gib %d leaves the OS less than 2 GiB of the %.1f GiB RAM", o.GTTGiB, float64(ram)/(1<<30))
		}
		if o.GTTGiB > maxPages/detect.PagesPerGiB {
			return nil, fmt.Errorf("--gtt-gib %d is more than any machine has", o.GTTGiB)
		}
		pages = o.GTTGiB * detect.PagesPerGiB
		pagesWhy = fmt.Sprintf("GTT %d GiB, as asked (--gtt-gib)", o.GTTGiB)
	}
	if pages == 0 && flagged(r, "gtt-size") && ram > 0 {
		t := detect.PlanGTT(ram)
		pages = t.Pages
		pagesWhy = fmt.Sprintf("GTT %d GiB = RAM %.1f GiB - %d GiB kept for the OS; %d x 262144 pages of 4 KiB", t.GiB, float64(ram)/(1<<30), t.ReserveGiB, t.GiB)
	}
	var removeGTT []want
	for _, k := range []string{"amdgpu.gttsize", "amdgpu.gtt_size"} {
		if v, ok := cmd[k]; ok {
			why := "deprecated: GTT follows ttm.pages_limit"
			if k == "amdgpu.gtt_size" {
				why = "not a parameter: the kernel ignores it (\"unknown parameter 'gtt_size' ignored\")"
			}
			removeGTT = append(removeGTT, want{KernelArg{Op: OpRemove, Key: k, Value: safeOld(v)}, "gttsize-deprecated", why})
		}
	}
	if pages == 0 && flagged(r, "gttsize-deprecated") {
		pagesCheck = "gttsize-deprecated"
		_, hasTTM := cmd["ttm.pages_limit"]
		switch {
		case ram > 0:
			t := detect.PlanGTT(ram)
			pages = t.Pages
			pagesWhy = fmt.Sprintf("replaces amdgpu.gttsize: GTT %d GiB = RAM %.1f GiB - %d GiB kept for the OS", t.GiB, float64(ram)/(1<<30), t.ReserveGiB)
		case !hasTTM:
			if mib, err := strconv.ParseInt(cmd["amdgpu.gttsize"], 10, 64); err == nil && mib > 0 && mib*256 <= maxPages {
				pages = mib * 256
				pagesWhy = fmt.Sprintf("keeps the %d MiB that amdgpu.gttsize asked for, the supported way (RAM unknown)", mib)
			}
		}
	}
	if pages > 0 {
		n := strconv.FormatInt(pages, 10)
		keys := []string{"ttm.pages_limit", "ttm.page_pool_size"}
		if r.UsesAMDTTM() {
			keys = append(keys, "amdttm.pages_limit", "amdttm.page_pool_size")
		}
		for _, k := range keys {
			add(want{KernelArg{Op: OpSet, Key: k, Value: n}, pagesCheck, pagesWhy})
		}
		p.Target.PagesLimit = pages
		p.Target.GTTBytes = pages * 4096
		p.Target.TTMModule = "ttm"
		if r.UsesAMDTTM() {
			p.Target.TTMModule = "amdttm"
		}
	}
	for _, w := range removeGTT {
		add(w)
	}
	if flagged(r, "ttm-module") && pages == 0 {
		if v, ok := cmd["ttm.pages_limit"]; ok && pagesRe.MatchString(v) && checkPages(v) == nil {
			for _, k := range []string{"amdttm.pages_limit", "amdttm.page_pool_size"} {
				add(want{KernelArg{Op: OpSet, Key: k, Value: v}, "ttm-module", "amdgpu-dkms reads amdttm, which ignores ttm.pages_limit"})
			}
			n, _ := strconv.ParseInt(v, 10, 64)
			p.Target.TTMModule, p.Target.PagesLimit = "amdttm", n
		}
	}
	if flagged(r, "cwsr") {
		add(want{KernelArg{Op: OpSet, Key: "amdgpu.cwsr_enable", Value: "0"}, "cwsr",
			"stop-gap for kernels without the gfx1151 CWSR fix; drop it on kernel >= 7.0 with ROCm >= 7.2.1"})
	}
	if flagged(r, "lockup-timeout") {
		add(want{KernelArg{Op: OpSet, Key: "amdgpu.lockup_timeout", Value: lockupTimeoutMS}, "lockup-timeout",
			"long prompts outlast the 10 s GPU watchdog (\"ring gfx timeout\"); 20 s as LLMKube uses"})
	}
	if _, ok := cmd["nomodeset"]; ok && len(r.GPUs) > 0 {
		add(want{KernelArg{Op: OpRemove, Key: "nomodeset"}, "kfd-access", "nomodeset keeps amdgpu from starting, so ROCm has no GPU"})
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
