package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/haloforge/haloforge/steps"
)

// TestBlockingChecksStopTheBuild runs the real doctor collection on this
// machine, which has no GPU: the therock-toolbox track's blocking `gpu`
// check fails, so build must stop with exit 1 and the fix, unless told to
// go on.
func TestBlockingChecksStopTheBuild(t *testing.T) {
	if _, err := os.Stat("/dev/kfd"); err == nil {
		t.Skip("this machine has an AMD GPU driver: the gpu check may pass here")
	}
	tr, err := steps.Lookup("therock-toolbox")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = blockingChecks(context.Background(), &out, tr, t.TempDir(), false)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitFailed {
		t.Fatalf("blockingChecks = %v, want exit %d", err, exitFailed)
	}
	for _, want := range []string{"✗ check GPU (gpu): ", "blocks the build", "  fix: ", "--ignore-checks"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if err := blockingChecks(context.Background(), &out, tr, t.TempDir(), true); err != nil {
		t.Fatalf("with --ignore-checks: %v", err)
	}
	if !strings.Contains(out.String(), "✗ check GPU (gpu): ") || !strings.Contains(out.String(), "not blocking") {
		t.Errorf("ignored failures must still be shown:\n%s", out.String())
	}
}

// TestResumeCommandRepeatsTheFlagsThatMatter: pasted, the resume command
// uses the same pins, scripts and state dir, goes past the blocking checks
// again when they were ignored, and narrows --from and --only to what is
// left after the step that failed (the steps before it succeeded).
func TestResumeCommandRepeatsTheFlagsThatMatter(t *testing.T) {
	g := &globalOptions{scripts: "s", stateDir: "/x/state", pins: pinFlags{pins: "p.env", sets: []string{"VLLM_PORT=9000", "LLAMA_MODEL=/m/a b.gguf"}}}
	flags := " --pins p.env --set VLLM_PORT=9000 --set 'LLAMA_MODEL=/m/a b.gguf' --scripts s --state-dir /x/state"
	for _, tc := range []struct {
		name string
		o    buildOptions
		step string
		want string
	}{
		{"plain", buildOptions{track: "vllm-image", globalOptions: g}, "launcher", "haloforge build --track vllm-image --resume" + flags},
		{"--from, narrowed to the failed step", buildOptions{track: "therock-toolbox", ignoreChecks: true, from: "rocm", globalOptions: g}, "vllm",
			"haloforge build --track therock-toolbox --resume --from vllm --ignore-checks" + flags},
		{"--only, from the failed step on", buildOptions{track: "therock-toolbox", only: []string{"tools", "rocm", "vllm"}, globalOptions: g}, "rocm",
			"haloforge build --track therock-toolbox --resume --only rocm,vllm" + flags},
		{"--from, no step known", buildOptions{track: "therock-toolbox", from: "rocm", globalOptions: g}, "",
			"haloforge build --track therock-toolbox --resume --from rocm" + flags},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resumeCommand(tc.o, tc.step); got != tc.want {
				t.Errorf("resumeCommand(%+v, %q) = %q\nwant %q", tc.o, tc.step, got, tc.want)
			}
		})
	}
}

// TestOutcomeExitCodes maps how a run ended to docs/cli.md's exit codes; a
// run that could not verify its outcome is not a failure.
func TestOutcomeExitCodes(t *testing.T) {
	ctx := context.Background()
	for status, want := range map[string]int{
		"": exitOK, steps.OutcomeSucceeded: exitOK, steps.OutcomeNotVerified: exitOK,
		steps.OutcomeFailed: exitFailed, steps.OutcomeInterrupted: exitInterrupted,
	} {
		if got := exitCode(outcomeErr(ctx, status, false, nil)); got != want {
			t.Errorf("status %q: exit %d, want %d", status, got, want)
		}
	}
}
