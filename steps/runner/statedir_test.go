package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckStateDirOwnership: a state dir holds the scripts a build runs, so
// one another user owns (a /tmp/haloforge-state made before you) or one
// anybody may write to is refused; your own, or a sticky shared one, is fine.
func TestCheckStateDirOwnership(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(dir string) error
		want  string // "" = accepted
	}{
		{"your own, created now", func(string) error { return nil }, ""},
		{"your own, group-writable (umask 002)", func(d string) error { return os.Chmod(d, 0o775) }, ""},
		{"writable by everyone", func(d string) error { return os.Chmod(d, 0o777) }, "is writable by every user (mode 0777)"},
		{"writable by everyone, sticky", func(d string) error { return os.Chmod(d, 0o777|os.ModeSticky) }, ""},
		{"another user's", func(d string) error {
			if os.Getuid() != 0 {
				t.Skip("chown to another user needs root")
			}
			return os.Chown(d, 65534, 65534)
		}, "belongs to uid 65534, not to you"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := tc.setup(dir); err != nil {
				t.Fatal(err)
			}
			err := CheckStateDir(dir)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("CheckStateDir: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
