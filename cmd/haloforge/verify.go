package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/verify"
)

// verifyOptions are the flags of `haloforge verify`.
type verifyOptions struct {
	url, model        string
	record, reference string
	// recordFor and referenceFor name a model file whose reference
	// haloforge keeps in the state dir (verify.CacheDir).
	recordFor, referenceFor string
	cached                  bool
	// answers judges a file a generator wrote instead of a server; prompts
	// prints the prompt set for such a generator.
	answers  string
	prompts  bool
	track    string
	backend  string
	asJSON   bool
	timeout  time.Duration
	stateDir string
}

func newVerifyCmd(g *globalOptions) *cobra.Command {
	var o verifyOptions
	cmd := &cobra.Command{
		Use:   "verify --url URL [--model ID] [--record FILE | --reference FILE] [--json]",
		Short: "Check that a running server's answers are right, not just answers",
		Long: "verify asks an OpenAI-compatible server (llama-server, vLLM, Ollama; the URL with or " +
			"without /v1) a built-in set of 6 prompts through /v1/completions and /v1/chat/completions, " +
			"greedy (temperature 0, a fixed seed) with the top-5 logprobs of every token, and judges the " +
			"answers. With --reference FILE it compares them, position by position, with a reference recorded " +
			"from a trusted backend (the same model on the CPU): right when every distribution is within the " +
			"tolerance (0.3 nats; a different choice only where the reference's first two choices are within " +
			"0.6), wrong with the prompt, position, expected and got tokens otherwise. Without a reference it " +
			"looks for the known answers (Paris, 42, Friday, Tokyo) and for degenerate output (one token " +
			"repeated, runs of \"!\", <unusedN> tokens, empty answers, NaN logprobs, all-equal distributions): " +
			"degenerate output is wrong; answers without the known words but not degenerate are not verified " +
			"(a random-weights or base model). --record FILE writes the answers as a reference (refused for " +
			"degenerate output or a server without logprobs; an existing FILE is not overwritten). Every " +
			"request is bounded by --timeout and every answer by 4 MiB; nothing the server sends reaches the " +
			"terminal unsanitised. Exit codes: 0 right, or a reference recorded; 1 wrong or not verified (or " +
			"nothing recorded); 2 bad input or no usable server (unreachable, not OpenAI-compatible, too slow, " +
			"a reference that does not parse or is for another prompt set); 130 interrupted. " +
			"haloforge keeps the references it records from a trusted backend in the state dir, one per model " +
			"file (its SHA-256) and prompt set: --record-for MODEL records one there (from the server at --url, " +
			"e.g. the same GGUF on the CPU backend), --reference-for MODEL compares with it, and " +
			"--reference-for MODEL --cached (no --url) says whether one is kept (exit 0) or not (exit 1). " +
			"--track ID keeps the verdict as the track's last, which haloforge bench reads before it calls a speed normal.",
		Example: "  haloforge verify --url http://127.0.0.1:8080\n" +
			"  haloforge verify --url http://127.0.0.1:8081 --record cpu-reference.json --backend CPU\n" +
			"  haloforge verify --url http://127.0.0.1:8080 --reference cpu-reference.json\n" +
			"  haloforge verify --url http://127.0.0.1:8000/v1 --model Qwen/Qwen3-0.6B --json\n" +
			"  haloforge verify --url http://127.0.0.1:8081 --record-for ~/models/m.gguf --backend CPU\n" +
			"  haloforge verify --url http://127.0.0.1:8080 --reference-for ~/models/m.gguf --track llamacpp-distro",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.stateDir = g.stateDirOr()
			return runVerifyServer(cmdContext(cmd), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.url, "url", "", "the server: http://HOST:PORT, with or without /v1")
	f.StringVar(&o.model, "model", "", "the model to ask (default: the first that /v1/models lists)")
	f.StringVar(&o.record, "record", "", "write the answers to FILE as a reference (JSON)")
	f.StringVar(&o.reference, "reference", "", "compare the answers with the reference in FILE")
	f.StringVar(&o.recordFor, "record-for", "", "record the answers as haloforge's reference for the model file MODEL (kept in the state dir)")
	f.StringVar(&o.referenceFor, "reference-for", "", "compare the answers with haloforge's reference for the model file MODEL")
	f.BoolVar(&o.cached, "cached", false, "with --reference-for and no --url: exit 0 when a reference for MODEL is kept, 1 when not")
	f.StringVar(&o.answers, "answers", "", "judge the answers a generator wrote to FILE (haloforge/verify-answers/v1) instead of asking a server")
	f.BoolVar(&o.prompts, "prompts", false, "print the prompt set as JSON, for a generator that writes --answers")
	f.StringVar(&o.track, "track", "", "keep the verdict as track ID's last (haloforge bench reads it)")
	f.StringVar(&o.backend, "backend", "", "with --record or --record-for: what the server computes on, kept in the reference (e.g. CPU)")
	f.DurationVar(&o.timeout, "timeout", verify.DefaultTimeout, "the most one request may take")
	jsonFlag(cmd, &o.asJSON, `print {"schema": "haloforge/verify/v1", "verdict": ..., "prompts": [...]} as JSON`)
	cmd.MarkFlagsMutuallyExclusive("record", "reference", "record-for", "reference-for")
	cmd.MarkFlagsMutuallyExclusive("cached", "url", "answers", "prompts")
	_ = cmd.RegisterFlagCompletionFunc("track", completeTracks)
	_ = cmd.RegisterFlagCompletionFunc("answers", completeJSONFiles)
	_ = cmd.RegisterFlagCompletionFunc("record", completeJSONFiles)
	_ = cmd.RegisterFlagCompletionFunc("reference", completeJSONFiles)
	_ = cmd.RegisterFlagCompletionFunc("url", cobra.NoFileCompletions)
	_ = cmd.RegisterFlagCompletionFunc("model", cobra.NoFileCompletions)
	_ = cmd.RegisterFlagCompletionFunc("backend", cobra.NoFileCompletions)
	return cmd
}

func runVerifyServer(ctx context.Context, o verifyOptions, stdout, stderr io.Writer) error {
	if o.cached {
		return verifyCached(o, stdout)
	}
	if o.prompts {
		return writeJSON(stdout, verify.Set())
	}
	if o.url == "" && o.answers == "" {
		return usageErr(errors.New("verify needs --url, the server to check (e.g. --url http://127.0.0.1:8080), or --answers FILE"))
	}
	if o.url != "" {
		if _, err := verify.NormaliseURL(o.url); err != nil {
			return usageErr(err)
		}
	}
	if o.timeout <= 0 {
		return usageErr(fmt.Errorf("--timeout %s: want a positive duration", o.timeout))
	}
	recording := o.record != "" || o.recordFor != ""
	if o.backend != "" && !recording {
		return usageErr(errors.New("--backend says what a recorded reference ran on: use it with --record or --record-for"))
	}
	if o.track != "" {
		if recording {
			return usageErr(errors.New("--track keeps a verdict: recording a reference judges nothing"))
		}
		if _, err := steps.Lookup(o.track); err != nil {
			return usageErr(fmt.Errorf("--track: %w", err))
		}
	}
	if o.record != "" {
		if _, err := os.Lstat(o.record); err == nil {
			return usageErr(fmt.Errorf("--record %s exists: a reference is not overwritten (remove it or choose another name)", o.record))
		}
		if err := checkNewFile("--record", o.record); err != nil {
			return err
		}
	}
	var ref *verify.Record
	refFile := o.reference
	switch {
	case o.reference != "":
		r, err := verify.ReadReference(o.reference)
		if err != nil {
			return usageErr(err)
		}
		ref = r
	case o.referenceFor != "":
		c, err := cachedReference(o.stateDir, o.referenceFor)
		if errors.Is(err, verify.ErrNoCachedReference) {
			return usageErr(fmt.Errorf("--reference-for %s: %w yet: record one from a trusted backend (the same model on the CPU): haloforge verify --url URL --record-for %s --backend CPU",
				o.referenceFor, err, shellWord(o.referenceFor)))
		}
		if err != nil {
			return usageErr(err)
		}
		ref, refFile = c.Record, c.File
	}
	var modelKey string
	if o.recordFor != "" {
		k, err := verify.ModelKey(o.stateDir, o.recordFor)
		if err != nil {
			return usageErr(fmt.Errorf("--record-for: %w", err))
		}
		modelKey = k
	}
	start := time.Now()
	var rec *verify.Record
	var url string
	if o.answers != "" {
		r, err := verify.ReadAnswers(o.answers)
		if err != nil {
			return usageErr(err)
		}
		if o.backend != "" {
			r.Backend = o.backend
		}
		r.Haloforge = version
		rec = r
		if !o.asJSON {
			fmt.Fprintln(stdout, verifyHeaderOf(rec.Model, "the answers in "+oneLine(o.answers, 200), rec.Server, ref, refFile, o))
		}
	} else {
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		s, err := verify.Connect(ctx, verify.Options{URL: o.url, Model: o.model, Timeout: o.timeout, Backend: o.backend, Version: version})
		if err != nil {
			return verifyErr(ctx, stderr, err)
		}
		defer s.Close()
		if !o.asJSON {
			fmt.Fprintln(stdout, verifyHeaderOf(s.Model(), oneLine(s.URL(), 120), s.Ident(), ref, refFile, o))
		}
		if rec, err = s.Run(ctx); err != nil {
			return verifyErr(ctx, stderr, err)
		}
		url = s.URL()
	}
	var res verify.Result
	switch {
	case ref != nil:
		res = verify.JudgeReference(rec, ref, verify.DefaultTolerance)
		res.Reference.File = oneLine(refFile, 200)
	default:
		res = verify.JudgeKnownAnswers(rec)
	}
	res.URL, res.Elapsed = oneLine(url, 200), time.Since(start)
	if recording {
		return recordReference(o, modelKey, rec, res, stdout)
	}
	if o.track != "" {
		by := os.Getenv("HALOFORGE_STEP")
		if by == "" {
			by = "verify"
		}
		if err := verify.RecordLast(o.stateDir, o.track, by, res, time.Now()); err != nil {
			fmt.Fprintf(stderr, "warning: the verdict was not kept for haloforge bench: %v\n", err)
		}
	}
	if err := printVerify(stdout, o.asJSON, res); err != nil {
		return err
	}
	if res.Verdict != verify.Right {
		return silentExit(exitFailed)
	}
	return nil
}

// cachedReference is the reference haloforge keeps for a model file.
func cachedReference(stateDir, model string) (verify.Cached, error) {
	key, err := verify.ModelKey(stateDir, model)
	if err != nil {
		return verify.Cached{}, err
	}
	return verify.LookupReference(stateDir, key)
}

// verifyCached answers --reference-for MODEL --cached: is a reference kept?
func verifyCached(o verifyOptions, stdout io.Writer) error {
	if o.referenceFor == "" {
		return usageErr(errors.New("--cached asks whether a reference is kept: name the model with --reference-for MODEL"))
	}
	c, err := cachedReference(o.stateDir, o.referenceFor)
	switch {
	case errors.Is(err, verify.ErrNoCachedReference):
		fmt.Fprintf(stdout, "no reference kept for %s: record one with --record-for\n", oneLine(o.referenceFor, 200))
		return silentExit(exitFailed)
	case err != nil:
		return usageErr(err)
	}
	fmt.Fprintf(stdout, "kept: %s (recorded on %s by %s on %s)\n", oneLine(c.File, 200), oneLine(c.Record.Backend, 60),
		oneLine(c.Record.Server, 60), c.Record.Recorded.UTC().Format("2006-01-02"))
	return nil
}

// verifyErr maps a verify error to its exit: interrupted 130, anything
// else (no usable server, bad input) 2.
func verifyErr(ctx context.Context, stderr io.Writer, err error) error {
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "interrupted: nothing was judged")
		return silentExit(exitInterrupted)
	}
	return usageErr(err)
}

