package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// The OCI distribution API (distribution-spec v1.1, "Pulling manifests",
// "Content discovery") and the token flow of distribution/distribution's
// docs/spec/auth/token.md, as Debian's docker-registry 2.8 ships them: a
// 401 names a Bearer realm, service and scope in WWW-Authenticate; an
// anonymous GET of realm?service=…&scope=repository:NAME:pull returns
// {"token"} or {"access_token"}; the request is retried with it.

// ImageRef is a parsed image reference.
type ImageRef struct {
	Registry   string // host[:port]; docker.io for Docker Hub
	Repository string // e.g. library/ubuntu
	Tag        string // "" when none was written
	Digest     string // sha256:<hex>, "" when none
}

var (
	reRepoPart = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	reTagPart  = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	reDigPart  = regexp.MustCompile(`^sha256:[0-9a-f]{64}$|^sha512:[0-9a-f]{128}$`)
	reHostPart = regexp.MustCompile(`^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9a-fA-F:]+\])(?::[0-9]{1,5})?$`)
)

// ParseImageRef parses [registry/]repository[:tag][@digest] with Docker's
// rules: the first path part is a registry when it has a '.' or ':' or is
// "localhost"; otherwise the image is on Docker Hub (library/ for one part).
func ParseImageRef(s string) (ImageRef, error) {
	var r ImageRef
	if len(s) > 512 {
		return r, errors.New("reference longer than 512 characters")
	}
	name := s
	if i := strings.IndexByte(s, '@'); i >= 0 {
		name, r.Digest = s[:i], s[i+1:]
		if !reDigPart.MatchString(r.Digest) {
			return r, fmt.Errorf("digest %q is not sha256:<64 hex>", r.Digest)
		}
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name, r.Tag = name[:i], name[i+1:]
		if !reTagPart.MatchString(r.Tag) {
			return r, fmt.Errorf("tag %q is not a valid tag", r.Tag)
		}
	}
	first, rest, hasSlash := strings.Cut(name, "/")
	if hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost") {
		if !reHostPart.MatchString(first) {
			return r, fmt.Errorf("registry %q is not a host[:port]", first)
		}
		r.Registry, r.Repository = first, rest
	} else {
		r.Registry, r.Repository = "docker.io", name
	}
	if r.Registry == "index.docker.io" || r.Registry == "registry-1.docker.io" {
		r.Registry = "docker.io"
	}
	if r.Registry == "docker.io" && !strings.Contains(r.Repository, "/") {
		r.Repository = "library/" + r.Repository
	}
	if r.Repository == "" {
		return r, errors.New("no repository")
	}
	for _, part := range strings.Split(r.Repository, "/") {
		if !reRepoPart.MatchString(part) {
			return r, fmt.Errorf("repository part %q is not lower-case letters, digits and separators", part)
		}
	}
	// The limit holds for the canonical form too (docker.io/library/ added),
	// so what String prints parses again.
	if len(r.String()) > 512 {
		return r, errors.New("reference longer than 512 characters (in full: " + r.Registry + "/" + r.Repository[:min(len(r.Repository), 40)] + "…)")
	}
	return r, nil
}

