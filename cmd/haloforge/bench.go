package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps/bench"
	"github.com/haloforge/haloforge/steps/serve"
)

// benchOptions are the flags of `haloforge bench`.
type benchOptions struct {
	from    string // a llama-bench JSON/JSONL or vLLM bench JSON file, "-" for stdin
	asJSON  bool
	report  string // FILE.md: also writes FILE.json beside it
	command string // the command that produced the file, for the report
	// bench --track: run the track's benchmark, then compare.
	track, model, url string
	depths            []int
	dryRun            bool
	*globalOptions    // with --track: the pins, scripts and state dir the track was built with
}

func newBenchCmd(g *globalOptions) *cobra.Command {
	o := benchOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "bench --track ID [--model M] | --from FILE  [--json] [--report FILE.md]",
		Short: "Say whether benchmark speeds are normal for a Strix Halo, against published references",
		Long: "bench --track runs the track's benchmark in the track's own box or image: llama-bench " +
			"(-o jsonl -r 3 -fa 1, all layers on the GPU, mmap off as the build spells it, depths from --depths) " +
			"on --model, the track's LLAMA_MODEL, or the tiny model its verify step wrote (no speed claim then); " +
			"for vLLM tracks, `vllm bench serve` against the server `haloforge serve` runs (--url). It runs " +
			"through the pty runner with the full log, then compares as bench --from does. " +
			"bench --from reads llama-bench output (-o json or -o jsonl; haloforge's llamacpp-distro verify " +
			"step keeps one in ~/.local/state/haloforge/llamacpp-distro/llama-bench.json) or a vLLM " +
			"bench result (bench serve --save-result, bench throughput --output-json), puts each result " +
			"next to the closest published figure of the same model file, quantisation, backend, test and " +
			"depth on a Radeon 8060S, and says plainly whether it is normal, and if not, the likely " +
			"causes. For every model, named by a reference or not, it also puts token generation against the " +
			"device's memory bandwidth (the roofline: bandwidth ÷ the bytes a token reads, from llama-bench's " +
			"model_size and model_type, or from the GGUF header given with --model) and prompt processing against " +
			"its compute peak (a rough ceiling), and says what share of that ceiling tuned Strix Halo runs reach. --report writes a shareable Markdown report (and the same as JSON) with the fields " +
			"community guides ask for: device, BIOS UMA, IOMMU, kernel, Mesa, ROCm, backend, build, " +
			"command and the raw output: the facts of the machine the run was made on (this one for --track; " +
			"for a file from elsewhere, only the device it names). bench --from also reads such a FILE.json " +
			"back and judges it again with its own machine's facts. " +
			"Exit codes: with --from, 0 when the file was read, 2 when it could not be; with --track, 0 when the " +
			"benchmark ran and was compared, 1 when it failed or left no results, 2 when nothing ran (not built, " +
			"bad input), 130 when interrupted.",
		Example: "  haloforge bench --track llamacpp-distro --model ~/models/qwen3-30b-a3b-q4_k_m.gguf --depths 0,32768\n" +
			"  haloforge bench --track therock-toolbox --model Qwen/Qwen3-0.6B --url http://127.0.0.1:8000\n" +
			"  llama-bench -m model.gguf -o jsonl -r 3 -fa 1 -ngl 999 > bench.jsonl\n" +
			"  haloforge bench --from bench.jsonl\n" +
			"  haloforge bench --from bench.jsonl --model ~/models/qwen3-30b-a3b-q4_k_m.gguf\n" +
			"  haloforge bench --from ~/.local/state/haloforge/llamacpp-distro/llama-bench.json --json\n" +
			"  haloforge bench --from bench.jsonl --report bench.md --command 'llama-bench -m model.gguf -o jsonl'",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.Context(), cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.from, "from", "", "benchmark output to read: llama-bench JSON/JSONL or vLLM bench JSON (- for standard input)")
	f.BoolVar(&o.asJSON, "json", false, `print {"results": [...], "verdict": "..."} as JSON`)
	f.StringVar(&o.report, "report", "", "write a shareable report to FILE.md and FILE.json")
	f.StringVar(&o.command, "command", "", "the command that produced the file, recorded in the report")
	trackFlag(cmd, &o.track)
	f.StringVar(&o.model, "model", "", "with --track: the model (a GGUF file; for vLLM, the served model's name); with --from: the GGUF file the results were measured with, whose header says what a token reads (a mixture-of-experts model's active share)")
	f.IntSliceVar(&o.depths, "depths", nil, "with --track: llama-bench context depths, e.g. 0,32768 (default 0)")
	f.StringVar(&o.url, "url", "", "with a vLLM track: the running server to measure (default: the track's port on 127.0.0.1)")
	f.BoolVar(&o.dryRun, "dry-run", false, "with --track: print the benchmark command and run nothing")
	cmd.MarkFlagsMutuallyExclusive("from", "track")
	return cmd
}

