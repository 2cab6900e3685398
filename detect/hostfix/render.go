package hostfix

import (
	"fmt"
	"io"
	"strings"

	"github.com/haloforge/haloforge/internal/text"
)

// WriteText prints the plan for a person: the actions, the file diffs, the
// commands in order and what comes after.
func (p *Plan) WriteText(w io.Writer) error {
	var b strings.Builder
	src := p.Source
	if src == "" {
		src = "this machine"
	}
	fmt.Fprintf(&b, "Host fix plan for %s\n", src)
	if m := p.Machine.appliesTo(); m != "" {
		fmt.Fprintf(&b, "Applies to: %s\n", m)
	}
	fmt.Fprintf(&b, "Bootloader: %s: %s\n", p.Bootloader, p.Boot.Reason)
	if p.Boot.Problem != "" {
		fmt.Fprintf(&b, "  haloforge will not change the kernel command line here: %s\n", p.Boot.Problem)
	}
	if len(p.Actions) == 0 {
		b.WriteString("\nNothing to change: no warning or failing check has a host fix.\n")
	} else {
		b.WriteString("\nActions:\n")
	}
	for i, a := range p.Actions {
		tag := a.Kind
		if a.Advice {
			tag += ", you do it"
		}
		fmt.Fprintf(&b, "%2d. [%s] %s  · check %s\n", i+1, tag, a.Change, a.Check.Label())
		if a.Command != "" {
			for _, l := range strings.Split(a.Command, "\n") {
				fmt.Fprintf(&b, "      %s\n", l)
			}
		}
	}
	if len(p.Files) > 0 {
		b.WriteString("\nFile changes:\n")
		for _, f := range p.Files {
			for _, l := range strings.SplitAfter(strings.TrimRight(f.Diff, "\n"), "\n") {
				b.WriteString("  " + l)
			}
			b.WriteString("\n")
		}
	}
	if len(p.Script) > 0 {
		b.WriteString("\nCommands, in order (doctor --apply runs the ones it can for you; to do it by hand, copy them):\n")
		for _, l := range p.Script {
			b.WriteString("  " + l + "\n")
		}
	}
	if len(p.Skipped) > 0 {
		b.WriteString("\nNot a host change (see haloforge doctor -v):\n")
		for _, s := range p.Skipped {
			fmt.Fprintf(&b, "  %s, %s: %s\n", s.Check.Label(), s.Status, s.Reason)
		}
	}
	for _, n := range p.Notes {
		b.WriteString("Note: " + n + "\n")
	}
	here, there := p.FollowUp()
	switch {
	case len(p.Actions) == 0:
	case p.Machine.Target == TargetBundle && p.Reboot:
		b.WriteString("\nA reboot is needed for the kernel changes. On the machine the bundle was collected on, make its own plan, apply it, reboot, then check:\n")
	case p.Machine.Target == TargetBundle:
		b.WriteString("\nOn the machine the bundle was collected on, make its own plan, apply it, then check:\n")
	case p.Machine.Target == TargetRoot && p.Reboot:
		b.WriteString("\nA reboot is needed for the kernel changes. Apply them to the system under " + p.Machine.Root + ":\n")
	case p.Machine.Target == TargetRoot:
		b.WriteString("\nApply them to the system under " + p.Machine.Root + ":\n")
	case p.Reboot:
		b.WriteString("\nA reboot is needed for the kernel changes. Apply, reboot, then check:\n")
	default:
		b.WriteString("\nApply, then check:\n")
	}
	if len(p.Actions) > 0 {
		for _, c := range here {
			b.WriteString("  " + c + "\n")
		}
		if len(there) > 0 {
			b.WriteString("Then boot that system and check it there (the plan file goes with it):\n")
			for _, c := range there {
				b.WriteString("  " + c + "\n")
			}
		}
	}
	_, err := io.WriteString(w, text.Sanitize(b.String()))
	return err
}

// FollowUp are the commands that make, apply and check this plan for real,
// each as typed here, with the flags it was made with: a plan for the
// system under a directory is made and applied with --root and --bundle
// (and --state-dir, where the backups go), and checked on that system once
// it boots (there: the live kernel and dmesg are that system's, never this
// machine's). A plan made from a bundle alone is made again on its
// machine, so its commands carry no flag.
func (p *Plan) FollowUp() (here, there []string) {
	switch p.Machine.Target {
	case TargetBundle:
		return []string{"haloforge doctor --plan --json > plan.json", "haloforge doctor --apply plan.json", "haloforge doctor --verify"}, nil
	case TargetRoot:
		root, bundle := p.Machine.Root, ""
		if p.bundle != "" {
			bundle = " --bundle " + shellQuote(p.bundle)
		}
		return []string{
			"haloforge doctor --plan --json" + bundle + " --root " + shellQuote(root) + " > plan.json",
			"haloforge doctor --apply plan.json --root " + shellQuote(root) + p.stateFlag(),
		}, []string{"haloforge doctor --verify plan.json"}
	}
	return []string{
		"haloforge doctor --plan --json > plan.json",
		"haloforge doctor --apply plan.json" + p.stateFlag(),
		"haloforge doctor --verify" + p.stateFlag(),
	}, nil
}

// stateFlag is --state-dir as the plan's maker gave it: --apply keeps its
// backups there and --verify reads the last applied plan from there.
func (p *Plan) stateFlag() string {
	if p.stateDir == "" {
		return ""
	}
	return " --state-dir " + shellQuote(p.stateDir)
}
