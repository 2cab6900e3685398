package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Answer is a server's answer to one prompt: the text, and per generated
// token the token and its log-probability with the TopK most likely
// tokens at that position. In a reference file it is one entry of
// "prompts" (the text and tokens as printable text, the bytes exact).
type Answer struct {
	ID        string   `json:"id"`
	Endpoint  Endpoint `json:"endpoint"`
	Prompt    string   `json:"prompt"`
	MaxTokens int      `json:"max_tokens"`
	// Finish is the server's finish_reason: "length" at MaxTokens,
	// "stop" at the end of the answer.
	Finish string `json:"finish_reason"`
	// Text is what the server answered. In memory it is the server's
	// own bytes; written out, only its printable form.
	Text string `json:"text"`
	// Tokens are the generated tokens with their logprobs; empty when the
	// server returned none (Logprobs false).
	Tokens []Token `json:"tokens"`
	// Logprobs says the server returned logprobs for this answer.
	Logprobs bool `json:"-"`
	// fingerprint is the answer's system_fingerprint (llama-server: its
	// build), as sent.
	fingerprint string
}

// Token is one generated token. Where the server merges several tokens
// into one entry (llama-server holds back the bytes of a character cut
// across tokens and reports them with the token that completes it), it is
// that entry: Bytes are all of them, ID and Top the last token's.
type Token struct {
	// ID is the vocabulary ID, -1 when the server does not say (vLLM).
	ID int `json:"id"`
	// Bytes are the token's exact bytes.
	Bytes Bytes `json:"bytes"`
	// Logprob is the chosen token's log-probability; NaN when the server
	// sent null, NaN or an infinity for it.
	Logprob float64 `json:"logprob"`
	// Top are the most likely tokens at this position, most likely first.
	Top []Choice `json:"top_logprobs"`
}

// Choice is one of the most likely tokens at a position.
type Choice struct {
	ID      int     `json:"id"`
	Bytes   Bytes   `json:"bytes"`
	Logprob float64 `json:"logprob"`
}

// Bytes are a token's bytes. In JSON they are a list of numbers, as the
// OpenAI API's "bytes" field, so a reference file holds no raw server
// text; a "token" field beside them shows them as text for people.
type Bytes []byte

// MarshalJSON writes the bytes as a list of numbers.
func (b Bytes) MarshalJSON() ([]byte, error) {
	ints := make([]int, len(b))
	for i, c := range b {
		ints[i] = int(c)
	}
	return json.Marshal(ints)
}

// UnmarshalJSON reads a list of numbers from 0 to 255.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	var ints []int
	if err := json.Unmarshal(data, &ints); err != nil {
		return errors.New("bytes: want a list of numbers from 0 to 255")
	}
	out := make([]byte, len(ints))
	for i, v := range ints {
		if v < 0 || v > 255 {
			return fmt.Errorf("bytes: %d is not a byte", v)
		}
		out[i] = byte(v)
	}
	*b = out
	return nil
}

// tokenJSON is how a token is written: its fields and its printable text.
type tokenJSON struct {
	ID      int          `json:"id"`
	Token   string       `json:"token"`
	Bytes   Bytes        `json:"bytes"`
	Logprob float64      `json:"logprob"`
	Top     []choiceJSON `json:"top_logprobs"`
}

type choiceJSON struct {
	ID      int     `json:"id"`
	Token   string  `json:"token"`
	Bytes   Bytes   `json:"bytes"`
	Logprob float64 `json:"logprob"`
}

