package tui

import "charm.land/lipgloss/v2"

// Styles are the wizard's few looks. They use the 16 base colours so that
// they read on light and dark terminals alike; the renderer drops colour
// entirely under NO_COLOR.
type Styles struct {
	Title, Subtle, Bold, Key       lipgloss.Style
	OK, Warn, Fail, Skip, Running  lipgloss.Style
	Badge                          map[string]lipgloss.Style
	Card, Hint, HintTitle, Focused lipgloss.Style
	Pane, Match, Selected          lipgloss.Style
}

// DefaultStyles returns the wizard's styles.
func DefaultStyles() Styles {
	c := lipgloss.Color
	border := lipgloss.RoundedBorder()
	return Styles{
		Title:   lipgloss.NewStyle().Bold(true).Foreground(c("5")),
		Subtle:  lipgloss.NewStyle().Foreground(c("8")),
		Bold:    lipgloss.NewStyle().Bold(true),
		Key:     lipgloss.NewStyle().Bold(true).Foreground(c("6")),
		OK:      lipgloss.NewStyle().Foreground(c("2")),
		Warn:    lipgloss.NewStyle().Foreground(c("3")),
		Fail:    lipgloss.NewStyle().Bold(true).Foreground(c("1")),
		Skip:    lipgloss.NewStyle().Foreground(c("8")),
		Running: lipgloss.NewStyle().Foreground(c("6")),
		Badge: map[string]lipgloss.Style{
			"recommended":      lipgloss.NewStyle().Bold(true).Foreground(c("2")),
			"stable":           lipgloss.NewStyle().Foreground(c("4")),
			"experimental":     lipgloss.NewStyle().Foreground(c("3")),
			"blocked-upstream": lipgloss.NewStyle().Foreground(c("1")),
		},
		Card:      lipgloss.NewStyle().Border(border).BorderForeground(c("5")).Padding(0, 1),
		Hint:      lipgloss.NewStyle().Border(border).BorderForeground(c("1")).Padding(0, 1),
		HintTitle: lipgloss.NewStyle().Bold(true).Foreground(c("1")),
		Focused:   lipgloss.NewStyle().Border(border).BorderForeground(c("6")),
		Pane:      lipgloss.NewStyle().Border(border).BorderForeground(c("8")),
		Match:     lipgloss.NewStyle().Reverse(true),
		Selected:  lipgloss.NewStyle().Bold(true).Foreground(c("6")),
	}
}
