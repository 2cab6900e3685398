package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/steps/verify/standin"
)

func TestMain(m *testing.M) {
	// The runner starts this test binary as each step's supervisor, as
	// main does for the haloforge binary.
	if runner.IsSupervise(os.Args) {
		os.Exit(runner.Supervise(os.Args[2:]))
	}
	// No test here reaches AMD's indexes or the registries: plan and build
	// skip their upstream check of the pins, except in the tests of that
	// check, which serve the upstreams themselves and set it to 0.
	if _, set := os.LookupEnv(offlineEnv); !set {
		os.Setenv(offlineEnv, "1")
	}
	testscript.Main(m, map[string]func(){
		"haloforge": func() { os.Exit(run(os.Args[1:])) },
	})
}

// TestScripts runs the CLI scripts in testdata/script/*.txtar. Each script
// starts in a fresh $WORK with $REPO pointing at the checkout, so scripts can
// copy the real versions.env, scripts and fixtures.
func TestScripts(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(file), "..", "..")
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("REPO", repo)
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, ".state"))
			env.Setenv("NO_COLOR", "1")
			env.Setenv("TRACKS", strconv.Itoa(len(steps.Catalogue()))) // scripts count tracks from the catalogue
			return nil
		},
		// [amdgpu]: this machine has an AMD GPU driver (/dev/kfd), so the
		// gpu and kfd-access checks may pass: a script that needs them to
		// fail skips.
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// printed [carry=FLAG=VALUE]… [sub=<x>=VALUE]… [ok=RE]… [want=N]:
			// every haloforge command the last command printed runs as
			// printed, with the flow's flags (printed_test.go).
			"printed": printedCmd,
			// standin MODE [FLAVOUR]: a stand-in OpenAI-compatible server on
			// loopback (steps/verify/standin: vLLM cannot run here), its
			// URL in $STANDIN_URL, stopped when the script ends.
			"standin": func(ts *testscript.TestScript, _ bool, args []string) {
				if len(args) < 1 || len(args) > 2 {
					ts.Fatalf("usage: standin MODE [vllm|llama]")
				}
				fl := standin.VLLM
				if len(args) == 2 {
					fl = standin.Flavour(args[1])
				}
				s := standin.New(standin.Mode(args[0]), fl)
				ts.Defer(s.Close)
				ts.Setenv("STANDIN_URL", s.URL)
			},
		},
		Condition: func(cond string) (bool, error) {
			if cond == "amdgpu" {
				_, err := os.Stat("/dev/kfd")
				return err == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}
