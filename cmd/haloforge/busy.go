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

// busyText is stateDirBusy's line, "" when the state dir is free.
func busyText(dir string) string {
	if err := runner.Busy(dir); err != nil {
		return err.Error()
	}
	return ""
}
