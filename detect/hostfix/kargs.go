package hostfix

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/haloforge/haloforge/detect"

	"github.com/haloforge/haloforge/internal/text"
)

// Kernel-argument operations and the argument itself are detect's: a
// check's remedy names them, the plan places them.
const (
	OpSet    = detect.OpSet
	OpRemove = detect.OpRemove
)

// KernelArg is one change to the kernel command line. The type is detect's;
// the name stays here for the code that applies and rolls back plans.
type KernelArg = detect.KernelArg

// argRule says which operations a key allows and what its value may be.
// Only these keys can ever reach a bootloader: a plan file is input, and an
// argument outside this list is refused, whatever its value.
type argRule struct {
	set, remove bool
	value       *regexp.Regexp // for OpSet; nil: a flag without value
	check       func(string) error
}

var (
	pagesRe   = regexp.MustCompile(`^[1-9][0-9]{0,9}$`)
	boolRe    = regexp.MustCompile(`^[01]$`)
	timeoutRe = regexp.MustCompile(`^-?[0-9]{1,8}(,-?[0-9]{1,8}){0,3}$`)
	// oldValueRe bounds a value seen on someone's command line (for
	// OpRemove): printable, no shell metacharacters, no quotes, no spaces.
	oldValueRe = regexp.MustCompile(`^[A-Za-z0-9._,:+@%/-]{0,64}$`)
)

// maxPages is 1 TiB of 4 KiB pages: more than any Strix or Gorgon Halo box.
const maxPages = 1 << 28

func checkPages(v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > maxPages {
		return fmt.Errorf("%q is not a page count between 1 and %d", v, maxPages)
	}
	return nil
}

var argRules = map[string]argRule{
	"ttm.pages_limit":       {set: true, remove: true, value: pagesRe, check: checkPages},
	"ttm.page_pool_size":    {set: true, remove: true, value: pagesRe, check: checkPages},
	"amdttm.pages_limit":    {set: true, remove: true, value: pagesRe, check: checkPages},
	"amdttm.page_pool_size": {set: true, remove: true, value: pagesRe, check: checkPages},
	"amdgpu.cwsr_enable":    {set: true, remove: true, value: boolRe},
	"amdgpu.lockup_timeout": {set: true, remove: true, value: timeoutRe},
	"amdgpu.gttsize":        {remove: true},
	"amdgpu.gtt_size":       {remove: true},
	"nomodeset":             {remove: true},
}

// ValidateArg refuses a kernel argument that haloforge would not plan
// itself: unknown keys, operations the key does not allow, and values
// outside the key's pattern.
func ValidateArg(a KernelArg) error {
	rule, ok := argRules[a.Key]
	if !ok {
		return fmt.Errorf("kernel argument %q is not one haloforge manages", printable(a.Key))
	}
	switch a.Op {
	case OpSet:
		if !rule.set {
			return fmt.Errorf("kernel argument %s can only be removed", a.Key)
		}
		if rule.value == nil || !rule.value.MatchString(a.Value) {
			return fmt.Errorf("kernel argument %s: value %q not allowed", a.Key, printable(a.Value))
		}
		if rule.check != nil {
			if err := rule.check(a.Value); err != nil {
				return fmt.Errorf("kernel argument %s: %w", a.Key, err)
			}
		}
	case OpRemove:
		if !rule.remove {
			return fmt.Errorf("kernel argument %s cannot be removed", a.Key)
		}
		if !oldValueRe.MatchString(a.Value) {
			return fmt.Errorf("kernel argument %s: value %q not allowed", a.Key, printable(a.Value))
		}
	default:
		return fmt.Errorf("kernel argument %s: unknown operation %q (want set or remove)", a.Key, printable(a.Op))
	}
	return nil
}

// printable quotes hostile input in an error: one line through the one
// sanitiser, at most 80 characters, so a bad plan file or argument cannot
// flood or take over the terminal that shows the refusal.
func printable(s string) string { return text.Printable(s, 80) }