func runBench(ctx context.Context, cmd *cobra.Command, o benchOptions) error {
	if o.from == "" && o.track == "" {
		return usageErr(errors.New("bench needs --track ID (run the track's benchmark) or --from FILE (llama-bench -o json/-o jsonl output, or a vLLM bench result)"))
	}
	if o.report != "" && !strings.HasSuffix(o.report, ".md") {
		return usageErr(fmt.Errorf("--report %s: name the Markdown file (FILE.md); FILE.json is written beside it", o.report))
	}
	// Both report files can be written, before a benchmark that may run long.
	if o.report != "" {
		for _, p := range []string{o.report, strings.TrimSuffix(o.report, ".md") + ".json"} {
			if err := checkReportPath(p); err != nil {
				return err
			}
		}
	}
	if o.track != "" {
		return runBenchTrack(cmd, o)
	}
	raw, err := readBenchInput(o.from, cmd.InOrStdin())
	if err != nil {
		return usageErr(err)
	}
	// A report written by --report is judged again with its own machine's
	// facts, from its raw output: never with this machine's.
	shared, isReport, err := bench.ParseShareable(raw)
	if err != nil {
		return usageErr(fmt.Errorf("%s: %w", o.from, err))
	}
	var origin hostOrigin
	if isReport {
		raw = []byte(shared.Raw)
		h := shared.Host()
		origin.report = &h
		if o.command == "" {
			o.command = shared.Command
		}
	}
	run, err := bench.Parse(raw)
	if err != nil {
		return usageErr(fmt.Errorf("%s: %w", o.from, err))
	}
	switch {
	case o.model != "":
		if run.Model, err = serve.ModelWeights(o.model); err != nil {
			return usageErr(fmt.Errorf("--model: %w", err))
		}
		if !run.Measures(run.Model.File) {
			fmt.Fprintf(cmd.ErrOrStderr(), "note: --model %s is none of the run's models: the roofline counts llama-bench's own fields\n", run.Model.File)
		}
	case isReport:
		run.Model = shared.ModelWeights
	}
	return compareAndPrint(ctx, cmd, o, run, raw, origin)
}

// hostOrigin says whose system facts judge a run: a report's own (report),
// this machine's (ranHere: bench --track), or, for a benchmark's output
// from anywhere, this machine's only when the run names this machine's
// device.
type hostOrigin struct {
	report  *bench.Host
	ranHere bool
}

// runHost is the system facts of the machine the run was made on, and a
// note when they are not all known. It collects this machine's facts only
// for --report (a report read back has its own).
func runHost(ctx context.Context, o benchOptions, run bench.Run, origin hostOrigin) (bench.Host, string) {
	switch {
	case origin.report != nil:
		return *origin.report, ""
	case o.report == "":
		return bench.Host{}, "" // the verdict alone: no need to collect
	}
	live := liveHost(ctx)
	if origin.ranHere || sameDevice(run.Device(), live.Device) {
		return live, ""
	}
	here := live.Device
	if here == "" {
		here = "no GPU haloforge knows"
	}
	return bench.Host{Device: run.Device()}, fmt.Sprintf("the run was made on %s, not on this machine (%s): the report records its device and leaves its other system facts unknown",
		orUnnamed(run.Device()), here)
}

// sameDevice says whether a benchmark's device (llama-bench's gpu_info,
// e.g. "AMD Radeon 8060S Graphics (RADV GFX1151)") is this machine's GPU
// (detect's name, e.g. "Radeon 8060S Graphics"); a CPU device (llvmpipe)
// is this machine's when it has no GPU.
func sameDevice(run, live string) bool {
	run, live = strings.ToLower(run), strings.ToLower(live)
	switch {
	case run == "":
		return false
	case live == "":
		return strings.Contains(run, "llvmpipe") || strings.Contains(run, "lavapipe") || strings.Contains(run, "cpu")
	}
	return strings.Contains(run, live) || strings.Contains(live, run)
}

