package installed

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// podman is real podman with private storage in a temporary directory, so
// that no image or container of the machine is touched.
type podman struct {
	t     *testing.T
	flags []string
}

func newPodman(t *testing.T) *podman {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("real podman with private storage: needs root, as CI and make test run")
	}
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("podman is not installed (make test installs it: Makefile APT_PKGS)")
	}
	// podman wants a run root shorter than 50 characters: t.TempDir's are longer.
	store, err := os.MkdirTemp("", "hfin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(store) })
	return &podman{t: t, flags: []string{"--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"),
		"--storage-driver", "vfs", "--events-backend", "none", "--tmpdir", filepath.Join(store, "tmp")}}
}

// exec is the Cleaner's Exec: podman with the private storage.
func (p *podman) exec(ctx context.Context, argv []string) (string, string, error) {
	if argv[0] == "podman" {
		argv = append(append([]string{"podman"}, p.flags...), argv[1:]...)
	}
	return RunCommand(ctx, argv)
}

func (p *podman) run(stdin []byte, args ...string) string {
	p.t.Helper()
	cmd := exec.Command("podman", append(p.flags, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		p.t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func (p *podman) id(ref string) string {
	p.t.Helper()
	return strings.TrimPrefix(p.run(nil, "image", "inspect", "--format", "{{.Id}}", ref), "sha256:")
}

func (p *podman) exists(kind, name string) bool {
	return exec.Command("podman", append(p.flags, kind, "exists", name)...).Run() == nil
}

// rootfs is a one-file root file system, for podman import.
func rootfs(t *testing.T) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	body := []byte("haloforge installed test\n")
	if err := tw.WriteHeader(&tar.Header{Name: "hf.txt", Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	tw.Write(body)
	tw.Close()
	return b.Bytes()
}

// TestCleanWithRealPodman: a box and an image haloforge made (its owner
// label) are removed; a box and an image it did not make, or whose label
// is not this record's, stay; an image a container still uses is not
// forced out.
func TestCleanWithRealPodman(t *testing.T) {
	p := newPodman(t)
	ctx := context.Background()
	p.run(rootfs(t), "import", "-", "localhost/hf-base:1")
	ctx2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(ctx2, "Containerfile"), []byte("FROM localhost/hf-base:1\nLABEL purpose=test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.run(nil, "build", "--label", OwnerLabel+"="+owner, "-t", "localhost/hf-built:1", ctx2)
	theirCtx := t.TempDir()
	if err := os.WriteFile(filepath.Join(theirCtx, "Containerfile"), []byte("FROM localhost/hf-base:1\nLABEL purpose=theirs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.run(nil, "build", "-t", "localhost/hf-theirs:1", theirCtx)
	p.run(nil, "create", "--label", OwnerLabel+"="+owner, "--name", "hf-box", "localhost/hf-base:1", "/hf")
	p.run(nil, "create", "--name", "hf-their-box", "localhost/hf-base:1", "/hf")

	c := Cleaner{StateDir: t.TempDir(), Exec: p.exec}
	box := Item{Kind: KindBox, What: KindBox, Name: "hf-box", Engine: "podman", Owner: owner}
	theirBox := Item{Kind: KindBox, What: KindBox, Name: "hf-their-box", Engine: "podman", Owner: owner} // a record that lies
	built := Item{Kind: KindImage, What: KindImage, Name: "localhost/hf-built:1", ImageID: p.id("localhost/hf-built:1"), Engine: "podman", How: Built, Owner: owner}
	theirs := Item{Kind: KindImage, What: KindImage, Name: "localhost/hf-theirs:1", ImageID: p.id("localhost/hf-theirs:1"), Engine: "podman", How: Built, Owner: owner}
	pulled := Item{Kind: KindImage, What: KindImage, Name: "localhost/hf-base:1", ImageID: p.id("localhost/hf-base:1"), Engine: "podman", How: Pulled}

	want := map[string]string{box.Key(): Remove, theirBox.Key(): Kept, built.Key(): Remove, theirs.Key(): Kept, pulled.Key(): Remove}
	for _, it := range []Item{box, theirBox, built, theirs, pulled} {
		v := c.Check(ctx, it)
		if v.State != want[it.Key()] {
			t.Errorf("%s: %s (%s), want %s", it.Where(), v.State, v.Why, want[it.Key()])
		}
		if v.State == Remove && (v.Size == nil || len(v.Command) == 0) {
			t.Errorf("%s: no size or command: %+v", it.Where(), v)
		}
	}
	if got := strings.Join(c.Check(ctx, box).Command, " "); got != "podman rm --force hf-box" {
		t.Errorf("the box's command: %q", got)
	}
	for _, it := range []Item{box, theirBox, built, theirs} {
		if _, err := c.Remove(ctx, c.Check(ctx, it)); err != nil {
			t.Fatalf("%s: %v", it.Where(), err)
		}
	}
	if p.exists("container", "hf-box") || p.exists("image", "localhost/hf-built:1") {
		t.Error("haloforge's box or image is still there")
	}
	if !p.exists("container", "hf-their-box") || !p.exists("image", "localhost/hf-theirs:1") {
		t.Error("a box or an image haloforge did not make was removed")
	}
	// The pulled image is still used by the box haloforge did not make.
	if _, err := c.Remove(ctx, c.Check(ctx, pulled)); err == nil || !p.exists("image", "localhost/hf-base:1") {
		t.Errorf("an image a container uses: removed (%v)", err)
	}
	p.run(nil, "rm", "hf-their-box")
	p.run(nil, "rmi", "localhost/hf-theirs:1")
	if _, err := c.Remove(ctx, c.Check(ctx, pulled)); err != nil || p.exists("image", "localhost/hf-base:1") {
		t.Errorf("the pulled image, once free: %v", err)
	}
	if v := c.Check(ctx, box); v.State != Gone {
		t.Errorf("a removed box: %+v", v)
	}
}
