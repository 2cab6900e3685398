package main

import (
	"bytes"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer the signal goroutine and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestOnInterruptStopsThenKills: each stop signal (a closed terminal's
// SIGHUP too, which serve did not catch before build, bench and serve
// shared this) stops cleanly first, with the grace said, and kills on the
// second.
func TestOnInterruptStopsThenKills(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			var out syncBuffer
			stops, kills := make(chan struct{}, 2), make(chan struct{}, 2)
			done := onInterrupt(&out, "the server", 20*time.Second, func() { stops <- struct{}{} }, func() { kills <- struct{}{} })
			defer done()
			for i, want := range []chan struct{}{stops, kills} {
				if err := syscall.Kill(syscall.Getpid(), sig); err != nil {
					t.Fatal(err)
				}
				select {
				case <-want:
				case <-time.After(5 * time.Second):
					t.Fatalf("signal %d of %s: no %s", i+1, sig, map[int]string{0: "stop", 1: "kill"}[i])
				}
			}
			if !strings.Contains(out.String(), "stopping the server (SIGTERM, then SIGKILL after 20s); press Ctrl-C again to kill it now") {
				t.Errorf("said %q", out.String())
			}
		})
	}
}
