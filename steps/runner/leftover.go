package runner

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/haloforge/haloforge/internal/text"
)

// Leftover is a process a step started that was still running when the
// step's script ended by itself: a nohup, a setsid or double-forked daemon,
// a child that ignores the hang-up.
type Leftover struct {
	PID     int    `json:"pid"`
	Command string `json:"command"` // its command line, sanitised and cut short
	// Container marks the container runtime's processes (conmon, the
	// container below it, podman's pause process): podman starts them for a
	// container the step created or started, and manages them; haloforge
	// reports them and leaves them alone (podman stop ends them).
	Container bool `json:"container,omitempty"`
	// Fate says what haloforge did with it: one of the Fate* texts.
	Fate string `json:"fate"`
	// nested: it runs below another leftover (a loop's sleep, a container's
	// process below conmon); the report names only the outermost ones.
	nested bool
}

// What becomes of a leftover.
const (
	FateKilled    = "killed: the step failed"
	FateRunEnd    = "stopped when the run ends"
	FateKept      = "kept: the step keeps a service running"
	FateContainer = "kept: the container runtime's, podman manages it"
	FateStopped   = "stopped with the step"
)

// maxCommand bounds a leftover's command line in events and reports.
const maxCommand = 200

// containerRuntime are the commands (/proc/PID/comm) of processes podman
// starts for a container and manages itself: conmon, the container's
// monitor, double-forks out of the step's script (its container's
// processes are below it); the rootless pause process is "catatonit" or
// "podman pause" (podman's test/system/550-pause-process.bats checks
// exactly these two names; read 2026-11-24); the rootless network and
// storage helpers. comm holds at most 15 bytes: rootlessport's child is
// "rootlessport-ch".
var containerRuntime = map[string]bool{
	"conmon": true, "catatonit": true, "podman pause": true,
	"slirp4netns": true, "pasta": true, "pasta.avx2": true, "rootlessport": true, "rootlessport-ch": true,
	"aardvark-dns": true, "fuse-overlayfs": true,
}

// Leftovers lists the live processes below root with their command lines;
// those of the container runtime, and everything below them, are marked.
func Leftovers(root int) []Leftover {
	var out []Leftover
	runtime := map[int]bool{}
	walkTree(root, func(pid int, ancestors []int) {
		inContainer := containerRuntime[procComm(pid)]
		for _, a := range ancestors {
			inContainer = inContainer || runtime[a]
		}
		runtime[pid] = inContainer
		out = append(out, Leftover{PID: pid, Command: procCmdline(pid), Container: inContainer, nested: len(ancestors) > 0})
	})
	return out
}

func procComm(pid int) string {
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	return strings.TrimSuffix(string(b), "\n")
}

// procCmdline is a process's argv joined by spaces, or its [comm] when it
// has none (a kernel thread, a zombie in the making).
func procCmdline(pid int) string {
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return "[" + procComm(pid) + "]"
	}
	return shortCommand(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}

// shortCommand makes a command line safe to show: one line, at most
// maxCommand characters.
func shortCommand(s string) string { return text.Printable(s, maxCommand) }

// scriptEnd is what a supervisor reported when the step's script ended by
// itself: its exit code and what it left running.
type scriptEnd struct {
	code int
	left []Leftover
}

// readScriptEnd reads a supervisor's report (see reportExit); ok is false
// when the supervisor ended without one (a stop, a crash).
func readScriptEnd(r io.Reader) (end scriptEnd, ok bool) {
	sc := bufio.NewScanner(io.LimitReader(r, 1<<20))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	sawExit := false
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		switch {
		case len(f) == 2 && f[0] == reportExit:
			code, err := strconv.Atoi(f[1])
			if err != nil {
				return end, false
			}
			end.code, sawExit = code, true
		case len(f) == 4 && f[0] == reportLeft && sawExit:
			pid, err := strconv.Atoi(f[1])
			if err != nil || pid <= 0 {
				continue
			}
			end.left = append(end.left, Leftover{PID: pid, Command: shortCommand(f[3]), Container: f[2] == kindRun})
		case len(f) == 1 && f[0] == reportEnd:
			return end, sawExit
		}
	}
	return end, false
}

// leftoverLines are the lines a step's log gets about its leftovers, after
// the step's own output.
func leftoverLines(left []Leftover) []string {
	if len(left) == 0 {
		return nil
	}
	lines := []string{fmt.Sprintf("haloforge: the step ended and left %d process(es) running:", len(left))}
	for _, l := range left {
		lines = append(lines, fmt.Sprintf("haloforge:   pid %d: %s (%s)", l.PID, l.Command, l.Fate))
	}
	return lines
}