// String is the canonical reference.
func (r ImageRef) String() string {
	s := r.Registry + "/" + r.Repository
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// Local is podman's "localhost/…": an image built on this machine.
func (r ImageRef) Local() bool { return r.Registry == "localhost" }

// apiBase is the registry's API root: Docker Hub serves the API at
// registry-1.docker.io; loopback registries speak plain HTTP, as podman's and
// Docker's defaults treat them (127.0.0.0/8 is an insecure registry).
func (r ImageRef) apiBase() string {
	host := r.Registry
	if host == "docker.io" {
		host = "registry-1.docker.io"
	}
	scheme := "https"
	if loopback(host) {
		scheme = "http"
	}
	return scheme + "://" + host
}

func loopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Accept for manifests: indexes and manifest lists first, so a multi-arch
// tag answers with the digest `podman pull` records.
var manifestAccept = strings.Join([]string{
	"application/vnd.oci.image.index.v1+json",
	"application/vnd.docker.distribution.manifest.list.v2+json",
	"application/vnd.oci.image.manifest.v1+json",
	"application/vnd.docker.distribution.manifest.v2+json",
}, ", ")

var mediaNames = map[string]string{
	"application/vnd.oci.image.index.v1+json":                   "OCI image index",
	"application/vnd.docker.distribution.manifest.list.v2+json": "manifest list",
	"application/vnd.oci.image.manifest.v1+json":                "OCI manifest",
	"application/vnd.docker.distribution.manifest.v2+json":      "Docker v2 manifest",
}

// maxManifest bounds a manifest body (the spec suggests 4 MiB).
const maxManifest = 4 << 20

// manifestInfo is what a manifest request says.
type manifestInfo struct {
	Digest    string
	MediaType string
}

// manifest resolves reference (a tag or a digest) in ref's repository.
func (c *checker) manifest(ctx context.Context, ref ImageRef, reference string) (manifestInfo, error) {
	key := "manifest " + ref.Registry + "/" + ref.Repository + ":" + reference
	v, err := c.once(key, func() (any, error) {
		path := "/v2/" + ref.Repository + "/manifests/" + reference
		resp, body, err := c.registryDo(ctx, ref, http.MethodHead, path, manifestAccept)
		if err == nil && resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
			// some registries refuse HEAD; GET says the same and more
			resp, body, err = c.registryDo(ctx, ref, http.MethodGet, path, manifestAccept)
		}
		if err != nil {
			return manifestInfo{}, err
		}
		switch resp.StatusCode {
		case http.StatusOK:
		case http.StatusNotFound:
			if len(body) == 0 {
				// a HEAD has no body: ask again for the error code
				if r2, b2, err := c.registryDo(ctx, ref, http.MethodGet, path, manifestAccept); err == nil && r2.StatusCode == http.StatusNotFound {
					body = b2
				}
			}
			return manifestInfo{}, &goneError{Reason: registryReason(resp.StatusCode, body)}
		default:
			return manifestInfo{}, statusError(ref, resp.StatusCode, body)
		}
		info := manifestInfo{Digest: resp.Header.Get("Docker-Content-Digest"), MediaType: mediaType(resp.Header.Get("Content-Type"))}
		if !reDigPart.MatchString(info.Digest) {
			// no digest header: hash the manifest itself (the digest is the
			// sha256 of the exact bytes served)
			if resp.Request.Method == http.MethodHead {
				r2, b2, err := c.registryDo(ctx, ref, http.MethodGet, path, manifestAccept)
				if err != nil {
					return manifestInfo{}, err
				}
				if r2.StatusCode != http.StatusOK {
					return manifestInfo{}, statusError(ref, r2.StatusCode, b2)
				}
				body = b2
				info.MediaType = mediaType(r2.Header.Get("Content-Type"))
			}
			m, err := ParseManifest(body)
			if err != nil {
				return manifestInfo{}, &uncheckableError{Reason: "the registry sent no digest and no valid manifest: " + err.Error()}
			}
			if info.MediaType == "" {
				info.MediaType = m.MediaType
			}
			sum := sha256.Sum256(body)
			info.Digest = "sha256:" + hex.EncodeToString(sum[:])
		}
		return info, nil
	})
	if err != nil {
		return manifestInfo{}, err
	}
	return v.(manifestInfo), nil
}

func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.TrimSpace(mt)
}

// statusError turns an unexpected registry status into a typed error.
func statusError(ref ImageRef, status int, body []byte) error {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		// after an anonymous token: Docker Hub and ghcr answer so for a
		// repository that does not exist, or no longer is public
		return &goneError{Reason: registryReason(status, body) + ": no anonymous pull (removed, or private)"}
	case status == http.StatusTooManyRequests:
		return &unreachableError{Host: ref.Registry, Reason: "rate-limited (HTTP 429); try again later", soft: true}
	}
	return &unreachableError{Host: ref.Registry, Reason: registryReason(status, body), soft: true}
}

// registryReason is "HTTP 404 MANIFEST_UNKNOWN" and the like.
func registryReason(status int, body []byte) string {
	s := fmt.Sprintf("HTTP %d", status)
	if errs := ParseRegistryErrors(body); len(errs) > 0 {
		s += " " + errs[0].Code
	}
	return s
}

