package verify

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// goodRecord is a record of the prompt set whose answers are fluent,
// with a hostile byte sequence in one token and in the model's name.
func goodRecord() *Record {
	rec := &Record{Schema: ReferenceSchema, PromptSet: PromptSetID, Model: "m\x1b[31m\u202e.gguf", Server: "llama.cpp b1",
		Backend: "CPU", Recorded: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), Haloforge: "dev", TopK: TopK}
	for _, p := range prompts {
		a := answerOf(" there", " was", "\x1b]0;x\x07", " girl")
		a.ID, a.Endpoint, a.Prompt, a.MaxTokens = p.ID, p.Endpoint, p.Text, p.MaxTokens
		rec.Answers = append(rec.Answers, a)
	}
	return rec
}

func TestReferenceRoundTrip(t *testing.T) {
	rec := goodRecord()
	data, err := MarshalReference(rec)
	if err != nil {
		t.Fatal(err)
	}
	if hostileBytes(data) {
		t.Fatalf("the reference file holds raw control or bidi bytes:\n%s", data)
	}
	back, err := ParseReference(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Answers) != len(prompts) || !back.Recorded.Equal(rec.Recorded) || back.TopK != TopK {
		t.Fatalf("read back %+v", back)
	}
	// The bytes are exact, so the record compares equal to itself.
	res := JudgeReference(rec, back, DefaultTolerance)
	if res.Verdict != Right {
		t.Fatalf("a record against its own reference: %s", res.Line())
	}
	if !bytes.Equal(back.Answers[0].Tokens[2].Bytes, []byte("\x1b]0;x\x07")) {
		t.Errorf("bytes not kept exactly: %q", back.Answers[0].Tokens[2].Bytes)
	}
}

// hostileBytes says data holds a C0 control other than newline, ESC, DEL,
// a C1 control or a bidi override, raw.
func hostileBytes(data []byte) bool {
	for _, r := range string(data) {
		if r == '\n' {
			continue
		}
		if hostile(string(r)) {
			return true
		}
	}
	return false
}

func TestParseReferenceRejects(t *testing.T) {
	good, err := MarshalReference(goodRecord())
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	prompt := func(m map[string]any, i int) map[string]any { return m["prompts"].([]any)[i].(map[string]any) }
	token := func(m map[string]any, i, j int) map[string]any {
		return prompt(m, i)["tokens"].([]any)[j].(map[string]any)
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"not JSON", []byte("hello"), "not JSON"},
		{"another file's JSON", []byte(`{"results": []}`), "not a haloforge verify reference"},
		{"a newer format", edit(func(m map[string]any) { m["schema"] = "haloforge/verify-reference/v2" }), "another version"},
		{"another prompt set", edit(func(m map[string]any) { m["prompt_set"] = "haloforge/verify/prompts/v0" }), "another prompt set"},
		{"a prompt changed", edit(func(m map[string]any) { prompt(m, 1)["prompt"] = "17 + 26 =" }), "another prompt set"},
		{"a prompt missing", edit(func(m map[string]any) { m["prompts"] = m["prompts"].([]any)[:5] }), "5 prompts"},
		{"an unknown field", edit(func(m map[string]any) { m["extra"] = 1 }), "unknown field"},
		{"an unknown token field", edit(func(m map[string]any) { token(m, 0, 0)["prob"] = 1 }), "unknown field"},
		{"a positive logprob", edit(func(m map[string]any) { token(m, 0, 0)["logprob"] = 3.0 }), "logprob 3"},
		{"not a byte", edit(func(m map[string]any) { token(m, 0, 0)["bytes"] = []int{300} }), "not a byte"},
		{"no tokens", edit(func(m map[string]any) { prompt(m, 2)["tokens"] = []any{} }), "0 tokens"},
		{"too many alternatives", edit(func(m map[string]any) {
			top := token(m, 0, 0)["top_logprobs"].([]any)
			token(m, 0, 0)["top_logprobs"] = append(top, top...)
		}), "alternatives"},
		{"no date", edit(func(m map[string]any) { delete(m, "recorded") }), "no recording date"},
		{"degenerate reference", edit(func(m map[string]any) {
			toks := prompt(m, 4)["tokens"].([]any)
			for i := range toks {
				toks[i] = toks[0]
			}
			for len(toks) < 8 {
				toks = append(toks, toks[0])
			}
			prompt(m, 4)["tokens"] = toks
		}), "degenerate output"},
		{"two values", append(append([]byte(nil), good...), good...), "after top-level value"},
		{"too large", append(bytes.Repeat([]byte(" "), MaxReferenceSize), good...), "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseReference(tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
			if hostile(err.Error()) {
				t.Fatalf("unsanitised error: %q", err)
			}
		})
	}
}

