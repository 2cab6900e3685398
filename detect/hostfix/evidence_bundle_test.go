package hostfix

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haloforge/haloforge/detect"
)

// TestBundleKeepsTheBootEvidence: a bundle keeps only the files its reader
// knows, so every file `doctor --collect` adds for a plan must be one of
// them, or `doctor --plan --bundle` elsewhere would not see how this
// machine boots.
func TestBundleKeepsTheBootEvidence(t *testing.T) {
	names := []string{bootEvidenceFile}
	for _, g := range bundleGlobs {
		names = append(names, g)
	}
	for _, n := range names {
		if !detect.IsBundleFile(n) {
			t.Errorf("%s is added to bundles but the bundle reader drops it (detect/bundleread.go bundleFiles)", n)
		}
	}
}

// TestFromRootRefusesAFIFO: a FIFO with no writer where the boot
// configuration or /etc/group should be is refused at once, the path
// named, never waited on; so is a file over the bound.
func TestFromRootRefusesAFIFO(t *testing.T) {
	for _, tc := range []struct{ name, path, want string }{
		{"grub", "etc/default/grub", "is a FIFO (named pipe), not a regular file"},
		{"group", "etc/group", "is a FIFO (named pipe), not a regular file"},
		{"too large", "etc/kernel/cmdline", "is 2 MiB, over the 1 MiB limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := grubRoot(t)
			p := filepath.Join(root, tc.path)
			os.Remove(p)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			var err error
			if tc.name == "too large" {
				err = os.WriteFile(p, make([]byte, 2<<20), 0o644)
			} else {
				err = syscall.Mkfifo(p, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { _, err := FromRoot(root); done <- err }()
			select {
			case err := <-done:
				if want := p + " " + tc.want; err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("err %v, want %q", err, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("FromRoot waited on the FIFO")
			}
		})
	}
}