// verifyHeaderOf is the first line: what is asked, of whom (a model at a
// URL, or the answers in a file), against what.
func verifyHeaderOf(model, at, ident string, ref *verify.Record, refFile string, o verifyOptions) string {
	what := "known answers and degenerate output (no reference)"
	switch {
	case ref != nil:
		what = "compared with the reference " + oneLine(refFile, 200)
		if ref.Backend != "" {
			what += " (recorded on " + oneLine(ref.Backend, 60) + ")"
		}
	case o.record != "":
		what = "recording a reference to " + oneLine(o.record, 200)
	case o.recordFor != "":
		what = "recording haloforge's reference for " + oneLine(o.recordFor, 200)
	}
	server := ""
	if ident != "" {
		server = " (" + oneLine(ident, 60) + ")"
	}
	return fmt.Sprintf("verify: %s at %s%s: %d prompts, greedy, top-%d logprobs; %s",
		oneLine(model, 80), at, server, len(verify.Prompts()), verify.TopK, what)
}

// oneLine is server-given or user-given text made printable for a line.
func oneLine(s string, n int) string {
	return verify.Printable(s, n)
}

func printVerify(stdout io.Writer, asJSON bool, res verify.Result) error {
	if asJSON {
		return writeJSON(stdout, res)
	}
	for _, l := range res.Details() {
		fmt.Fprintln(stdout, l)
	}
	fmt.Fprintln(stdout, res.Line())
	return nil
}

