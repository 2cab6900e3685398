package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/haloforge/haloforge/internal/text"
)

// Transport starts node.sh on a node: `bash -s -- ARGS` with the script on
// its standard input.
type Transport interface {
	// Command returns the command to run; the caller feeds the script.
	Command(ctx context.Context, n Node, args []string) *exec.Cmd
	// Describe says how the node is reached, for messages ("ssh halo2").
	Describe(n Node) string
}

// SSH reaches nodes with the system OpenSSH client: host keys verified
// (StrictHostKeyChecking=yes: an unknown or changed key stops it), never a
// password prompt (BatchMode=yes), a bounded connect time, and keep-alives
// so a dead link ends a long follow.
type SSH struct {
	// Config is an ssh_config file used instead of ~/.ssh/config (ssh -F).
	Config string
	// ConnectTimeout in seconds (default 10).
	ConnectTimeout int
	// Binary is the ssh client (default "ssh").
	Binary string
}

// Argv is the ssh command line that runs remote (already quoted) on n.
func (s SSH) Argv(n Node, remote string) []string {
	bin := s.Binary
	if bin == "" {
		bin = "ssh"
	}
	timeout := s.ConnectTimeout
	if timeout <= 0 {
		timeout = 10
	}
	argv := []string{bin}
	if s.Config != "" {
		argv = append(argv, "-F", s.Config)
	}
	argv = append(argv,
		"-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=yes",
		"-o", fmt.Sprintf("ConnectTimeout=%d", timeout),
		"-o", "ServerAliveInterval=10",
		"-o", "ServerAliveCountMax=3",
		"-o", "LogLevel=ERROR",
		"-T", "--", n.SSH, remote)
	return argv
}

// Command implements Transport.
func (s SSH) Command(ctx context.Context, n Node, args []string) *exec.Cmd {
	argv := s.Argv(n, RemoteCommand(args))
	return exec.CommandContext(ctx, argv[0], argv[1:]...)
}

// Describe implements Transport.
func (s SSH) Describe(n Node) string {
	if s.Config != "" {
		return "ssh -F " + s.Config + " " + n.SSH
	}
	return "ssh " + n.SSH
}

// RemoteCommand is the command line the remote login shell runs: bash
// reading node.sh from stdin, every argument single-quoted. Arguments
// are validated before they get here; quoting is the second fence.
func RemoteCommand(args []string) string {
	var b strings.Builder
	b.WriteString("bash -s --")
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(ShellQuote(a))
	}
	return b.String()
}

// ShellQuote quotes s for a POSIX shell: bare when it holds only safe
// characters, else in single quotes.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./:=@%+,-", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Local runs node.sh on this machine with another HOME: the node's state
// dir lives under it. For tests and for a one-box rehearsal; it is not a
// way to reach other boxes.
type Local struct {
	// Home per node name (the node's login directory).
	Home map[string]string
	// Env is added to the environment (PATH of stand-ins, for example).
	Env []string
}

// Command implements Transport.
func (l Local) Command(ctx context.Context, n Node, args []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "bash", append([]string{"-s", "--"}, args...)...)
	home := l.Home[n.Name]
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME=")
	cmd.Env = append(cmd.Env, l.Env...)
	if home != "" {
		cmd.Dir = home
	}
	return cmd
}

// Describe implements Transport.
func (l Local) Describe(n Node) string { return "local " + n.Name }

// Remote runs node.sh on nodes through a transport.
type Remote struct {
	T      Transport
	Script []byte // node.sh
}

// Result is one run of node.sh.
type Result struct {
	Stdout   []byte
	Stderr   string
	Code     int // the exit code; -1 when it did not run
	Duration time.Duration
}

// ErrSSH marks a failure of the SSH connection itself (exit 255).
var ErrSSH = errors.New("ssh failed")

// maxStderr bounds what is kept of a command's errors.
const maxStderr = 16 << 10

// Run runs node.sh with args on n and returns what it printed (stdout
// bounded by MaxProbeBytes). A non-zero exit is in Result.Code, not err;
// err is for what kept it from running (and ErrSSH for ssh's own 255).
func (r Remote) Run(ctx context.Context, n Node, args ...string) (Result, error) {
	cmd := r.T.Command(ctx, n, args)
	cmd.Stdin = bytes.NewReader(r.Script)
	var out, errb boundedBuffer
	out.max, errb.max = MaxProbeBytes, maxStderr
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	err := cmd.Run()
	res := r.result(cmd, start, errb.String())
	res.Stdout = out.Bytes()
	return res, r.runErr(ctx, n, err, res)
}

// result is what every run of node.sh reports: its errors and exit code.
func (r Remote) result(cmd *exec.Cmd, start time.Time, stderr string) Result {
	res := Result{Stderr: strings.TrimSpace(stderr), Duration: time.Since(start), Code: -1}
	if cmd.ProcessState != nil {
		res.Code = cmd.ProcessState.ExitCode()
	}
	return res
}

