package installed

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const owner = "20261129-093012-a1b2c3.0123456789ab"

var id64 = strings.Repeat("d", 64)

func TestParseFact(t *testing.T) {
	n := int64(161373259)
	for _, tc := range []struct {
		name, line string
		want       Item
		err        string
	}{
		{"box", "box\thaloforge-llamacpp\tpodman", Item{Kind: KindBox, What: KindBox, Name: "haloforge-llamacpp", Engine: "podman"}, ""},
		{"rootful box", "box\thaloforge-llamacpp\tsudo-podman", Item{Kind: KindBox, What: KindBox, Name: "haloforge-llamacpp", Engine: "sudo-podman"}, ""},
		{"built image", "image\tlocalhost/haloforge-vulkan:b1\t" + id64 + "\tpodman\tbuilt\t161373259",
			Item{Kind: KindImage, What: KindImage, Name: "localhost/haloforge-vulkan:b1", ImageID: id64, Engine: "podman", How: Built, SizeBytes: &n}, ""},
		{"pulled image, sha256: prefix, no size", "image\tdocker.io/rocm/vllm-dev:nightly\tsha256:" + id64 + "\tdocker\tpulled\t-",
			Item{Kind: KindImage, What: KindImage, Name: "docker.io/rocm/vllm-dev:nightly", ImageID: id64, Engine: "docker", How: Pulled}, ""},
		{"dir", "dir\tcache\t/home/u/.cache/haloforge/wheels", Item{Kind: KindDir, What: "cache", Path: "/home/u/.cache/haloforge/wheels"}, ""},
		{"file", "file\tmodel\t/home/u/models/tiny.gguf", Item{Kind: KindFile, What: "model", Path: "/home/u/models/tiny.gguf"}, ""},
		{"in box", "in-box\thaloforge-therock\tvenv\t/opt/venv", Item{Kind: KindInBox, Box: "haloforge-therock", What: "venv", Path: "/opt/venv"}, ""},

		{"box name with a space", "box\thf box\tpodman", Item{}, "box name"},
		{"unknown engine", "box\thf\tsudo rm -rf", Item{}, "engine"},
		{"short image ID", "image\tx:1\tabc\tpodman\tbuilt\t-", Item{}, "image ID"},
		{"image how", "image\tx:1\t" + id64 + "\tpodman\tstolen\t-", Item{}, "built or pulled"},
		{"image size", "image\tx:1\t" + id64 + "\tpodman\tbuilt\t-5", Item{}, "size"},
		{"relative path", "dir\tcache\twheels", Item{}, "absolute"},
		{"climbing path", "dir\tcache\t/home/u/../../etc", Item{}, "clean absolute"},
		{"root", "dir\tdata\t/", Item{}, "too near the root"},
		{"top level", "dir\tdata\t/etc", Item{}, "too near the root"},
		{"shell characters", "dir\tdata\t/tmp/$(reboot)", Item{}, "shell characters"},
		{"unknown what", "dir\tsecrets\t/home/u/x", Item{}, "what it is for"},
		{"a field too many", "box\thf\tpodman\textra", Item{}, "not box"},
		{"unknown kind", "volume\tx", Item{}, "not box"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseFact(strings.Split(tc.line, "\t"))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %+v, %v; want an error about %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Key() != tc.want.Key() || got.What != tc.want.What || got.How != tc.want.How ||
				(got.SizeBytes == nil) != (tc.want.SizeBytes == nil) || (got.SizeBytes != nil && *got.SizeBytes != *tc.want.SizeBytes) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// machine is a state dir and a home of a test, and a directory, a file
// and a link in the home.
type machine struct {
	state, home string
}

func newMachine(t *testing.T) machine {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir()) // no link on the way, as on a real machine
	if err != nil {
		t.Fatal(err)
	}
	m := machine{state: filepath.Join(root, "home", ".local", "state", "haloforge"), home: filepath.Join(root, "home")}
	if err := os.MkdirAll(m.state, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", m.home)
	return m
}

func mkdir(t *testing.T, dir, marker string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if marker != "" {
		write(t, filepath.Join(dir, Marker), marker+"\n")
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestAdmit(t *testing.T) {
	m := newMachine(t)
	now := time.Now()
	ours := filepath.Join(m.home, "venvs", "ours")
	mkdir(t, ours, owner)
	theirs := filepath.Join(m.home, "venvs", "theirs")
	mkdir(t, theirs, "")
	forged := filepath.Join(m.home, "venvs", "forged")
	mkdir(t, forged, "rm -rf /")
	if err := os.Symlink(ours, filepath.Join(m.home, "venvs", "link")); err != nil {
		t.Fatal(err)
	}
	inState := filepath.Join(m.state, "cache", "fx")
	mkdir(t, inState, "")
	model := filepath.Join(m.home, "model.gguf")
	write(t, model, "GGUF")

	for _, tc := range []struct {
		name string
		it   Item
		want string // the owner recorded; "" with err
		err  string
	}{
		{"a directory with the run's marker", Item{Kind: KindDir, What: "venv", Path: ours}, owner, ""},
		{"a directory of the state dir", Item{Kind: KindDir, What: "cache", Path: inState}, StateDirOwner, ""},
		{"a directory without a marker", Item{Kind: KindDir, What: "venv", Path: theirs}, "", "no such file"},
		{"a marker haloforge did not write", Item{Kind: KindDir, What: "venv", Path: forged}, "", "does not hold an owner token"},
		{"a link to a directory", Item{Kind: KindDir, What: "venv", Path: filepath.Join(m.home, "venvs", "link")}, "", "symbolic link"},
		{"the home", Item{Kind: KindDir, What: "data", Path: m.home}, "", "home directory"},
		{"what holds the state dir", Item{Kind: KindDir, What: "data", Path: filepath.Join(m.home, ".local")}, "", "holds the state dir"},
		{"the state dir", Item{Kind: KindDir, What: "data", Path: m.state}, "", "holds the state dir"},
		{"a file", Item{Kind: KindFile, What: "model", Path: model}, "", ""},
		{"a directory as a file", Item{Kind: KindFile, What: "model", Path: ours}, "", "not a regular file"},
		{"a box", Item{Kind: KindBox, Name: "hf", Engine: "podman"}, owner, ""},
		{"a pulled image", Item{Kind: KindImage, Name: "x:1", ImageID: id64, Engine: "podman", How: Pulled}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Admit(tc.it, m.state, owner, now)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("admitted %+v (%v); want an error about %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Owner != tc.want || !got.Created.Equal(now) {
				t.Errorf("owner %q, created %v; want %q", got.Owner, got.Created, tc.want)
			}
			if tc.it.Kind == KindFile && (got.Identity == nil || got.Identity.Size != 4 || got.Identity.Ino == 0) {
				t.Errorf("identity %+v", got.Identity)
			}
		})
	}
}

func TestCleanPaths(t *testing.T) {
	m := newMachine(t)
	now := time.Now()
	admit := func(it Item) Item {
		t.Helper()
		a, err := Admit(it, m.state, owner, now)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	c := Cleaner{StateDir: m.state}
	ctx := context.Background()

	t.Run("haloforge's directory and file go, and nothing else", func(t *testing.T) {
		dir := filepath.Join(m.home, "wheels")
		mkdir(t, dir, owner)
		mkdir(t, filepath.Join(dir, "sub"), "")
		write(t, filepath.Join(dir, "sub", "torch.whl"), strings.Repeat("w", 10000))
		// a link inside points out of it: removing the directory must not follow it
		keep := filepath.Join(m.home, "precious")
		write(t, keep, "mine")
		if err := os.Symlink(keep, filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(m.home, "tiny.gguf")
		write(t, file, "GGUF")
		items := []Item{admit(Item{Kind: KindDir, What: "cache", Path: dir}), admit(Item{Kind: KindFile, What: "model", Path: file})}
		for _, it := range items {
			v := c.Check(ctx, it)
			if v.State != Remove || v.Size == nil || *v.Size <= 0 {
				t.Fatalf("check %s: %+v", it.Path, v)
			}
			if _, err := c.Remove(ctx, v); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(it.Path); !os.IsNotExist(err) {
				t.Errorf("%s is still there", it.Path)
			}
		}
		if b, err := os.ReadFile(keep); err != nil || string(b) != "mine" {
			t.Errorf("what a link inside pointed at: %q, %v", b, err)
		}
		// Gone now: forgotten, nothing to do.
		if v := c.Check(ctx, items[0]); v.State != Gone {
			t.Errorf("after removal: %+v", v)
		}
	})
	t.Run("what changed since it was recorded stays", func(t *testing.T) {
		remade := filepath.Join(m.home, "remade")
		mkdir(t, remade, owner)
		itRemade := admit(Item{Kind: KindDir, What: "venv", Path: remade})
		os.RemoveAll(remade)
		mkdir(t, remade, "") // the user made it again, without the marker

		swapped := filepath.Join(m.home, "swapped")
		mkdir(t, swapped, owner)
		itSwapped := admit(Item{Kind: KindDir, What: "venv", Path: swapped})
		os.RemoveAll(swapped)
		target := filepath.Join(m.home, "target")
		mkdir(t, target, owner) // a link to a directory holding the same marker
		if err := os.Symlink(target, swapped); err != nil {
			t.Fatal(err)
		}

		file := filepath.Join(m.home, "model.gguf")
		write(t, file, "GGUF")
		itFile := admit(Item{Kind: KindFile, What: "model", Path: file})
		write(t, file, "GGUF v2, written since")

		inState := filepath.Join(m.state, "fx")
		mkdir(t, inState, "")
		itState := admit(Item{Kind: KindDir, What: "data", Path: inState})
		other := Cleaner{StateDir: filepath.Join(m.home, "another-state")}

		for _, tc := range []struct {
			name string
			c    Cleaner
			it   Item
			why  string
		}{
			{"a directory made again", c, itRemade, "marker"},
			{"a directory swapped for a link", c, itSwapped, "a symbolic link now"},
			{"a file written since", c, itFile, "changed since"},
			{"a state-dir directory with another state dir", other, itState, "not inside the state dir"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				v := tc.c.Check(ctx, tc.it)
				if v.State != Kept || !strings.Contains(v.Why, tc.why) {
					t.Fatalf("%+v: want kept, %q", v, tc.why)
				}
				if _, err := tc.c.Remove(ctx, v); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Lstat(tc.it.Path); err != nil {
					t.Errorf("%s was touched: %v", tc.it.Path, err)
				}
			})
		}
		if _, err := os.Stat(filepath.Join(target, Marker)); err != nil {
			t.Errorf("the link's target was touched: %v", err)
		}
	})
}

func TestRecord(t *testing.T) {
	m := newMachine(t)
	r, err := Load(m.state)
	if err != nil || len(r.Tracks) != 0 {
		t.Fatalf("an empty state dir: %+v %v", r, err)
	}
	n := int64(100)
	first := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	r.Add("fx", Item{Kind: KindBox, Name: "hf", Engine: "podman", Owner: owner, RunID: "r1", Created: first})
	r.Add("fx", Item{Kind: KindBox, Name: "hf", Engine: "podman", Owner: owner, RunID: "r2", SizeBytes: &n, Created: first.Add(time.Hour)},
		Item{Kind: KindDir, What: "cache", Path: "/x/y", SizeBytes: &n})
	if err := r.Save(m.state); err != nil {
		t.Fatal(err)
	}
	r, err = Load(m.state)
	if err != nil {
		t.Fatal(err)
	}
	items := r.Items("fx")
	if len(items) != 2 || items[0].RunID != "r1" || !items[0].Created.Equal(first) || *items[0].SizeBytes != 100 {
		t.Fatalf("a box recorded twice keeps its first run: %+v", items)
	}
	if total, unknown := Total(items); total != 200 || unknown != 0 {
		t.Errorf("total %d, %d unknown", total, unknown)
	}
	r.Drop("fx", items[0].Key(), items[1].Key())
	if _, ok := r.Tracks["fx"]; ok {
		t.Error("a track with nothing left stays in the record")
	}
	// A link where the record should be is refused, not followed.
	elsewhere := filepath.Join(m.home, "elsewhere.json")
	write(t, elsewhere, `{"version":1,"tracks":{}}`)
	os.Remove(filepath.Join(m.state, File))
	if err := os.Symlink(elsewhere, filepath.Join(m.state, File)); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(m.state); err == nil || !strings.Contains(err.Error(), "link") {
		t.Errorf("a link as installed.json: %v", err)
	}
}

func FuzzParseFact(f *testing.F) {
	for _, s := range []string{
		"box\thaloforge-llamacpp\tpodman", "image\tx:1\t" + id64 + "\tsudo-podman\tpulled\t-",
		"dir\tcache\t/home/u/wheels", "file\tmodel\t/home/u/m.gguf", "in-box\thf\tvenv\t/opt/venv", "dir\tdata\t/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		it, err := ParseFact(strings.Split(line, "\t"))
		if err != nil {
			return
		}
		// What parses is safe to print and to hand to an engine: no
		// control characters, no option-like or climbing values.
		for _, v := range []string{it.Name, it.Path, it.Box, it.Engine, it.ImageID} {
			if strings.ContainsAny(v, "\x00\n\r\t\x1b") || strings.HasPrefix(v, "-") || strings.Contains(v, "/../") {
				t.Fatalf("%q parsed to %+v", line, it)
			}
		}
		if (it.Kind == KindDir || it.Kind == KindFile) && checkPath(it.Path) != nil {
			t.Fatalf("%q: path %q", line, it.Path)
		}
		if it.Kind == KindImage && EngineCommand(it.Engine) == nil {
			t.Fatalf("%q: engine %q", line, it.Engine)
		}
	})
}
