package main

import (
	"github.com/haloforge/haloforge/steps/runner"
)

// stateDirBusy answers, before anything is planned or run, whether another
// build holds the state dir, in one line that says who and what to do
// (exit 2): the runner would only find out once the run starts. A lock
// file haloforge could not have made (a link, a FIFO) is bad input too.
func stateDirBusy(dir string) error {
	if err := runner.Busy(dir); err != nil {
		return usageErr(err)
	}
	return nil
}

// trackBusy answers, before anything runs, whether another haloforge run
// holds the track: a build refuses a track being served, a serve or bench
// run (build false) a track being built (exit 2), in one line that says
// who.
func trackBusy(dir, track string, build bool) error {
	if err := runner.TrackBusy(dir, track, build); err != nil {
		return usageErr(err)
	}
	return nil
}

// busyText is stateDirBusy's line, "" when the state dir is free.
func busyText(dir string) string {
	if err := runner.Busy(dir); err != nil {
		return err.Error()
	}
	return ""
}
