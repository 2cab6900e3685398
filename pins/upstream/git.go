package upstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/haloforge/haloforge/pins"
)

// RemoteRef is one line of `git ls-remote`: a ref and the object it names.
// For an annotated tag, Peeled is the commit (the `^{}` line).
type RemoteRef struct {
	Name   string // refs/heads/main, refs/tags/v1.0
	Object string
	Peeled string
}

// Commit is the commit a ref points at.
func (r RemoteRef) Commit() string {
	if r.Peeled != "" {
		return r.Peeled
	}
	return r.Object
}

var reObject = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// maxRefs bounds what ls-remote may list (vLLM has a few thousand tags and
// branches).
const maxRefs = 500000

// ParseLsRemote reads `git ls-remote` output: "<object>\t<ref>" lines,
// `<ref>^{}` lines carrying an annotated tag's commit. Other lines are
// skipped, not trusted.
func ParseLsRemote(out []byte) ([]RemoteRef, error) {
	var refs []RemoteRef
	index := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		obj, name, ok := strings.Cut(sc.Text(), "\t")
		if !ok || !reObject.MatchString(obj) || !strings.HasPrefix(name, "refs/") && name != "HEAD" {
			continue
		}
		if base, peeled := strings.CutSuffix(name, "^{}"); peeled {
			if i, ok := index[base]; ok {
				refs[i].Peeled = obj
			}
			continue
		}
		if _, dup := index[name]; dup {
			continue
		}
		if len(refs) >= maxRefs {
			return refs, fmt.Errorf("more than %d refs", maxRefs)
		}
		index[name] = len(refs)
		refs = append(refs, RemoteRef{Name: name, Object: obj})
	}
	if err := sc.Err(); err != nil {
		return refs, err
	}
	return refs, nil
}

// lsRemote lists a repository's branches and tags, once per run.
func (c *checker) lsRemote(ctx context.Context, repo string) ([]RemoteRef, error) {
	v, err := c.once("ls-remote "+repo, func() (any, error) {
		var refs []RemoteRef
		host := c.gitHost(ctx, repo)
		err := c.network(ctx, host, func(ctx context.Context) error {
			if err := c.resolvable(ctx, host); err != nil {
				return err
			}
			out, err := c.git(ctx, "", "ls-remote", "--heads", "--tags", "--end-of-options", repo)
			if err != nil {
				return classifyGit(host, err)
			}
			refs, err = ParseLsRemote(out)
			if err != nil {
				return &uncheckableError{Reason: "ls-remote: " + err.Error()}
			}
			return nil
		})
		return refs, err
	})
	if err != nil {
		return nil, err
	}
	return v.([]RemoteRef), nil
}

// fetchBySHA asks the server for exactly one commit, without trees or
// blobs, into a throw-away repository. With protocol v2 (git >= 2.26, and
// GitHub) upload-pack serves any commit it has, so success proves the commit
// still exists there.
func (c *checker) fetchBySHA(ctx context.Context, repo, sha string) error {
	_, err := c.once("fetch "+repo+" "+sha, func() (any, error) {
		host := c.gitHost(ctx, repo)
		return nil, c.network(ctx, host, func(ctx context.Context) error {
			if err := c.resolvable(ctx, host); err != nil {
				return err
			}
			dir, err := os.MkdirTemp("", "haloforge-pins-status-*")
			if err != nil {
				return &uncheckableError{Reason: err.Error()}
			}
			defer os.RemoveAll(dir)
			if _, err := c.git(ctx, "", "init", "--quiet", "--bare", dir); err != nil {
				return &uncheckableError{Reason: "git init: " + firstLine(err)}
			}
			_, err = c.git(ctx, dir, "-c", "protocol.version=2", "fetch", "--quiet", "--no-tags", "--depth=1",
				"--filter=tree:0", "--end-of-options", repo, sha)
			if err != nil {
				return classifyGit(host, err)
			}
			return nil
		})
	})
	return err
}

// gitError carries git's stderr.
type gitError struct {
	stderr string
	err    error
}

func (e *gitError) Error() string { return strings.TrimSpace(e.stderr + " " + e.err.Error()) }

