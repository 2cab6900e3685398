package verify

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The answers of Debian sid's llama-server (build 11669), captured on
// the tiny test model (see testdata/README.md).
func TestParseAnswerLlamaServer(t *testing.T) {
	tests := []struct {
		name, file   string
		prompt       Prompt
		text         string
		tokens       int
		logprobs     bool
		firstID      int
		firstBytes   []byte
		firstTopText string
	}{
		{"completions", "llama-server/completions.json", prompts[0], "VEVE V7O", 8, true, 89, []byte("V"), "V"},
		{"chat", "llama-server/chat.json", prompts[3], "UZNFa7.c", 48, true, 88, []byte("U"), "U"},
		// llama-server holds back the bytes of a character cut across
		// tokens and reports them with the token that completes it.
		{"merged bytes", "llama-server/completions-merged-bytes.json", prompts[0], "\ufffd\ufffd7a7a7a", 6, true, 58, []byte{209, 197, 55}, "7"},
		// Every token held back: no logprobs at all.
		{"every byte held back", "llama-server/completions-bytes-held.json", prompts[1], "\ufffd\ufffd", 0, false, 0, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ParseAnswer(tt.prompt, readTestdata(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(a.Text, tt.text) || len(a.Tokens) != tt.tokens || a.Logprobs != tt.logprobs {
				t.Fatalf("text %q tokens %d logprobs %v; want %q… %d %v", a.Text, len(a.Tokens), a.Logprobs, tt.text, tt.tokens, tt.logprobs)
			}
			if a.Finish != "length" || a.ID != tt.prompt.ID {
				t.Errorf("finish %q id %q", a.Finish, a.ID)
			}
			if tt.tokens == 0 {
				return
			}
			first := a.Tokens[0]
			if first.ID != tt.firstID || string(first.Bytes) != string(tt.firstBytes) || string(first.Top[0].Bytes) != tt.firstTopText {
				t.Errorf("first token %d %q top %q", first.ID, first.Bytes, first.Top[0].Bytes)
			}
			if len(first.Top) != TopK || math.IsNaN(first.Logprob) || first.Logprob > 0 {
				t.Errorf("top %d logprob %v", len(first.Top), first.Logprob)
			}
			for i := 1; i < len(first.Top); i++ {
				if first.Top[i].Logprob > first.Top[i-1].Logprob {
					t.Errorf("alternatives not most likely first: %v", first.Top)
				}
			}
			if !a.hasIDs() {
				t.Error("llama-server gives token IDs")
			}
		})
	}
}

func TestParseAnswerFormats(t *testing.T) {
	tests := []struct {
		name      string
		prompt    Prompt
		body      string
		text      string
		tokens    int
		nanAt     int // -1: none
		wantErr   string
		serverErr bool
	}{
		{name: "vLLM legacy completions", prompt: prompts[0],
			body: `{"object":"text_completion","choices":[{"index":0,"text":" Paris.","logprobs":{"text_offset":[0,6],"token_logprobs":[-0.01,-0.5],"tokens":[" Paris","."],"top_logprobs":[{" Paris":-0.01," Lyon":-4.2},{".":-0.5,",":-1.1}]},"finish_reason":"length"}]}`,
			text: " Paris.", tokens: 2, nanAt: -1},
		{name: "Python's bare NaN", prompt: prompts[0],
			body: `{"choices":[{"text":"!!","logprobs":{"tokens":["!","!"],"token_logprobs":[-Infinity,-0.2],"top_logprobs":[{"!":NaN},{"!":-Infinity,"?":-1}]},"finish_reason":"length"}]}`,
			text: "!!", tokens: 2, nanAt: 0},
		{name: "NaN inside a string is text", prompt: prompts[0],
			body: `{"choices":[{"text":"NaN \"Infinity\"","logprobs":null,"finish_reason":"stop"}]}`,
			text: `NaN "Infinity"`, tokens: 0, nanAt: -1},
		{name: "null logprob (llama-server's NaN)", prompt: prompts[3],
			body: `{"choices":[{"message":{"role":"assistant","content":"x"},"logprobs":{"content":[{"id":5,"token":"x","bytes":[120],"logprob":null,"top_logprobs":[{"id":5,"token":"x","bytes":[120],"logprob":null}]}]},"finish_reason":"stop"}]}`,
			text: "x", tokens: 1, nanAt: 0},
		{name: "a thinking model's reasoning counts as text", prompt: prompts[3],
			body: `{"choices":[{"message":{"role":"assistant","content":"","reasoning_content":"The capital of Japan is Tokyo."},"finish_reason":"length"}]}`,
			text: "The capital of Japan is Tokyo.", tokens: 0, nanAt: -1},
		{name: "bytes that are not bytes fall back to the text", prompt: prompts[3],
			body: `{"choices":[{"message":{"content":"ab"},"logprobs":{"content":[{"token":"ab","bytes":[97,300],"logprob":-0.1,"top_logprobs":[]}]}}]}`,
			text: "ab", tokens: 1, nanAt: -1},
		{name: "an error object", prompt: prompts[0], body: string(readTestdata(t, "llama-server/error.json")), serverErr: true, wantErr: "Value must be between"},
		{name: "not JSON", prompt: prompts[0], body: `<html>hello</html>`, wantErr: "not an OpenAI-compatible answer"},
		{name: "no choices", prompt: prompts[0], body: `{"choices":[]}`, wantErr: "no choices"},
		{name: "chat answer to a completions prompt", prompt: prompts[0], body: `{"choices":[{"message":{"content":"x"}}]}`, wantErr: "no text in the choice"},
		{name: "logprobs of neither shape", prompt: prompts[0], body: `{"choices":[{"text":"x","logprobs":{"foo":1}}]}`, wantErr: "neither a content list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ParseAnswer(tt.prompt, []byte(tt.body))
			if tt.wantErr != "" {
				var se *ServerError
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || errors.As(err, &se) != tt.serverErr {
					t.Fatalf("err %v, want %q (server error %v)", err, tt.wantErr, tt.serverErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Text != tt.text || len(a.Tokens) != tt.tokens {
				t.Fatalf("text %q tokens %d", a.Text, len(a.Tokens))
			}
			for i, tok := range a.Tokens {
				if math.IsNaN(tok.Logprob) != (i == tt.nanAt) {
					t.Errorf("token %d logprob %v, NaN expected only at %d", i, tok.Logprob, tt.nanAt)
				}
			}
		})
	}
}

func TestParseAnswerBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"choices":[{"text":"x","logprobs":{"content":[`)
	for i := 0; i < 1000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"id":1,"token":"` + strings.Repeat("y", 400) + `","logprob":-1,"top_logprobs":[`)
		for j := 0; j < 40; j++ {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"id":2,"token":"z","logprob":-2}`)
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`]}}]}`)
	a, err := ParseAnswer(prompts[0], []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Tokens) != maxAnswerTokens || len(a.Tokens[0].Top) != maxTopPerToken || len(a.Tokens[0].Bytes) != maxTokenBytes {
		t.Errorf("kept %d tokens, %d alternatives, %d bytes", len(a.Tokens), len(a.Tokens[0].Top), len(a.Tokens[0].Bytes))
	}
}

func FuzzParseAnswer(f *testing.F) {
	for _, name := range []string{"llama-server/completions.json", "llama-server/chat.json", "llama-server/completions-merged-bytes.json",
		"llama-server/completions-bytes-held.json", "llama-server/error.json"} {
		f.Add(uint8(0), readTestdata(f, name))
		f.Add(uint8(3), readTestdata(f, name))
	}
	f.Add(uint8(0), []byte(`{"choices":[{"text":"!!","logprobs":{"tokens":["!","!"],"token_logprobs":[NaN,-Infinity],"top_logprobs":[{"!":NaN},null]}}]}`))
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		p := prompts[int(which)%len(prompts)]
		a, err := ParseAnswer(p, body)
		if err != nil {
			return
		}
		if len(a.Tokens) > maxAnswerTokens || len(a.Text) > maxTextBytes {
			t.Fatalf("unbounded: %d tokens, %d bytes of text", len(a.Tokens), len(a.Text))
		}
		for _, tok := range a.Tokens {
			if len(tok.Top) > maxTopPerToken || len(tok.Bytes) > maxTokenBytes {
				t.Fatal("unbounded token")
			}
		}
		// Whatever came in, what is shown is printable.
		for _, s := range append([]string{printable(a.Text, maxShown)}, tokenTexts(a.Tokens)...) {
			if hostile(s) {
				t.Fatalf("unsanitised text shown: %q", s)
			}
		}
		// The detectors and the comparison take any answer.
		_, _ = degenerate(a)
		_ = compare(a, a, DefaultTolerance)
	})
}

// hostile says s holds what must never reach a terminal: C0 or C1
// controls (ESC among them), DEL, or bidi embeddings, overrides and
// isolates.
func hostile(s string) bool {
	for _, r := range s {
		switch {
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
			return true
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return true
		}
	}
	return false
}
