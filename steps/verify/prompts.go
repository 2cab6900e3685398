package verify

import (
	"regexp"
	"strings"
)

// Endpoint is the OpenAI-compatible API a prompt goes to.
type Endpoint string

// The two endpoints llama-server, vLLM and Ollama all serve.
const (
	// Completions is POST /v1/completions: the prompt is continued as raw
	// text, with no chat template in between.
	Completions Endpoint = "completions"
	// Chat is POST /v1/chat/completions: the prompt is one user message,
	// through the model's own chat template.
	Chat Endpoint = "chat"
)

// path is the endpoint's path under the server's base URL.
func (e Endpoint) path() string {
	if e == Chat {
		return "/v1/chat/completions"
	}
	return "/v1/completions"
}

// PromptSetID names the built-in prompt set. A reference is only ever
// compared with answers to the same set; a change to any prompt, its
// endpoint or its length is a new set with a new ID.
const PromptSetID = "haloforge/verify/prompts/v1"

// TopK is how many alternatives per position are asked for (and kept in a
// reference): enough to see a near-tie and a reshuffled distribution, few
// enough that every server returns them (OpenAI allows 0-20).
const TopK = 5

// Seed is sent with every request. Greedy decoding needs none, but a
// server that samples anyway then answers the same way every time.
const Seed = 1151

// Prompt is one request of the built-in prompt set.
type Prompt struct {
	ID        string
	Endpoint  Endpoint
	Text      string
	MaxTokens int
	// Answer is a word any working instruct model's greedy answer contains
	// (case-insensitive, as a whole word); "" for a prompt that is only
	// compared with a reference.
	Answer string
	// Kind says in a few words what the prompt asks for.
	Kind string
}

// prompts is the prompt set (PromptSetID). Four have a known answer: a
// fact, a sum and a continuation through /v1/completions, which needs no
// chat template and so works the same on every server, and a fact through
// /v1/chat/completions, given room for a model that thinks aloud first.
// Two more are there for the comparison with a reference: longer,
// open-ended text whose every token is a position compared.
var prompts = []Prompt{
	{ID: "capital", Endpoint: Completions, Text: "The capital of France is", MaxTokens: 8, Answer: "Paris", Kind: "a fact"},
	{ID: "sum", Endpoint: Completions, Text: "17 + 25 =", MaxTokens: 8, Answer: "42", Kind: "a sum"},
	{ID: "weekdays", Endpoint: Completions, Text: "Monday, Tuesday, Wednesday, Thursday,", MaxTokens: 8, Answer: "Friday", Kind: "a continuation"},
	{ID: "chat", Endpoint: Chat, Text: "What is the capital of Japan? Answer with one word.", MaxTokens: 48, Answer: "Tokyo", Kind: "a fact, as a chat"},
	{ID: "story", Endpoint: Completions, Text: "Once upon a time", MaxTokens: 16, Kind: "free text"},
	{ID: "code", Endpoint: Completions, Text: "def fibonacci(n):", MaxTokens: 16, Kind: "code"},
}

// Prompts returns the built-in prompt set, in the order it is sent.
func Prompts() []Prompt { return append([]Prompt(nil), prompts...) }

// answerPattern matches a prompt's answer as a whole word, in any case.
func answerPattern(answer string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^|[^\pL\pN])` + regexp.QuoteMeta(answer) + `($|[^\pL\pN])`)
}

// hasAnswer says whether text contains the prompt's known answer.
func (p Prompt) hasAnswer(text string) bool {
	return p.Answer != "" && answerPattern(p.Answer).MatchString(text)
}

// knownAnswers is how many prompts of the set have a known answer.
func knownAnswers() int {
	n := 0
	for _, p := range prompts {
		if p.Answer != "" {
			n++
		}
	}
	return n
}

// answerList is the known answers, comma-separated.
func answerList() string {
	var out []string
	for _, p := range prompts {
		if p.Answer != "" {
			out = append(out, p.Answer)
		}
	}
	return strings.Join(out, ", ")
}

// PromptSet is the prompt set as `haloforge verify --prompts` prints it,
// for a generator that answers it without a server (a verify step's vLLM
// engine, transformers on the CPU) and writes an AnswersSchema file.
type PromptSet struct {
	ID      string       `json:"prompt_set"`
	TopK    int          `json:"top_k"`
	Seed    int          `json:"seed"`
	Prompts []PromptJSON `json:"prompts"`
}

// PromptJSON is one prompt of PromptSet: a chat prompt is the one user
// message, the rest a plain completion of the text.
type PromptJSON struct {
	ID        string   `json:"id"`
	Endpoint  Endpoint `json:"endpoint"`
	Prompt    string   `json:"prompt"`
	MaxTokens int      `json:"max_tokens"`
}

// Set is the prompt set for a generator.
func Set() PromptSet {
	s := PromptSet{ID: PromptSetID, TopK: TopK, Seed: Seed}
	for _, p := range prompts {
		s.Prompts = append(s.Prompts, PromptJSON{ID: p.ID, Endpoint: p.Endpoint, Prompt: p.Text, MaxTokens: p.MaxTokens})
	}
	return s
}
