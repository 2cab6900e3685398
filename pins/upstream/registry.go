package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Image pins are resolved with go-containerregistry (ARCHITECTURE.md says
// why, which version and its licence): its names rewrite Docker Hub's host
// and add library/ as podman does, its client pings the registry, answers a
// Bearer challenge with a token from the realm (the user's credentials
// when podman would use some, else anonymous) or sends Basic credentials,
// and asks for OCI indexes and manifest lists first, so a multi-arch tag
// gives the digest `podman pull` records. What stays here: which answer
// means which state, the bounds (guard.go), and where podman keeps
// credentials (authfile.go).

// ImageRef is a parsed image reference: the repository as
// go-containerregistry names it, and the tag and digest as written.
type ImageRef struct {
	Repo   name.Repository
	Tag    string // "" when none was written
	Digest string // sha256:<hex>, "" when none
}

// maxRef bounds a reference. Its canonical form (String) stays within it
// too: only Docker Hub's prefix is added, to a repository of at most 255
// characters.
const maxRef = 512

// ParseImageRef parses [registry/]repository[:tag][@digest] with Docker's
// rules (go-containerregistry's): the first path part is a registry when it
// has a '.' or ':' or is "localhost"; otherwise the image is on Docker Hub
// (library/ for one part).
func ParseImageRef(s string) (ImageRef, error) {
	var r ImageRef
	if len(s) > maxRef {
		return r, fmt.Errorf("reference longer than %d characters", maxRef)
	}
	base, dig, hasDigest := strings.Cut(s, "@")
	if hasDigest {
		d, err := name.NewDigest(s)
		if err != nil {
			return r, err
		}
		r.Digest = d.DigestStr()
		if dig != r.Digest {
			return r, fmt.Errorf("digest %q", dig)
		}
	}
	t, err := name.NewTag(base, name.WithDefaultTag(""))
	if err != nil {
		return r, err
	}
	r.Repo, r.Tag = t.Repository, t.TagStr()
	// go-containerregistry bounds the repository as written; Docker Hub's
	// library/ is added after, and the whole must stay a valid name (what
	// String prints parses again)
	if n := len(r.Repository()); n > 255 {
		return r, fmt.Errorf("repository %s… is %d characters with Docker Hub's library/ (at most 255)", r.Repository()[:40], n)
	}
	return r, nil
}

// Registry is the registry as users write it: docker.io for Docker Hub.
func (r ImageRef) Registry() string {
	if h := r.Repo.RegistryStr(); h != name.DefaultRegistry {
		return h
	}
	return "docker.io"
}

// Repository is the repository path on its registry (library/ added).
func (r ImageRef) Repository() string { return r.Repo.RepositoryStr() }

// String is the canonical reference.
func (r ImageRef) String() string {
	s := r.Registry() + "/" + r.Repository()
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// Local is podman's "localhost/…": an image built on this machine.
func (r ImageRef) Local() bool { return r.Repo.RegistryStr() == "localhost" }

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

var mediaNames = map[types.MediaType]string{
	types.OCIImageIndex:         "OCI image index",
	types.DockerManifestList:    "manifest list",
	types.OCIManifestSchema1:    "OCI manifest",
	types.DockerManifestSchema2: "Docker v2 manifest",
}

// maxManifest bounds any registry answer: a manifest (the spec suggests
// 4 MiB), a token, an error.
const maxManifest = 4 << 20

// manifestInfo is what a manifest request says.
type manifestInfo struct {
	Digest    string
	MediaType types.MediaType
}

// newPuller is the run's registry client: one per run, so each
// repository's login (ping, token) is done once and shared by its pins. It
// never retries by itself (a run's time is bounded; the checker's network
// says what a host's failure means for its other pins), and every request
// goes through the guard.
func newPuller(c *checker) *remote.Puller {
	p, err := remote.NewPuller(
		remote.WithTransport(&guard{inner: c.http.Transport, maxBody: maxManifest}),
		remote.WithUserAgent(userAgent),
		remote.WithAuthFromKeychain(c.keys),
		remote.WithRetryPredicate(func(error) bool { return false }),
		remote.WithRetryStatusCodes(),
		remote.WithPageSize(1),
	)
	if err != nil {
		// only conflicting options fail, and these are fixed
		panic(err)
	}
	return p
}

// manifest resolves reference (a tag or a digest) in ref's repository: a
// HEAD first; a GET (whose body is hashed) when the registry refuses HEAD,
// sends no digest, or says 404 (a HEAD's 404 has no body to name why).
func (c *checker) manifest(ctx context.Context, ref ImageRef, reference string) (manifestInfo, error) {
	key := "manifest " + ref.Repo.Name() + ":" + reference
	v, err := c.once(key, func() (any, error) {
		var nref name.Reference = ref.Repo.Tag(reference)
		if strings.Contains(reference, ":") {
			nref = ref.Repo.Digest(reference)
		}
		var info manifestInfo
		err := c.registryCall(ctx, ref, func(ctx context.Context) error {
			desc, err := c.puller.Head(ctx, nref)
			if err == nil {
				info = manifestInfo{Digest: desc.Digest.String(), MediaType: desc.MediaType}
				return nil
			}
			if !headRetryable(err) {
				return err
			}
			got, gerr := c.puller.Get(ctx, nref)
			if gerr != nil {
				return gerr
			}
			mt, err := manifestType(got.MediaType, got.Manifest)
			if err != nil {
				return &uncheckableError{Reason: "the registry sent no digest and no valid manifest: " + err.Error()}
			}
			info = manifestInfo{Digest: got.Digest.String(), MediaType: mt}
			return nil
		})
		return info, err
	})
	if err != nil {
		return manifestInfo{}, err
	}
	return v.(manifestInfo), nil
}

// headRetryable: a HEAD that a GET may answer better (some registries
// refuse HEAD or send no digest with it, and a HEAD's 404 has no body to
// name why). Not a login or a rate limit (a GET would be refused the same
// way), an answer of the token service or the ping, nor the network.
func headRetryable(err error) bool {
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch terr.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests:
			return false
		}
		return terr.Request != nil && terr.Request.Method == http.MethodHead
	}
	var uerr *url.Error
	var cerr *credentialsError
	_, refused := isRefusal(err)
	return !refused && !errors.As(err, &uerr) && !errors.As(err, &cerr) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// manifestType is the media type of a manifest fetched with GET: the
// header's, else what the body is. A body that is no manifest or index is
// an error: its hash would be no image's digest.
func manifestType(mt types.MediaType, body []byte) (types.MediaType, error) {
	if mt.IsIndex() || mt.IsImage() {
		return mt, nil
	}
	if im, err := v1.ParseIndexManifest(bytes.NewReader(body)); err == nil && im.SchemaVersion == 2 && len(im.Manifests) > 0 {
		return im.MediaType, nil
	}
	m, err := v1.ParseManifest(bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("not a manifest: %v", err)
	}
	if m.SchemaVersion != 2 || m.Config.Digest.Hex == "" {
		return "", fmt.Errorf("schemaVersion %d and no config: neither an image manifest nor an index", m.SchemaVersion)
	}
	return m.MediaType, nil
}

// registryCall runs one registry operation for ref within the run's
// bounds and turns what the client says into this package's errors.
func (c *checker) registryCall(ctx context.Context, ref ImageRef, fn func(ctx context.Context) error) error {
	host := ref.Repo.RegistryStr()
	return c.network(ctx, host, func(ctx context.Context) error {
		ctx, note := withNote(ctx)
		err := fn(ctx)
		if err == nil {
			c.markAnswered(host)
			return nil
		}
		return c.registryError(ref, note, err)
	})
}

var reErrCode = regexp.MustCompile(`^[A-Z_]{1,40}$`)

// registryError classifies a registry client error.
func (c *checker) registryError(ref ImageRef, note *callNote, err error) error {
	host := ref.Repo.RegistryStr()
	now := c.opts.Now()
	var unc *uncheckableError
	var terr *transport.Error
	if errors.As(err, &unc) {
		c.markAnswered(host)
		return err
	}
	if why, ok := isRefusal(err); ok {
		return &uncheckableError{Reason: why}
	}
	var cerr *credentialsError
	if errors.As(err, &cerr) {
		return &uncheckableError{Reason: cerr.Error()}
	}
	if !errors.As(err, &terr) {
		var uerr *url.Error
		var nerr net.Error
		if errors.As(err, &uerr) || errors.As(err, &nerr) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return httpError(host, err)
		}
		c.markAnswered(host)
		return &uncheckableError{Reason: "the registry's answer: " + err.Error()}
	}
	c.markAnswered(host)
	challenge, retryAfter := note.get()
	reason := fmt.Sprintf("HTTP %d", terr.StatusCode)
	if len(terr.Errors) > 0 && reErrCode.MatchString(string(terr.Errors[0].Code)) {
		reason += " " + string(terr.Errors[0].Code)
	}
	login := c.keys.used(ref.Repo)
	toToken := terr.Request != nil && !strings.HasPrefix(terr.Request.URL.Path, "/v2/")
	switch code := terr.StatusCode; {
	case code == http.StatusTooManyRequests:
		// asking again in this run only deepens the limit: the host's
		// other pins say the same at once
		return &unreachableError{Host: host, Reason: "rate-limited (HTTP 429)" + waitText(retryAfter, now)}
	case toToken:
		where := terr.Request.URL.Host
		if code == http.StatusUnauthorized || code == http.StatusForbidden {
			if login != "" {
				return &uncheckableError{Reason: fmt.Sprintf("the token service at %s refused %s: %s", where, login, reason)}
			}
			return &uncheckableError{Reason: fmt.Sprintf("the token service at %s refused an anonymous token: %s", where, reason)}
		}
		return &unreachableError{Host: host, Reason: fmt.Sprintf("the token service at %s answered %s", where, statusReason(code, retryAfter, now)), soft: true}
	case code == http.StatusNotFound:
		return &goneError{Reason: reason}
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		helper, helperIn := c.keys.helper(ref.Repo)
		switch {
		case login != "" && challenge == "basic":
			return &uncheckableError{Reason: fmt.Sprintf("the registry refused %s (%s): log in again (podman login %s)", login, reason, ref.Registry())}
		case login != "":
			// podman would fail the same way: the repository is gone, or
			// these credentials may not read it
			return &goneError{Reason: reason + ": refused with " + login + " (removed, or no access)"}
		case helper != "":
			return &uncheckableError{Reason: fmt.Sprintf("%s: podman would ask the credential helper docker-credential-%s (credHelpers in %s), which haloforge does not run", reason, helper, helperIn)}
		case challenge == "basic":
			return &uncheckableError{Reason: fmt.Sprintf("the registry wants a login (Basic auth) and none for %s is in podman's or docker's credential files (podman login %s)", ref.Registry(), ref.Registry())}
		}
		// Docker Hub and ghcr answer so for a repository that does not
		// exist, or no longer is public
		return &goneError{Reason: reason + ": no anonymous pull (removed, or private)"}
	}
	return &unreachableError{Host: host, Reason: "answered " + statusReason(terr.StatusCode, retryAfter, now), soft: true}
}