// MarshalJSON adds the printable "token" beside the bytes.
func (t Token) MarshalJSON() ([]byte, error) {
	out := tokenJSON{ID: t.ID, Token: tokenText(t.Bytes), Bytes: t.Bytes, Logprob: t.Logprob, Top: []choiceJSON{}}
	for _, c := range t.Top {
		out.Top = append(out.Top, choiceJSON{ID: c.ID, Token: tokenText(c.Bytes), Bytes: c.Bytes, Logprob: c.Logprob})
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads a token strictly; its "token" text is ignored (the
// bytes are the token).
func (t *Token) UnmarshalJSON(data []byte) error {
	var in tokenJSON
	if err := strictDecode(data, &in); err != nil {
		return err
	}
	*t = Token{ID: in.ID, Bytes: in.Bytes, Logprob: in.Logprob}
	for _, c := range in.Top {
		t.Top = append(t.Top, Choice{ID: c.ID, Bytes: c.Bytes, Logprob: c.Logprob})
	}
	sortChoices(t.Top)
	return nil
}

// MarshalJSON writes the answer with its text in printable form only.
func (a Answer) MarshalJSON() ([]byte, error) {
	type plain Answer
	p := plain(a)
	p.Text = printable(a.Text, 4*maxShown)
	if p.Tokens == nil {
		p.Tokens = []Token{}
	}
	return json.Marshal(p)
}

// UnmarshalJSON reads an answer strictly: an unknown field is an error.
func (a *Answer) UnmarshalJSON(data []byte) error {
	type plain Answer
	var p plain
	if err := strictDecode(data, &p); err != nil {
		return err
	}
	*a = Answer(p)
	a.Logprobs = len(a.Tokens) > 0
	return nil
}

// strictDecode decodes exactly one JSON value with no unknown fields.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

// hasIDs says every token and alternative of the answer has its vocabulary
// ID, so tokens can be matched by ID rather than by their bytes.
func (a Answer) hasIDs() bool {
	for _, t := range a.Tokens {
		if t.ID < 0 {
			return false
		}
		for _, c := range t.Top {
			if c.ID < 0 {
				return false
			}
		}
	}
	return len(a.Tokens) > 0
}

// Limits of what is kept from one answer, whatever a server sends: a
// server that ignores max_tokens or top_logprobs cannot make haloforge
// hold more than this.
const (
	maxAnswerTokens = 256
	maxTopPerToken  = 20
	maxTokenBytes   = 256
	maxTextBytes    = 64 << 10
)

// wire is an OpenAI-compatible answer, as llama-server, vLLM and Ollama
// send it.
type wire struct {
	Object  string `json:"object"`
	Choices []struct {
		Text    *string `json:"text"`
		Message *struct {
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
			Reasoning        *string `json:"reasoning"`
		} `json:"message"`
		Logprobs     json.RawMessage `json:"logprobs"`
		FinishReason *string         `json:"finish_reason"`
	} `json:"choices"`
	SystemFingerprint *string         `json:"system_fingerprint"`
	Error             json.RawMessage `json:"error"`
}

// chatLogprobs is the logprobs of /v1/chat/completions, which llama-server
// also sends for /v1/completions: one entry per token.
type chatLogprobs struct {
	Content []struct {
		ID          *int     `json:"id"`
		Token       *string  `json:"token"`
		Bytes       []int    `json:"bytes"`
		Logprob     *float64 `json:"logprob"`
		TopLogprobs []struct {
			ID      *int     `json:"id"`
			Token   *string  `json:"token"`
			Bytes   []int    `json:"bytes"`
			Logprob *float64 `json:"logprob"`
		} `json:"top_logprobs"`
	} `json:"content"`
}

// ServerError is an answer that is an error: the server's own message
// (printable), and the HTTP status.
type ServerError struct {
	Status  int
	Message string
}

func (e *ServerError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("the server answered %d: %s", e.Status, e.Message)
	}
	return "the server answered with an error: " + e.Message
}

// ParseAnswer reads a server's answer to p (the body of a 200 response):
// the text, the finish reason, and the tokens with their logprobs in
// either format (the content list, or vLLM's legacy lists). NaN and
// infinities, which Python servers write as bare NaN/Infinity (not JSON),
// are read as NaN. An error means the body is not an OpenAI-compatible
// answer; an error object in the body is a *ServerError.
func ParseAnswer(p Prompt, body []byte) (Answer, error) {
	a := Answer{ID: p.ID, Endpoint: p.Endpoint, Prompt: p.Text, MaxTokens: p.MaxTokens}
	var w wire
	if err := json.Unmarshal(nonFiniteToNull(body), &w); err != nil {
		return a, fmt.Errorf("not an OpenAI-compatible answer: %s", printable(err.Error(), maxShown))
	}
	if len(w.Error) > 0 && string(w.Error) != "null" {
		return a, &ServerError{Message: errorMessage(w.Error)}
	}
	if len(w.Choices) == 0 {
		return a, errors.New("not an OpenAI-compatible answer: no choices")
	}
	c := w.Choices[0]
	switch {
	case p.Endpoint == Chat && c.Message != nil:
		var parts []string
		for _, s := range []*string{c.Message.ReasoningContent, c.Message.Reasoning, c.Message.Content} {
			if s != nil && *s != "" {
				parts = append(parts, *s)
			}
		}
		a.Text = strings.Join(parts, "\n")
	case p.Endpoint == Completions && c.Text != nil:
		a.Text = *c.Text
	default:
		return a, fmt.Errorf("not an OpenAI-compatible answer: no %s in the choice", map[Endpoint]string{Chat: "message", Completions: "text"}[p.Endpoint])
	}
	if w.SystemFingerprint != nil && len(*w.SystemFingerprint) <= 128 {
		a.fingerprint = *w.SystemFingerprint
	}
	if len(a.Text) > maxTextBytes {
		a.Text = a.Text[:maxTextBytes]
	}
	if c.FinishReason != nil {
		a.Finish = printable(*c.FinishReason, 32)
	}
	toks, ok, err := parseLogprobs(c.Logprobs)
	if err != nil {
		return a, fmt.Errorf("not an OpenAI-compatible answer: logprobs: %w", err)
	}
	a.Tokens, a.Logprobs = toks, ok
	return a, nil
}

// errorMessage is an error object's message (or the error as a string),
// printable.
func errorMessage(raw json.RawMessage) string {
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Message != "" {
		return printable(obj.Message, maxShown)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return printable(s, maxShown)
	}
	return printable(string(raw), maxShown)
}

// parseLogprobs reads a choice's logprobs. ok is false when there are
// none (absent, null, or an empty list: a server without logprobs, or
// llama-server holding back every token as part of a character).
func parseLogprobs(raw json.RawMessage) (toks []Token, ok bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, false, errors.New("not an object")
	}
	if _, isChat := probe["content"]; isChat {
		toks, err = parseChatLogprobs(raw)
	} else if _, isLegacy := probe["tokens"]; isLegacy {
		toks, err = parseLegacyLogprobs(raw)
	} else {
		return nil, false, errors.New("neither a content list nor token lists")
	}
	return toks, err == nil && len(toks) > 0, err
}

func parseChatLogprobs(raw json.RawMessage) ([]Token, error) {
	var lp chatLogprobs
	if err := json.Unmarshal(raw, &lp); err != nil {
		return nil, errors.New("content: " + printable(err.Error(), maxShown))
	}
	var out []Token
	for i, e := range lp.Content {
		if i == maxAnswerTokens {
			break
		}
		t := Token{ID: intOr(e.ID), Bytes: tokenBytes(e.Bytes, e.Token), Logprob: floatOr(e.Logprob)}
		for j, c := range e.TopLogprobs {
			if j == maxTopPerToken {
				break
			}
			t.Top = append(t.Top, Choice{ID: intOr(c.ID), Bytes: tokenBytes(c.Bytes, c.Token), Logprob: floatOr(c.Logprob)})
		}
		sortChoices(t.Top)
		out = append(out, t)
	}
	return out, nil
}

func parseLegacyLogprobs(raw json.RawMessage) ([]Token, error) {
	var lp struct {
		Tokens        []string              `json:"tokens"`
		TokenLogprobs []*float64            `json:"token_logprobs"`
		TopLogprobs   []map[string]*float64 `json:"top_logprobs"`
	}
	if err := json.Unmarshal(raw, &lp); err != nil {
		return nil, errors.New("token lists: " + printable(err.Error(), maxShown))
	}
	var out []Token
	for i, tok := range lp.Tokens {
		if i == maxAnswerTokens {
			break
		}
		t := Token{ID: -1, Bytes: capBytes([]byte(tok)), Logprob: math.NaN()}
		if i < len(lp.TokenLogprobs) {
			t.Logprob = floatOr(lp.TokenLogprobs[i])
		}
		if i < len(lp.TopLogprobs) {
			for s, v := range lp.TopLogprobs[i] {
				t.Top = append(t.Top, Choice{ID: -1, Bytes: capBytes([]byte(s)), Logprob: floatOr(v)})
			}
		}
		sortChoices(t.Top)
		if len(t.Top) > maxTopPerToken {
			t.Top = t.Top[:maxTopPerToken]
		}
		out = append(out, t)
	}
	return out, nil
}

// tokenBytes are a token's bytes: the "bytes" list when it is one (every
// number a byte), else the token's text.
func tokenBytes(ints []int, text *string) Bytes {
	if ints != nil {
		b := make([]byte, 0, len(ints))
		valid := true
		for _, v := range ints {
			if v < 0 || v > 255 {
				valid = false
				break
			}
			b = append(b, byte(v))
		}
		if valid {
			return capBytes(b)
		}
	}
	if text != nil {
		return capBytes([]byte(*text))
	}
	return Bytes{}
}

func capBytes(b []byte) Bytes {
	if len(b) > maxTokenBytes {
		b = b[:maxTokenBytes]
	}
	return Bytes(b)
}

func intOr(p *int) int {
	if p == nil || *p < 0 {
		return -1
	}
	return *p
}

// floatOr is the number, or NaN for null (how llama-server's JSON library
// writes NaN and infinities) and for an infinity.
func floatOr(p *float64) float64 {
	if p == nil || math.IsInf(*p, 0) {
		return math.NaN()
	}
	return *p
}

// sortChoices orders alternatives most likely first (NaN last), ties by
// bytes, so two servers' lists compare in the same order.
func sortChoices(cs []Choice) {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i].Logprob, cs[j].Logprob
		switch {
		case math.IsNaN(a) != math.IsNaN(b):
			return !math.IsNaN(a)
		case a != b:
			return a > b
		}
		return bytes.Compare(cs[i].Bytes, cs[j].Bytes) < 0
	})
}

// nonFiniteToNull replaces the bare NaN, Infinity and -Infinity that
// Python's json module writes (not JSON) with null, outside strings, so
// such an answer is read and its logprobs seen as broken rather than the
// whole answer refused.
func nonFiniteToNull(body []byte) []byte {
	if !bytes.Contains(body, []byte("NaN")) && !bytes.Contains(body, []byte("Infinity")) {
		return body
	}
	out := make([]byte, 0, len(body))
	inString, escaped := false, false
	for i := 0; i < len(body); i++ {
		c := body[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			out = append(out, c)
			continue
		}
		matched := false
		for _, word := range []string{"-Infinity", "Infinity", "NaN"} {
			if bytes.HasPrefix(body[i:], []byte(word)) {
				out = append(out, "null"...)
				i += len(word) - 1
				matched = true
				break
			}
		}
		if !matched {
			out = append(out, c)
		}
	}
	return out
}
