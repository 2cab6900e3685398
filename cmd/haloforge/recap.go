package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/tui"
	"github.com/haloforge/haloforge/tui/linemode"
)

// printRecap leaves a short recap on the normal screen once a full-screen
// session is gone (flutter doctor's closing lines): how the run ended,
// where its logs are, and the exact command to type next: the track's next
// commands once it is built, the diagnosis and the resume command after a
// failure, the resume command after a stop, the build command after a plan
// that was only reviewed. A session that ran nothing and planned nothing
// prints nothing.
func printRecap(w io.Writer, res tui.Result) {
	lines := recapLines(res)
	if len(lines) == 0 {
		return
	}
	// A blank line sets the recap off from the line that started haloforge.
	fmt.Fprintln(w)
	for _, l := range lines {
		for _, r := range recapRows(l, termWidth(w)) {
			fmt.Fprintln(w, r)
		}
	}
}

// recapRows lays a recap line out for a terminal of width columns (0: not
// a terminal, the line as it is): prose wraps between words and a path only
// after a '/'; a command after its label ("resume: haloforge build …")
// stays on the label's row when it fits, else goes on rows of its own,
// broken only between its words with " \", so that it is copied whole.
func recapRows(l string, width int) []string {
	if width <= 0 || len([]rune(l)) < width {
		return []string{l}
	}
	width-- // the last column left free: a full row would wrap on some terminals
	if i := strings.Index(l, ": haloforge "); i >= 0 && text.KindOf(l[i+2:]) == text.Command {
		label, command := l[:i+1], l[i+2:]
		return append(text.Wrap(label, width, "  "), text.CommandRows("  "+command, width)...)
	}
	return text.Wrap(l, width, "  ")
}

func recapLines(res tui.Result) []string {
	var out []string
	logs := ""
	if len(res.RunDirs) > 0 {
		logs = res.RunDirs[len(res.RunDirs)-1]
	}
	earlier := func() {
		if len(res.RunDirs) > 1 {
			out = append(out, "earlier runs of this session: "+strings.Join(res.RunDirs[:len(res.RunDirs)-1], ", "))
		}
	}
	switch {
	case res.Demo && res.Status != "":
		out = append(out, fmt.Sprintf("demo: %s %s on sample data; nothing was installed.", res.Track, demoWord(res.Status)),
			"On your Strix Halo: haloforge doctor, then haloforge (the same wizard, for real). `haloforge demo` starts the story again.")
	case res.Status == steps.OutcomeSucceeded || res.Status == steps.OutcomeNotVerified:
		head := "✓ " + res.Track + " is built"
		if len(res.NotVerified) > 0 {
			head = "⚠ " + res.Track + " is built, not verified: " + strings.Join(res.NotVerified, ", ")
		}
		if logs != "" {
			head += " · logs and report.json in " + logs
		}
		out = append(out, head)
		earlier()
		if len(res.Next) > 0 {
			var next strings.Builder
			linemode.PrintNext(&next, res.Next)
			out = append(out, strings.Split(strings.TrimSuffix(next.String(), "\n"), "\n")...)
		}
	case res.Failed != "":
		out = append(out, fmt.Sprintf("✗ %s failed at %s · log %s", res.Track, res.Failed, res.FailedLog))
		earlier()
		if logs != "" {
			out = append(out, "diagnose: haloforge diagnose "+logs)
		}
		if res.Resume != "" {
			out = append(out, "resume after the fix: "+res.Resume)
		}
	case res.Status == steps.OutcomeInterrupted || res.Stopped != "":
		head := "■ " + res.Track + " stopped"
		if res.Stopped != "" {
			head += " during " + res.Stopped
		}
		if logs != "" {
			head += " · logs in " + logs
		}
		out = append(out, head)
		earlier()
		if res.Resume != "" {
			out = append(out, "resume: "+res.Resume)
		}
	case res.Status != "":
		head := "✗ " + res.Track + ": " + res.Status
		if logs != "" {
			head += " · logs in " + logs
		}
		out = append(out, head)
	case res.Planned && res.Build != "" && len(res.Blocked) > 0:
		out = append(out, "Plan reviewed, nothing run. A build stops at the checks that fail here ("+strings.Join(res.Blocked, ", ")+"): haloforge doctor shows their fixes.",
			"To build it once they pass: "+res.Build,
			"To build it anyway: "+res.BuildAnyway)
	case res.Planned && res.Build != "":
		out = append(out, "Plan reviewed, nothing run. To build it: "+res.Build)
	}
	return out
}

func demoWord(status string) string {
	switch status {
	case steps.OutcomeSucceeded, steps.OutcomeNotVerified:
		return "was built"
	case steps.OutcomeInterrupted:
		return "was stopped"
	}
	return "failed"
}
