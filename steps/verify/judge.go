package verify

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/haloforge/haloforge/internal/text"
)

// Schema names the JSON of a verify result.
const Schema = "haloforge/verify/v1"

// Verdict is what a check proved about a server's answers.
type Verdict string

// The three verdicts. Junk is never Right.
const (
	// Right: the answers agree with a reference within the tolerances, or
	// every known answer is there and nothing is degenerate.
	Right Verdict = "right"
	// Wrong: degenerate output, or an answer that differs from the
	// reference beyond the tolerances; the result carries the evidence.
	Wrong Verdict = "wrong"
	// NotVerified: nothing wrong was seen, but nothing proved right either
	// (known answers missing from text that is not degenerate, a server
	// without logprobs against a reference); the reason says which.
	NotVerified Verdict = "not-verified"
)

// Check names what was checked.
type Check string

// The checks.
const (
	// CheckReference compares every answer with a reference, position by
	// position.
	CheckReference Check = "reference"
	// CheckKnownAnswers looks for the known answers and for degenerate
	// output.
	CheckKnownAnswers Check = "known-answers"
	// CheckRecord records a reference; the answers are judged as
	// CheckKnownAnswers does, for information.
	CheckRecord Check = "record"
)

// Result is a verify's outcome: the verdict, the reason in one sentence,
// and per prompt what ran and what came back. It is the JSON of
// `haloforge verify --json` (schema Schema).
type Result struct {
	Schema  string  `json:"schema"`
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
	Check   Check   `json:"check"`
	URL     string  `json:"url"`
	Model   string  `json:"model"`
	Server  string  `json:"server"`
	// Reference is the reference compared with (CheckReference).
	Reference *ReferenceInfo `json:"reference,omitempty"`
	// Tolerance and MaxDistance: the tolerances used and the largest
	// distance seen (CheckReference).
	Tolerance   *Tolerance `json:"tolerance,omitempty"`
	MaxDistance *float64   `json:"max_distance,omitempty"`
	// Recorded is the file a reference was written to (CheckRecord).
	Recorded string `json:"recorded,omitempty"`
	// Elapsed is how long the requests took.
	Elapsed time.Duration  `json:"elapsed_ns"`
	Prompts []PromptResult `json:"prompts"`
}

// ReferenceInfo says which reference a result was compared with.
type ReferenceInfo struct {
	File     string    `json:"file"`
	Model    string    `json:"model"`
	Server   string    `json:"server"`
	Backend  string    `json:"backend"`
	Recorded time.Time `json:"recorded"`
}

// PromptResult is one prompt: what was sent, what the check expected and
// what came back (printable), and the evidence when it is wrong.
type PromptResult struct {
	ID       string   `json:"id"`
	Endpoint Endpoint `json:"endpoint"`
	Prompt   string   `json:"prompt"`
	// Check is the check that ran on this prompt: "reference",
	// "known-answer" or "degenerate-output" (a prompt without a known
	// answer, checked only for degenerate output).
	Check   string  `json:"check"`
	Verdict Verdict `json:"verdict"`
	// Expected is the known answer, or the reference's text.
	Expected       string   `json:"expected,omitempty"`
	ExpectedTokens []string `json:"expected_tokens,omitempty"`
	Got            string   `json:"got"`
	GotTokens      []string `json:"got_tokens"`
	// Agreement (CheckReference): positions compared and agreeing, of the
	// reference's tokens; TieAt where a near-tie ended the comparison.
	Agreement   *Agreement `json:"agreement,omitempty"`
	MaxDistance *float64   `json:"max_distance,omitempty"`
	TieAt       *int       `json:"tie_at,omitempty"`
	// Problem says what is wrong or unproven, in a few words.
	Problem string `json:"problem,omitempty"`
	// Evidence is the disagreement with the reference (Wrong).
	Evidence *Disagreement `json:"evidence,omitempty"`
}

// Agreement counts the positions of one prompt.
type Agreement struct {
	Agreed   int `json:"agreed"`
	Compared int `json:"compared"`
	Of       int `json:"of"`
}

// Verify checks a server: it connects, asks the prompt set, and judges
// the answers against ref (nil: the known-answer check). Its error means
// no verdict could be reached: ErrBadInput, ErrUnusable (wrapped), or the
// context's.
func Verify(ctx context.Context, o Options, ref *Record, refFile string) (Result, *Record, error) {
	start := time.Now()
	s, err := Connect(ctx, o)
	if err != nil {
		return Result{}, nil, err
	}
	defer s.Close()
	rec, err := s.Run(ctx)
	if err != nil {
		return Result{}, nil, err
	}
	var res Result
	if ref != nil {
		res = JudgeReference(rec, ref, DefaultTolerance)
		res.Reference.File = printable(refFile, 200)
	} else {
		res = JudgeKnownAnswers(rec)
	}
	res.URL, res.Elapsed = printable(s.URL(), 200), time.Since(start)
	return res, rec, nil
}

