// Package upstreamtest starts real upstream servers on the loopback
// interface for the tests of `pins status`: Debian's docker-registry (an
// OCI distribution registry) holding images podman builds and pushes, git
// daemon serving bare repositories, and a PEP 691/503 simple index serving
// wheels that pip builds from tiny local packages. Every server, image,
// repository and temporary directory is the test's own and goes away with it.
//
// The servers need root (podman), podman, docker-registry, git and python3
// with pip or venv. Require skips a test that cannot have them, with the
// reason; `make test` installs them (Makefile APT_PKGS), so CI runs it.
package upstreamtest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Require skips t unless every real part can run here. docker-registry is
// installed with apt-get when it is missing and we are root (as the issue
// asks); anything else missing is a skip with the reason.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("real upstream servers: needs root (podman with private storage); run as root, as CI and `make test` do")
	}
	if _, err := exec.LookPath("docker-registry"); err != nil {
		installRegistry(t)
	}
	for _, tool := range []string{"podman", "docker-registry", "git", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("real upstream servers: %s is not installed (`make test` installs it: Makefile APT_PKGS)", tool)
		}
	}
}

var installOnce sync.Once

// installRegistry apt-get installs docker-registry without starting its
// system service (policy-rc.d refuses starts where one exists; when the
// service did start, it is stopped again: the tests run their own).
func installRegistry(t testing.TB) {
	installOnce.Do(func() {
		if _, err := exec.LookPath("apt-get"); err != nil {
			return
		}
		t.Log("installing docker-registry with apt-get (Makefile APT_PKGS)")
		cmd := exec.Command("apt-get", "install", "-y", "-qq", "--no-install-recommends", "docker-registry")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("apt-get install docker-registry: %v\n%s", err, out)
			return
		}
		if exec.Command("systemctl", "is-active", "--quiet", "docker-registry").Run() == nil {
			_ = exec.Command("systemctl", "disable", "--now", "docker-registry").Run()
		}
	})
}

// run runs a command and fails the test with its output when it fails.
func run(t testing.TB, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// ClosedAddr is a loopback address where nothing listens: a host that does
// not answer, for `unreachable`.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// Listen is a loopback listener closed when the test ends, together with
// every connection given to track: a server that hangs or tunnels cannot
// keep a test alive.
func Listen(t testing.TB) (l net.Listener, track func(net.Conn)) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
	})
	return l, func(c net.Conn) {
		mu.Lock()
		open = append(open, c)
		mu.Unlock()
	}
}

// ---- OCI registry ------------------------------------------------------------

// Registry is a docker-registry on 127.0.0.1 with deletion enabled, and a
// podman with private storage that builds and pushes to it.
type Registry struct {
	Addr   string // 127.0.0.1:port
	dir    string
	podman []string
}

// StartRegistry starts docker-registry on a free loopback port.
func StartRegistry(t testing.TB) *Registry {
	t.Helper()
	r := &Registry{dir: t.TempDir()}
	r.Addr = serveRegistry(t, r.dir, "")
	// podman wants a run root shorter than 50 characters: t.TempDir's are longer
	store, err := os.MkdirTemp("", "hfps-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(store) })
	r.podman = []string{"--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"),
		"--storage-driver", "vfs", "--events-backend", "none", "--tmpdir", filepath.Join(store, "tmp")}
	// vfs layers are plain directories under store: the cleanup removes
	// them, and no other podman storage is touched.
	return r
}

// serveRegistry starts a docker-registry on storage dir's data (read-only
// when auth is given: the logins serve what the first one holds) and
// returns where it listens.
func serveRegistry(t testing.TB, dir, auth string) string {
	t.Helper()
	readonly := ""
	if auth != "" {
		readonly = `  maintenance:
    readonly:
      enabled: true
    uploadpurging:
      enabled: false
`
	}
	conf := filepath.Join(t.TempDir(), "config.yml")
	err := os.WriteFile(conf, []byte(fmt.Sprintf(`version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
%shttp:
  addr: 127.0.0.1:0
  secret: haloforge-pins-status-test
%s`, filepath.Join(dir, "data"), readonly, auth)), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("docker-registry", "serve", conf)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		pw.Close()
	})
	addr := make(chan string, 1)
	var logTail []string
	var mu sync.Mutex
	go func() {
		re := regexp.MustCompile(`listening on (127\.0\.0\.1:[0-9]+)`)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			mu.Lock()
			logTail = append(logTail, sc.Text())
			mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		return a
	case <-time.After(30 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("docker-registry did not say where it listens:\n%s", strings.Join(logTail, "\n"))
	}
	return ""
}

