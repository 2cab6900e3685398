package verify

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
)

// ReferenceSchema names the reference file format. A reference is
// versioned JSON, written by `haloforge verify --record` and read strictly
// by --reference:
//
//	{
//	  "schema": "haloforge/verify-reference/v1",
//	  "prompt_set": "haloforge/verify/prompts/v1",
//	  "model": "…", "server": "llama.cpp b11669-Debian", "backend": "CPU",
//	  "recorded": "2026-11-29T10:00:00Z", "haloforge": "…", "top_k": 5,
//	  "model_key": "…" (the SHA-256 of the weights, in haloforge's own cache),
//	  "prompts": [{"id", "endpoint", "prompt", "max_tokens", "finish_reason", "text",
//	               "tokens": [{"id", "token", "bytes", "logprob",
//	                           "top_logprobs": [{"id", "token", "bytes", "logprob"}]}]}]
//	}
//
// Tokens are their exact bytes (a list of numbers); "token" and "text"
// are printable copies for people and are not compared. "id" is -1 where
// the server gave no token IDs.
const ReferenceSchema = "haloforge/verify-reference/v1"

// MaxReferenceSize bounds a reference file. One of the built-in prompt set
// is about 60 KB.
const MaxReferenceSize = 4 << 20

// Record is a server's answers to the prompt set: what --record writes and
// --reference reads.
type Record struct {
	Schema    string `json:"schema"`
	PromptSet string `json:"prompt_set"`
	// Model is the model the server served, as it named it.
	Model string `json:"model"`
	// Server is what the server said it is (its Server header and
	// system_fingerprint), e.g. "llama.cpp b11669-Debian".
	Server string `json:"server"`
	// Backend is what the recording user said the server computes on,
	// e.g. "CPU"; "" when not said.
	Backend  string    `json:"backend"`
	Recorded time.Time `json:"recorded"`
	// Haloforge is the version that recorded it.
	Haloforge string `json:"haloforge"`
	TopK      int    `json:"top_k"`
	// ModelKey is the SHA-256 of the model's weights (ModelKey) when
	// haloforge recorded the reference for its cache; "" otherwise.
	ModelKey string   `json:"model_key,omitempty"`
	Answers  []Answer `json:"prompts"`
}

