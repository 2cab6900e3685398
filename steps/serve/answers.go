package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps/bench"
	"github.com/haloforge/haloforge/steps/runner"
	"github.com/haloforge/haloforge/steps/verify"
)

// A ready server is checked for right answers, not only for answers
// (steps/verify): its answers to verify's prompt set are compared with a
// reference, when there is one, else checked for the known answers and for
// degenerate output.
//
// The reference is, in this order: the file the user named (serve
// --reference); haloforge's own for the model file (verify.CacheDir: one
// per model SHA-256 and prompt set), kept from an earlier serve or verify
// step; or one recorded now from the engine's trusted backend (an engine
// implementing truster: llama.cpp's CPU backend, the same GGUF in the same
// box or image), started by haloforge beside the server on a free loopback
// port, stopped once its answers are in, and kept for the next time. An
// engine without a trusted backend here (vLLM, whose CPU reference needs
// transformers in the track's venv; Ollama) gets the known-answer check,
// and the outcome says so.

// truster is an engine that can serve the same model on a backend trusted
// to compute right, for a reference: Command composes it when
// Request.Trusted is set.
type truster interface {
	// TrustedBackend names the trusted backend for a sentence ("CPU").
	TrustedBackend() string
}

// CheckOptions configure the answers check of a ready server.
type CheckOptions struct {
	// Request is what the launch was planned from; the trusted server is
	// planned from it too.
	Request Request
	// Run is how the trusted server runs (the serve run's own options).
	Run RunOptions
	// Reference is a reference file the user named; "" for haloforge's own.
	Reference string
	// StateDir keeps haloforge's references.
	StateDir string
	// Timeout bounds each verify request (0: verify.DefaultTimeout).
	Timeout time.Duration
	// Version is haloforge's, recorded in a reference.
	Version string
}

// AnswerCheck is what the check of a ready server found (`serve --json`'s
// "answers").
type AnswerCheck struct {
	// Result is verify's (the zero value when no verdict was reached).
	Result *verify.Result `json:"result,omitempty"`
	// How says which check ran against what: "compared with haloforge's
	// reference for this GGUF, recorded on the CPU backend now".
	How string `json:"how"`
	// Finding is the failure family of a wrong answer, with its fix.
	Finding *diagnose.Finding `json:"finding,omitempty"`
	// Err says why no verdict was reached.
	Err string `json:"error,omitempty"`
}

// Sentence is the outcome in one line, as line mode, the serve screen and
// the step's verdict say it: "answers right: …", "WRONG OUTPUT: …",
// "answers not verified: …", "answers not checked: …".
func (c AnswerCheck) Sentence() string {
	if c.Result == nil {
		return "answers not checked: " + c.Err
	}
	switch c.Result.Verdict {
	case verify.Right:
		return "answers right: " + c.Result.Reason
	case verify.Wrong:
		return c.Result.Line()
	}
	return "answers not verified: " + c.Result.Reason
}

// Wrong says the answers were found wrong.
func (c AnswerCheck) Wrong() bool { return c.Result != nil && c.Result.Verdict == verify.Wrong }

// Checking says what the check is doing, for the screens: recording a
// reference from the trusted backend takes a model load.
type Checking struct {
	runner.Added
	Step string
	What string
}

// Checked is the check's outcome.
type Checked struct {
	runner.Added
	Step string
	AnswerCheck
}

// CheckAnswers checks the server of l (ready) and says what it found;
// progress hears what it is doing.
func CheckAnswers(ctx context.Context, l Launch, o CheckOptions, progress func(string)) AnswerCheck {
	if progress == nil {
		progress = func(string) {}
	}
	ref, refFile, how, err := reference(ctx, l, o, progress)
	if err != nil {
		return AnswerCheck{How: how, Err: err.Error()}
	}
	if ref != nil {
		progress("checking the answers against " + how)
	} else {
		progress("checking the answers: " + how)
	}
	res, _, err := verify.Verify(ctx, verify.Options{URL: l.URL, Model: l.Served, Timeout: o.Timeout}, ref, refFile)
	if err != nil {
		return AnswerCheck{How: how, Err: err.Error()}
	}
	c := AnswerCheck{Result: &res, How: how}
	if res.Verdict == verify.Wrong {
		c.Finding = WrongOutputFinding(res.Line())
	}
	return c
}

