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

func init() { register(newDoctorCmd) }

type doctorOpts struct {
	json    bool
	verbose bool
	bundle  string
	collect string
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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDoctor(cmd, o) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.json, "json", false, "print the report as JSON")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "show every check, its details and the facts behind it")
	f.StringVar(&o.bundle, "bundle", "", "analyse a diagnostics bundle (directory or .tar.gz) instead of this machine")
	f.StringVar(&o.collect, "collect", "", "write this machine's bundle to DIR or FILE.tar.gz (to attach to a bug report)")
	cmd.MarkFlagsMutuallyExclusive("bundle", "collect")
	return cmd
}

func runDoctor(cmd *cobra.Command, o doctorOpts) error {
	b, err := doctorBundle(cmd.Context(), o)
	if err != nil {
		return err
	}
	if o.collect != "" {
		if err := writeBundle(b, o.collect); err != nil {
			return usageErr(err) // an unwritable --collect path is bad input
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "Wrote %d files to %s. Attach it to your bug report; it holds command outputs,\n"+
			"sysfs values and GPU-related environment variables only (no other environment, no home files).\n", len(b.Names()), o.collect)
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
	if ctx == nil {
		ctx = context.Background()
	}
	b, err := detect.Collect(ctx, detect.CollectOptions{Root: "/", Version: version})
	if err != nil {
		return nil, failedErr(err)
	}
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