// runErr sorts how a run of node.sh ended: its own non-zero exit is in
// Result.Code, not an error; ssh's 255 is ErrSSH with ssh's reason; a
// cancelled context and a command that could not run are errors.
func (r Remote) runErr(ctx context.Context, n Node, err error, res Result) error {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.ExitCode() == 255 && isSSH(r.T):
		return fmt.Errorf("%w: %s: %s", ErrSSH, r.T.Describe(n), sshReason(res.Stderr))
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &ee):
		return nil
	default:
		return fmt.Errorf("%s: %w", r.T.Describe(n), err)
	}
}

func isSSH(t Transport) bool {
	_, ok := t.(SSH)
	return ok
}

// Stream runs node.sh with args and calls line for each line of its
// output as it arrives (at most maxProbeLine bytes each). It returns when
// the command ends or ctx is done.
func (r Remote) Stream(ctx context.Context, n Node, line func(string), args ...string) (Result, error) {
	cmd := r.T.Command(ctx, n, args)
	cmd.Stdin = bytes.NewReader(r.Script)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Result{Code: -1}, err
	}
	var errb boundedBuffer
	errb.max = maxStderr
	cmd.Stderr = &errb
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{Code: -1}, fmt.Errorf("%s: %w", r.T.Describe(n), err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), maxProbeLine)
	for sc.Scan() {
		line(sc.Text())
	}
	if sc.Err() != nil {
		_, _ = io.Copy(io.Discard, stdout) // a line too long: drain, keep going to Wait
	}
	err = cmd.Wait()
	res := r.result(cmd, start, errb.String())
	return res, r.runErr(ctx, n, err, res)
}

// Probe runs `node.sh probe` and measures the node's clock against this
// one: node.sh says clock-ready, haloforge answers, node.sh reads its
// clock; the offset is taken against the middle of that round trip.
func (r Remote) Probe(ctx context.Context, n Node, args ...string) (*Facts, Result, error) {
	cmd := r.T.Command(ctx, n, append([]string{"probe", "--clock"}, args...))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, Result{Code: -1}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, Result{Code: -1}, err
	}
	var errb boundedBuffer
	errb.max = maxStderr
	cmd.Stderr = &errb
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, Result{Code: -1}, fmt.Errorf("%s: %w", r.T.Describe(n), err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = stdin.Write(r.Script)
	}()
	br := bufio.NewReaderSize(io.LimitReader(stdout, MaxProbeBytes), 64<<10)
	var rest bytes.Buffer
	var sent, got time.Time
	var remote float64
	clockOK := false
	for {
		line, err := br.ReadString('\n')
		if strings.TrimSpace(line) == "clock-ready" && sent.IsZero() {
			sent = time.Now()
			_, _ = io.WriteString(stdin, "\n")
			_ = stdin.Close()
			continue
		}
		if strings.HasPrefix(line, "clock=") && !sent.IsZero() && got.IsZero() {
			got = time.Now()
			if _, e := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "clock=")), "%f", &remote); e == nil && remote > 0 {
				clockOK = true
			}
		}
		rest.WriteString(line)
		if err != nil {
			break
		}
	}
	wg.Wait()
	_ = stdin.Close()
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	res := r.result(cmd, start, errb.String())
	res.Stdout = rest.Bytes()
	if err := r.runErr(ctx, n, err, res); err != nil {
		return nil, res, err
	}
	f, perr := ParseProbe(bytes.NewReader(res.Stdout))
	if perr != nil {
		if res.Stderr != "" {
			perr = fmt.Errorf("%w; node.sh said: %s", perr, firstLine(res.Stderr))
		}
		return nil, res, perr
	}
	if clockOK {
		mid := sent.Add(got.Sub(sent) / 2)
		local := float64(mid.UnixNano()) / 1e9
		f.ClockOffset = time.Duration((remote - local) * 1e9)
		f.ClockError = got.Sub(sent) / 2
		f.HaveClock = true
	}
	return f, res, nil
}

// boundedBuffer keeps the first max bytes written and drops the rest, so
// a chatty or hostile node cannot fill memory.
type boundedBuffer struct {
	bytes.Buffer
	max     int
	dropped int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room < len(p) {
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		b.dropped += len(p) - max(room, 0)
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return text.Printable(s, 300)
}

// sshReason picks what ssh's error output says, past its banner of '@'
// lines: the changed-key warning, or the first line that names a cause.
func sshReason(stderr string) string {
	if strings.Contains(stderr, "REMOTE HOST IDENTIFICATION HAS CHANGED") {
		for _, l := range strings.Split(stderr, "\n") {
			if strings.Contains(l, "has changed and you have requested strict checking") {
				return "REMOTE HOST IDENTIFICATION HAS CHANGED: " + text.Printable(l, 200)
			}
		}
		return "REMOTE HOST IDENTIFICATION HAS CHANGED"
	}
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "@") || strings.HasPrefix(l, "Warning: Permanently added") {
			continue
		}
		return text.Printable(l, 300)
	}
	return "ssh exited 255 without a message"
}