// WrongOutputFinding is the failure family a WRONG OUTPUT line belongs to
// (diagnose's wrong-output-* rules, which read verify's own words), with
// its fix; nil when no rule knows it.
func WrongOutputFinding(line string) *diagnose.Finding {
	m := diagnose.NewMatcher(diagnose.MatcherOptions{})
	f := m.Line(1, line)
	if f == nil {
		if fs := m.End(); len(fs) > 0 {
			f = &fs[0]
		}
	}
	if f != nil {
		f.Line = 0 // a verdict, not a line of the server's log
	}
	return f
}

// reference finds the reference to compare with: the user's file,
// haloforge's own for the model, or one recorded now from the trusted
// backend; nil (and how the check runs instead) when there is none.
func reference(ctx context.Context, l Launch, o CheckOptions, progress func(string)) (*verify.Record, string, string, error) {
	if o.Reference != "" {
		ref, err := verify.ReadReference(o.Reference)
		if err != nil {
			return nil, "", "the reference " + o.Reference, err
		}
		return ref, o.Reference, fmt.Sprintf("the reference %s (recorded on %s)", o.Reference, orAny(ref.Backend)), nil
	}
	e, ok := EngineNamed(l.Engine)
	t, trusts := e.(truster)
	if !ok || !trusts {
		return nil, "", fmt.Sprintf("known answers and degenerate output (no trusted backend to record a reference from for %s here)", l.Engine), nil
	}
	if st, err := os.Stat(l.Model); err != nil || !st.Mode().IsRegular() {
		return nil, "", "known answers and degenerate output (the model is no file here to record a reference of)", nil
	}
	progress("hashing " + l.Model + " (its reference is kept by the SHA-256 of the weights)")
	key, err := verify.ModelKey(o.StateDir, l.Model)
	if err != nil {
		return nil, "", "haloforge's reference for this model", err
	}
	c, err := verify.LookupReference(o.StateDir, key)
	switch {
	case err == nil:
		return c.Record, c.File, fmt.Sprintf("haloforge's reference for this model file, recorded on the %s backend on %s (%s)",
			t.TrustedBackend(), c.Record.Recorded.UTC().Format("2006-01-02"), c.File), nil
	case !errors.Is(err, verify.ErrNoCachedReference):
		return nil, "", "haloforge's reference for this model", err
	}
	rec, err := recordTrusted(ctx, l, o, t.TrustedBackend(), progress)
	if err != nil {
		return nil, "", "a reference from the " + t.TrustedBackend() + " backend", err
	}
	file, err := verify.StoreReference(o.StateDir, key, rec)
	if err != nil {
		return nil, "", "a reference from the " + t.TrustedBackend() + " backend", err
	}
	return rec, file, fmt.Sprintf("haloforge's reference for this model file, recorded on the %s backend now (%s)", t.TrustedBackend(), file), nil
}

// trustedReadyTimeout bounds how long the trusted server may take to be
// ready: a large model read from disk on the CPU.
const trustedReadyTimeout = 20 * time.Minute

