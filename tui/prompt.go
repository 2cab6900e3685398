package tui

import (
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
)

// prompt is a one-line text field that owns the keys while it is open:
// Enter submits, Esc cancels, any other key edits. The log search and the
// troubleshoot path share it.
type prompt struct {
	input          textinput.Model
	open           bool
	submit, cancel string // what Enter and Esc do, for the key help
	paths          bool   // Tab completes a path, as a shell does
}

// promptResult is what a key did to an open prompt.
type promptResult int

const (
	promptEditing   promptResult = iota // the text changed, or nothing happened
	promptSubmitted                     // Enter: the caller reads Value, and closes the prompt when it accepts it
	promptCancelled                     // Esc: the prompt closed
)

func newPrompt(label, placeholder, submit, cancel string) prompt {
	in := textinput.New()
	in.Prompt = label
	in.Placeholder = placeholder
	return prompt{input: in, submit: submit, cancel: cancel}
}

// Open shows the prompt and focuses it, keeping its text.
func (p *prompt) Open() tea.Cmd {
	p.open = true
	return p.input.Focus()
}

// Close hides the prompt.
func (p *prompt) Close() {
	p.open = false
	p.input.Blur()
}

// IsOpen reports whether the prompt takes the keys.
func (p *prompt) IsOpen() bool { return p.open }

// Value is the text typed so far.
func (p *prompt) Value() string { return p.input.Value() }

// SetValue replaces the text.
func (p *prompt) SetValue(v string) { p.input.SetValue(v) }

// SetWidth sets the width of the text field.
func (p *prompt) SetWidth(w int) { p.input.SetWidth(w) }

// View renders the field.
func (p *prompt) View() string { return p.input.View() }

// completingPaths makes Tab complete a path in the prompt.
func (p prompt) completingPaths() prompt {
	p.paths = true
	return p
}

// Help is the key help while the prompt is open.
func (p *prompt) Help(k KeyMap) []key.Binding {
	b := []key.Binding{withHelp(k.Enter, p.submit), withHelp(k.Back, p.cancel)}
	if p.paths {
		b = append(b, withHelp(k.Tab, "complete"))
	}
	return append(b, k.ForceQuit) // q types a q here
}

// Key handles a key while the prompt is open.
func (p *prompt) Key(msg tea.KeyPressMsg, k KeyMap) (promptResult, tea.Cmd) {
	switch {
	case key.Matches(msg, k.Enter):
		return promptSubmitted, nil
	case key.Matches(msg, k.Back):
		p.Close()
		return promptCancelled, nil
	case p.paths && key.Matches(msg, k.Tab):
		p.input.SetValue(completePath(p.input.Value()))
		p.input.CursorEnd()
		return promptEditing, nil
	}
	var cmd tea.Cmd
	p.input, cmd = p.input.Update(msg)
	return promptEditing, cmd
}
