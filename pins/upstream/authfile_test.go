package upstream

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
)

// TestAuthFilePaths: the files podman reads, in its order.
func TestAuthFilePaths(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"defaults", map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"},
			[]string{"/run/user/1000/containers/auth.json", "/home/u/.config/containers/auth.json", "/home/u/.docker/config.json", "/home/u/.dockercfg (legacy)"}},
		{"no runtime dir", map[string]string{},
			[]string{"/run/containers/1000/auth.json", "/home/u/.config/containers/auth.json", "/home/u/.docker/config.json", "/home/u/.dockercfg (legacy)"}},
		{"XDG_CONFIG_HOME", map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000", "XDG_CONFIG_HOME": "/cfg"},
			[]string{"/run/user/1000/containers/auth.json", "/cfg/containers/auth.json", "/home/u/.docker/config.json", "/home/u/.dockercfg (legacy)"}},
		{"REGISTRY_AUTH_FILE alone", map[string]string{"REGISTRY_AUTH_FILE": "/x/auth.json", "DOCKER_CONFIG": "/d", "XDG_RUNTIME_DIR": "/run/user/1000"},
			[]string{"/x/auth.json"}},
		{"DOCKER_CONFIG alone", map[string]string{"DOCKER_CONFIG": "/d", "XDG_RUNTIME_DIR": "/run/user/1000"},
			[]string{"/d/config.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range authFilePaths(func(k string) string { return tc.env[k] }, 1000, "/home/u") {
				s := p.path
				if p.legacy {
					s += " (legacy)"
				}
				got = append(got, s)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("paths = %q\nwant %q", got, tc.want)
			}
		})
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestKeychainLookup: which entry podman would use for an image, across
// files and within one.
func TestKeychainLookup(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	runtime := write("run/containers/auth.json", `{"auths": {
		"quay.io": {"auth": "`+b64("quay-user:quay-pw")+`"},
		"quay.io/team": {"auth": "`+b64("team-user:team-pw")+`"},
		"ghcr.io": {}
	}}`)
	write("home/.config/containers/auth.json", `{"auths": {"ghcr.io": {"auth": "`+b64("gh-user:gh-pw")+`"}}, "credHelpers": {"registry.example": "pass"}}`)
	docker := write("home/.docker/config.json", `{"auths": {"https://index.docker.io/v1/": {"auth": "`+b64("hub-user:hub-pw\x00")+`"}, "tok.example": {"identitytoken": "id-token"}}}`)
	env := map[string]string{"XDG_RUNTIME_DIR": filepath.Join(dir, "run")}
	k := &keychain{getenv: func(s string) string { return env[s] }, uid: 1000, home: filepath.Join(dir, "home")}
	for _, tc := range []struct {
		image, user, password, token, from string
	}{
		{"quay.io/team/app:1", "team-user", "team-pw", "", runtime},    // the namespace's entry beats the registry's
		{"quay.io/other/app:1", "quay-user", "quay-pw", "", runtime},   // the registry's
		{"ghcr.io/a/b:1", "gh-user", "gh-pw", "", "auth.json"},         // an empty entry: on to the next file
		{"docker.io/rocm/vllm:1", "hub-user", "hub-pw", "", docker},    // a URL key for Docker Hub; NULs trimmed
		{"ubuntu:24.04", "hub-user", "hub-pw", "", docker},             // library/ on Docker Hub
		{"tok.example/a:1", "", "", "id-token", docker},                // an identity token
		{"elsewhere.example/a:1", "", "", "", ""},                      // none: anonymous
		{"registry.example/a:1", "", "", "", "credential helper pass"}, // a helper podman would run: not run
	} {
		t.Run(tc.image, func(t *testing.T) {
			ref, err := ParseImageRef(tc.image)
			if err != nil {
				t.Fatal(err)
			}
			l, err := k.lookup(ref.Repo)
			if err != nil {
				t.Fatal(err)
			}
			if tc.from == "credential helper pass" {
				if l.helper != "pass" || l.auth != nil {
					t.Errorf("login = %+v; want the helper named, no credentials", l)
				}
				return
			}
			if tc.from == "" {
				if a, _ := k.Resolve(ref.Repo); a != authn.Anonymous || k.used(ref.Repo) != "" {
					t.Errorf("Resolve = %v; want anonymous", a)
				}
				return
			}
			if l.auth == nil || !strings.HasSuffix(l.path, tc.from) {
				t.Fatalf("login = %+v; want one from %s", l, tc.from)
			}
			cfg, err := l.auth.Authorization()
			if err != nil || cfg.Username != tc.user || cfg.Password != tc.password || cfg.IdentityToken != tc.token {
				t.Errorf("credentials = %+v, %v; want %s %s %s", cfg, err, tc.user, tc.password, tc.token)
			}
		})
	}
}

// TestKeychainRefusesWhatPodmanCannotRead: a credentials file that is a
// FIFO, too large or not JSON is an error naming it, at once; a missing
// one is none.
func TestKeychainRefusesWhatPodmanCannotRead(t *testing.T) {
	ref, _ := ParseImageRef("quay.io/a/b:1")
	for _, tc := range []struct {
		name, want string
		make       func(p string) error
	}{
		{"missing", "", func(string) error { return nil }},
		{"fifo", "is a FIFO (named pipe), not a regular file", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"large", "is 2 MiB, over the 1 MiB limit", func(p string) error { return os.WriteFile(p, make([]byte, 2<<20), 0o600) }},
		{"not json", "not a credentials file", func(p string) error { return os.WriteFile(p, []byte("auths: x"), 0o600) }},
		{"bad base64", "the entry for quay.io: its auth is not base64", func(p string) error {
			return os.WriteFile(p, []byte(`{"auths": {"quay.io": {"auth": "!!"}}}`), 0o600)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "auth.json")
			if err := tc.make(p); err != nil {
				t.Fatal(err)
			}
			k := &keychain{getenv: func(s string) string {
				if s == "REGISTRY_AUTH_FILE" {
					return p
				}
				return ""
			}}
			done := make(chan error, 1)
			go func() {
				_, err := k.Resolve(ref.Repo)
				done <- err
			}()
			select {
			case err := <-done:
				if tc.want == "" {
					if err != nil {
						t.Errorf("a missing file: %v", err)
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.want) ||
					!strings.HasPrefix(err.Error(), "the registry credentials podman would use cannot be read: ") {
					t.Errorf("err = %v; want one naming %s and saying %q", err, p, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("reading the credentials hangs")
			}
		})
	}
}

func FuzzParseAuthFile(f *testing.F) {
	f.Add([]byte(`{"auths": {"quay.io": {"auth": "dTpw"}}, "credHelpers": {"x": "pass"}}`), false)
	f.Add([]byte(`{"https://index.docker.io/v1/": {"auth": "dTpw"}}`), true)
	f.Fuzz(func(t *testing.T, data []byte, legacy bool) {
		af, err := ParseAuthFile(data, legacy)
		if err != nil {
			return
		}
		for k, e := range af.Auths {
			user, password, err := DecodeAuth(e)
			if err == nil && strings.Contains(user, ":") {
				t.Fatalf("user %q of %q has a colon (password %q)", user, k, password)
			}
			_ = normalizeAuthKey(k, legacy)
		}
	})
}
