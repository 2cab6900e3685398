package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// progressScripts is a scripts tree for the vllm-image track whose pull
// step first plays back, at its recorded pace, a real podman pull made in a
// pty (steps/runner/testdata/progress: podman 4.3.1 pulling 31.5 MiB from a
// loopback registry at 3 MB/s; a recording stands in for the pull because a
// loopback pull ends before a screen can be read), then compiles objects
// with a real ninja (Debian's ninja-build), each taking a fifth of a second.
func progressScripts(t *testing.T, objects int) string {
	t.Helper()
	for _, tool := range []string{"ninja", "scriptreplay"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (make test installs ninja-build and bsdutils: Makefile APT_PKGS)", tool)
		}
	}
	rec, err := filepath.Abs("../../steps/runner/testdata/progress")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir := filepath.Join(root, "vllm-image")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pull := fmt.Sprintf(`#!/usr/bin/env bash
set -Eeuo pipefail
echo "+ podman pull 127.0.0.1:35792/haloforge/rec:1 (a recorded pull, played back)"
scriptreplay -t %s %s
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
  printf 'rule cc\n  command = sleep 0.2 && touch $out\n  description = Building CXX object $out\n'
  for i in $(seq 1 %d); do printf 'build obj%%03d.o: cc\n' "$i"; done
} >"$work/build.ninja"
echo "+ ninja -j2"
ninja -C "$work" -j2
`, shellQuote(filepath.Join(rec, "podman-pull.timing")), shellQuote(filepath.Join(rec, "podman-pull.typescript")), objects)
	for name, body := range map[string]string{
		"00-pull-image.sh":     pull,
		"01-write-launcher.sh": "#!/bin/sh\ntrue\n",
		"02-verify.sh":         "#!/bin/sh\ntrue\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestTmuxProgress: on a terminal of 80×24 and of 120×40, line mode's last
// line and the run screen's log pane show the pull's percentage while the
// pull runs, then ninja's N/M with an ETA, within the terminal's width; line
// mode leaves no progress line behind when the run ends.
func TestTmuxProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and drives it in tmux")
	}
	const objects = 60
	bin := buildBinary(t)
	for _, mode := range []string{"line mode", "run screen"} {
		for _, size := range []struct{ w, h int }{{80, 24}, {120, 40}} {
			t.Run(fmt.Sprintf("%s %dx%d", mode, size.w, size.h), func(t *testing.T) {
				scripts := progressScripts(t, objects)
				state := t.TempDir()
				plain := " --plain"
				if mode == "run screen" {
					plain = ""
				}
				tm := newTmux(t, size.w, size.h, fmt.Sprintf("%s build --track vllm-image --only pull%s --ignore-checks --scripts %s --state-dir %s",
					shellQuote(bin), plain, shellQuote(scripts), shellQuote(state)))
				prefix := `^… \[pull\] `
				if mode == "run screen" {
					prefix = `│ … ` // the log pane's last row
				}
				pullRe := regexp.MustCompile(`(?m)` + prefix + `(\d+)% of 31\.5 MiB · [0-9.]+ (KiB|MiB)/s · ETA \d+s`)
				ninjaRe := regexp.MustCompile(`(?m)` + prefix + `(\d+)/` + fmt.Sprint(objects) + ` · \d+% · ETA \d+s`)
				var pulls []string
				var ninja string
				deadline := time.Now().Add(90 * time.Second)
				for ninja == "" && time.Now().Before(deadline) {
					scr := tm.screen()
					for _, l := range strings.Split(scr, "\n") {
						if len([]rune(strings.TrimRight(l, " "))) > size.w {
							t.Fatalf("a line is wider than the %d columns: %q", size.w, l)
						}
					}
					live := scr
					if mode == "line mode" {
						live = lastLine(scr)
						if len([]rune(live)) >= size.w {
							t.Fatalf("the live line fills the %d columns (it would wrap): %q", size.w, live)
						}
					}
					if m := pullRe.FindStringSubmatch(live); m != nil && (len(pulls) == 0 || pulls[len(pulls)-1] != m[1]) {
						pulls = append(pulls, m[1])
					}
					if m := ninjaRe.FindString(live); m != "" {
						ninja = m
					}
					time.Sleep(150 * time.Millisecond)
				}
				t.Logf("pull percentages seen: %v; then %q", pulls, ninja)
				if len(pulls) < 2 {
					t.Errorf("the pull's percentage was seen %d times while it ran, want it to move", len(pulls))
				}
				if ninja == "" {
					t.Fatalf("no N/%d with an ETA:\n%s", objects, tm.screen())
				}
				if mode == "run screen" {
					tm.waitFor("✓ pull", 60*time.Second)
					tm.waitFor("summary", 10*time.Second)
					// Leave, and let it end before its state dir goes.
					tm.keys("Enter", "q")
					for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
						if dead, _ := tm.paneDead(); dead {
							return
						}
					}
					t.Fatalf("the build did not end after q:\n%s", tm.screen())
				}
				tm.waitFor("✓ vllm-image done in", 60*time.Second)
				if scr := tm.screen(); strings.Contains(scr, "… [pull]") {
					t.Errorf("a progress line stayed on the screen after the run:\n%s", scr)
				}
			})
		}
	}
}

// lastLine is the last line of a screen with text on it.
func lastLine(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	return strings.TrimRight(lines[len(lines)-1], " ")
}
