package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/pins/upstream/upstreamtest"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
)

// lockProofStep is a track step that resolves for real what the tracks
// resolve: it pulls an image from a registry, clones a git repository at a
// branch and pip-installs a wheel over HTTP, each with the lib helpers
// that record what it got (scripts/lib/facts.sh).
const lockProofStep = `#!/usr/bin/env bash
set -Eeuo pipefail
. "$FX_LIB/common.sh"
hf_init "$@"
read -r -a podman <<<"$FX_PODMAN"
retry -n 2 -d 1 -- podman "${podman[@]}" pull --tls-verify=false "$TOOLBOX_IMAGE"
hf_fact_image "$TOOLBOX_IMAGE" podman "${podman[@]}"
rm -rf "$HALOFORGE_CACHE_DIR/src"
run git clone -q --branch "$VLLM_REF" "$FX_GIT_URL" "$HALOFORGE_CACHE_DIR/src"
hf_fact_git "$HALOFORGE_CACHE_DIR/src" "$FX_GIT_URL" "$VLLM_REF"
report=$(hf_pip_report)
run python3 -m pip install -q --no-cache-dir --disable-pip-version-check --no-index --find-links "$FX_WHEELS" --trusted-host 127.0.0.1 \
  --target "$HALOFORGE_CACHE_DIR/site" "torch==$TORCH_VERSION" --report "$report"
hf_fact_pip_report "$report"
`

