package hostfix

import (
	"errors"
	"strings"
)

// errUnbalancedQuote: a command line whose quotes do not pair up cannot be
// edited safely (an appended parameter would land inside the quotes).
var errUnbalancedQuote = errors.New(kernelCmdlinePath + " has an unbalanced quote: edit it by hand")

// check refuses a command line haloforge cannot edit safely.
func (k *kernelCmdline) check() error {
	if strings.Count(k.text, `"`)%2 == 1 {
		return errUnbalancedQuote
	}
	return nil
}

// kernelCmdlinePath is where kernel-install (systemd-boot and other BLS
// setups) reads the command line for new boot entries.
const kernelCmdlinePath = "/etc/kernel/cmdline"

// kernelCmdline is /etc/kernel/cmdline: parameters separated by blanks,
// over one or more lines (kernel-install joins them with spaces).
type kernelCmdline struct {
	text    string
	existed bool
}

// newKernelCmdline starts from the file, or, when there is none, from what
// kernel-install falls back to: /proc/cmdline without BOOT_IMAGE= and initrd=.
func newKernelCmdline(data []byte, existed bool, procCmdline string) *kernelCmdline {
	if existed {
		return &kernelCmdline{text: string(data), existed: true}
	}
	var keep []string
	for _, t := range scanTokens(strings.TrimSpace(procCmdline), false) {
		if t.key == "BOOT_IMAGE" || t.key == "initrd" {
			continue
		}
		keep = append(keep, procCmdline[t.start:t.end])
	}
	return &kernelCmdline{text: strings.Join(keep, " ") + "\n"}
}

// apply makes one argument true and returns the changed lines.
func (k *kernelCmdline) apply(a KernelArg) []lineChange {
	if satisfied(params(k.text, false), a) {
		return nil
	}
	before := k.text
	k.text = removeKey(k.text, a.Key, false)
	if a.Op == OpSet {
		k.text = appendArg(k.text, a.String())
	}
	return diffLines(kernelCmdlinePath, before, k.text)
}

// diffLines pairs the lines of two versions of a file whose line count is
// the same (parameter edits never add or remove lines).
func diffLines(path, before, after string) []lineChange {
	b, a := splitLinesKeep(before), splitLinesKeep(after)
	if len(b) != len(a) {
		return []lineChange{{path: path, before: before, after: after}}
	}
	var out []lineChange
	for i := range b {
		if b[i] != a[i] {
			out = append(out, lineChange{path: path, before: b[i], after: a[i]})
		}
	}
	return out
}
