package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps"
)

type doctorOptions struct {
	*globalOptions // --state-dir: where builds write, whose free space disk-space judges; host-fix backups
	json           bool
	verbose        bool
	bundle         string
	collect        string
	host           hostfixOptions // --plan, --apply, --verify, --rollback (doctor_plan.go)
}

func newDoctorCmd(g *globalOptions) *cobra.Command {
	o := doctorOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the GPU, kernel and host, and print the exact fixes",
		Long: "doctor collects facts about this machine (or reads a diagnostics bundle with --bundle), " +
			"checks the GPU, kernel, firmware, memory settings, groups and container tools, and prints " +
			"what to change. It changes nothing itself. Exit 1 when a check fails; with --collect, exit 0 once the " +
			"bundle is written, so that `haloforge doctor --collect bug.tar.gz && …` attaches it on exactly the " +
			"machines that need it.",
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
	f.StringVar(&o.bundle, "bundle", "", "analyse the diagnostics bundle DIR or FILE.tar.gz instead of this machine")
	f.StringVar(&o.collect, "collect", "", "write this machine's bundle to DIR or FILE.tar.gz (for a bug report; never overwrites)")
	addHostfixFlags(cmd, &o.host)
	return cmd
}

func runDoctor(cmd *cobra.Command, o doctorOptions) error {
	if o.bundle != "" && o.collect != "" {
		return usageErr(errors.New("--bundle reads a bundle and --collect writes this machine's: give one of them"))
	}
	if o.host.root != "" {
		// Plain doctor reads this machine (or --bundle); a --root it would
		// silently ignore is refused instead.
		return usageErr(errors.New("--root goes with --plan, --apply, --verify and --rollback (the system whose boot files they read or change); plain doctor checks this machine, or --bundle FILE"))
	}
	if err := checkCollectPath(o.collect); err != nil {
		return err
	}
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
		if err := writeDoctorJSON(out, r); err != nil {
			return failedErr(err)
		}
	} else if err := writeDoctorText(out, r, o.verbose, colorOut(cmd)); err != nil {
		return failedErr(err)
	}
	if len(r.Failed()) > 0 && o.collect == "" {
		return silentExit(exitFailed)
	}
	return nil
}

// checkCollectPath refuses, before anything is collected, a --collect
// target that would not be what the user expects: an existing file or
// directory (nothing is overwritten), or an archive type haloforge does
// not write.
func checkCollectPath(dst string) error {
	if dst == "" {
		return nil
	}
	if _, err := os.Lstat(dst); err == nil {
		return usageErr(fmt.Errorf("--collect %s already exists; give a new name (nothing is overwritten)", dst))
	}
	switch ext := strings.ToLower(filepath.Ext(dst)); ext {
	case ".zip", ".tar", ".gz", ".xz", ".bz2", ".zst", ".tgz":
		if ext != ".tgz" && !strings.HasSuffix(strings.ToLower(dst), ".tar.gz") {
			return usageErr(fmt.Errorf("--collect %s: haloforge writes a directory or a .tar.gz, not a %s file", dst, ext))
		}
	}
	if parent := filepath.Dir(dst); !dirExists(parent) {
		return usageErr(fmt.Errorf("--collect %s: directory %s does not exist", dst, parent))
	}
	return nil
}

// writeDoctorText prints the report for people; on a terminal the marks
// are coloured as flutter doctor colours them. The summary also counts
// the checks that could not run here, which -v explains.
func writeDoctorText(w io.Writer, r *detect.Report, verbose, color bool) error {
	var b strings.Builder
	if err := r.WriteText(&b, verbose); err != nil {
		return err
	}
	out := b.String()
	skipped, noAMD := 0, 0
	for _, c := range r.Checks {
		switch {
		case c.Status == detect.StatusSkip && c.Summary == detect.SkipNoAMD:
			noAMD++
		case c.Status == detect.StatusSkip:
			skipped++
		}
	}
	if !verbose && noAMD > 0 {
		out += fmt.Sprintf("- %s about an AMD GPU %s skipped: this machine has none.\n", text.Plural(noAMD, "check"), map[bool]string{true: "was", false: "were"}[noAMD == 1])
	}
	if !verbose && skipped > 0 {
		out += fmt.Sprintf("- %s could not run with what was collected here; `haloforge doctor -v` says why.\n", text.Plural(skipped, "check"))
	}
	out = doctorLayout(out, termWidth(w))
	if color {
		out = colorMarks(out)
	}
	_, err := io.WriteString(w, out)
	return err
}

// doctorLayout wraps doctor's text for a terminal of width columns (0: not
// a terminal, the text as it is), as flutter doctor does rather than
// letting the terminal cut words: a check's line wraps between words under
// its summary, a fix line by its kind (prose between words, a command only
// between its shell words with " \", so that it is copied whole).
func doctorLayout(out string, width int) string {
	if width <= 0 {
		return out
	}
	width-- // the last column left free: a full row would wrap on some terminals
	var rows []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		switch {
		case len([]rune(l)) <= width:
			rows = append(rows, l)
		case strings.HasPrefix(l, "    "):
			for _, r := range text.FixRows(strings.TrimPrefix(l, "    "), width-4) {
				rows = append(rows, "    "+r)
			}
		default:
			rows = append(rows, text.Wrap(l, width, "    ")...)
		}
	}
	return strings.Join(rows, "\n") + "\n"
}

// colorMarks paints doctor's [✓] [!] [✗] marks at the start of lines.
func colorMarks(text string) string {
	r := strings.NewReplacer(
		"\n[✓]", "\n\x1b[32m[✓]\x1b[0m",
		"\n[!]", "\n\x1b[33m[!]\x1b[0m",
		"\n[✗]", "\n\x1b[31m[✗]\x1b[0m",
		"\n[-]", "\n\x1b[2m[-]\x1b[0m",
	)
	return strings.TrimPrefix(r.Replace("\n"+text), "\n")
}

// doctorJSONSchema names the shape of doctor --json, for scripts that
// check what they read.
const doctorJSONSchema = "haloforge/doctor/v1"

// writeDoctorJSON prints the report as JSON with its schema name and a
// summary of the checks first, then the report's own fields in order.
func writeDoctorJSON(w io.Writer, r *detect.Report) error {
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	counts := map[detect.Status]int{}
	for _, c := range r.Checks {
		counts[c.Status]++
	}
	type summary struct {
		OK   int `json:"ok"`
		Warn int `json:"warn"`
		Fail int `json:"fail"`
		Skip int `json:"skip"`
	}
	head, err := json.Marshal(struct {
		Schema  string  `json:"schema"`
		Summary summary `json:"summary"`
	}{Schema: doctorJSONSchema, Summary: summary{
		counts[detect.StatusOK], counts[detect.StatusWarn], counts[detect.StatusFail], counts[detect.StatusSkip]}})
	if err != nil {
		return err
	}
	joined := append(head[:len(head)-1:len(head)-1], ',')
	joined = append(joined, body[1:]...)
	var out bytes.Buffer
	if err := json.Indent(&out, joined, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = out.WriteTo(w)
	return err
}

func doctorBundle(ctx context.Context, o doctorOptions) (*detect.Bundle, error) {
	if o.bundle != "" {
		b, err := detect.ReadBundle(o.bundle)
		if err != nil {
			return nil, usageErr(err)
		}
		return b, nil
	}
	b, err := detect.Collect(ctx, collectOptions(o.stateDirOr()))
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