// registryDo sends one request to ref's registry, answering a Bearer
// challenge with an anonymous token. The body is read (bounded) for GETs
// and error statuses.
func (c *checker) registryDo(ctx context.Context, ref ImageRef, method, path, accept string) (*http.Response, []byte, error) {
	base := ref.apiBase()
	host := strings.TrimPrefix(strings.TrimPrefix(base, "https://"), "http://")
	scope := "repository:" + ref.Repository + ":pull"
	var resp *http.Response
	var body []byte
	send := func(token string) error {
		return c.network(ctx, host, func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
			if err != nil {
				return &uncheckableError{Reason: err.Error()}
			}
			req.Header.Set("Accept", accept)
			req.Header.Set("User-Agent", userAgent)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			r, err := c.http.Do(req)
			if err != nil {
				return httpError(host, err)
			}
			defer r.Body.Close()
			body, err = io.ReadAll(io.LimitReader(r.Body, maxManifest+1))
			if err != nil {
				return httpError(host, err)
			}
			if len(body) > maxManifest {
				return &uncheckableError{Reason: fmt.Sprintf("manifest larger than %d MiB", maxManifest>>20)}
			}
			resp = r
			return nil
		})
	}
	token := c.cachedToken(host, scope)
	if err := send(token); err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusUnauthorized || token != "" {
		return resp, body, nil
	}
	scheme, params := ParseChallenge(resp.Header.Get("WWW-Authenticate"))
	switch scheme {
	case "bearer":
	case "basic":
		return nil, nil, &uncheckableError{Reason: "the registry wants a login (Basic auth); haloforge reads no credentials"}
	default:
		return resp, body, nil
	}
	token, err := c.token(ctx, host, params, scope)
	if err != nil {
		return nil, nil, err
	}
	if err := send(token); err != nil {
		return nil, nil, err
	}
	return resp, body, nil
}

func (c *checker) cachedToken(host, scope string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tokens[host+" "+scope]
}

// token asks the realm for an anonymous pull token, once per scope.
func (c *checker) token(ctx context.Context, host string, params map[string]string, scope string) (string, error) {
	realm := params["realm"]
	ru, err := url.Parse(realm)
	if err != nil || (ru.Scheme != "https" && !(ru.Scheme == "http" && loopback(ru.Host))) || ru.Host == "" {
		return "", &uncheckableError{Reason: fmt.Sprintf("the registry's token realm %q is not an https URL", realm)}
	}
	q := ru.Query()
	if s := params["service"]; s != "" {
		q.Set("service", s)
	}
	q.Set("scope", scope)
	ru.RawQuery = q.Encode()
	v, err := c.once("token "+ru.String(), func() (any, error) {
		var tok string
		err := c.get(ctx, ru.String(), "application/json", func(_ *http.Response, body []byte) error {
			t, err := ParseTokenResponse(body)
			tok = t
			if err != nil {
				return &uncheckableError{Reason: "the token service answered: " + err.Error()}
			}
			return nil
		})
		var gone *goneError
		if errors.As(err, &gone) {
			return "", &uncheckableError{Reason: "the token service refused: " + gone.Reason}
		}
		return tok, err
	})
	if err != nil {
		return "", err
	}
	tok := v.(string)
	c.mu.Lock()
	c.tokens[host+" "+scope] = tok
	c.mu.Unlock()
	return tok, nil
}

// ParseChallenge reads a WWW-Authenticate header (RFC 7235): the scheme,
// lower-cased, and its auth-params (name=token or name="quoted string").
func ParseChallenge(h string) (string, map[string]string) {
	h = strings.TrimSpace(h)
	scheme, rest, _ := strings.Cut(h, " ")
	params := map[string]string{}
	i := 0
	for i < len(rest) {
		for i < len(rest) && (rest[i] == ' ' || rest[i] == ',' || rest[i] == '\t') {
			i++
		}
		start := i
		for i < len(rest) && rest[i] != '=' && rest[i] != ',' && rest[i] != ' ' {
			i++
		}
		name := strings.ToLower(rest[start:i])
		if i >= len(rest) || rest[i] != '=' {
			continue
		}
		i++
		var val strings.Builder
		if i < len(rest) && rest[i] == '"' {
			i++
			for i < len(rest) && rest[i] != '"' {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
				}
				val.WriteByte(rest[i])
				i++
			}
			i++
		} else {
			for i < len(rest) && rest[i] != ',' && rest[i] != ' ' {
				val.WriteByte(rest[i])
				i++
			}
		}
		if name != "" {
			if _, seen := params[name]; !seen {
				params[name] = val.String()
			}
		}
	}
	return strings.ToLower(scheme), params
}

// ParseTokenResponse reads a token service's answer: "token", or OAuth's
// "access_token" (token.md: either may be given; both mean the same).
func ParseTokenResponse(body []byte) (string, error) {
	var t struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(body, &t); err != nil {
		return "", fmt.Errorf("not a token response: %v", err)
	}
	tok := t.Token
	if tok == "" {
		tok = t.AccessToken
	}
	if tok == "" {
		return "", errors.New("no token in the response")
	}
	if strings.ContainsAny(tok, "\r\n") {
		return "", errors.New("a token with a line break")
	}
	return tok, nil
}

