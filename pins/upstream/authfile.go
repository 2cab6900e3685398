package upstream

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/haloforge/haloforge/internal/safefile"
)

// A private registry's image pin is checked with the credentials podman
// itself would use for it (scripts/SOURCES.md: containers/image's
// pkg/docker/config and containers/common's pkg/auth, 2026-11-29), so
// `pins status` sees what `podman pull` sees:
//   - $REGISTRY_AUTH_FILE when it is set, and only it;
//   - else $DOCKER_CONFIG/config.json when DOCKER_CONFIG is set, and only it;
//   - else, in this order: $XDG_RUNTIME_DIR/containers/auth.json
//     (/run/containers/UID/auth.json without XDG_RUNTIME_DIR),
//     $XDG_CONFIG_HOME/containers/auth.json (~/.config/…),
//     ~/.docker/config.json, and the legacy ~/.dockercfg.
//
// The first file with an entry for the image wins. Within a file the
// entries are tried from the repository up to the registry
// (docker.io/rocm/vllm, docker.io/rocm, docker.io), then the keys written
// as URLs (https://index.docker.io/v1/). A credHelpers entry sends podman to
// a credential helper program; haloforge runs none, says so, and asks
// anonymously. go-containerregistry's own keychain is not used: it reads
// only one of these files, Docker's first, and runs Docker's credential
// helpers.

// maxAuthFile bounds a credentials file: they hold a few entries.
const maxAuthFile = 1 << 20

// authPath is one credentials file podman reads, and its format.
type authPath struct {
	path   string
	legacy bool // ~/.dockercfg: the entries without the "auths" wrapper
}

// authFilePaths lists the files podman reads, in its order.
func authFilePaths(getenv func(string) string, uid int, home string) []authPath {
	if f := getenv("REGISTRY_AUTH_FILE"); f != "" {
		return []authPath{{path: f}}
	}
	if d := getenv("DOCKER_CONFIG"); d != "" {
		return []authPath{{path: filepath.Join(d, "config.json")}}
	}
	var out []authPath
	if rt := getenv("XDG_RUNTIME_DIR"); rt != "" {
		out = append(out, authPath{path: filepath.Join(rt, "containers", "auth.json")})
	} else {
		out = append(out, authPath{path: fmt.Sprintf("/run/containers/%d/auth.json", uid)})
	}
	cfg := getenv("XDG_CONFIG_HOME")
	if cfg == "" && home != "" {
		cfg = filepath.Join(home, ".config")
	}
	if cfg != "" {
		out = append(out, authPath{path: filepath.Join(cfg, "containers", "auth.json")})
	}
	if home != "" {
		out = append(out, authPath{path: filepath.Join(home, ".docker", "config.json")},
			authPath{path: filepath.Join(home, ".dockercfg"), legacy: true})
	}
	return out
}

// AuthEntry is one registry's entry of a credentials file.
type AuthEntry struct {
	Auth          string `json:"auth,omitempty"` // base64 of user:password
	IdentityToken string `json:"identitytoken,omitempty"`
}

// AuthFile is what haloforge reads of a credentials file.
type AuthFile struct {
	Auths       map[string]AuthEntry `json:"auths"`
	CredHelpers map[string]string    `json:"credHelpers,omitempty"`
}

// ParseAuthFile reads podman's auth.json or Docker's config.json (legacy:
// ~/.dockercfg, whose entries have no "auths" wrapper).
func ParseAuthFile(data []byte, legacy bool) (AuthFile, error) {
	var f AuthFile
	if legacy {
		if err := json.Unmarshal(data, &f.Auths); err != nil {
			return f, fmt.Errorf("not a credentials file: %v", err)
		}
		return f, nil
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return f, fmt.Errorf("not a credentials file: %v", err)
	}
	return f, nil
}

// DecodeAuth is an entry's user and password ("" and "" for an entry with
// no auth, which Docker writes for a credential helper's registries).
func DecodeAuth(e AuthEntry) (user, password string, err error) {
	if e.Auth == "" {
		return "", "", nil
	}
	raw, err := base64.StdEncoding.DecodeString(e.Auth)
	if err != nil {
		return "", "", errors.New("its auth is not base64")
	}
	user, password, ok := strings.Cut(string(raw), ":")
	if !ok {
		return "", "", nil
	}
	return user, strings.Trim(password, "\x00"), nil
}

// credentialsError is a credentials file podman would read that cannot be
// read: podman fails on it too, so the pin cannot be checked as it pulls.
type credentialsError struct {
	path string
	err  error
}

func (e *credentialsError) Error() string {
	msg := e.err.Error()
	if !strings.Contains(msg, e.path) {
		msg = e.path + ": " + msg
	}
	return "the registry credentials podman would use cannot be read: " + msg
}

// login is where a registry's credentials came from.
type login struct {
	auth   authn.Authenticator
	user   string // "" for an identity token
	path   string
	helper string // a credential helper podman would run instead
}