// Image is "127.0.0.1:port/<repo>:<tag>".
func (r *Registry) Image(repo, tag string) string { return r.Addr + "/" + repo + ":" + tag }

// Push builds a one-file image with podman (an import of a tiny rootfs
// whose file holds content) and pushes it as repo:tag; it returns the
// manifest digest the registry stored.
func (r *Registry) Push(t testing.TB, repo, tag, content string) string {
	t.Helper()
	return r.PushFormat(t, repo, tag, content, "")
}

// PushFormat is Push in a manifest format podman writes: "oci" or "v2s2"
// (Docker's); "" is podman's default.
func (r *Registry) PushFormat(t testing.TB, repo, tag, content, format string) string {
	t.Helper()
	var rootfs bytes.Buffer
	tw := tar.NewWriter(&rootfs)
	body := []byte(content + "\n")
	if err := tw.WriteHeader(&tar.Header{Name: "haloforge-test.txt", Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	tw.Write(body)
	tw.Close()
	ref := r.Image(repo, tag)
	imp := exec.Command("podman", append(r.podman, "import", "-", ref)...)
	imp.Stdin = &rootfs
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("podman import: %v\n%s", err, out)
	}
	digestFile := filepath.Join(r.dir, "digest")
	args := []string{"push", "--quiet", "--tls-verify=false", "--digestfile", digestFile}
	if format != "" {
		args = append(args, "--format", format)
	}
	run(t, "", nil, "podman", append(append(r.podman, args...), ref)...)
	d, err := os.ReadFile(digestFile)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(d))
}

// PushList makes a multi-image list with podman manifest of the images
// (repo:tag references in this registry) and pushes it as repo:tag in
// format "oci" (an OCI image index) or "v2s2" (a Docker manifest list); it
// returns the list's digest.
func (r *Registry) PushList(t testing.TB, repo, tag, format string, images ...string) string {
	t.Helper()
	list := "localhost/haloforge-test-list-" + strings.NewReplacer("/", "-", ":", "-").Replace(repo+"-"+tag)
	run(t, "", nil, "podman", append(r.podman, "manifest", "create", list)...)
	for _, img := range images {
		run(t, "", nil, "podman", append(r.podman, "manifest", "add", "--tls-verify=false", list, "docker://"+r.Addr+"/"+img)...)
	}
	digestFile := filepath.Join(r.dir, "list-digest")
	run(t, "", nil, "podman", append(r.podman, "manifest", "push", "--quiet", "--tls-verify=false", "--format", format,
		"--digestfile", digestFile, list, "docker://"+r.Image(repo, tag))...)
	d, err := os.ReadFile(digestFile)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(d))
}

// Delete removes a manifest by digest through the registry API (the
// registry's config enables deletion); its tags go with it.
func (r *Registry) Delete(t testing.TB, repo, digest string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, "http://"+r.Addr+"/v2/"+repo+"/manifests/"+digest, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("DELETE manifest %s: HTTP %d", digest, resp.StatusCode)
	}
}

// ---- git daemon ------------------------------------------------------------------

// GitServer is git daemon serving the bare repositories under Base, one
// `git daemon --inetd` per connection on a loopback listener.
type GitServer struct {
	Base string
	Addr string
}

// StartGitDaemon starts the server.
func StartGitDaemon(t testing.TB) *GitServer {
	t.Helper()
	g := &GitServer{Base: t.TempDir()}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g.Addr = l.Addr().String()
	var wg sync.WaitGroup
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				f, err := conn.(*net.TCPConn).File()
				if err != nil {
					return
				}
				defer f.Close()
				cmd := exec.Command("git", "daemon", "--inetd", "--export-all", "--base-path="+g.Base, "--informative-errors")
				cmd.Stdin, cmd.Stdout = f, f
				_ = cmd.Run()
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	return g
}

// Repo is a working repository whose pushes go to a bare repository the
// server serves as git://ADDR/<name>.git.
type Repo struct {
	Work, Bare string
	t          testing.TB
}