func checkImage(ctx context.Context, c *checker, pl plan, ref ImageRef) Result {
	where := ref.Registry() + "/" + ref.Repository()
	login := func() string {
		if l := c.keys.used(ref.Repo); l != "" {
			return "; asked with " + l
		}
		return ""
	}
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
			r := pl.result(OK, detail+login())
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
		r := pl.result(OK, fmt.Sprintf("tag %s → %s (%s)", tag, short(info.Digest), mediaName(info.MediaType))+login())
		r.Resolved = info.Digest
		return r
	}, fmt.Sprintf("tag %s no longer exists in %s", tag, where))
}

// mediaName is a friendly name for a manifest media type.
func mediaName(mt types.MediaType) string {
	if n, ok := mediaNames[mt]; ok {
		return n
	}
	if mt == "" {
		return "media type not given"
	}
	return string(mt)
}

// checkImageRepo checks a repository pin through its digest pin's manifest
// and the repository's tag list (which says whether the repository exists).
func checkImageRepo(ctx context.Context, c *checker, pl plan, full ImageRef, digestPin string) Result {
	_, err := c.once("tags "+full.Repo.Name(), func() (any, error) {
		return nil, c.registryCall(ctx, full, func(ctx context.Context) error {
			// one page: the repository answers, whatever it holds
			_, err := c.puller.Lister(ctx, full.Repo)
			return err
		})
	})
	return resultFromErr(pl, err, func() Result {
		_, derr := c.manifest(ctx, full, full.Digest)
		if derr == nil {
			return pl.result(OK, fmt.Sprintf("repository answers; %s resolves in it", digestPin))
		}
		return pl.result(OK, fmt.Sprintf("repository answers; see %s for its digest", digestPin))
	}, "the repository is gone from "+full.Registry())
}