// recordTrusted starts the model on the engine's trusted backend beside
// the server (same box or image, a free loopback port), records its
// answers and stops it.
func recordTrusted(ctx context.Context, l Launch, o CheckOptions, backend string, progress func(string)) (*verify.Record, error) {
	req := o.Request
	req.Trusted, req.Host, req.Expose, req.Model = true, "127.0.0.1", false, l.Model
	p, err := freePort()
	if err != nil {
		return nil, err
	}
	req.Port = p
	tl, err := Plan(req)
	if err != nil {
		return nil, err
	}
	progress(fmt.Sprintf("recording a reference: the same model on the %s backend, %s", backend, QuoteCommand(tl.Command)))
	ctx, cancel := context.WithTimeout(ctx, trustedReadyTimeout+10*time.Minute)
	defer cancel()
	w, err := Start(ctx, tl, o.Run, WatchOptions{Step: StepID})
	if err != nil {
		return nil, err
	}
	ready := make(chan Result, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sent := false
		for e := range w.Events() {
			switch e.(type) {
			case Ready:
				if !sent {
					ready <- Result{Ready: true}
					sent = true
				}
			case runner.RunFinished:
				if !sent {
					ready <- w.Result()
					sent = true
				}
			}
		}
		if !sent {
			ready <- w.Result()
		}
	}()
	stop := func() {
		w.Stop()
		select {
		case <-done:
		case <-time.After(DefaultGrace + 10*time.Second):
			w.Stop() // the second stop kills what is left
			<-done
		}
	}
	var r Result
	select {
	case r = <-ready:
	case <-time.After(trustedReadyTimeout):
		stop()
		return nil, fmt.Errorf("the %s server was not ready within %s", backend, trustedReadyTimeout)
	case <-ctx.Done():
		stop()
		return nil, ctx.Err()
	}
	if !r.Ready {
		stop()
		why := r.Failed
		if why == "" {
			why = "it ended before it was ready"
		}
		return nil, fmt.Errorf("the %s server for the reference did not start: %s (its log: %s)", backend, why, r.RunDir)
	}
	s, err := verify.Connect(ctx, verify.Options{URL: tl.URL, Model: tl.Served, Timeout: o.Timeout, Backend: backend, Version: o.Version})
	if err != nil {
		stop()
		return nil, err
	}
	rec, err := s.Run(ctx)
	s.Close()
	stop()
	if err != nil {
		return nil, err
	}
	if _, err := verify.MarshalReference(rec); err != nil {
		return nil, fmt.Errorf("the %s backend's answers cannot be a reference: %w", backend, err)
	}
	return rec, nil
}

// freePort is a TCP port free on loopback right now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// JudgeAnswers puts what was last found of a track's answers (its verify
// step, serve, verify --track) in a benchmark's report, and keeps a track
// whose answers were wrong from having its speed called normal: a speed
// on a wrong computation is no speed of the model. The note says what the
// user should know when the answers were never checked, not verified or
// could not be read ("" when they were right or wrong: the report says it).
func JudgeAnswers(rep *bench.Report, stateDir, track string) (note string) {
	last, ok, err := verify.ReadLast(stateDir, track)
	switch {
	case err != nil:
		line := "the last check of this stack's answers cannot be read: " + text.Printable(err.Error(), 600)
		rep.Answers = &bench.Answers{Verdict: bench.Unchecked, Line: line}
		return line
	case !ok:
		line := fmt.Sprintf("this stack's answers were never checked (haloforge serve --track %s checks them): a speed says nothing of whether it computes right", track)
		rep.Answers = &bench.Answers{Verdict: bench.Unchecked, Line: line}
		return line
	}
	at := last.At
	rep.Answers = &bench.Answers{Verdict: string(last.Verdict), Line: last.Line, By: last.By, At: &at}
	switch last.Verdict {
	case verify.Wrong:
		rep.Refuse(wrongAnswers(last) + "; a stack that computes wrong has no normal speed: fix it first")
	case verify.NotVerified:
		return fmt.Sprintf("this stack's answers were not verified when %s last checked them: %s", last.By, last.Line)
	}
	return ""
}

// WrongStackError is a track whose answers were last found wrong: bench
// does not measure it unless asked to.
type WrongStackError struct{ Last verify.Last }

func (e *WrongStackError) Error() string {
	return fmt.Sprintf("not measured: %s. A stack that computes wrong has no normal speed: fix it and check its answers again (haloforge serve --track %s)",
		wrongAnswers(e.Last), e.Last.Track)
}

// CheckStackAnswers is a *WrongStackError when the track's answers were
// last found wrong; nil otherwise (JudgeAnswers says the rest with the
// comparison).
func CheckStackAnswers(stateDir, track string) error {
	last, ok, err := verify.ReadLast(stateDir, track)
	if err != nil || !ok || last.Verdict != verify.Wrong {
		return nil
	}
	return &WrongStackError{Last: last}
}

// wrongAnswers says when and by what a track's answers were found wrong.
func wrongAnswers(last verify.Last) string {
	return fmt.Sprintf("its answers were wrong when %s last checked them (%s): %s", last.By, last.At.Local().Format("2006-01-02 15:04"), last.Line)
}