// TestPinsLockOfARealBuild: a successful build's report.json lists the
// digests, wheel hashes and SHAs it used, and pins lock makes them a
// versions.env. A build through the real runner pulls an image from a
// registry on the loopback interface,
// clones from a git daemon and installs a wheel served over HTTP;
// its report.json holds the digest, the commit and the wheel's sha256;
// `pins lock` of the run pins the image by digest and the branch by commit,
// `pins check` accepts the result, and a second build that skips the step
// as up to date locks the same from the run that built it.
func TestPinsLockOfARealBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a registry, a git daemon and a wheel server")
	}
	upstreamtest.Require(t)
	reg := upstreamtest.StartRegistry(t)
	digest := reg.Push(t, "hfrr/box", "1.0", "the box")
	image := reg.Image("hfrr/box", "1.0")
	gits := upstreamtest.StartGitDaemon(t)
	repo := gits.NewRepo(t, "vllm")
	commit := repo.Commit("one")
	repo.Git("push", "-q", "origin", "HEAD:refs/heads/main")
	wheels := t.TempDir()
	upstreamtest.BuildWheels(t, wheels, upstreamtest.Wheel{Name: "torch", Version: "2.11.0+rocm7.14.0", Tag: "py3-none-any", Content: "tiny"})
	// The wheels over HTTP, as a directory listing pip reads with --find-links.
	wheelServer := httptest.NewServer(http.FileServer(http.Dir(wheels)))
	t.Cleanup(wheelServer.Close)

	store, err := os.MkdirTemp("", "hfrl-") // podman wants a short run root
	if err != nil {
		t.Fatal(err)
	}
	podman := []string{"--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"),
		"--storage-driver", "vfs", "--events-backend", "none", "--tmpdir", filepath.Join(store, "tmp")}
	t.Cleanup(func() {
		_ = exec.Command("podman", append(podman, "rmi", "-a", "-f")...).Run()
		os.RemoveAll(store)
	})
	lib, err := filepath.Abs("../../scripts/lib")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"FX_LIB": lib, "FX_PODMAN": strings.Join(podman, " "), "FX_GIT_URL": gits.URL("vllm"),
		"FX_WHEELS": wheelServer.URL + "/"} {
		t.Setenv(k, v)
	}

	scripts := t.TempDir()
	if err := os.MkdirAll(filepath.Join(scripts, "lockproof"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(scripts, "lockproof", "00-fetch.sh"), []byte(lockProofStep), 0o755); err != nil {
		t.Fatal(err)
	}
	pinsFile := filepath.Join(t.TempDir(), "versions.env")
	pinsText := "# the box, from the test's registry\nTOOLBOX_IMAGE=" + image + "\n# a branch: it floats\nVLLM_REF=main\nTORCH_VERSION=2.11.0+rocm7.14.0\n"
	if err := os.WriteFile(pinsFile, []byte(pinsText), 0o644); err != nil {
		t.Fatal(err)
	}
	track := steps.Track{ID: "lockproof", Title: "lock proof", Steps: []steps.Step{{ID: "fetch", Title: "Fetch", Script: "00-fetch.sh",
		Pins: []string{"TOOLBOX_IMAGE", "VLLM_REF", "TORCH_VERSION"}}}}
	state := t.TempDir()
	build := func() *runner.Report {
		t.Helper()
		pf, err := pins.Load(pinsFile)
		if err != nil {
			t.Fatal(err)
		}
		st, err := steps.LoadState(state)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := steps.NewPlan(track, pf, os.DirFS(scripts), st)
		if err != nil {
			t.Fatal(err)
		}
		r, err := runner.New(runner.Options{Plan: plan, Workspace: steps.Workspace{StateDir: state, ScriptsDir: scripts, PinsFile: pinsFile}, Grace: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		done := make(chan struct{})
		go func() {
			defer close(done)
			for e := range r.Events() {
				if l, ok := e.(runner.Lines); ok {
					out = append(out, l.Text...)
				}
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		rep, err := r.Run(ctx)
		<-done
		if err != nil || rep.Status != steps.OutcomeSucceeded {
			t.Fatalf("build: %v %+v\n%s", err, rep, strings.Join(out, "\n"))
		}
		return rep
	}

	rep := build()
	onDisk, err := runner.ReadReport(filepath.Dir(filepath.Dir(rep.RunDir)), rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	got := onDisk.Resolved
	if len(got.Images) != 1 || got.Images[0].Ref != image || got.Images[0].Digest != digest || got.Images[0].Step != "fetch" {
		t.Errorf("resolved images %+v, want %s %s", got.Images, image, digest)
	}
	if len(got.Git) != 1 || got.Git[0].SHA != commit || got.Git[0].Ref != "main" || got.Git[0].Repo != gits.URL("vllm") {
		t.Errorf("resolved git %+v, want main at %s", got.Git, commit)
	}
	whl, _ := filepath.Glob(filepath.Join(wheels, "torch-*.whl"))
	if len(whl) != 1 {
		t.Fatalf("wheels %v", whl)
	}
	sum := sha256File(t, whl[0])
	if len(got.Wheels) != 1 || got.Wheels[0].Name != "torch" || got.Wheels[0].Version != "2.11.0+rocm7.14.0" ||
		got.Wheels[0].SHA256 != sum || got.Wheels[0].URL != wheelServer.URL+"/"+strings.ReplaceAll(filepath.Base(whl[0]), "+", "%2B") {
		t.Errorf("resolved wheels %+v, want torch with sha256 %s", got.Wheels, sum)
	}

	locked := filepath.Join(t.TempDir(), "versions.lock.env")
	if code := run([]string{"pins", "lock", rep.RunID, "--state-dir", state, "-o", locked}); code != 0 {
		t.Fatalf("pins lock exited %d", code)
	}
	if code := run([]string{"pins", "check", locked}); code != 0 {
		t.Fatalf("pins check of the locked file exited %d", code)
	}
	checkLocked(t, locked, image+"@"+digest, commit, sum)
	// The locked reference pulls (podman takes a tag and a digest together).
	if out, err := exec.Command("podman", append(podman, "pull", "--tls-verify=false", image+"@"+digest)...).CombinedOutput(); err != nil {
		t.Errorf("podman pull of the locked reference: %v\n%s", err, out)
	}
	if code := run([]string{"pins", "lock", rep.RunID, "--state-dir", state, "-o", locked}); code != exitUsage {
		t.Errorf("pins lock over an existing file exited %d, want %d", code, exitUsage)
	}

	// Nothing changed: the second build skips the step, and its lock comes
	// from the run that built it.
	rep2 := build()
	if rep2.Steps[0].Status != steps.OutcomeSkipped {
		t.Fatalf("second build: %+v", rep2.Steps[0])
	}
	locked2 := filepath.Join(t.TempDir(), "versions.lock.env")
	if code := run([]string{"pins", "lock", "last", "--state-dir", state, "-o", locked2}); code != 0 {
		t.Fatalf("pins lock last exited %d", code)
	}
	checkLocked(t, locked2, image+"@"+digest, commit, sum)
	if b, _ := os.ReadFile(locked2); !strings.Contains(string(b), "step fetch, run "+rep.RunID) {
		t.Errorf("the lock of the second run does not name the run that built the step:\n%s", b)
	}
}

// checkLocked reads a locked versions.env and checks its values.
func checkLocked(t *testing.T, path, image, commit, sum string) {
	t.Helper()
	pf, err := pins.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	t.Logf("%s:\n%s", path, b)
	want := map[string]string{"TOOLBOX_IMAGE": image, "VLLM_REF": commit, "TORCH_VERSION": "2.11.0+rocm7.14.0"}
	for name, v := range want {
		if p, ok := pf.Get(name); !ok || p.Value != v {
			t.Errorf("%s=%q, want %q:\n%s", name, p.Value, v, b)
		}
	}
	for _, s := range []string{"# the box, from the test's registry", "locked: main of ", "sha256:" + sum} {
		if !strings.Contains(string(b), s) {
			t.Errorf("the locked file lacks %q:\n%s", s, b)
		}
	}
	if len(pf.Floating()) != 0 {
		t.Errorf("still floating: %v", pf.Floating())
	}
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("sha256sum", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(out))[0]
}
