package serve

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps/runner"
)

// The events a watch (Watch) adds to a serve run's stream, between the
// server step's runner.StepStarted and runner.StepFinished. They are
// runner Events (they embed runner.Added), so a consumer reads them in the
// same type switch as the runner's own; the runner itself knows nothing of
// servers.

// StartupPhase says a server step entered a phase of its start-up, or saw
// something worth showing within the phase it is in (Warning set).
type StartupPhase struct {
	runner.Added
	Step    string
	Phase   PhaseID // starting, loading, compile, health, … (docs/ids.md)
	Title   string
	Index   int           // 1-based position among the engine's phases
	Total   int           // the engine's phases, ready included
	Budget  time.Duration // how long the phase may stay silent before it counts as stalled
	Elapsed time.Duration // since the server started
	Line    string        // the log line or probe that marked it
	Warning string        // a warning within the phase, not a new phase
}

// Ready says a server answers: the health probe and the model list are up.
type Ready struct {
	runner.Added
	Step    string
	URL     string
	Model   string
	Elapsed time.Duration // from the start to readiness
	// SinceHealth is from the first 200 of the health probe to readiness.
	SinceHealth time.Duration
}

// Sentence is how haloforge says a server is ready, in line mode and on the
// wizard's serve screen alike: "ready at URL in 1s: MODEL is served".
func (r Ready) Sentence() string {
	s := "ready at " + r.URL + " in " + text.Duration(r.Elapsed)
	if r.Model != "" {
		s += ": " + r.Model + " is served"
	}
	return s
}

// BaseURL is the OpenAI base URL of a ready server: what a client's
// base_url (or OPENAI_BASE_URL) takes. llama-server, vLLM and Ollama all
// serve the OpenAI API under /v1 of the address the server was told.
func (r Ready) BaseURL() string { return r.URL + "/v1" }

// Usage is how to point a client at a ready server, in line mode and on
// the wizard's serve screen alike: the base URL, then the two commands a
// shell runs as printed (Commands).
func (r Ready) Usage() []string {
	return append([]string{"OpenAI base URL: " + r.BaseURL()}, r.Commands()...)
}

// Commands are the export that OpenAI's clients read and a curl of the
// completions endpoint the first request proved (SmokeEndpoint), for the
// model the server was told to serve: what the serve screen's copy key
// puts on the clipboard.
func (r Ready) Commands() []string {
	body, _ := json.Marshal(struct {
		Model     string `json:"model,omitempty"`
		Prompt    string `json:"prompt"`
		MaxTokens int    `json:"max_tokens"`
	}{r.Model, "Hello", 16})
	curl := []string{"curl", "-sS"}
	if strings.Contains(r.URL, "[") {
		curl = append(curl, "-g") // an IPv6 address: brackets are not a glob
	}
	curl = append(curl, r.URL+SmokeEndpoint, "-H", "Content-Type: application/json", "-d", string(body))
	return []string{QuoteCommand([]string{"export", "OPENAI_BASE_URL=" + r.BaseURL()}), QuoteCommand(curl)}
}

// Smoke is the first request a ready server answered (a short streamed
// completion): what it measured.
type Smoke struct {
	runner.Added
	Step string
	SmokeResult
}

// Sentence is how haloforge says the first request went, in line mode, on
// the serve screen and in the step's verdict alike (the answer goes on a
// line of its own). Line mode's format is documented in README.md.
func (s SmokeResult) Sentence() string {
	if s.Err != "" {
		return "first request failed: " + s.Err
	}
	line := fmt.Sprintf("%s answered: first token after %s, %s", s.Endpoint, text.Ms(s.TTFT), text.Plural(s.Tokens, "token"))
	if s.TokensPerSecond > 0 {
		line += fmt.Sprintf(" at %.1f tok/s", s.TokensPerSecond)
	}
	if s.EngineTokensPerSecond > 0 {
		line += fmt.Sprintf(" (engine: %.1f tok/s)", s.EngineTokensPerSecond)
	}
	if s.Roofline != "" {
		line += "; roofline: " + s.Roofline
	}
	return line
}
