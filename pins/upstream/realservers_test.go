package upstream_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/haloforge/haloforge/pins"
	"github.com/haloforge/haloforge/pins/upstream"
	"github.com/haloforge/haloforge/pins/upstream/upstreamtest"
)

// TestRealServersEveryState runs `pins status`'s checks against real
// servers on the loopback interface: docker-registry holding images podman
// built and pushed, git daemon serving bare repositories, and a simple index
// of wheels pip built. The first status finds the pins ok (or unreachable
// where nothing listens, retired where nothing was pushed); then the test
// moves a tag, re-pushes an image tag, rebuilds a wheel, deletes a manifest,
// a git tag, a branch with its commit and a device wheel, and the second
// status must name each change on the right pin. A third, after the index
// stops, finds the wheel pins unreachable.
func TestRealServersEveryState(t *testing.T) {
	upstreamtest.Require(t)
	reg := upstreamtest.StartRegistry(t)
	gd := upstreamtest.StartGitDaemon(t)
	wheels := t.TempDir()
	upstreamtest.BuildWheels(t, wheels,
		upstreamtest.Wheel{Name: "rocm", Version: "7.14.0", Tag: "py3-none-linux_x86_64", Content: "rocm"},
		upstreamtest.Wheel{Name: "rocm-sdk-device-gfx1151", Version: "7.14.0", Tag: "py3-none-linux_x86_64", Content: "device"},
		upstreamtest.Wheel{Name: "torch", Version: "2.11.0+rocm7.14.0", Tag: "cp312-cp312-linux_x86_64", Content: "torch one"},
		upstreamtest.Wheel{Name: "amd-torch-device-gfx1151", Version: "2.11.0+rocm7.14.0", Tag: "py3-none-linux_x86_64", Content: "torch device"},
		upstreamtest.Wheel{Name: "torchvision", Version: "0.26.0+rocm7.14.0", Tag: "cp312-cp312-linux_x86_64", Content: "vision"},
		upstreamtest.Wheel{Name: "amd-torchvision-device-gfx1151", Version: "0.26.0+rocm7.14.0", Tag: "py3-none-linux_x86_64", Content: "vision device"},
		// torchaudio only for another Python: the pin cannot install on 3.12
		upstreamtest.Wheel{Name: "torchaudio", Version: "2.11.0+rocm7.14.0", Tag: "cp310-cp310-linux_x86_64", Content: "audio"},
	)
	ix := upstreamtest.StartIndex(t, wheels)

	vllmOne := reg.Push(t, "hf/vllm", "v1", "vllm one")
	reg.Push(t, "hf/ollama", "0.1", "ollama")
	base := reg.Push(t, "hf/base", "keep", "base")
	closedRegistry := upstreamtest.ClosedAddr(t)

	vllm := gd.NewRepo(t, "vllm")
	vllm.Commit("v0.27.0")
	vllmSHA := vllm.Commit("v0.27.1")
	vllm.Git("tag", "-a", "-m", "release", "v0.27.1")
	vllm.Git("push", "--quiet", "origin", "main", "--tags")
	llama := gd.NewRepo(t, "llama.cpp")
	llamaOld := llama.Commit("b10590")
	llama.Git("tag", "b10590")
	llamaNew := llama.Commit("b10591")
	llama.Git("push", "--quiet", "origin", "main", "--tags")
	ck := gd.NewRepo(t, "composable_kernel")
	ck.Commit("ck")
	ck.Git("tag", "rocm-7.1.1")
	ck.Git("push", "--quiet", "origin", "main", "--tags")
	aiter := gd.NewRepo(t, "aiter")
	aiter.Commit("main")
	aiter.Git("push", "--quiet", "origin", "main")
	aiter.Git("checkout", "--quiet", "-b", "experiment")
	aiterSHA := aiter.Commit("a commit only a branch holds")
	aiter.Git("push", "--quiet", "origin", "experiment")
	fa := gd.NewRepo(t, "flash-attention")
	faSHA := fa.Commit("an older commit")
	fa.Commit("the tip")
	fa.Git("push", "--quiet", "origin", "main")

	gitconfig := filepath.Join(t.TempDir(), "gitconfig")
	closedGit := upstreamtest.ClosedAddr(t)
	writeFile(t, gitconfig, fmt.Sprintf("[url \"git://%s/\"]\n\tinsteadOf = https://github.com/hf-test/\n[url \"git://%s/\"]\n\tinsteadOf = https://dead.example/\n", gd.Addr, closedGit))
	t.Setenv("GIT_CONFIG_GLOBAL", gitconfig)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")

	env := fmt.Sprintf(`GPU_TARGET=gfx1151
PYTHON_VERSION=3.12
THEROCK_INDEX_URL=%[1]s
ROCM_VERSION=7.14.0
TORCH_VERSION=2.11.0+rocm${ROCM_VERSION}
TORCHVISION_VERSION=0.26.0+rocm${ROCM_VERSION}
TORCHAUDIO_VERSION=2.11.0+rocm${ROCM_VERSION}
SOURCE_TORCH_INDEX_URL=https://%[2]s/simple/
SOURCE_TORCH_VERSION=2.8.0
VLLM_IMAGE=%[3]s/hf/vllm:v1
NIGHTLY_IMAGE=%[3]s/hf/vllm@%[4]s
OLLAMA_IMAGE=%[3]s/hf/ollama:0.1
SPOOF_BASE_IMAGE=%[3]s/hf/base
SPOOF_BASE_DIGEST=%[5]s
LLAMACPP_ROCM_IMAGE=%[3]s/hf/toolboxes:rocm-7.1.1
GFX803_BASE_IMAGE=%[2]s/hf/rocm:6.4.1
VLLM_REPO=https://github.com/hf-test/vllm.git
VLLM_REF=%[6]s
LLAMACPP_REPO=https://github.com/hf-test/llama.cpp.git
LLAMACPP_REF=b10590
CK_REPO=https://github.com/hf-test/composable_kernel.git
CK_REF=rocm-7.1.1
AITER_REPO=https://github.com/hf-test/aiter.git
AITER_REF=%[7]s
FLASH_ATTENTION_REPO=https://github.com/hf-test/flash-attention.git
FLASH_ATTENTION_REF=%[8]s
THEROCK_REPO=https://dead.example/TheRock.git
THEROCK_REF=418cd5f63abb7a604bad5874cd7b2e29334e640f
OLLAMA_PORT=11434
`, ix.URL, closedRegistry, reg.Addr, vllmOne, base, vllmSHA, aiterSHA, faSHA)
	f, err := pins.Parse("real.env", []byte(env))
	if err != nil {
		t.Fatal(err)
	}
	opts := upstream.Options{RootCAs: ix.Roots}
	ctx := upstreamtest.Ctx(t)

	first := upstream.Check(ctx, f, opts)
	expect(t, "first status", first, map[string]want{
		"THEROCK_INDEX_URL":      {upstream.OK, `the index answers \(PEP 691 JSON\)`},
		"ROCM_VERSION":           {upstream.OK, `rocm==7\.14\.0 \(py3\); rocm-sdk-device-gfx1151==7\.14\.0 \(py3\) on https://127\.0\.0\.1:\d+/simple/ \(PEP 691 JSON\)`},
		"TORCH_VERSION":          {upstream.OK, `torch==2\.11\.0\+rocm7\.14\.0 \(cp312\); amd-torch-device-gfx1151==`},
		"TORCHVISION_VERSION":    {upstream.OK, `amd-torchvision-device-gfx1151==0\.26\.0\+rocm7\.14\.0`},
		"TORCHAUDIO_VERSION":     {upstream.Retired, `torchaudio==2\.11\.0\+rocm7\.14\.0 is there, but only as cp310: none installs with Python 3\.12`},
		"SOURCE_TORCH_INDEX_URL": {upstream.Unreachable, `connection refused`},
		"SOURCE_TORCH_VERSION":   {upstream.Unreachable, `connection refused`},
		"VLLM_IMAGE":             {upstream.OK, `tag v1 → sha256:[0-9a-f]{12} \(OCI manifest\)`},
		"NIGHTLY_IMAGE":          {upstream.OK, `digest sha256:[0-9a-f]{12} exists in 127\.0\.0\.1:\d+/hf/vllm`},
		"OLLAMA_IMAGE":           {upstream.OK, `tag 0\.1 →`},
		"SPOOF_BASE_IMAGE":       {upstream.OK, `repository answers; SPOOF_BASE_DIGEST resolves in it`},
		"SPOOF_BASE_DIGEST":      {upstream.OK, `exists in`},
		"LLAMACPP_ROCM_IMAGE":    {upstream.Retired, `tag rocm-7\.1\.1 no longer exists in 127\.0\.0\.1:\d+/hf/toolboxes: HTTP 404 MANIFEST_UNKNOWN`},
		"GFX803_BASE_IMAGE":      {upstream.Unreachable, `127\.0\.0\.1:\d+: connection refused`},
		"VLLM_REPO":              {upstream.OK, `the repository answers \(2 branches and tags; VLLM_REF checked in it\)`},
		"VLLM_REF":               {upstream.OK, `the commit is the tip of main, v0\.27\.1`},
		"LLAMACPP_REF":           {upstream.OK, `tag b10590 → ` + llamaOld[:12]},
		"CK_REF":                 {upstream.OK, `tag rocm-7\.1\.1 →`},
		"AITER_REF":              {upstream.OK, `the commit is the tip of experiment`},
		"FLASH_ATTENTION_REF":    {upstream.OK, `the commit exists on the server \(fetched by SHA`},
		// insteadOf sends dead.example to a closed local port: the host named is the one git talks to
		"THEROCK_REPO": {upstream.Unreachable, `^127\.0\.0\.1:\d+: connection refused$`},
		"THEROCK_REF":  {upstream.Unreachable, `127\.0\.0\.1:\d+: connection refused`},
		"GPU_TARGET":   {upstream.Unchecked, `local setting`},
		"OLLAMA_PORT":  {upstream.Unchecked, `local setting`},
	})
	if first.NoNetwork != "" {
		t.Errorf("NoNetwork = %q, but most upstreams answered", first.NoNetwork)
	}
	cache := upstream.NewCache(first, "real.env", nil)

	// upstream moves on
	vllmTwo := reg.Push(t, "hf/vllm", "v1", "vllm two")
	reg.Delete(t, "hf/base", base)
	llama.Git("tag", "-f", "b10590", llamaNew)
	llama.Git("push", "--quiet", "--force", "origin", "refs/tags/b10590")
	ck.Git("push", "--quiet", "origin", ":refs/tags/rocm-7.1.1")
	aiter.Git("push", "--quiet", "origin", ":experiment")
	aiter.GitBare("reflog", "expire", "--expire=now", "--all")
	aiter.GitBare("gc", "--quiet", "--prune=now")
	upstreamtest.BuildWheels(t, wheels, upstreamtest.Wheel{Name: "torch", Version: "2.11.0+rocm7.14.0", Tag: "cp312-cp312-linux_x86_64", Content: "torch two"})
	if err := os.Remove(filepath.Join(wheels, "amd_torchvision_device_gfx1151-0.26.0+rocm7.14.0-py3-none-linux_x86_64.whl")); err != nil {
		t.Fatal(err)
	}
	ix.HTMLOnly(true) // and the index turns into a static PEP 503 one

	opts.Previous = cache
	second := upstream.Check(ctx, f, opts)
	expect(t, "second status", second, map[string]want{
		"VLLM_IMAGE":          {upstream.Moved, `moved since the status of .*: was sha256:` + vllmOne[7:19] + `, now sha256:` + vllmTwo[7:19]},
		"NIGHTLY_IMAGE":       {upstream.OK, `digest sha256:` + vllmOne[7:19] + ` exists`},
		"SPOOF_BASE_DIGEST":   {upstream.Retired, `manifest sha256:` + base[7:19] + ` is gone from 127\.0\.0\.1:\d+/hf/base: HTTP 404 MANIFEST_UNKNOWN`},
		"LLAMACPP_REF":        {upstream.Moved, `was ` + llamaOld[:12] + `, now ` + llamaNew[:12]},
		"CK_REF":              {upstream.Retired, `no tag or branch rocm-7\.1\.1 in https://github.com/hf-test/composable_kernel\.git any more`},
		"AITER_REF":           {upstream.Retired, `no branch or tag tip and the server no longer has it: git: not our ref`},
		"FLASH_ATTENTION_REF": {upstream.OK, `fetched by SHA`},
		"VLLM_REF":            {upstream.OK, `tip of`},
		"ROCM_VERSION":        {upstream.OK, `\(PEP 503 HTML\)`},
		"TORCH_VERSION":       {upstream.Moved, `moved since the status of .*: was torch-2\.11\.0\+rocm7\.14\.0-cp312-cp312-linux_x86_64\.whl sha256:[0-9a-f]{12}, now sha256:[0-9a-f]{12}`},
		"TORCHVISION_VERSION": {upstream.Retired, `amd-torchvision-device-gfx1151 is not on the index \(HTTP 404\)`},
		"THEROCK_REF":         {upstream.Unreachable, `connection refused`},
	})

	// the index goes away: its pins answer nothing
	ix.Close()
	third := upstream.Check(ctx, f, opts)
	expect(t, "third status", third, map[string]want{
		"THEROCK_INDEX_URL": {upstream.Unreachable, `127\.0\.0\.1:\d+: connection refused`},
		"ROCM_VERSION":      {upstream.Unreachable, `connection refused`},
		"TORCH_VERSION":     {upstream.Unreachable, `connection refused`},
	})
}

