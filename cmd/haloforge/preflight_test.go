package main

import (
	"path/filepath"
	"testing"

	"github.com/haloforge/haloforge/pins/upstream/upstreamtest"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestPlanAsksUpstreamRealIndexes runs a newcomer's plan and build (the
// built-in pins, no versions.env) against real simple indexes of wheels pip
// built, served under the URLs the pins name (AMD's next index for the
// recommended set, the multi-arch index for the previous one) through an
// HTTPS proxy on the loopback interface (testdata/preflight-real). Every
// other upstream is a tunnel the proxy closes: the test never leaves the
// machine.
func TestPlanAsksUpstreamRealIndexes(t *testing.T) {
	next, old := upstreamtest.TheRockStacks(t)
	hi := upstreamtest.StartHostIndex(t, map[string]string{
		"https://stable.repo.amd.com/rocm/whl-next/": next,
		"https://repo.amd.com/rocm/whl-multi-arch/":  old,
	})
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/preflight-real",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("REPO", repoRoot())
			env.Setenv("SCRIPTS", filepath.Join(repoRoot(), "steps", "runner", "testdata", "tracks"))
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, ".state"))
			env.Setenv("NO_COLOR", "1")
			env.Setenv("SSL_CERT_FILE", hi.CertFile)
			for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"} {
				env.Setenv(k, hi.Proxy)
			}
			env.Setenv("NO_PROXY", "")
			env.Setenv("no_proxy", "")
			env.Setenv(offlineEnv, "0") // the other scripts' tests skip the check
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// upstream-retires: AMD takes the newcomer's torch wheels off the next index
			"upstream-retires": func(ts *testscript.TestScript, _ bool, _ []string) {
				upstreamtest.RemoveWheels(t, next, "torch", "amd-torch-device-gfx1151")
			},
		},
	})
}