func orUnnamed(dev string) string {
	if dev == "" {
		return "an unnamed device"
	}
	return dev
}

// compareAndPrint compares a parsed run with the references and prints the
// verdict (text or JSON), writing the shareable report when asked.
func compareAndPrint(ctx context.Context, cmd *cobra.Command, o benchOptions, run bench.Run, raw []byte, origin hostOrigin) error {
	host, note := runHost(ctx, o, run, origin)
	if note != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: %s\n", note)
	}
	rep := bench.Compare(run, bench.References(), host)
	if o.report != "" {
		if err := writeBenchReport(o, rep, host, raw); err != nil {
			return failedErr(err)
		}
	}
	out := cmd.OutOrStdout()
	if o.asJSON {
		return writeJSON(out, rep.ToJSON())
	}
	_, err := io.WriteString(out, rep.Text())
	if o.report != "" {
		fmt.Fprintf(out, "report: %s and %s\n", o.report, strings.TrimSuffix(o.report, ".md")+".json")
	}
	return err
}

// readBenchInput reads at most bench.MaxInput bytes of a file or stdin.
func readBenchInput(from string, stdin io.Reader) ([]byte, error) {
	var r io.Reader = stdin
	if from != "-" {
		f, err := os.Open(from)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.IsDir() {
			return nil, fmt.Errorf("%s is a directory: give the benchmark output file", from)
		}
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, bench.MaxInput+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	if len(b) > bench.MaxInput {
		return nil, fmt.Errorf("%s: larger than %d MiB: not a benchmark result", from, bench.MaxInput>>20)
	}
	return b, nil
}

func writeBenchReport(o benchOptions, rep bench.Report, host bench.Host, raw []byte) error {
	s := bench.NewShareable(rep, host, o.command, raw, time.Now())
	js, err := s.JSON()
	if err != nil {
		return err
	}
	if err := writeFileAtomic(o.report, []byte(s.Markdown())); err != nil {
		return err
	}
	return writeFileAtomic(strings.TrimSuffix(o.report, ".md")+".json", append(js, '\n'))
}

// writeFileAtomic writes through a temporary file in the same directory.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

var (
	reMesa        = regexp.MustCompile(`driverInfo\s*=\s*(Mesa [^\s(]+)`)
	reROCmRuntime = regexp.MustCompile(`(?m)^\s*Runtime Version:\s*(\S+)`)
)

// liveHost collects the report's host facts from this machine through detect
// (what cannot be known stays empty, shown as "unknown").
func liveHost(ctx context.Context) bench.Host {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	b, err := detect.Collect(ctx, detect.CollectOptions{Timeout: 2 * time.Second, Version: version})
	if err != nil {
		return bench.Host{}
	}
	r := detect.Analyse(b)
	var h bench.Host
	if g := r.Primary(); g != nil {
		if g.Name != nil {
			h.Device = *g.Name
		}
		if g.VRAMBytes != nil && g.Integrated != nil && *g.Integrated {
			h.BIOSUMA = text.Bytes(*g.VRAMBytes) + " (the APU's VRAM carve-out)"
		}
	}
	if r.Kernel.Release != nil {
		h.Kernel = *r.Kernel.Release
	}
	if v, ok := r.Kernel.Cmdline["amd_iommu"]; ok {
		h.IOMMU = v
	} else if v, ok := r.Kernel.Cmdline["iommu"]; ok {
		h.IOMMU = v
	} else if r.Kernel.Cmdline != nil {
		h.IOMMU = "default (amd_iommu not on the kernel command line)"
	}
	if s, ok := b.Get("vulkaninfo.txt"); ok {
		if m := reMesa.FindStringSubmatch(s); m != nil {
			h.Mesa = m[1]
		}
	}
	if s, ok := b.Get("rocminfo.txt"); ok {
		if m := reROCmRuntime.FindStringSubmatch(s); m != nil {
			h.ROCm = "HSA runtime " + m[1]
		}
	}
	if p, err := os.ReadFile("/sys/firmware/acpi/platform_profile"); err == nil {
		h.PowerProfile = strings.TrimSpace(string(p))
	}
	return h
}
