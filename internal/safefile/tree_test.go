package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// outsideFiles is a directory beside the tree whose files must never
// change, whatever is planted in the tree.
func outsideFiles(t *testing.T, base string) (dir string, check func()) {
	t.Helper()
	dir = filepath.Join(base, "outside")
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "precious"), []byte("precious\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "sub", "report.json"), []byte("outside report\n"), 0o644)
	return dir, func() {
		t.Helper()
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if strings.Join(names, " ") != "precious sub" {
			t.Errorf("outside holds %v", names)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "precious")); string(b) != "precious\n" {
			t.Errorf("outside/precious is %q", b)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "sub", "report.json")); string(b) != "outside report\n" {
			t.Errorf("outside/sub/report.json is %q", b)
		}
		if sub, _ := os.ReadDir(filepath.Join(dir, "sub")); len(sub) != 1 {
			t.Errorf("outside/sub holds %d files", len(sub))
		}
	}
}

// TestTreeRefusesWhatIsPlanted plants, at each place of a name, what
// haloforge never makes in its own directories, and runs every operation
// through it: each is refused with the path and the kind, never follows,
// never writes outside, never waits.
func TestTreeRefusesWhatIsPlanted(t *testing.T) {
	plants := []struct {
		name  string
		plant func(tree, out string) // in tree: runs/ID/report.json is the name used
		want  string                 // words of the refusal
	}{
		{"the directory a link out", func(tree, out string) { os.Symlink(filepath.Join(out, "sub"), filepath.Join(tree, "runs")) }, "runs is a symbolic link, not a directory"},
		{"the directory a relative link out", func(tree, out string) { os.Symlink("../outside/sub", filepath.Join(tree, "runs")) }, "runs is a symbolic link, not a directory"},
		{"the directory a link inside", func(tree, out string) {
			os.MkdirAll(filepath.Join(tree, "other", "ID"), 0o755)
			os.Symlink("other", filepath.Join(tree, "runs"))
		}, "runs is a symbolic link, not a directory"},
		{"the directory a dangling link", func(tree, out string) { os.Symlink(filepath.Join(out, "gone"), filepath.Join(tree, "runs")) }, "runs is a symbolic link, not a directory"},
		{"the directory a FIFO", func(tree, out string) { syscall.Mkfifo(filepath.Join(tree, "runs"), 0o600) }, "runs is a FIFO (named pipe), not a directory"},
		{"the directory a file", func(tree, out string) { os.WriteFile(filepath.Join(tree, "runs"), nil, 0o600) }, "runs is a regular file, not a directory"},
		{"the inner directory a link out", func(tree, out string) {
			os.MkdirAll(filepath.Join(tree, "runs"), 0o755)
			os.Symlink(filepath.Join(out, "sub"), filepath.Join(tree, "runs", "ID"))
		}, "ID is a symbolic link, not a directory"},
		{"the file a link out", func(tree, out string) {
			os.MkdirAll(filepath.Join(tree, "runs", "ID"), 0o755)
			os.Symlink(filepath.Join(out, "sub", "report.json"), filepath.Join(tree, "runs", "ID", "report.json"))
		}, "report.json is a symbolic link"},
		{"the file a dangling link", func(tree, out string) {
			os.MkdirAll(filepath.Join(tree, "runs", "ID"), 0o755)
			os.Symlink(filepath.Join(out, "sub", "new.json"), filepath.Join(tree, "runs", "ID", "report.json"))
		}, "report.json is a symbolic link"},
		{"the file a FIFO", func(tree, out string) {
			os.MkdirAll(filepath.Join(tree, "runs", "ID"), 0o755)
			syscall.Mkfifo(filepath.Join(tree, "runs", "ID", "report.json"), 0o600)
		}, "report.json is a FIFO (named pipe)"},
		{"the file a directory", func(tree, out string) {
			os.MkdirAll(filepath.Join(tree, "runs", "ID", "report.json"), 0o755)
		}, "is a directory"},
		{"the file a socket", func(tree, out string) {
			os.MkdirAll(filepath.Join(tree, "runs", "ID"), 0o755)
			fd, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			unix.Bind(fd, &unix.SockaddrUnix{Name: filepath.Join(tree, "runs", "ID", "report.json")})
			unix.Close(fd)
		}, "report.json"},
	}
	ops := []struct {
		name string
		op   func(t Tree) error
		// replaces is true for an operation that may replace the file in
		// its place (an atomic write): then a planted file is replaced, not
		// refused, when only the last element is planted.
		replaces bool
	}{
		{"ReadFile", func(t Tree) error { _, err := t.ReadFile("runs/ID/report.json", 1<<20); return err }, false},
		{"Open", func(t Tree) error { f, _, err := t.Open("runs/ID/report.json"); f.Close(); return err }, false},
		{"OpenFile to append", func(t Tree) error {
			f, err := t.OpenFile("runs/ID/report.json", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
			if err == nil {
				f.WriteString("through\n")
				f.Close()
			}
			return err
		}, false},
		{"OpenFile to truncate", func(t Tree) error {
			f, err := t.OpenFile("runs/ID/report.json", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err == nil {
				f.Close()
			}
			return err
		}, false},
		{"WriteFile", func(t Tree) error { return t.WriteFile("runs/ID/report.json", []byte("new\n"), 0o644) }, true},
		{"MkdirAll", func(t Tree) error { return t.MkdirAll("runs/ID/report.json/x", 0o755) }, false},
		{"ReadDir", func(t Tree) error { _, err := t.ReadDir("runs/ID"); return err }, false},
	}
	for _, p := range plants {
		for _, o := range ops {
			t.Run(p.name+"/"+o.name, func(t *testing.T) {
				base := t.TempDir()
				tree := filepath.Join(base, "state")
				os.Mkdir(tree, 0o755)
				out, check := outsideFiles(t, base)
				p.plant(tree, out)
				done := make(chan error, 1)
				go func() { done <- o.op(Tree(tree)) }()
				var err error
				select {
				case err = <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("the operation waited")
				}
				check()
				lastOnly := strings.HasPrefix(p.name, "the file")
				switch {
				case o.name == "ReadDir" && lastOnly:
					// listing runs/ID does not open report.json
				case o.replaces && lastOnly && !strings.Contains(p.name, "directory"):
					if err != nil {
						t.Errorf("%v: an atomic write replaces what was planted in its place", err)
					}
					if st, _ := os.Lstat(filepath.Join(tree, "runs/ID/report.json")); st == nil || !st.Mode().IsRegular() {
						t.Errorf("report.json is %v after the write", st)
					}
				case o.name == "MkdirAll" && p.name == "the file a directory":
					// a directory where the name is: MkdirAll goes on inside it
				case o.name == "MkdirAll" && lastOnly:
					if err == nil {
						t.Error("a directory was made beneath a file that is not a directory")
					}
				default:
					if err == nil || !strings.Contains(err.Error(), p.want) || !strings.Contains(err.Error(), tree) {
						t.Errorf("%v, want a refusal saying %q with the path", err, p.want)
					}
				}
			})
		}
	}
}

// TestTreeNames refuses names that could leave the tree at all.
func TestTreeNames(t *testing.T) {
	tree := Tree(t.TempDir())
	for _, name := range []string{"../x", "runs/../../x", "/etc/passwd", "runs//x", "./x", "..", "runs/.."} {
		if _, err := tree.ReadFile(name, 10); err == nil || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%q: %v, want it refused as a name", name, err)
		}
		if err := tree.WriteFile(name, []byte("x"), 0o644); err == nil {
			t.Errorf("%q written", name)
		}
	}
}

// TestTreeHardLinkIsNotWrittenIn: a file with another name elsewhere (a
// hard link planted in the tree) is not opened for writing; an atomic
// write replaces the name and leaves the other file's bytes.
func TestTreeHardLinkIsNotWrittenIn(t *testing.T) {
	base := t.TempDir()
	tree := filepath.Join(base, "state")
	os.Mkdir(tree, 0o755)
	out, check := outsideFiles(t, base)
	if err := os.Link(filepath.Join(out, "precious"), filepath.Join(tree, "lock")); err != nil {
		t.Skip(err)
	}
	f, err := Tree(tree).OpenFile("lock", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err == nil {
		f.Close()
		t.Fatal("a hard-linked file was opened for writing")
	}
	if !strings.Contains(err.Error(), "has 2 names (a hard link)") {
		t.Errorf("error: %v", err)
	}
	if err := Tree(tree).WriteFile("lock", []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check()
}

// TestTreeRacesAFlippingDirectory writes and reads through a directory
// that another goroutine swaps, again and again, with a link out of the
// tree (rename exchange, atomic): not one write lands outside.
func TestTreeRacesAFlippingDirectory(t *testing.T) {
	base := t.TempDir()
	tree := filepath.Join(base, "state")
	os.MkdirAll(filepath.Join(tree, "runs"), 0o755)
	out, check := outsideFiles(t, base)
	os.Symlink(filepath.Join(out, "sub"), filepath.Join(tree, "runs.link"))
	stop := make(chan struct{})
	var flips atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if unix.Renameat2(unix.AT_FDCWD, filepath.Join(tree, "runs"), unix.AT_FDCWD, filepath.Join(tree, "runs.link"), unix.RENAME_EXCHANGE) == nil {
				flips.Add(1)
			}
		}
	}()
	var wrote, refused int
	deadline := time.Now().Add(2 * time.Second)
	for i := 0; i < 5000 && time.Now().Before(deadline); i++ {
		err := Tree(tree).WriteFile("runs/report.json", []byte("in the tree\n"), 0o644)
		if err == nil {
			wrote++
		} else {
			refused++
		}
		if f, err := Tree(tree).OpenFile("runs/x.log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err == nil {
			f.WriteString("line\n")
			f.Close()
		}
	}
	close(stop)
	wg.Wait()
	check()
	if wrote == 0 || refused == 0 {
		t.Logf("wrote %d, refused %d in %d flips: the race was not exercised both ways", wrote, refused, flips.Load())
	}
}

// FuzzTreeNames: a name the tree accepts has elements that are each one
// plain directory entry, and its path stays inside the tree.
func FuzzTreeNames(f *testing.F) {
	for _, s := range []string{"runs/ID/report.json", "../x", "a/../../b", "/etc/passwd", "a//b", "./a", "a/", "", ".", "..", "a/.", "a\x00b", "…/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		tree := Tree("/state")
		elems, err := tree.elements(name)
		if err != nil {
			return
		}
		for _, e := range elems {
			if e == "" || e == "." || e == ".." || strings.Contains(e, "/") {
				t.Fatalf("%q accepted with the element %q", name, e)
			}
		}
		if rel, err := filepath.Rel("/state", tree.Path(name)); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			t.Fatalf("%q leads to %s, outside the tree", name, tree.Path(name))
		}
	})
}