var gitEnv = []string{
	"GIT_AUTHOR_NAME=haloforge test", "GIT_AUTHOR_EMAIL=test@haloforge.invalid",
	"GIT_COMMITTER_NAME=haloforge test", "GIT_COMMITTER_EMAIL=test@haloforge.invalid",
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
}

// NewRepo makes an empty served repository name.git.
func (g *GitServer) NewRepo(t testing.TB, name string) *Repo {
	t.Helper()
	r := &Repo{Work: filepath.Join(t.TempDir(), name), Bare: filepath.Join(g.Base, name+".git"), t: t}
	run(t, "", gitEnv, "git", "init", "--quiet", "--bare", r.Bare)
	run(t, "", gitEnv, "git", "init", "--quiet", "-b", "main", r.Work)
	run(t, r.Work, gitEnv, "git", "remote", "add", "origin", r.Bare)
	return r
}

// Git runs git in the working repository.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	return run(r.t, r.Work, gitEnv, "git", args...)
}

// GitBare runs git in the served bare repository.
func (r *Repo) GitBare(args ...string) string {
	r.t.Helper()
	return run(r.t, r.Bare, gitEnv, "git", args...)
}

// Commit commits a change and returns its SHA.
func (r *Repo) Commit(msg string) string {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.Work, "file.txt"), []byte(msg+"\n"), 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.Git("add", "file.txt")
	r.Git("commit", "--quiet", "-m", msg)
	return r.Git("rev-parse", "HEAD")
}

// URL is the repository's git:// URL.
func (g *GitServer) URL(name string) string { return "git://" + g.Addr + "/" + name + ".git" }

// ---- simple index and wheels -------------------------------------------------------

// Wheel describes a tiny wheel for BuildWheels.
type Wheel struct {
	Name, Version string
	Tag           string // python-abi-platform, e.g. cp312-cp312-linux_x86_64
	Content       string // goes into the package; another content is another sha256
}

// backend is an in-tree PEP 517 backend: pip builds the wheel through it
// with no build dependencies and no network.
const backend = `"""A PEP 517 backend writing one tiny wheel (haloforge tests)."""
import base64, hashlib, json, os, zipfile

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "wheel.json")) as f:
    W = json.load(f)


def _dist():
    return W["name"].replace("-", "_")


def _files():
    dist, ver = _dist(), W["version"]
    di = "%s-%s.dist-info" % (dist, ver)
    return di, {
        "%s/__init__.py" % dist: "CONTENT = %r\n" % W["content"],
        di + "/METADATA": "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (W["name"], ver),
        di + "/WHEEL": "Wheel-Version: 1.0\nGenerator: haloforge-test\nRoot-Is-Purelib: true\nTag: %s\n" % W["tag"],
    }


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    di, files = _files()
    name = "%s-%s-%s.whl" % (_dist(), W["version"], W["tag"])
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as z:
        for path, text in files.items():
            data = text.encode()
            z.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
        record.append(di + "/RECORD,,")
        z.writestr(di + "/RECORD", "\n".join(record) + "\n")
    return name
`

var pipOnce struct {
	sync.Once
	python string
	err    error
}

// pip returns a python3 that has pip: the system's, else a venv's.
func pip(t testing.TB) string {
	pipOnce.Do(func() {
		if exec.Command("python3", "-m", "pip", "--version").Run() == nil {
			pipOnce.python = "python3"
			return
		}
		dir, err := os.MkdirTemp("", "haloforge-pins-status-venv-*")
		if err != nil {
			pipOnce.err = err
			return
		}
		if out, err := exec.Command("python3", "-m", "venv", dir).CombinedOutput(); err != nil {
			pipOnce.err = fmt.Errorf("python3 -m venv: %v\n%s", err, out)
			return
		}
		pipOnce.python = filepath.Join(dir, "bin", "python3")
	})
	if pipOnce.err != nil {
		t.Skipf("real simple index: no pip (python3-venv is in the Makefile's APT_PKGS): %v", pipOnce.err)
	}
	return pipOnce.python
}

