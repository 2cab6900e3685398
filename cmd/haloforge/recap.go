package main

import (
	"fmt"
	"io"
	"strings"

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
	for _, l := range recapLines(res) {
		fmt.Fprintln(w, l)
	}
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
