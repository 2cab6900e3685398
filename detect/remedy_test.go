package detect

import (
	"strings"
	"testing"
)

// TestModprobeFixesAppendAndRemoveOneParameter: doctor's module-option
// alternative appends to a haloforge-named file (two fixes followed one
// after the other keep both) and takes out one param=value, never a whole
// options line or a file the user wrote. (detect/hostfix runs these very
// commands against files and compares them with the plan's own edit.)
func TestModprobeFixesAppendAndRemoveOneParameter(t *testing.T) {
	cwsr := (&Remedy{Args: []ArgChange{{Arg: KernelArg{OpSet, "amdgpu.cwsr_enable", "0"}}}}).Text("")
	watchdog := (&Remedy{Args: []ArgChange{{Arg: KernelArg{OpSet, "amdgpu.lockup_timeout", "20000,20000"}}}}).Text("")
	for _, fix := range []string{cwsr, watchdog} {
		if strings.Contains(fix, "| sudo tee /etc/modprobe.d/") || !strings.Contains(fix, "| sudo tee -a /etc/modprobe.d/haloforge-amdgpu.conf") {
			t.Errorf("module options must be appended to haloforge's own file:\n%s", fix)
		}
	}
	rm := (&Remedy{Args: []ArgChange{{Arg: KernelArg{Op: OpRemove, Key: "amdgpu.gttsize"}}}}).Text("")
	if strings.Contains(rm, `/^options amdgpu .*gttsize=/d`) || !strings.Contains(rm, `s/[[:space:]]+gttsize=[^[:space:]#]*//g`) {
		t.Errorf("the removal must take out the parameter, not the line:\n%s", rm)
	}
	for _, l := range modprobeLines(nil, []string{"amd_iommu"}) {
		t.Errorf("a kernel-only parameter has no module option: %s", l)
	}
}
