package main

import (
	"io"
	"syscall"
	"testing"
	"time"
)

// TestServeStopsOnHangup: a closed terminal (SIGHUP) stops serve as Ctrl-C
// does, so its run is recorded as stopped; SIGHUP used to end haloforge at
// once with the run's report saying "running". Without the handler, the
// signal below ends this test binary.
func TestServeStopsOnHangup(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			stopped := make(chan struct{}, 2)
			release := onServeStop(io.Discard, func() { stopped <- struct{}{} })
			defer release()
			if err := syscall.Kill(syscall.Getpid(), sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-stopped:
			case <-time.After(10 * time.Second):
				t.Fatalf("%v did not stop serve", sig)
			}
		})
	}
}
