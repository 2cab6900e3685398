package demo

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A demo writes its scripts, state and logs in a directory of its own,
// made fresh under the state dir and marked as haloforge's, and removes it
// when it ends: two demos on one state dir never touch each other's files,
// and nothing haloforge did not make is ever deleted (the demo used to `rm -rf <state-dir>/demo`, so `--state-dir ~`
// deleted ~/demo, and a second demo wiped the first one's state and lock).
const (
	workPrefix = "demo-" // the directories are <state-dir>/demo-XXXXXXXX
	markerName = ".haloforge-demo"
	markerHead = "haloforge demo work directory"
)

// WorkDir is one demo's private directory.
type WorkDir struct {
	path  string
	token string // in the marker: only this demo's directory is its to remove
}

// NewWorkDir makes a demo's directory under stateDir (created if missing)
// and marks it with the owner's pid, start time and a random token. It
// first removes the directories of earlier demos whose process is gone (a
// demo killed before it could clean up), recognised by their marker.
func NewWorkDir(stateDir string) (*WorkDir, error) {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, fmt.Errorf("demo: state dir: %w", err)
	}
	RemoveStale(stateDir)
	path, err := os.MkdirTemp(stateDir, workPrefix)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	w := &WorkDir{path: path, token: hex.EncodeToString(b)}
	pid := os.Getpid()
	marker := fmt.Sprintf("%s\npid %d\nstarted %d\ntoken %s\n", markerHead, pid, startTime(pid), w.token)
	if err := os.WriteFile(filepath.Join(path, markerName), []byte(marker), 0o600); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("demo: %w", err)
	}
	return w, nil
}

// Path is the directory.
func (w *WorkDir) Path() string { return w.path }

// Remove deletes the directory, after checking that its marker is still
// the one this demo wrote.
func (w *WorkDir) Remove() error {
	m, ok := readMarker(w.path)
	if !ok || m.token != w.token {
		return fmt.Errorf("demo: %s is no longer the directory this demo made (its %s changed); left as it is", w.path, markerName)
	}
	return os.RemoveAll(w.path)
}

// RemoveStale removes the demo directories under stateDir whose marker
// names a process that is gone (or a pid now taken by another process);
// anything without a valid marker is left alone.
func RemoveStale(stateDir string) {
	ents, err := os.ReadDir(stateDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), workPrefix) {
			continue
		}
		dir := filepath.Join(stateDir, e.Name())
		if m, ok := readMarker(dir); ok && !m.alive() {
			_ = os.RemoveAll(dir)
		}
	}
}

// marker is what a demo directory's marker says.
type marker struct {
	pid     int
	started uint64
	token   string
}

// alive says whether the demo that wrote the marker still runs: its pid is
// live and started when the marker says (not a later process given the pid).
func (m marker) alive() bool {
	return m.pid > 0 && startTime(m.pid) == m.started && m.started != 0
}

// readMarker reads a directory's marker; ok is false unless it is a regular
// file (not a link) in haloforge's form.
func readMarker(dir string) (m marker, ok bool) {
	path := filepath.Join(dir, markerName)
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return m, false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return m, false
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 4 || lines[0] != markerHead {
		return m, false
	}
	var err1, err2 error
	m.pid, err1 = strconv.Atoi(strings.TrimPrefix(lines[1], "pid "))
	m.started, err2 = strconv.ParseUint(strings.TrimPrefix(lines[2], "started "), 10, 64)
	m.token = strings.TrimPrefix(lines[3], "token ")
	if err := errors.Join(err1, err2); err != nil || len(m.token) != 32 {
		return m, false
	}
	return m, true
}

// startTime is a process's start time in clock ticks since boot (field 22
// of /proc/PID/stat), 0 when there is no such process.
func startTime(pid int) uint64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0
	}
	t, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0
	}
	return t
}