func TestReadReferenceFiles(t *testing.T) {
	dir := t.TempDir()
	good, _ := MarshalReference(goodRecord())
	path := filepath.Join(dir, "ref.json")
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadReference(path); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadReference(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "FIFO") {
			t.Errorf("a FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO waited for a writer")
	}
	if _, err := ReadReference(filepath.Join(dir, "gone.json")); err == nil {
		t.Error("a missing file read")
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), MaxReferenceSize+10), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadReference(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a large file: %v", err)
	}
}

func TestMarshalReferenceRefuses(t *testing.T) {
	junk := goodRecord()
	junk.Answers[0] = answerOf("!", "!", "!", "!", "!", "!", "!", "!")
	junk.Answers[0].ID, junk.Answers[0].Prompt = prompts[0].ID, prompts[0].Text
	if _, err := MarshalReference(junk); err == nil || !strings.Contains(err.Error(), "degenerate output") {
		t.Errorf("junk recorded: %v", err)
	}
	none := goodRecord()
	none.Answers[3].Logprobs, none.Answers[3].Tokens = false, nil
	if _, err := MarshalReference(none); err == nil || !strings.Contains(err.Error(), "no logprobs") {
		t.Errorf("no logprobs recorded: %v", err)
	}
}

func FuzzParseReference(f *testing.F) {
	good, _ := MarshalReference(goodRecord())
	f.Add(good)
	f.Add([]byte(`{"schema":"haloforge/verify-reference/v1","prompt_set":"haloforge/verify/prompts/v1","prompts":[]}`))
	f.Add([]byte(`{"schema":"haloforge/verify-reference/v1","prompt_set":"haloforge/verify/prompts/v1","top_k":5,"recorded":"2026-11-29T00:00:00Z","prompts":[{"tokens":[{"bytes":[1,2],"logprob":-1,"top_logprobs":[{"bytes":[],"logprob":-1}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := ParseReference(data)
		if err != nil {
			if hostile(err.Error()) {
				t.Fatalf("unsanitised error: %q", err)
			}
			return
		}
		// A reference that parses compares with itself, and writes back to
		// a file that parses.
		if res := JudgeReference(rec, rec, DefaultTolerance); res.Verdict != Right {
			t.Fatalf("a reference against itself: %s", res.Line())
		}
		out, err := MarshalReference(rec)
		if err != nil {
			t.Fatalf("a valid reference does not write: %v", err)
		}
		if _, err := ParseReference(out); err != nil {
			t.Fatalf("written back, it does not parse: %v", err)
		}
		if hostileBytes(out) {
			t.Fatal("raw control bytes written")
		}
	})
}

// A file of answers a generator wrote is read as strictly as a reference,
// but its degenerate answers are read too: judging them is the point.
func TestParseAnswers(t *testing.T) {
	rec := goodRecord()
	junk := answerOf("!", "!", "!", "!", "!", "!", "!", "!")
	junk.ID, junk.Endpoint, junk.Prompt, junk.MaxTokens = prompts[0].ID, prompts[0].Endpoint, prompts[0].Text, prompts[0].MaxTokens
	rec.Answers[0] = junk
	rec.Schema = AnswersSchema
	data, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		parse func([]byte) (*Record, error)
		data  []byte
		want  string // "" for no error
	}{
		{"answers with junk are read", ParseAnswers, data, ""},
		{"as a reference they are refused", ParseReference, bytes.Replace(data, []byte(AnswersSchema), []byte(ReferenceSchema), 1), "the reference itself is degenerate output"},
		{"a reference is no file of answers", ParseAnswers, bytes.Replace(data, []byte(AnswersSchema), []byte(ReferenceSchema), 1), "not a haloforge verify file of answers"},
		{"another version's answers", ParseAnswers, bytes.Replace(data, []byte(AnswersSchema), []byte("haloforge/verify-answers/v9"), 1), "this haloforge reads haloforge/verify-answers/v1 only"},
		{"an unknown field", ParseAnswers, bytes.Replace(data, []byte(`"top_k"`), []byte(`"extra":1,"top_k"`), 1), "unknown field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.parse(tc.data)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			case tc.want == "":
				if res := JudgeKnownAnswers(got); res.Verdict != Wrong {
					t.Fatalf("judged %s", res.Line())
				}
			}
		})
	}
}

// The prompt set a generator reads is the one the client sends.
func TestSetIsThePromptSet(t *testing.T) {
	s := Set()
	if s.ID != PromptSetID || s.TopK != TopK || s.Seed != Seed || len(s.Prompts) != len(prompts) {
		t.Fatalf("%+v", s)
	}
	for i, p := range prompts {
		if q := s.Prompts[i]; q.ID != p.ID || q.Endpoint != p.Endpoint || q.Prompt != p.Text || q.MaxTokens != p.MaxTokens {
			t.Errorf("prompt %d: %+v, want %+v", i, q, p)
		}
	}
}