// recordReference writes the reference (to --record's file, or to the
// state dir's cache for --record-for's model), unless the answers cannot
// be one; the known-answer judgement is printed either way, for
// information.
func recordReference(o verifyOptions, modelKey string, rec *verify.Record, res verify.Result, stdout io.Writer) error {
	res.Check = verify.CheckRecord
	data, err := verify.MarshalReference(rec)
	if err != nil {
		if res.Verdict == verify.Right {
			res.Verdict = verify.NotVerified
		}
		res.Reason = "nothing recorded: " + err.Error()
		if err := printVerify(stdout, o.asJSON, res); err != nil {
			return err
		}
		return silentExit(exitFailed)
	}
	file := o.record
	if o.recordFor != "" {
		if file, err = verify.StoreReference(o.stateDir, modelKey, rec); err != nil {
			return failedErr(fmt.Errorf("--record-for %s: %w", o.recordFor, err))
		}
	} else if err := steps.WriteFileAtomic(o.record, data); err != nil {
		return failedErr(fmt.Errorf("--record %s: %w", o.record, err))
	}
	res.Recorded = oneLine(file, 200)
	if o.asJSON {
		return writeJSON(stdout, res)
	}
	for _, l := range res.Details() {
		fmt.Fprintln(stdout, l)
	}
	use := "--reference " + oneLine(shellWord(file), 200)
	if o.recordFor != "" {
		use = "--reference-for " + oneLine(shellWord(o.recordFor), 200)
	}
	fmt.Fprintf(stdout, "recorded: %d prompts from %s to %s (%d bytes); compare a server with it: %s\n",
		len(rec.Answers), oneLine(rec.Model, 80), oneLine(file, 200), len(data), use)
	fmt.Fprintln(stdout, "known answers, for information: "+res.Line())
	return nil
}