func newResult(rec *Record, check Check) Result {
	return Result{Schema: Schema, Check: check, Model: printable(rec.Model, 200), Server: printable(rec.Server, 200)}
}

func promptResult(a Answer, check string) PromptResult {
	pr := PromptResult{ID: a.ID, Endpoint: a.Endpoint, Prompt: a.Prompt, Check: check,
		Got: printable(a.Text, maxShown), GotTokens: tokenTexts(a.Tokens)}
	return pr
}

func tokenTexts(toks []Token) []string {
	out := make([]string, 0, len(toks))
	for _, t := range toks {
		out = append(out, tokenText(t.Bytes))
	}
	return out
}

// JudgeKnownAnswers judges answers without a reference: any degenerate
// answer is Wrong; all known answers there is Right; otherwise
// NotVerified.
func JudgeKnownAnswers(rec *Record) Result {
	res := newResult(rec, CheckKnownAnswers)
	var missed []string
	firstMissed := -1
	for i, a := range rec.Answers {
		p := promptByID(a.ID)
		check := "known-answer"
		if p.Answer == "" {
			check = "degenerate-output"
		}
		pr := promptResult(a, check)
		pr.Expected = p.Answer
		switch why, at := degenerate(a); {
		case why != "":
			pr.Verdict, pr.Problem = Wrong, "degenerate output: "+why+atPosition(at)
		case p.Answer == "":
			pr.Verdict, pr.Problem = NotVerified, "no known answer: checked for degenerate output only (none)"
		case p.hasAnswer(a.Text):
			pr.Verdict = Right
		default:
			pr.Verdict, pr.Problem = NotVerified, fmt.Sprintf("no %q in the answer", p.Answer)
			missed = append(missed, p.Answer)
			if firstMissed < 0 {
				firstMissed = i
			}
		}
		res.Prompts = append(res.Prompts, pr)
	}
	if bad := firstWrong(res.Prompts); bad >= 0 {
		pr := res.Prompts[bad]
		res.Verdict = Wrong
		res.Reason = fmt.Sprintf("prompt %d (%s, %q): %s; the answer was %q", bad+1, pr.ID, pr.Prompt, pr.Problem, pr.Got)
		return res
	}
	if len(missed) == 0 {
		res.Verdict = Right
		res.Reason = fmt.Sprintf("the %d known answers are there (%s) and no answer of %d is degenerate; without a reference this proves the model answers sensibly, not that every number is exact",
			knownAnswers(), answerList(), len(rec.Answers))
		return res
	}
	pr := res.Prompts[firstMissed]
	res.Verdict = NotVerified
	res.Reason = fmt.Sprintf("%d of %d known answers missing (prompt %d %q: no %q in %q) though no answer is degenerate: a random-weights, base or very small model, or a wrong computation that still reads as text; compare with a reference recorded on a trusted backend",
		len(missed), knownAnswers(), firstMissed+1, pr.Prompt, pr.Expected, pr.Got)
	return res
}