// git runs git without a terminal, prompts or credential pop-ups, in its
// own process group, killed when ctx ends.
func (c *checker) git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.opts.Git, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_TERMINAL_PROMPT=0",   // no "Username for …" when a repository is gone
		"GCM_INTERACTIVE=never",   // nor Git Credential Manager's window
		"GIT_ASKPASS=",            // nor an askpass program
		"SSH_ASKPASS=",            //
		"GIT_PROTOCOL_FROM_USER=", //
		"LC_ALL=C",                // messages classified below are git's English ones
	)
	if os.Getenv("GIT_SSH_COMMAND") == "" {
		cmd.Env = append(cmd.Env, "GIT_SSH_COMMAND=ssh -o BatchMode=yes -o ConnectTimeout=10")
	}
	cmd.Env = append(cmd.Env, c.opts.GitEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	var stdout, stderr limitedBuffer
	stdout.max, stderr.max = 256<<20, 64<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, &gitError{stderr: "", err: context.DeadlineExceeded}
	}
	if err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) {
			return nil, &uncheckableError{Reason: "git is not installed (" + ee.Err.Error() + ")"}
		}
		return nil, &gitError{stderr: stderr.String(), err: err}
	}
	if stdout.overflow {
		return nil, &uncheckableError{Reason: "git printed more than 256 MiB"}
	}
	return stdout.Bytes(), nil
}

// limitedBuffer keeps at most max bytes and remembers that it dropped some.
type limitedBuffer struct {
	bytes.Buffer
	max      int
	overflow bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.overflow = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// gitHost is the host git will really talk to for repo: the user's
// url.<base>.insteadOf rules apply (`git ls-remote --get-url` expands them
// without a network), so a mirror is remembered as itself.
func (c *checker) gitHost(ctx context.Context, repo string) string {
	if out, err := c.git(ctx, "", "ls-remote", "--get-url", "--end-of-options", repo); err == nil {
		if h := urlHost(strings.TrimSpace(string(out))); h != "" {
			return h
		}
	}
	return urlHost(repo)
}

func urlHost(repo string) string {
	if u, err := url.Parse(repo); err == nil && u.Host != "" {
		return u.Host
	}
	return repo
}

// resolvable answers for git's resolver: a host that does not resolve
// within the run's DNS budget is no answer, before git waits on its own
// resolver's longer timeouts.
func (c *checker) resolvable(ctx context.Context, hostport string) error {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "" || net.ParseIP(host) != nil || strings.ContainsAny(host, "/\\") || os.Getenv("HTTPS_PROXY")+os.Getenv("https_proxy")+os.Getenv("ALL_PROXY")+os.Getenv("all_proxy") != "" {
		return nil // an address, a path, or a proxy that resolves for git
	}
	if _, err := c.lookup(ctx, host); err != nil {
		return &unreachableError{Host: hostport, Reason: netReason(err)}
	}
	return nil
}

// gitGone are git's words for "this repository is not there" (or not public).
var gitGone = []string{
	"repository not found", "not found", "does not appear to be a git repository",
	"could not read username", "terminal prompts disabled", "authentication failed",
	"access denied or repository not exported", "no such repository", "does not exist",
	"http 404", "returned error: 404", "returned error: 410", "repository unavailable",
}

// gitNoAnswer are git's and curl's words for "no answer".
var gitNoAnswer = []string{
	"could not resolve host", "couldn't resolve host", "failed to connect", "connection refused",
	"connection timed out", "timed out", "network is unreachable", "no route to host",
	"unable to connect", "connection reset", "early eof", "the remote end hung up unexpectedly",
	"proxy", "ssl", "gnutls", "certificate",
}

// classifyGit turns a failed git run into a typed error.
func classifyGit(host string, err error) error {
	var ge *gitError
	var unc *uncheckableError
	switch {
	case errors.As(err, &unc):
		return err
	case !errors.As(err, &ge):
		return &unreachableError{Host: host, Reason: err.Error()}
	case errors.Is(ge.err, context.DeadlineExceeded):
		return &unreachableError{Host: host, Reason: "no answer in time"}
	}
	msg := strings.ToLower(ge.stderr)
	switch {
	case strings.Contains(msg, "not our ref"):
		return &goneError{Reason: "git: not our ref"}
	case strings.Contains(msg, "unadvertised object"), strings.Contains(msg, "allow request for unadvertised"):
		return &uncheckableError{Reason: "the server serves only branch and tag tips, not commits by SHA"}
	}
	for _, w := range gitNoAnswer {
		if strings.Contains(msg, w) {
			return &unreachableError{Host: host, Reason: noAnswerReason(msg, ge.stderr)}
		}
	}
	for _, w := range gitGone {
		if strings.Contains(msg, w) {
			return &goneError{Reason: gitReason(ge.stderr)}
		}
	}
	return &unreachableError{Host: host, Reason: gitReason(ge.stderr), soft: true}
}

// noAnswerReason words git's and curl's "no answer" like netReason does,
// so one host's reason reads the same whichever client asked.
func noAnswerReason(lower, stderr string) string {
	switch {
	case strings.Contains(lower, "resolve host"):
		return "could not resolve host"
	case strings.Contains(lower, "connection refused"):
		return "connection refused"
	case strings.Contains(lower, "couldn't connect to server"), strings.Contains(lower, "failed to connect"):
		return "could not connect"
	case strings.Contains(lower, "timed out"):
		return "no answer in time"
	case strings.Contains(lower, "network is unreachable"), strings.Contains(lower, "no route to host"):
		return "network unreachable"
	case strings.Contains(lower, "proxy"):
		return "proxy from the environment did not answer"
	}
	return gitReason(stderr)
}

// gitReason is the informative line of git's stderr, without its prefixes.
func gitReason(stderr string) string {
	line := firstLine(errors.New(stderr))
	for _, p := range []string{"fatal: ", "error: ", "remote: "} {
		line = strings.TrimPrefix(line, p)
	}
	if i := strings.Index(line, "': "); i >= 0 && strings.HasPrefix(line, "unable to access '") {
		line = line[i+3:]
	}
	return strings.TrimSpace(line)
}

// firstLine is the first non-empty line of an error, for a detail.
func firstLine(err error) string {
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "warning:") && !strings.HasPrefix(l, "hint:") {
			return l
		}
	}
	return strings.TrimSpace(err.Error())
}

var reSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)

// checkGitRef resolves a SHA, tag or branch pin in its repository.
func checkGitRef(ctx context.Context, c *checker, pl plan, repo string) Result {
	refs, err := c.lsRemote(ctx, repo)
	if err != nil {
		return resultFromErr(pl, err, nil, "the repository is gone ("+repo+")")
	}
	v := pl.pin.Value
	if reSHA.MatchString(v) {
		return checkSHA(ctx, c, pl, repo, refs)
	}
	for _, prefix := range []string{"refs/tags/", "refs/heads/"} {
		for _, r := range refs {
			if r.Name == prefix+v {
				kind := "tag"
				if prefix == "refs/heads/" {
					kind = "branch"
				}
				res := pl.result(OK, fmt.Sprintf("%s %s → %s", kind, v, short(r.Commit())))
				res.Resolved = r.Commit()
				return res
			}
		}
	}
	what := "tag or branch"
	if pl.pin.Kind == pins.KindTag {
		what = "tag"
	} else if pl.pin.Kind == pins.KindBranch {
		what = "branch"
	}
	return pl.result(Retired, fmt.Sprintf("no %s %s in %s any more", what, v, repo))
}

// checkSHA: a SHA is fine when a branch or tag points at it; otherwise a
// one-commit fetch says whether the server still has it.
func checkSHA(ctx context.Context, c *checker, pl plan, repo string, refs []RemoteRef) Result {
	sha := pl.pin.Value
	var tips []string
	for _, r := range refs {
		if r.Commit() == sha {
			tips = append(tips, strings.TrimPrefix(strings.TrimPrefix(r.Name, "refs/tags/"), "refs/heads/"))
		}
	}
	if len(tips) > 0 {
		if len(tips) > 3 {
			tips = append(tips[:3], "…")
		}
		r := pl.result(OK, "the commit is the tip of "+strings.Join(tips, ", "))
		r.Resolved = sha
		return r
	}
	err := c.fetchBySHA(ctx, repo, sha)
	return resultFromErr(pl, err, func() Result {
		r := pl.result(OK, "the commit exists on the server (fetched by SHA, one commit, no files); it is no branch or tag tip, so which branch holds it was not checked")
		r.Resolved = sha
		return r
	}, "the commit is no branch or tag tip and the server no longer has it")
}

// checkGitRepo: the repository pin answers when ls-remote does.
func checkGitRepo(ctx context.Context, c *checker, pl plan, readers []string) Result {
	refs, err := c.lsRemote(ctx, pl.pin.Value)
	return resultFromErr(pl, err, func() Result {
		n := fmt.Sprintf("%d branches and tags", len(refs))
		if len(refs) == 1 {
			n = "1 branch or tag"
		}
		return pl.result(OK, fmt.Sprintf("the repository answers (%s; %s checked in it)", n, strings.Join(readers, ", ")))
	}, "the repository is gone")
}
