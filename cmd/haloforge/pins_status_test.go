package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/creack/pty"
	"github.com/haloforge/haloforge/pins/upstream/upstreamtest"
	"github.com/rogpeppe/go-internal/testscript"
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// TestPinsUseAsksOnATerminal: on a real terminal `pins use` asks, and
// writes only on y/yes.
func TestPinsUseAsksOnATerminal(t *testing.T) {
	orig := []byte("GPU_TARGET=gfx1151\n# TheRock's index\nTHEROCK_INDEX_URL=https://repo.amd.com/rocm/whl-multi-arch/\nROCM_VERSION=7.14.0\n" +
		"TORCH_VERSION=2.11.0+rocm${ROCM_VERSION}\nTORCHVISION_VERSION=0.26.0+rocm${ROCM_VERSION}\nTORCHAUDIO_VERSION=2.11.0+rocm${ROCM_VERSION}\n" +
		"VLLM_IMAGE=docker.io/rocm/vllm-dev:nightly\n")
	for _, tc := range []struct {
		answer  string
		written bool
	}{{"y\n", true}, {"YES\n", true}, {"\n", false}, {"n\n", false}, {"yep\n", false}} {
		t.Run(strings.TrimSpace(tc.answer), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "versions.env")
			if err := os.WriteFile(path, orig, 0o640); err != nil {
				t.Fatal(err)
			}
			ptmx, tty, err := pty.Open()
			if err != nil {
				t.Skipf("no pty here: %v", err)
			}
			defer ptmx.Close()
			defer tty.Close()
			if _, err := ptmx.Write([]byte(tc.answer)); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			if err := runPinsUse(pinsUseOptions{globalOptions: &globalOptions{pins: pinFlags{pins: path}}, set: "rocm-10.0"}, tty, &out, &errOut); err != nil {
				t.Fatal(err)
			}
			// The count follows the built-in set; the question's wording does not.
			if !regexp.MustCompile(`write \d+ changed pins into ` + regexp.QuoteMeta(path) + ` \(the old file is kept as a backup\)\? \[y/N\] `).MatchString(errOut.String()) {
				t.Errorf("no question on stderr: %q", errOut.String())
			}
			now, _ := os.ReadFile(path)
			backups, _ := filepath.Glob(path + ".bak-*")
			switch {
			case tc.written && (bytes.Equal(now, orig) || len(backups) != 1):
				t.Errorf("answer %q: not written (backups %v)", tc.answer, backups)
			case !tc.written && (!bytes.Equal(now, orig) || len(backups) != 0):
				t.Errorf("answer %q: written anyway", tc.answer)
			}
			if tc.written {
				if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
					t.Errorf("mode %v after the rewrite, want 0640", st.Mode().Perm())
				}
				if b, _ := os.ReadFile(backups[0]); !bytes.Equal(b, orig) {
					t.Error("the backup is not the old file")
				}
			}
		})
	}
}