// MarshalReference is rec as a reference file (indented JSON). It refuses
// a record that could never be read back: NaN logprobs, answers without
// logprobs (Record.Recordable says why first).
func MarshalReference(rec *Record) ([]byte, error) {
	if why := rec.unrecordable(); why != "" {
		return nil, errors.New(why)
	}
	r := *rec
	r.Schema, r.PromptSet = ReferenceSchema, PromptSetID
	r.Model, r.Server, r.Backend, r.Haloforge = printable(r.Model, 256), printable(r.Server, 256), printable(r.Backend, 256), printable(r.Haloforge, 256)
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// unrecordable says why rec cannot be a reference, "" when it can: every
// answer has finite logprobs for every token and is not degenerate output.
func (rec *Record) unrecordable() string {
	for i, a := range rec.Answers {
		if !a.Logprobs || len(a.Tokens) == 0 {
			return fmt.Sprintf("prompt %d (%s): the server returned no logprobs, so there is nothing to compare against", i+1, a.ID)
		}
		if why, at := degenerate(a); why != "" {
			return fmt.Sprintf("prompt %d (%s)%s: degenerate output: %s", i+1, a.ID, atPosition(at), why)
		}
		for j, t := range a.Tokens {
			if len(t.Top) == 0 {
				return fmt.Sprintf("prompt %d (%s), position %d: the server listed no alternatives (top_logprobs), so there is no distribution to compare against", i+1, a.ID, j)
			}
		}
	}
	return ""
}

func atPosition(at int) string {
	if at < 0 {
		return ""
	}
	return fmt.Sprintf(", position %d", at)
}

// ReferenceError is a reference file that cannot be used: unreadable,
// not JSON of the format, or for another prompt set.
type ReferenceError struct {
	File string
	Err  error
}

func (e *ReferenceError) Error() string {
	return fmt.Sprintf("reference %s: %v", printable(e.File, 200), e.Err)
}

func (e *ReferenceError) Unwrap() error { return e.Err }

// ReadReference reads and validates a reference file: a regular file
// (a FIFO or device is refused without waiting), at most
// MaxReferenceSize bytes.
func ReadReference(path string) (*Record, error) {
	return readRecord(path, ParseReference)
}

// ReadAnswers reads and validates a file of answers (AnswersSchema), as
// ReadReference does a reference.
func ReadAnswers(path string) (*Record, error) {
	return readRecord(path, ParseAnswers)
}

func readRecord(path string, parse func([]byte) (*Record, error)) (*Record, error) {
	data, err := safefile.ReadRegular(path, MaxReferenceSize, safefile.Follow)
	if tl := (*safefile.TooLargeError)(nil); errors.As(err, &tl) {
		err = errors.New("larger than " + text.Bytes(MaxReferenceSize) + ": not a reference")
	}
	if err != nil {
		return nil, &ReferenceError{File: path, Err: err}
	}
	rec, err := parse(data)
	if err != nil {
		return nil, &ReferenceError{File: path, Err: err}
	}
	return rec, nil
}

// AnswersSchema names a file of answers a generator wrote rather than a
// server gave (vLLM's offline engine in a verify step, transformers on the
// CPU): the reference format under another schema, judged by
// `haloforge verify --answers FILE` as a server's answers would be, or
// kept as a reference when it is one a working model could give.
const AnswersSchema = "haloforge/verify-answers/v1"

// ParseReference validates a reference's bytes strictly: the schema and
// prompt set, every prompt exactly as the built-in set has it (ID,
// endpoint, text, max_tokens) and in its order, no unknown field, every
// logprob finite, every answer one a working model could give.
func ParseReference(data []byte) (*Record, error) {
	return parseRecord(data, ReferenceSchema)
}

// ParseAnswers validates a file of answers (AnswersSchema) as strictly as
// a reference, except that degenerate answers are read: judging them is
// the point.
func ParseAnswers(data []byte) (*Record, error) {
	return parseRecord(data, AnswersSchema)
}

func parseRecord(data []byte, schema string) (*Record, error) {
	what := "reference"
	if schema == AnswersSchema {
		what = "file of answers"
	}
	if len(data) > MaxReferenceSize {
		return nil, fmt.Errorf("larger than %d MiB: not a %s", MaxReferenceSize>>20, what)
	}
	var head struct {
		Schema    string `json:"schema"`
		PromptSet string `json:"prompt_set"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("not JSON: %s", printable(err.Error(), maxShown))
	}
	if head.Schema != schema {
		prefix := schema[:strings.LastIndexByte(schema, '/')+1]
		if strings.HasPrefix(head.Schema, prefix) {
			return nil, fmt.Errorf("schema %q: this haloforge reads %s only (recorded by another version)", printable(head.Schema, 80), schema)
		}
		return nil, fmt.Errorf("not a haloforge verify %s (schema %q, want %s)", what, printable(head.Schema, 80), schema)
	}
	if head.PromptSet != PromptSetID {
		return nil, fmt.Errorf("recorded for another prompt set (%q; this haloforge sends %s): record it again", printable(head.PromptSet, 80), PromptSetID)
	}
	var rec Record
	if err := strictDecode(data, &rec); err != nil {
		return nil, fmt.Errorf("not a valid %s: %s", what, printable(err.Error(), maxShown))
	}
	if err := rec.validate(schema == ReferenceSchema); err != nil {
		return nil, err
	}
	return &rec, nil
}

// validate checks the record's shape; a reference (asReference) must also
// hold no degenerate answer.
func (rec *Record) validate(asReference bool) error {
	for name, s := range map[string]string{"model": rec.Model, "server": rec.Server, "backend": rec.Backend, "haloforge": rec.Haloforge} {
		if len(s) > 256 {
			return fmt.Errorf("%s: longer than 256 bytes", name)
		}
	}
	if rec.ModelKey != "" && !isHex(rec.ModelKey, 64) {
		return errors.New("model_key: not a SHA-256")
	}
	if rec.Recorded.IsZero() {
		return errors.New("no recording date")
	}
	if rec.TopK < 1 || rec.TopK > maxTopPerToken {
		return fmt.Errorf("top_k %d: want 1 to %d", rec.TopK, maxTopPerToken)
	}
	set := Prompts()
	if len(rec.Answers) != len(set) {
		return fmt.Errorf("recorded for another prompt set: %d prompts, this set has %d: record it again", len(rec.Answers), len(set))
	}
	for i, a := range rec.Answers {
		p := set[i]
		if a.ID != p.ID || a.Endpoint != p.Endpoint || a.Prompt != p.Text || a.MaxTokens != p.MaxTokens {
			return fmt.Errorf("prompt %d is not the built-in prompt %q (%s, %q, %d tokens): recorded for another prompt set: record it again",
				i+1, p.ID, p.Endpoint, p.Text, p.MaxTokens)
		}
		// A generator's answer may be empty (an end of text at once):
		// that is degenerate output to judge, not a broken file.
		if (asReference && len(a.Tokens) == 0) || len(a.Tokens) > a.MaxTokens {
			return fmt.Errorf("prompt %d (%s): %d tokens, want 1 to %d", i+1, a.ID, len(a.Tokens), a.MaxTokens)
		}
		if len(a.Finish) > 32 || len(a.Text) > maxTextBytes {
			return fmt.Errorf("prompt %d (%s): finish_reason or text too long", i+1, a.ID)
		}
		for j, t := range a.Tokens {
			if err := validToken(t, rec.TopK); err != nil {
				return fmt.Errorf("prompt %d (%s), token %d: %w", i+1, a.ID, j, err)
			}
		}
		if why, at := degenerate(a); asReference && why != "" {
			return fmt.Errorf("prompt %d (%s)%s: the reference itself is degenerate output (%s): record it on a stack that works", i+1, a.ID, atPosition(at), why)
		}
	}
	return nil
}

func validToken(t Token, topK int) error {
	if t.ID < -1 {
		return fmt.Errorf("id %d", t.ID)
	}
	if len(t.Bytes) > maxTokenBytes {
		return fmt.Errorf("more than %d bytes", maxTokenBytes)
	}
	if !validLogprob(t.Logprob) {
		return fmt.Errorf("logprob %v: want a finite number at most 0", t.Logprob)
	}
	if len(t.Top) == 0 || len(t.Top) > topK+1 {
		return fmt.Errorf("%d alternatives, want 1 to %d", len(t.Top), topK+1)
	}
	for _, c := range t.Top {
		if c.ID < -1 || len(c.Bytes) > maxTokenBytes || !validLogprob(c.Logprob) {
			return errors.New("an alternative with a bad id, bytes or logprob")
		}
	}
	return nil
}

// validLogprob is a finite log-probability (a rounding error above 0
// allowed).
func validLogprob(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && v <= 1e-3 && v >= -1e4
}
