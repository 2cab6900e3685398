package tui

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/google/go-cmp/cmp"

	"github.com/haloforge/haloforge/detect"
)

// updating reports whether -update was given; the flag itself is the one
// x/exp/golden (through teatest) registers.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// cmdTimeout drops commands that wait longer, so direct tests only follow
// the commands that answer at once. Timers (a cursor's blink, a spinner's
// tick) are not even waited for (isTimer).
const cmdTimeout = 150 * time.Millisecond

// timerPackages are the packages whose commands only wait and then animate:
// a text field's cursor blink (every key typed into a prompt returns one,
// 530 ms long) and a spinner's tick. Following them changes no state a test
// reads; waiting cmdTimeout for each would cost 150 ms a key.
var timerPackages = []string{"charm.land/bubbles/v2/cursor.", "charm.land/bubbles/v2/spinner."}

// isTimer reports whether cmd is one of those timers, by the function that
// made it (a command is a closure: its name is all there is to go by).
func isTimer(cmd tea.Cmd) bool {
	name := runtime.FuncForPC(reflect.ValueOf(cmd).Pointer()).Name()
	for _, p := range timerPackages {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// runTimeout bounds the wait for a followed run's next batch of events. It
// always comes (the fake runs end), but on a loaded machine it may take
// longer than cmdTimeout; dropping it would end the run silently mid-way.
const runTimeout = 20 * time.Second

var cmdSliceType = reflect.TypeOf([]tea.Cmd(nil))

// drive sends each message to the model and then every message its
// commands return, breadth-first, until no command is left or the model
// quits (huh's batchUpdate, followed to the end). Messages are handled one
// after the other, each to completion.
func drive(t testing.TB, m *Model, msgs ...tea.Msg) (quit bool) {
	t.Helper()
	for _, msg := range msgs {
		if settle(t, m, msg, true) {
			return true
		}
	}
	return false
}

// driveHeld is drive without following the run: the commands that answer
// runner events are dropped, so the test pumps events itself (pump).
func driveHeld(t testing.TB, m *Model, msgs ...tea.Msg) (quit bool) {
	t.Helper()
	for _, msg := range msgs {
		if settle(t, m, msg, false) {
			return true
		}
	}
	return false
}

// pump hands the model the next batch of runner events, and what follows
// from it except the next wait; it reports false once the run is over.
func pump(t testing.TB, m *Model) bool {
	t.Helper()
	if m.run == nil || m.run.ch == nil {
		return false
	}
	driveHeld(t, m, waitEvents(m.run.ch)())
	return m.run.ch != nil
}

func settle(t testing.TB, m *Model, first tea.Msg, follow bool) bool {
	t.Helper()
	queue := []tea.Msg{first}
	for steps := 0; len(queue) > 0; steps++ {
		if steps > 100000 {
			t.Fatal("drive: the model never settles")
		}
		msg := queue[0]
		queue = queue[1:]
		switch msg.(type) {
		case tea.QuitMsg:
			return true
		case spinner.TickMsg:
			continue // animation only; following it would never end while a run goes
		}
		if cmds, ok := expand(msg); ok {
			for _, c := range cmds {
				queue = append(queue, run(c)...)
			}
			continue
		}
		_, cmd := m.Update(msg)
		switch msg.(type) {
		case runStartedMsg, eventsMsg:
			if !follow {
				continue
			}
			queue = append(queue, runWait(t, cmd)...)
			continue
		}
		queue = append(queue, run(cmd)...)
	}
	return false
}

// expand opens tea.Batch and tea.Sequence messages into their commands.
func expand(msg tea.Msg) ([]tea.Cmd, bool) {
	if b, ok := msg.(tea.BatchMsg); ok {
		return b, true
	}
	v := reflect.ValueOf(msg)
	if v.IsValid() && v.Kind() == reflect.Slice && v.Type().ConvertibleTo(cmdSliceType) {
		return v.Convert(cmdSliceType).Interface().([]tea.Cmd), true
	}
	return nil, false
}

// runWait runs the command that follows a run's message (the next batch
// of events, or what the end of the run leads to) and fails the test when
// it does not answer within runTimeout.
func runWait(t testing.TB, cmd tea.Cmd) []tea.Msg {
	t.Helper()
	msgs, ok := runWithin(cmd, runTimeout)
	if !ok {
		t.Fatalf("the run's next message did not come within %v", runTimeout)
	}
	return msgs
}

// run runs a command and drops it when it is a timer or waits longer than
// cmdTimeout.
func run(cmd tea.Cmd) []tea.Msg {
	if cmd != nil && isTimer(cmd) {
		return nil
	}
	msgs, _ := runWithin(cmd, cmdTimeout)
	return msgs
}

// runWithin runs a command; ok is false when it did not answer in time.
func runWithin(cmd tea.Cmd, d time.Duration) (msgs []tea.Msg, ok bool) {
	if cmd == nil {
		return nil, true
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	select {
	case msg := <-done:
		if msg == nil {
			return nil, true
		}
		return []tea.Msg{msg}, true
	case <-time.After(d):
		return nil, false
	}
}

// namedKeys are the keys press knows by name; any other name is the key
// that types it.
var namedKeys = map[string]tea.KeyPressMsg{
	"enter": {Code: tea.KeyEnter}, "esc": {Code: tea.KeyEscape}, "tab": {Code: tea.KeyTab},
	"up": {Code: tea.KeyUp}, "down": {Code: tea.KeyDown}, "backspace": {Code: tea.KeyBackspace},
	"pgdown": {Code: tea.KeyPgDown}, "pgup": {Code: tea.KeyPgUp}, "ctrl+c": {Code: 'c', Mod: tea.ModCtrl},
}

func press(k string) tea.Msg {
	if msg, ok := namedKeys[k]; ok {
		return msg
	}
	return tea.KeyPressMsg{Code: []rune(k)[0], Text: k}
}

// mustContain fails the test for each want that text lacks.
func mustContain(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, text)
		}
	}
}

// manyChecks is the fake's detection with n more checks: a list that scrolls.
func manyChecks(n int) *Detection {
	det := strixHalo()
	for i := range n {
		det.Checks = append(det.Checks, detect.Check{ID: detect.CheckID("extra-" + itoa(i)), Summary: "fine"})
	}
	return det
}

// plain is the model's frame without colours or styles.
func plain(m *Model) string { return ansi.Strip(m.View().Content) }

// newSized returns a model sized w×h whose detection has arrived.
func newSized(t testing.TB, b Backend, w, h int) *Model {
	t.Helper()
	m := New(context.Background(), b, Options{})
	drive(t, m, tea.WindowSizeMsg{Width: w, Height: h})
	drive(t, m, m.Init()())
	return m
}

// golden compares got with testdata/<name>.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	got = trimLines(got)
	path := filepath.Join("testdata", name+".golden")
	if updating() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs from the golden file (-want +got):\n%s", name, diff)
	}
}

// trimLines drops trailing spaces, which depend on padding, not content.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

// lastLine is the frame's last line: the footer.
func lastLine(m *Model) string {
	v := strings.TrimRight(plain(m), "\n")
	return v[strings.LastIndex(v, "\n")+1:]
}

// commands is Options.Commands as the real wizard words them.
func commands(c Command) string {
	s := "haloforge build --track " + c.Track
	if c.Resume {
		s += " --resume"
	}
	if c.IgnoreChecks {
		s += " --ignore-checks"
	}
	for _, v := range c.Sets {
		s += " --set " + v
	}
	return s + " --state-dir /hf"
}
