package linemode

import (
	"fmt"
	"time"
)

// FormatDuration prints a duration the way haloforge shows every step and
// run time, in line mode and in the TUI alike: whole seconds, rounded (4s,
// 2m05s, 1h02m). It is the repository's one duration style.
func FormatDuration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}