// Manifest is the part of an image manifest or index haloforge reads.
type Manifest struct {
	SchemaVersion int    `json:"schemaVersion"`
	MediaType     string `json:"mediaType"`
	Manifests     []struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
		Platform  *struct {
			OS           string `json:"os"`
			Architecture string `json:"architecture"`
		} `json:"platform"`
	} `json:"manifests"`
	Config *struct {
		Digest string `json:"digest"`
	} `json:"config"`
}

// ParseManifest reads a manifest or an index (schema version 2).
func ParseManifest(data []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("not a manifest: %v", err)
	}
	if m.SchemaVersion != 2 {
		return m, fmt.Errorf("schemaVersion %d (want 2)", m.SchemaVersion)
	}
	if m.Config == nil && m.Manifests == nil {
		return m, errors.New("neither a manifest (config) nor an index (manifests)")
	}
	return m, nil
}

// RegistryError is one entry of a registry's {"errors": [...]} body.
type RegistryError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ParseRegistryErrors reads an error body; nil when it is none.
func ParseRegistryErrors(body []byte) []RegistryError {
	var doc struct {
		Errors []RegistryError `json:"errors"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return nil
	}
	var out []RegistryError
	for _, e := range doc.Errors {
		if reErrCode.MatchString(e.Code) {
			out = append(out, e)
		}
	}
	return out
}

var reErrCode = regexp.MustCompile(`^[A-Z_]{1,40}$`)

func checkImage(ctx context.Context, c *checker, pl plan, ref ImageRef) Result {
	where := ref.Registry + "/" + ref.Repository
	if ref.Digest != "" {
		info, err := c.manifest(ctx, ref, ref.Digest)
		return resultFromErr(pl, err, func() Result {
			detail := fmt.Sprintf("digest %s exists in %s (%s)", short(ref.Digest), where, mediaName(info.MediaType))
			if ref.Tag != "" {
				if t, err := c.manifest(ctx, ref, ref.Tag); err == nil && t.Digest != ref.Digest {
					detail += fmt.Sprintf("; tag %s now points at %s (the pinned digest is what is used)", ref.Tag, short(t.Digest))
				} else if err == nil {
					detail += "; tag " + ref.Tag + " still points at it"
				}
			}
			r := pl.result(OK, detail)
			r.Resolved = ref.Digest
			return r
		}, fmt.Sprintf("manifest %s is gone from %s", short(ref.Digest), where))
	}
	tag := ref.Tag
	if tag == "" {
		tag = "latest"
	}
	info, err := c.manifest(ctx, ref, tag)
	return resultFromErr(pl, err, func() Result {
		r := pl.result(OK, fmt.Sprintf("tag %s → %s (%s)", tag, short(info.Digest), mediaName(info.MediaType)))
		r.Resolved = info.Digest
		return r
	}, fmt.Sprintf("tag %s no longer exists in %s", tag, where))
}

// mediaName is a friendly name for a manifest media type.
func mediaName(mt string) string {
	if n, ok := mediaNames[mt]; ok {
		return n
	}
	if mt == "" {
		return "media type not given"
	}
	return mt
}

// checkImageRepo checks a repository pin through its digest pin's manifest
// and the repository's tag list (which says whether the repository exists).
func checkImageRepo(ctx context.Context, c *checker, pl plan, full ImageRef, digestPin string) Result {
	where := full.Registry + "/" + full.Repository
	_, err := c.once("tags "+where, func() (any, error) {
		resp, body, err := c.registryDo(ctx, full, http.MethodGet, "/v2/"+full.Repository+"/tags/list?n=1", "application/json")
		if err != nil {
			return nil, err
		}
		switch resp.StatusCode {
		case http.StatusOK:
			return nil, nil
		case http.StatusNotFound:
			return nil, &goneError{Reason: registryReason(resp.StatusCode, body)}
		}
		return nil, statusError(full, resp.StatusCode, body)
	})
	return resultFromErr(pl, err, func() Result {
		_, derr := c.manifest(ctx, full, full.Digest)
		if derr == nil {
			return pl.result(OK, fmt.Sprintf("repository answers; %s resolves in it", digestPin))
		}
		return pl.result(OK, fmt.Sprintf("repository answers; see %s for its digest", digestPin))
	}, "the repository is gone from "+full.Registry)
}