// TheRockStack is the wheels the pins of one TheRock stack name on its
// index (ROCm with the gfx1151 device wheel, torch 2.11.0, torchvision
// 0.26.0 and torchaudio 2.11.0 of that ROCm with theirs), for Python 3.12.
func TheRockStack(rocm string) []Wheel {
	torch, vision, audio := "2.11.0+rocm"+rocm, "0.26.0+rocm"+rocm, "2.11.0+rocm"+rocm
	return []Wheel{
		{Name: "rocm", Version: rocm, Tag: "py3-none-linux_x86_64", Content: "rocm " + rocm},
		{Name: "rocm-sdk-device-gfx1151", Version: rocm, Tag: "py3-none-linux_x86_64", Content: "device " + rocm},
		{Name: "torch", Version: torch, Tag: "cp312-cp312-linux_x86_64", Content: "torch " + torch},
		{Name: "amd-torch-device-gfx1151", Version: torch, Tag: "py3-none-linux_x86_64", Content: "torch device " + torch},
		{Name: "torchvision", Version: vision, Tag: "cp312-cp312-linux_x86_64", Content: "vision " + vision},
		{Name: "amd-torchvision-device-gfx1151", Version: vision, Tag: "py3-none-linux_x86_64", Content: "vision device " + vision},
		{Name: "torchaudio", Version: audio, Tag: "cp312-cp312-linux_x86_64", Content: "audio " + audio},
	}
}

