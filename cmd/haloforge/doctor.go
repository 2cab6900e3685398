package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/steps"
)

type doctorOpts struct {
	json     bool
	verbose  bool
	bundle   string
	collect  string
	stateDir string      // where builds write: disk-space judges its free space; host-fix backups
	host     hostfixOpts // --plan, --apply, --verify, --rollback (doctor_plan.go)
}

func newDoctorCmd() *cobra.Command {
	var o doctorOpts
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the GPU, kernel and host, and print the exact fixes",
		Long: "doctor collects facts about this machine (or reads a diagnostics bundle with --bundle), " +
			"checks the GPU, kernel, firmware, memory settings, groups and container tools, and prints " +
			"what to change. It changes nothing itself. Exit 1 when a check fails.",
		Example: "  haloforge doctor\n  haloforge doctor -v\n  haloforge doctor --collect haloforge-bundle.tar.gz\n" +
			"  haloforge doctor --bundle ./someone-elses-bundle --json",
		Args: hostfixArgs(&o.host),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.host.active() {
				return runHostfix(cmd, o, args)
			}
			return runDoctor(cmd, o)
		},
	}
	f := cmd.Flags()
	jsonFlag(cmd, &o.json, "print the report as JSON")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "show every check, its details and the facts behind it")
	f.StringVar(&o.bundle, "bundle", "", "analyse a diagnostics bundle (directory or .tar.gz) instead of this machine")
	f.StringVar(&o.collect, "collect", "", "write this machine's bundle to DIR or FILE.tar.gz (to attach to a bug report)")
	stateDirFlag(cmd, &o.stateDir)
	cmd.MarkFlagsMutuallyExclusive("bundle", "collect")
	addHostfixFlags(cmd, &o.host)
	return cmd
}

func runDoctor(cmd *cobra.Command, o doctorOpts) error {
	b, err := doctorBundle(cmdContext(cmd), o)
	if err != nil {
		return err
	}
	if o.collect != "" {
		if err := writeBundle(b, o.collect); err != nil {
			return usageErr(err) // an unwritable --collect path is bad input
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "Wrote %d files to %s. Attach it to your bug report; it holds command outputs,\n"+
			"sysfs values, how it boots (bootloader.txt, /etc/default/grub, /etc/kernel/cmdline, /etc/modprobe.d, boot entries)\n"+
			"and GPU-related environment variables only (no other environment, no home files).\n", len(b.Names()), o.collect)
	}
	r := detect.Analyse(b)
	r.RecommendedTrack = steps.RecommendFor(r)
	out := cmd.OutOrStdout()
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return failedErr(err)
		}
	} else if err := r.WriteText(out, o.verbose); err != nil {
		return failedErr(err)
	}
	if len(r.Failed()) > 0 {
		return silentExit(exitFailed)
	}
	return nil
}

func doctorBundle(ctx context.Context, o doctorOpts) (*detect.Bundle, error) {
	if o.bundle != "" {
		b, err := detect.ReadBundle(o.bundle)
		if err != nil {
			return nil, usageErr(err)
		}
		return b, nil
	}
	b, err := detect.Collect(ctx, collectOptions(stateDirOrDefault(o.stateDir)))
	if err != nil {
		return nil, failedErr(err)
	}
	addBootEvidence(b)
	return b, nil
}

func writeBundle(b *detect.Bundle, dst string) error {
	if strings.HasSuffix(dst, ".tar.gz") || strings.HasSuffix(dst, ".tgz") {
		return b.WriteTarGz(dst)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("write bundle: %w", err)
	}
	return b.WriteDir(dst)
}