type want struct {
	state  upstream.State
	detail string
}

func expect(t *testing.T, what string, rep *upstream.Report, wants map[string]want) {
	t.Helper()
	got := map[string]upstream.Result{}
	for _, r := range rep.Pins {
		got[r.Name] = r
	}
	for name, w := range wants {
		r, ok := got[name]
		if !ok {
			t.Errorf("%s: no result for %s", what, name)
			continue
		}
		if r.State != w.state || !regexp.MustCompile(w.detail).MatchString(r.Detail) {
			t.Errorf("%s: %s = %s %q\n\twant %s matching %q", what, name, r.State, r.Detail, w.state, w.detail)
		}
	}
	if t.Failed() || testing.Verbose() {
		var sb strings.Builder
		for _, r := range rep.Pins {
			fmt.Fprintf(&sb, "\n  %-26s %-11s %s", r.Name, r.State, r.Detail)
		}
		t.Logf("%s:%s", what, sb.String())
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRealRegistryLogins: Debian's docker-registry behind each login a
// registry asks for, serving images podman pushed: a token service (the
// registry verifies every token it signs) with an OCI image index and a
// Docker manifest list, a private repository that wants the user's
// credentials, Basic auth whose credentials come only from an auth.json,
// and a rate limit with Retry-After in front of it all.
func TestRealRegistryLogins(t *testing.T) {
	upstreamtest.Require(t)
	reg := upstreamtest.StartRegistry(t)
	reg.PushFormat(t, "hf/app", "oci-one", "oci one", "oci")
	reg.PushFormat(t, "hf/app", "oci-two", "oci two", "oci")
	reg.PushFormat(t, "hf/app", "docker-one", "docker one", "v2s2")
	reg.PushFormat(t, "hf/app", "docker-two", "docker two", "v2s2")
	index := reg.PushList(t, "hf/multi", "index", "oci", "hf/app:oci-one", "hf/app:oci-two")
	list := reg.PushList(t, "hf/multi", "list", "v2s2", "hf/app:docker-one", "hf/app:docker-two")
	private := reg.Push(t, "private/app", "v1", "private")
	plain := reg.Push(t, "hf/plain", "v1", "plain")
	reg.Push(t, "hf/limited", "v1", "limited")

	ts := upstreamtest.StartTokenService(t, "alice", "alice-secret")
	tokenReg := reg.WithToken(t, ts)
	basicReg := reg.WithBasic(t, "bob", "bob-secret")
	limiter := upstreamtest.StartRateLimiter(t, tokenReg, "120")
	limiter.Limit("hf/limited")

	env := fmt.Sprintf(`VLLM_IMAGE=%[1]s/hf/multi:index
NIGHTLY_IMAGE=%[1]s/hf/multi:list
OLLAMA_IMAGE=%[1]s/private/app:v1
LLAMACPP_ROCM_IMAGE=%[2]s/hf/plain:v1
TOOLBOX_IMAGE=%[3]s/hf/limited:v1
`, tokenReg, basicReg, limiter.Addr)
	f, err := pins.Parse("logins.env", []byte(env))
	if err != nil {
		t.Fatal(err)
	}
	ctx := upstreamtest.Ctx(t)
	home := t.TempDir() // no credentials of this machine's user take part
	t.Setenv("HOME", home)
	t.Setenv("XDG_RUNTIME_DIR", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("DOCKER_CONFIG", "")

	t.Run("anonymous", func(t *testing.T) {
		t.Setenv("REGISTRY_AUTH_FILE", "")
		rep := upstream.Check(ctx, f, upstream.Options{})
		expect(t, "anonymous", rep, map[string]want{
			"VLLM_IMAGE":          {upstream.OK, `^tag index → ` + index[:19] + ` \(OCI image index\)$`},
			"NIGHTLY_IMAGE":       {upstream.OK, `^tag list → ` + list[:19] + ` \(manifest list\)$`},
			"OLLAMA_IMAGE":        {upstream.Retired, `^tag v1 no longer exists in 127\.0\.0\.1:\d+/private/app: HTTP 401: no anonymous pull \(removed, or private\)$`},
			"LLAMACPP_ROCM_IMAGE": {upstream.Unchecked, `^the registry wants a login \(Basic auth\) and none for 127\.0\.0\.1:\d+ is in podman's or docker's credential files \(podman login 127\.0\.0\.1:\d+\)$`},
			"TOOLBOX_IMAGE":       {upstream.Unreachable, `^127\.0\.0\.1:\d+: rate-limited \(HTTP 429\); the server asks to wait 2m00s \(Retry-After: 120\)$`},
		})
		if got := find(rep, "VLLM_IMAGE").Resolved; got != index {
			t.Errorf("VLLM_IMAGE resolved %s, want the index's digest %s", got, index)
		}
		if got := find(rep, "NIGHTLY_IMAGE").Resolved; got != list {
			t.Errorf("NIGHTLY_IMAGE resolved %s, want the list's digest %s", got, list)
		}
		if rep.NoNetwork != "" {
			t.Errorf("NoNetwork = %q", rep.NoNetwork)
		}
		if n := limiter.Answered429(); n != 1 {
			t.Errorf("%d answers of 429; one, and the registry is left alone", n)
		}
	})

	t.Run("auth.json", func(t *testing.T) {
		// podman login's file, found through REGISTRY_AUTH_FILE: bob for the
		// Basic registry, alice for the token service's registry
		t.Setenv("REGISTRY_AUTH_FILE", upstreamtest.AuthFile(t, map[string][2]string{
			basicReg: {"bob", "bob-secret"}, tokenReg + "/private": {"alice", "alice-secret"},
		}))
		rep := upstream.Check(ctx, f, upstream.Options{})
		expect(t, "with auth.json", rep, map[string]want{
			"OLLAMA_IMAGE":        {upstream.OK, `^tag v1 → ` + private[:19] + ` \(OCI manifest\); asked with alice's credentials from .*/auth\.json$`},
			"LLAMACPP_ROCM_IMAGE": {upstream.OK, `^tag v1 → ` + plain[:19] + ` \(OCI manifest\); asked with bob's credentials from .*/auth\.json$`},
			"VLLM_IMAGE":          {upstream.OK, `^tag index → ` + index[:19] + ` \(OCI image index\)$`},
		})
		var alice bool
		for _, a := range ts.Asked() {
			alice = alice || a == "alice repository:private/app:pull"
		}
		if !alice {
			t.Errorf("the token service was not asked as alice: %v", ts.Asked())
		}
	})

	t.Run("refused", func(t *testing.T) {
		t.Setenv("REGISTRY_AUTH_FILE", upstreamtest.AuthFile(t, map[string][2]string{
			basicReg: {"bob", "not-bob-secret"}, tokenReg: {"alice", "wrong"},
		}))
		rep := upstream.Check(ctx, f, upstream.Options{})
		expect(t, "refused", rep, map[string]want{
			"LLAMACPP_ROCM_IMAGE": {upstream.Unchecked, `^the registry refused bob's credentials from .*/auth\.json \(HTTP 401\): log in again \(podman login 127\.0\.0\.1:\d+\)$`},
			"OLLAMA_IMAGE":        {upstream.Unchecked, `^the token service at localhost:\d+ refused alice's credentials from .*/auth\.json: HTTP 401 UNAUTHORIZED$`},
		})
	})
}

func find(rep *upstream.Report, name string) upstream.Result {
	for _, r := range rep.Pins {
		if r.Name == name {
			return r
		}
	}
	return upstream.Result{}
}