// TestPinsStatusRealServers runs the CLI against real servers on the
// loopback interface (testdata/pins-real): docker-registry with images
// podman pushed, git daemon, and a simple index of wheels pip built. The
// rest of versions.env points at the real upstreams behind a proxy that
// refuses, so the test never leaves the machine.
func TestPinsStatusRealServers(t *testing.T) {
	upstreamtest.Require(t)
	reg := upstreamtest.StartRegistry(t)
	gd := upstreamtest.StartGitDaemon(t)
	wheelDir := t.TempDir()
	torch := func(content string) upstreamtest.Wheel {
		return upstreamtest.Wheel{Name: "torch", Version: "2.11.0+rocm10.0.0", Tag: "cp312-cp312-linux_x86_64", Content: content}
	}
	upstreamtest.BuildWheels(t, wheelDir,
		upstreamtest.Wheel{Name: "rocm", Version: "10.0.0", Tag: "py3-none-linux_x86_64", Content: "rocm"},
		upstreamtest.Wheel{Name: "rocm-sdk-device-gfx1151", Version: "10.0.0", Tag: "py3-none-linux_x86_64", Content: "device"},
		torch("one"),
		upstreamtest.Wheel{Name: "amd-torch-device-gfx1151", Version: "2.11.0+rocm10.0.0", Tag: "py3-none-linux_x86_64", Content: "torch device"},
		upstreamtest.Wheel{Name: "torchvision", Version: "0.26.0+rocm10.0.0", Tag: "cp312-cp312-linux_x86_64", Content: "vision"},
		upstreamtest.Wheel{Name: "amd-torchvision-device-gfx1151", Version: "0.26.0+rocm10.0.0", Tag: "py3-none-linux_x86_64", Content: "vision device"},
		upstreamtest.Wheel{Name: "torchaudio", Version: "2.11.0+rocm10.0.0", Tag: "cp312-cp312-linux_x86_64", Content: "audio"},
	)
	ix := upstreamtest.StartIndex(t, wheelDir)
	ix.HTMLOnly(true) // AMD's indexes are static PEP 503 pages

	vllmDigest := reg.Push(t, "hf/vllm", "rocm7.1.1", "vllm one")
	base := reg.Push(t, "hf/vllm-dev", "base", "spoof base")
	vllm := gd.NewRepo(t, "vllm")
	vllmSHA := vllm.Commit("v0.27.1")
	vllm.Git("tag", "v0.27.1")
	vllm.Git("push", "--quiet", "origin", "main", "--tags")
	llama := gd.NewRepo(t, "llama.cpp")
	llama.Commit("b10590")
	llama.Git("tag", "b10590")
	llamaNew := llama.Commit("b10591")
	llama.Git("push", "--quiet", "origin", "main", "--tags")

	gitconfig := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(gitconfig, []byte(fmt.Sprintf("[url \"git://%s/\"]\n\tinsteadOf = https://git.hf-test.example/\n", gd.Addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	overrides := map[string]string{
		"THEROCK_INDEX_URL": ix.URL,
		"VLLM_IMAGE":        reg.Image("hf/vllm", "rocm7.1.1"),
		"SPOOF_BASE_IMAGE":  reg.Addr + "/hf/vllm-dev",
		"SPOOF_BASE_DIGEST": base,
		"VLLM_REPO":         "https://git.hf-test.example/vllm.git",
		"VLLM_REF":          vllmSHA,
		"LLAMACPP_REPO":     "https://git.hf-test.example/llama.cpp.git",
		"LLAMACPP_REF":      "b10590",
		// never pushed: retired from the first status
		"LLAMACPP_ROCM_IMAGE": reg.Image("hf/toolboxes", "rocm-7.1.1"),
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/pins-real",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("REPO", repoRoot())
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, ".state"))
			env.Setenv("NO_COLOR", "1")
			env.Setenv("SSL_CERT_FILE", ix.CertFile)
			env.Setenv("GIT_CONFIG_GLOBAL", gitconfig)
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			// the real upstreams of the other pins: refused, never reached
			for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"} {
				env.Setenv(k, "http://127.0.0.1:1")
			}
			env.Setenv("NO_PROXY", "127.0.0.1,localhost")
			env.Setenv("no_proxy", "127.0.0.1,localhost")
			env.Setenv("VLLM_DIGEST", vllmDigest[7:19])
			env.Setenv("BASE_DIGEST", base[7:19])
			env.Setenv("LLAMA_NEW", llamaNew[:12])
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// realpins FILE: the shipped versions.env with the local upstreams
			"realpins": func(ts *testscript.TestScript, _ bool, args []string) {
				orig, err := os.ReadFile(filepath.Join(repoRoot(), "versions.env"))
				ts.Check(err)
				var out []string
				for _, line := range strings.Split(string(orig), "\n") {
					if name, _, ok := strings.Cut(line, "="); ok {
						if v, over := overrides[name]; over {
							line = name + "=" + v
						}
					}
					out = append(out, line)
				}
				ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(strings.Join(out, "\n")), 0o644))
			},
			// upstream-moves: what happens upstream between two statuses
			"upstream-moves": func(ts *testscript.TestScript, _ bool, _ []string) {
				reg.Push(t, "hf/vllm", "rocm7.1.1", "vllm two")
				reg.Delete(t, "hf/vllm-dev", base)
				llama.Git("tag", "-f", "b10590", llamaNew)
				llama.Git("push", "--quiet", "--force", "origin", "refs/tags/b10590")
				upstreamtest.BuildWheels(t, wheelDir, torch("two"))
				ts.Check(os.Remove(filepath.Join(wheelDir, "amd_torchvision_device_gfx1151-0.26.0+rocm10.0.0-py3-none-linux_x86_64.whl")))
			},
		},
	})
}