// keychain finds credentials for a repository as podman does. It is an
// authn.Keychain, so go-containerregistry asks it for each repository.
type keychain struct {
	getenv func(string) string
	uid    int
	home   string

	once  sync.Once
	files []loadedAuthFile
	err   error
}

type loadedAuthFile struct {
	authPath
	AuthFile
}

func newKeychain() *keychain {
	home, _ := os.UserHomeDir()
	return &keychain{getenv: os.Getenv, uid: os.Getuid(), home: home}
}

// load reads every file once per run; a missing one is no error.
func (k *keychain) load() error {
	k.once.Do(func() {
		for _, p := range authFilePaths(k.getenv, k.uid, k.home) {
			data, err := safefile.ReadRegular(p.path, maxAuthFile, safefile.Follow) // the user's file: a link is fine
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				continue
			}
			if err != nil {
				k.err = &credentialsError{path: p.path, err: err}
				return
			}
			f, err := ParseAuthFile(data, p.legacy)
			if err != nil {
				k.err = &credentialsError{path: p.path, err: err}
				return
			}
			k.files = append(k.files, loadedAuthFile{p, f})
		}
	})
	return k.err
}

// lookup finds repo's credentials; a zero login means anonymous.
func (k *keychain) lookup(repo name.Repository) (login, error) {
	if err := k.load(); err != nil {
		return login{}, err
	}
	registry := repo.RegistryStr()
	if registry == name.DefaultRegistry {
		registry = "docker.io" // podman's key for Docker Hub
	}
	key := registry + "/" + repo.RepositoryStr()
	for _, f := range k.files {
		if h, ok := f.CredHelpers[registry]; ok && !f.legacy {
			return login{helper: h, path: f.path}, nil
		}
		e, ok := findEntry(f, key, registry)
		if !ok {
			continue
		}
		user, password, err := DecodeAuth(e)
		if err != nil {
			return login{}, &credentialsError{path: f.path, err: fmt.Errorf("the entry for %s: %v", registry, err)}
		}
		if user == "" && password == "" && e.IdentityToken == "" {
			continue // an empty entry: podman goes on to the next file
		}
		return login{auth: authn.FromConfig(authn.AuthConfig{Username: user, Password: password, IdentityToken: e.IdentityToken}), user: user, path: f.path}, nil
	}
	return login{}, nil
}

// findEntry is podman's lookup in one file: the repository and each of
// its parents up to the registry, exact keys; then any key that names the
// registry as a URL or an alias of Docker Hub (sorted, so the answer does
// not depend on map order).
func findEntry(f loadedAuthFile, key, registry string) (AuthEntry, bool) {
	if f.legacy {
		if e, ok := f.Auths[registry]; ok {
			return e, true
		}
	} else {
		for k := key; ; {
			if e, ok := f.Auths[k]; ok {
				return e, true
			}
			i := strings.LastIndex(k, "/")
			if i < 0 {
				break
			}
			k = k[:i]
		}
	}
	keys := make([]string, 0, len(f.Auths))
	for k := range f.Auths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := normalizeRegistry(registry)
	for _, k := range keys {
		if normalizeAuthKey(k, f.legacy) == want {
			return f.Auths[k], true
		}
	}
	return AuthEntry{}, false
}

// normalizeAuthKey is a file's key as a registry host: a URL key
// (https://index.docker.io/v1/) to its host, Docker Hub's names to one.
func normalizeAuthKey(key string, legacy bool) string {
	stripped := strings.TrimPrefix(strings.TrimPrefix(key, "http://"), "https://")
	if legacy || stripped != key {
		stripped, _, _ = strings.Cut(stripped, "/")
	}
	return normalizeRegistry(stripped)
}

func normalizeRegistry(r string) string {
	switch r {
	case "registry-1.docker.io", "docker.io":
		return "index.docker.io"
	}
	return r
}

// Resolve implements authn.Keychain.
func (k *keychain) Resolve(target authn.Resource) (authn.Authenticator, error) {
	repo, ok := target.(name.Repository)
	if !ok {
		return authn.Anonymous, nil
	}
	l, err := k.lookup(repo)
	if err != nil {
		return nil, err
	}
	if l.auth == nil {
		return authn.Anonymous, nil
	}
	return l.auth, nil
}

// used says whose credentials repo is asked with, for a result's detail:
// "alice's credentials from /run/user/1000/containers/auth.json"; ""
// when it is asked anonymously.
func (k *keychain) used(repo name.Repository) string {
	l, err := k.lookup(repo)
	switch {
	case err != nil, l.auth == nil:
		return ""
	case l.user == "":
		return "an identity token from " + l.path
	}
	return l.user + "'s credentials from " + l.path
}

// helper names the credential helper podman would run for repo, if any.
func (k *keychain) helper(repo name.Repository) (string, string) {
	l, err := k.lookup(repo)
	if err != nil || l.helper == "" {
		return "", ""
	}
	return l.helper, l.path
}