// JudgeReference compares answers with a reference, prompt by prompt
// (see compare): any degenerate answer or disagreement is Wrong; answers
// without logprobs are NotVerified; otherwise Right.
func JudgeReference(rec, ref *Record, tol Tolerance) Result {
	res := newResult(rec, CheckReference)
	res.Reference = &ReferenceInfo{Model: printable(ref.Model, 200), Server: printable(ref.Server, 200),
		Backend: printable(ref.Backend, 200), Recorded: ref.Recorded}
	res.Tolerance = &tol
	maxD, ties, compared, total := 0.0, 0, 0, 0
	noProbs := -1
	for i, a := range rec.Answers {
		r := ref.Answers[i]
		pr := promptResult(a, "reference")
		pr.Expected, pr.ExpectedTokens = printable(r.Text, maxShown), tokenTexts(r.Tokens)
		why, at := degenerate(a)
		switch {
		case why != "":
			pr.Verdict, pr.Problem = Wrong, "degenerate output: "+why+atPosition(at)
		case !a.Logprobs:
			pr.Verdict, pr.Problem = NotVerified, "the server returned no logprobs"
			if noProbs < 0 {
				noProbs = i
			}
		default:
			c := compare(r, a, tol)
			pr.Agreement = &Agreement{Agreed: c.Agreed, Compared: c.Compared, Of: c.Of}
			pr.MaxDistance = number(c.MaxDistance)
			compared += c.Compared
			total += c.Of
			if c.TieAt >= 0 {
				at := c.TieAt
				pr.TieAt = &at
				ties++
			}
			if !math.IsInf(c.MaxDistance, 0) {
				maxD = math.Max(maxD, c.MaxDistance)
			}
			if c.Bad != nil {
				pr.Verdict, pr.Evidence = Wrong, c.Bad
				pr.Problem = fmt.Sprintf("position %d: %s", c.Bad.Position, c.Bad.Why)
			} else {
				pr.Verdict = Right
			}
		}
		res.Prompts = append(res.Prompts, pr)
	}
	res.MaxDistance = number(maxD)
	if bad := firstWrong(res.Prompts); bad >= 0 {
		pr := res.Prompts[bad]
		res.Verdict = Wrong
		if e := pr.Evidence; e != nil {
			res.Reason = fmt.Sprintf("prompt %d (%s, %q), position %d: expected %s, got %s: %s",
				bad+1, pr.ID, pr.Prompt, e.Position, orEnd(e.Expected, e.ExpectedLogprob), orEnd(e.Got, e.GotLogprob), e.Why)
		} else {
			res.Reason = fmt.Sprintf("prompt %d (%s, %q): %s; the answer was %q", bad+1, pr.ID, pr.Prompt, pr.Problem, pr.Got)
		}
		if ref.Model != rec.Model {
			// Names differ between servers (a path, an alias), but a
			// different model is the first thing to rule out.
			res.Reason += fmt.Sprintf(" (the reference was recorded with model %q, this server serves %q: the same model file?)",
				printable(ref.Model, 80), printable(rec.Model, 80))
		}
		return res
	}
	if noProbs >= 0 {
		res.Verdict = NotVerified
		res.Reason = fmt.Sprintf("the server returned no logprobs (prompt %d, %s), so its answers cannot be compared with the reference; without --reference the known-answer check needs none",
			noProbs+1, res.Prompts[noProbs].ID)
		return res
	}
	res.Verdict = Right
	tie := ""
	if ties > 0 {
		tie = "; " + text.Plural(ties, "near-tie") + " ended a comparison early"
	}
	res.Reason = fmt.Sprintf("%d prompts agree with the reference recorded %s (%d of %d positions compared, max logprob distance %.3g, tolerance %.3g%s)",
		len(rec.Answers), refOrigin(ref), compared, total, maxD, tol.Logprob, tie)
	return res
}

// refOrigin says where a reference was recorded: "on CPU by llama.cpp
// b11669 on 2026-11-29".
func refOrigin(ref *Record) string {
	var parts []string
	if ref.Backend != "" {
		parts = append(parts, "on "+printable(ref.Backend, 80))
	}
	if ref.Server != "" {
		parts = append(parts, "by "+printable(ref.Server, 80))
	}
	parts = append(parts, "on "+ref.Recorded.UTC().Format("2006-01-02"))
	return strings.Join(parts, " ")
}

// orEnd is a token for a sentence: quoted with its logprob, or "the end
// of the answer".
func orEnd(tok string, lp *float64) string {
	if tok == "" && lp == nil {
		return "the end of the answer"
	}
	if lp == nil {
		return `"` + tok + `"`
	}
	return fmt.Sprintf(`"%s" (logprob %.3g)`, tok, *lp)
}

func firstWrong(prs []PromptResult) int {
	for i, pr := range prs {
		if pr.Verdict == Wrong {
			return i
		}
	}
	return -1
}

func promptByID(id string) Prompt {
	for _, p := range prompts {
		if p.ID == id {
			return p
		}
	}
	return Prompt{ID: id}
}

// Line is the outcome in one line: the verdict, which check ran and what
// it proved, or the evidence. "right: …", "WRONG OUTPUT: …", "not
// verified: …".
func (r Result) Line() string {
	switch r.Verdict {
	case Right:
		return "right: " + r.Reason
	case Wrong:
		return "WRONG OUTPUT: " + r.Reason
	}
	return "not verified: " + r.Reason
}

// Details are a line per prompt: what it asked, what came back, what the
// check found.
func (r Result) Details() []string {
	var out []string
	for i, p := range r.Prompts {
		got := p.Got
		if got == "" {
			got = strings.Join(p.GotTokens, "")
		}
		line := fmt.Sprintf("  %d %-8s %-11s %q → %q", i+1, p.ID, p.Endpoint, printable(p.Prompt, 40), printable(got, 40))
		var what string
		switch {
		case p.Agreement != nil && p.Evidence == nil:
			what = fmt.Sprintf("%d/%d tokens agree", p.Agreement.Agreed, p.Agreement.Of)
			if p.MaxDistance != nil {
				what += fmt.Sprintf(", max distance %.3g", *p.MaxDistance)
			}
			if p.TieAt != nil {
				what += fmt.Sprintf(", near-tie at %d", *p.TieAt)
			}
		case p.Verdict == Right && p.Check == "known-answer":
			what = fmt.Sprintf("has %q", p.Expected)
		default:
			what = p.Problem
		}
		out = append(out, fmt.Sprintf("%s: %s: %s", line, verdictWord(p.Verdict), what))
	}
	return out
}

func verdictWord(v Verdict) string {
	switch v {
	case Right:
		return "right"
	case Wrong:
		return "WRONG"
	}
	return "not verified"
}
