package runner

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/haloforge/haloforge/steps"
)

// runAnswering runs o; each WaitingForInput is recorded and answered with
// answer through Runner.Input, as plain mode forwards what the user types.
func runAnswering(t *testing.T, o Options, answer string) (*Report, []Event, []WaitingForInput) {
	t.Helper()
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var evs []Event
	var waits []WaitingForInput
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range r.Events() {
			evs = append(evs, e)
			if w, ok := e.(WaitingForInput); ok {
				waits = append(waits, w)
				if waiting, _ := r.Waiting(); !waiting {
					t.Errorf("announced %+v, but Waiting says no", w)
				}
				if answer == "" {
					cancel()
				} else if err := r.Input([]byte(answer)); err != nil {
					t.Errorf("Input: %v", err)
				}
			}
		}
	}()
	rep, err := r.Run(ctx)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	return rep, evs, waits
}

// TestAStepWaitingForInputIsAnnounced: a step that asks
// for a password and reads its terminal is announced with its question, and
// an answer handed to Input reaches it.
func TestAStepWaitingForInputIsAnnounced(t *testing.T) {
	for _, tc := range []struct {
		mode, prompt string
		echo         bool
	}{
		{"sudo", "[sudo] password for user:", true}, // the prompt's shape, whatever the reader
		{"silent", "Password:", false},              // read -s turns the echo off
		{"bare", "", true},                          // nothing asked, but a read of the terminal
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Setenv("FX_PROMPT", tc.mode)
			dir := t.TempDir()
			o := fxOptions(fxPlan(t, fxTrack(fx{id: "ask", script: "prompt.sh"}), fxPins, "testdata/scripts", dir), dir)
			o.InputQuiet = 300 * time.Millisecond
			rep, evs, waits := runAnswering(t, o, "secret\n")
			if len(waits) != 1 {
				t.Fatalf("announced %d times: %+v", len(waits), waits)
			}
			w := waits[0]
			if w.Step != "ask" || w.Prompt != tc.prompt || w.Echo != tc.echo || w.Quiet < o.InputQuiet {
				t.Errorf("announced %+v, want prompt %q echo %v", w, tc.prompt, tc.echo)
			}
			if rep.Status != steps.OutcomeSucceeded || !slices.Contains(lines(evs, "ask"), "got 6 chars") {
				t.Errorf("the answer did not reach the step: %s %q", rep.Status, lines(evs, "ask"))
			}
		})
	}
}

// TestASilentStepIsNotWaitingForInput: silence alone (a long compile) is
// not a question, and typed input never reaches a step that asked nothing.
func TestASilentStepIsNotWaitingForInput(t *testing.T) {
	dir := t.TempDir()
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "quiet", script: "quiet.sh"}), fxPins, "testdata/scripts", dir), dir)
	o.InputQuiet = 200 * time.Millisecond
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	var waits int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range r.Events() {
			if _, ok := e.(WaitingForInput); ok {
				waits++
			}
			if _, ok := e.(StepStarted); ok {
				time.Sleep(100 * time.Millisecond)
				if err := r.Input([]byte("y\n")); !errors.Is(err, ErrNotWaiting) {
					t.Errorf("Input to a step that asked nothing: %v", err)
				}
			}
		}
	}()
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-done
	if waits != 0 {
		t.Errorf("a silent step was announced as waiting %d times", waits)
	}
}

func TestLooksLikePrompt(t *testing.T) {
	for text, want := range map[string]bool{
		"[sudo] password for ann:":                   true,
		"Password: ":                                 true,
		"Enter passphrase for key '/home/a/.ssh/k':": true,
		"Username for 'https://github.com':":         true,
		"Do you want to continue? [Y/n]":             true,
		"Proceed [y/N]?":                             true,
		"Are you sure you want to continue connecting (yes/no/[fingerprint])?": true,
		"Press Enter to continue":                true,
		"Username: ":                             true,
		"Compiling: ":                            false,
		"error: password hashing failed":         false,
		"Downloading torch-2.11.0.whl (2.1 GB):": false,
		"":                                       false,
	} {
		if got := looksLikePrompt(text); got != want {
			t.Errorf("looksLikePrompt(%q) = %v", text, got)
		}
	}
}