// BuildWheels builds each wheel with `pip wheel` from a local package (no
// network, no build dependencies) into dir, replacing a file of the same name.
func BuildWheels(t testing.TB, dir string, wheels ...Wheel) {
	t.Helper()
	py := pip(t)
	src := t.TempDir()
	args := []string{"-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
		"--no-cache-dir", "--disable-pip-version-check", "--wheel-dir", dir}
	for i, w := range wheels {
		pkg := filepath.Join(src, fmt.Sprintf("pkg%d", i))
		meta, _ := json.Marshal(map[string]string{"name": w.Name, "version": w.Version, "tag": w.Tag, "content": w.Content})
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string]string{
			"pyproject.toml": "[build-system]\nrequires = []\nbuild-backend = \"tinybackend\"\nbackend-path = [\".\"]\n",
			"tinybackend.py": backend,
			"wheel.json":     string(meta),
		} {
			if err := os.WriteFile(filepath.Join(pkg, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		args = append(args, pkg)
	}
	run(t, "", []string{"PIP_NO_INPUT=1"}, py, args...)
}

// TheRockStacks builds the wheels of the ROCm 10.0.0 stack and of the
// 7.14.0 one, each in a directory of its own: the recommended and the
// previous pin sets' indexes.
func TheRockStacks(t testing.TB) (next, previous string) {
	t.Helper()
	next, previous = t.TempDir(), t.TempDir()
	BuildWheels(t, next, TheRockStack("10.0.0")...)
	BuildWheels(t, previous, TheRockStack("7.14.0")...)
	return next, previous
}

// RemoveWheels takes the wheels of the named projects off an index's
// directory (the file names' normalised prefixes: "torch" removes
// torch-2.11.0…whl, not torchvision): what upstream retires.
func RemoveWheels(t testing.TB, dir string, projects ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		for _, p := range projects {
			if strings.HasPrefix(e.Name(), strings.ReplaceAll(p, "-", "_")+"-") {
				if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// Index is a PEP 691/503 simple index over HTTPS on 127.0.0.1, serving
// every distribution file in Dir: /simple/ lists projects, /simple/<name>/
// lists that project's files with sha256 fragments, /files/<file> serves
// them. JSON when the client asks for it, unless HTMLOnly.
type Index struct {
	URL      string // https://127.0.0.1:port/simple/
	Dir      string
	CertFile string // the server's certificate in PEM, for SSL_CERT_FILE
	Roots    *x509.CertPool
	htmlOnly atomic.Bool
	srv      *httptest.Server
}

// HTMLOnly makes the index answer PEP 503 HTML whatever the client asks,
// as a static index (AMD's) does.
func (ix *Index) HTMLOnly(on bool) { ix.htmlOnly.Store(on) }

var reNorm = regexp.MustCompile(`[-_.]+`)

func norm(s string) string { return reNorm.ReplaceAllString(strings.ToLower(s), "-") }

// StartIndex serves dir.
func StartIndex(t testing.TB, dir string) *Index {
	t.Helper()
	ix := &Index{Dir: dir}
	ix.srv = httptest.NewTLSServer(http.HandlerFunc(ix.serve))
	t.Cleanup(ix.srv.Close)
	ix.URL = ix.srv.URL + "/simple/"
	cert := ix.srv.Certificate()
	ix.Roots = x509.NewCertPool()
	ix.Roots.AddCert(cert)
	ix.CertFile = filepath.Join(t.TempDir(), "index-cert.pem")
	if err := os.WriteFile(ix.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return ix
}

// Close stops the server: its pins become unreachable.
func (ix *Index) Close() { ix.srv.Close() }

type indexFile struct{ name, sha string }

// filesOf groups the directory's distribution files by normalised project.
func filesOf(dir string) map[string][]indexFile {
	out := map[string][]indexFile{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, ".whl") && !strings.HasSuffix(n, ".tar.gz") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			continue
		}
		sum := sha256.Sum256(data)
		project := norm(strings.SplitN(n, "-", 2)[0])
		out[project] = append(out[project], indexFile{name: n, sha: hex.EncodeToString(sum[:])})
	}
	for _, fs := range out {
		sort.Slice(fs, func(i, j int) bool { return fs[i].name < fs[j].name })
	}
	return out
}

func (ix *Index) serve(w http.ResponseWriter, r *http.Request) {
	serveSimple(w, r, "/simple/", ix.Dir, ix.htmlOnly.Load())
}

// serveSimple answers one request of a simple index rooted at the path root
// (e.g. /simple/) over the files of dir: the project list at root, a
// project's files at root/<project>/, a file at <root's parent>/files/<file>
// (the pages link to ../../files/). JSON when the client asks for it,
// unless htmlOnly.
func serveSimple(w http.ResponseWriter, r *http.Request, root, dir string, htmlOnly bool) {
	jsonOK := !htmlOnly && strings.Contains(r.Header.Get("Accept"), "application/vnd.pypi.simple.v1+json")
	files := filesOf(dir)
	switch {
	case r.URL.Path == root:
		var projects []string
		for p := range files {
			projects = append(projects, p)
		}
		sort.Strings(projects)
		if jsonOK {
			var list []map[string]string
			for _, p := range projects {
				list = append(list, map[string]string{"name": p})
			}
			w.Header().Set("Content-Type", "application/vnd.pypi.simple.v1+json")
			json.NewEncoder(w).Encode(map[string]any{"meta": map[string]string{"api-version": "1.0"}, "projects": list})
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!DOCTYPE html><html><body>\n")
		for _, p := range projects {
			fmt.Fprintf(w, "<a href=\"%s/\">%s</a><br>\n", p, p)
		}
		fmt.Fprint(w, "</body></html>\n")
	case strings.HasPrefix(r.URL.Path, root) && strings.HasSuffix(r.URL.Path, "/"):
		project := strings.Trim(strings.TrimPrefix(r.URL.Path, root), "/")
		fs, ok := files[project]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if jsonOK {
			var list []map[string]any
			for _, f := range fs {
				list = append(list, map[string]any{"filename": f.name, "url": "../../files/" + f.name, "hashes": map[string]string{"sha256": f.sha}})
			}
			w.Header().Set("Content-Type", "application/vnd.pypi.simple.v1+json")
			json.NewEncoder(w).Encode(map[string]any{"meta": map[string]string{"api-version": "1.0"}, "name": project, "files": list})
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<!DOCTYPE html>\n<html><head><title>Links for %s</title></head><body><h1>Links for %s</h1>\n", project, project)
		for _, f := range fs {
			fmt.Fprintf(w, "<a href=\"../../files/%s#sha256=%s\">%s</a><br/>\n", strings.ReplaceAll(f.name, "+", "%2B"), f.sha, html.EscapeString(f.name))
		}
		fmt.Fprint(w, "</body></html>\n")
	case strings.HasPrefix(r.URL.Path, strings.TrimSuffix(path.Dir(strings.TrimSuffix(root, "/")), "/")+"/files/"):
		name := filepath.Base(r.URL.Path)
		http.ServeFile(w, r, filepath.Join(dir, name))
	default:
		http.NotFound(w, r)
	}
}

// Ctx is a context bounded for one real-server step.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
