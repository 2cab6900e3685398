package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestBuildStamp: each way of building names what it can of version,
// commit and date, and says why when it cannot.
func TestBuildStamp(t *testing.T) {
	const rev = "335dfdcb8386682dd4e59b4bb02357575983575a"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: "2026-11-24T21:10:25Z"}, {Key: "vcs.modified", Value: modified}}
	}
	release := stamp{version: "0.3.0", commit: rev, date: "2026-11-29T10:00:00Z", dateIs: "built"}
	for _, tc := range []struct {
		name   string
		linked stamp
		info   *debug.BuildInfo
		want   string
	}{
		{"release", release, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			"0.3.0\ncommit " + rev + "\nbuilt 2026-11-29T10:00:00Z"},
		{"make build, dirty", stamp{version: "dev", commit: rev, dirty: true, date: "2026-11-29T10:00:00Z", dateIs: "built"}, nil,
			"dev\ncommit " + rev + " (dirty: built with uncommitted changes)\nbuilt 2026-11-29T10:00:00Z"},
		{"linker wins over vcs", release, &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261124211025-335dfdcb8386+dirty"}, Settings: vcs("true")},
			"0.3.0\ncommit " + rev + "\nbuilt 2026-11-29T10:00:00Z"},
		{"go build in a clone", stamp{version: "dev"}, &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261124211025-335dfdcb8386"}, Settings: vcs("false")},
			"v0.0.0-20261124211025-335dfdcb8386\ncommit " + rev + "\ncommitted 2026-11-24T21:10:25Z (Go records no build time)"},
		{"go build, modified", stamp{version: "dev"}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("true")},
			"dev\ncommit " + rev + " (dirty: built with uncommitted changes)\ncommitted 2026-11-24T21:10:25Z (Go records no build time)"},
		{"go install of a commit", stamp{version: "dev"}, &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261124211025-335dfdcb8386"}},
			"v0.0.0-20261124211025-335dfdcb8386\ncommit 335dfdcb8386\ncommitted 2026-11-24T21:10:25Z (Go records no build time)"},
		{"go install of a tag", stamp{version: "dev"}, &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}},
			"v1.2.3\ncommit unknown (go install records none for a tag: v1.2.3 names it)\nbuilt unknown"},
		{"go run", stamp{version: "dev"}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			"dev\ncommit unknown (this build recorded none: go run and go build -buildvcs=false never do; make build does)\nbuilt unknown"},
		{"no build info", stamp{version: "dev"}, nil,
			"dev\ncommit unknown (this build recorded none: go run and go build -buildvcs=false never do; make build does)\nbuilt unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := buildStamp(tc.linked, tc.info).String(); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestLinkedNoneIsNoCommit: goreleaser stamps "none" outside a git
// checkout, which is no commit, not one named none.
func TestLinkedNoneIsNoCommit(t *testing.T) {
	saved := commit
	t.Cleanup(func() { commit = saved })
	commit = "none"
	if s := buildStamp(linked(), nil).String(); !strings.Contains(s, "\ncommit unknown") {
		t.Errorf("commit none: got\n%s", s)
	}
}

// TestVersionOfRealBuilds builds the binary three ways and runs --version:
// with a release's linker flags, in a git repository with Go's VCS stamp (the
// commit is the one that holds the work tree), and with neither (what go
// run gives).
func TestVersionOfRealBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary three times")
	}
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(file), "..", "..")
	dir := t.TempDir()
	build := func(t *testing.T, src string, args ...string) string {
		t.Helper()
		bin := filepath.Join(dir, "haloforge")
		// Built as a release is (-trimpath, CGO_ENABLED=0), so the build
		// cache serves every copy of the source and make dist.
		cmd := exec.Command("go", append(append([]string{"build", "-trimpath", "-o", bin}, args...), "./cmd/haloforge")...)
		cmd.Dir, cmd.Env = src, append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", args, err, out)
		}
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("haloforge --version: %v\n%s", err, out)
		}
		return string(out)
	}
	t.Run("release linker flags", func(t *testing.T) {
		const rev = "0123456789abcdef0123456789abcdef01234567"
		got := build(t, repo, "-buildvcs=false", "-ldflags",
			"-X main.version=1.2.3 -X main.commit="+rev+" -X main.date=2026-11-29T10:00:00Z -X main.treeState=clean")
		if want := "haloforge version 1.2.3\ncommit " + rev + "\nbuilt 2026-11-29T10:00:00Z\n"; got != want {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("no stamp", func(t *testing.T) {
		got := build(t, repo, "-buildvcs=false")
		if want := "haloforge version dev\ncommit unknown (this build recorded none: go run and go build -buildvcs=false never do; make build does)\nbuilt unknown\n"; got != want {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("vcs stamp of a git commit", func(t *testing.T) {
		src, rev := commitWorkTree(t, repo, filepath.Join(dir, "repo"))
		got := build(t, src, "-buildvcs=true")
		if !strings.Contains(got, "\ncommit "+rev+"\ncommitted ") {
			t.Errorf("--version does not name the commit %s:\n%s", rev, got)
		}
		if err := os.WriteFile(filepath.Join(src, "README.md"), []byte("changed\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		got = build(t, src, "-buildvcs=true")
		if !strings.Contains(got, "\ncommit "+rev+" (dirty: built with uncommitted changes)\n") {
			t.Errorf("--version does not say the tree was dirty:\n%s", got)
		}
	})
}

// commitWorkTree copies the checkout's files as they are now (tracked and
// new, not ignored) into dst, commits them in a new git repository, and
// returns dst and the commit: a plain .git directory, which Go's VCS
// stamp needs (it does not follow a worktree's .git file).
func commitWorkTree(t *testing.T, repo, dst string) (string, string) {
	t.Helper()
	list, err := exec.Command("git", "-C", repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("the source is not a git checkout: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(repo, name))
		if err != nil {
			continue // deleted in the work tree
		}
		fi, _ := os.Stat(filepath.Join(repo, name))
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), data, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dst, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "--quiet")
	git("add", "--all")
	git("commit", "--quiet", "--no-verify", "-m", "work tree")
	return dst, git("rev-parse", "HEAD")
}
