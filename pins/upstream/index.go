package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
)

// maxPage bounds a project page: download.pytorch.org's torch page, the
// largest real one, is a few MiB.
const maxPage = 32 << 20

func tlsConfig(roots *x509.CertPool) *tls.Config {
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
}

// projectURL is PEP 503's <index>/<normalized-name>/.
func projectURL(index, project string) string {
	if !strings.HasSuffix(index, "/") {
		index += "/"
	}
	return index + NormalizeName(project) + "/"
}

// projectPage fetches and parses a project page, once per run.
func (c *checker) projectPage(ctx context.Context, index, project string) (*ProjectPage, error) {
	u := projectURL(index, project)
	v, err := c.once("page "+u, func() (any, error) {
		var page *ProjectPage
		err := c.get(ctx, u, acceptSimple, func(resp *http.Response, body []byte) error {
			mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			if mt == mediaSimpleJSON || mt == "application/vnd.pypi.simple.latest+json" {
				p, err := ParseProjectJSON(body)
				if err != nil {
					return &uncheckableError{Reason: err.Error()}
				}
				page = p
				return nil
			}
			p, err := ParseProjectHTML(body, resp.Request.URL)
			page = p
			return err
		})
		return page, err
	})
	if err != nil {
		return nil, err
	}
	return v.(*ProjectPage), nil
}

// get fetches u within the run's bounds and hands a 200's body to ok. Any
// other status becomes a typed error: 404/410 (and S3's 403 for a missing
// key) is gone, 401 needs a login, 5xx is a server that answered badly.
func (c *checker) get(ctx context.Context, u, accept string, ok func(*http.Response, []byte) error) error {
	pu, err := url.Parse(u)
	if err != nil {
		return &uncheckableError{Reason: "not a URL: " + err.Error()}
	}
	return c.network(ctx, pu.Host, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return &uncheckableError{Reason: err.Error()}
		}
		req.Header.Set("Accept", accept)
		req.Header.Set("User-Agent", userAgent)
		resp, err := c.http.Do(req)
		if err != nil {
			if why, refused := isRefusal(err); refused {
				return &uncheckableError{Reason: why}
			}
			return httpError(pu.Host, err)
		}
		defer resp.Body.Close()
		c.markAnswered(pu.Host)
		switch {
		case resp.StatusCode == http.StatusOK:
		case resp.StatusCode == http.StatusNotFound, resp.StatusCode == http.StatusGone, resp.StatusCode == http.StatusForbidden:
			return &goneError{Reason: fmt.Sprintf("HTTP %d", resp.StatusCode)}
		case resp.StatusCode == http.StatusUnauthorized:
			return &uncheckableError{Reason: "HTTP 401: the index wants a login"}
		case resp.StatusCode == http.StatusTooManyRequests:
			// asking again in this run only deepens the limit
			return &unreachableError{Host: pu.Host, Reason: "rate-limited (HTTP 429)" + waitText(resp.Header.Get("Retry-After"), c.opts.Now())}
		default:
			return &unreachableError{Host: pu.Host, Reason: "answered " + statusReason(resp.StatusCode, resp.Header.Get("Retry-After"), c.opts.Now()), soft: true}
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxPage+1))
		if err != nil {
			return httpError(pu.Host, err)
		}
		if len(body) > maxPage {
			return &uncheckableError{Reason: fmt.Sprintf("page larger than %d MiB", maxPage>>20)}
		}
		return ok(resp, body)
	})
}

// userAgent names haloforge to the servers it asks.
const userAgent = "haloforge-pins-status (+https://github.com/haloforge/haloforge)"

// wheelFinding is what one package's page says about the pinned version.
type wheelFinding struct {
	pkg      string
	state    State
	detail   string
	resolved []string // filename=sha256:hex of installable matching files
	format   string   // the page's: json or html
}

func checkWheels(ctx context.Context, c *checker, pl plan, index string, pkgs []string, py string) Result {
	findings := make([]wheelFinding, len(pkgs))
	done := make(chan struct{}, len(pkgs))
	for i, pkg := range pkgs {
		go func() {
			findings[i] = findWheel(ctx, c, index, pkg, pl.pin.Value, py)
			done <- struct{}{}
		}()
	}
	for range pkgs {
		<-done
	}
	return combineWheels(pl, index, findings, py)
}

func findWheel(ctx context.Context, c *checker, index, pkg, version, py string) wheelFinding {
	f := wheelFinding{pkg: pkg}
	page, err := c.projectPage(ctx, index, pkg)
	var gone *goneError
	var ue *unreachableError
	var unc *uncheckableError
	switch {
	case errors.As(err, &gone):
		f.state, f.detail = Retired, fmt.Sprintf("%s is not on the index (%s)", pkg, gone.Reason)
		return f
	case errors.As(err, &ue):
		f.state, f.detail = Unreachable, ue.Error()
		return f
	case errors.As(err, &unc):
		f.state, f.detail = Unchecked, pkg+": "+unc.Reason
		return f
	case err != nil:
		f.state, f.detail = Unreachable, err.Error()
		return f
	}
	var matching, installable []DistFile
	var yanked []string
	var versions []string
	seen := map[string]bool{}
	for _, file := range page.Files {
		d, ok := ParseDistFilename(file.Filename, pkg)
		if !ok {
			continue
		}
		if !seen[d.Version] {
			seen[d.Version] = true
			versions = append(versions, d.Version)
		}
		if !VersionMatches(version, d.Version) {
			continue
		}
		matching = append(matching, d)
		if d.Installable(py) {
			installable = append(installable, d)
			if file.SHA256 != "" {
				f.resolved = append(f.resolved, file.Filename+"=sha256:"+file.SHA256)
			}
			if file.Yanked {
				yanked = append(yanked, strings.TrimSpace("yanked "+file.YankedReason))
			}
		}
	}
	switch {
	case len(matching) == 0:
		f.state = Retired
		f.detail = fmt.Sprintf("no %s==%s on the index", pkg, version)
		if n := len(versions); n > 0 {
			f.detail += "; last listed: " + strings.Join(versions[max(0, n-3):], ", ")
		}
	case len(installable) == 0:
		f.state = Retired
		f.detail = fmt.Sprintf("%s==%s is there, but only as %s: none installs with Python %s on Linux x86_64", pkg, version, pythonTags(matching), py)
	default:
		f.state = OK
		f.detail = fmt.Sprintf("%s==%s (%s)", pkg, version, pythonTags(installable))
		f.format = page.Format
		if len(yanked) == len(installable) {
			f.detail += ", " + yanked[0] + " (an exact == pin still installs)"
		}
	}
	sort.Strings(f.resolved)
	return f
}

// combineWheels makes one result of a pin's packages: retired when any is
// gone (pip would fail), else unreachable when any did not answer.
func combineWheels(pl plan, index string, fs []wheelFinding, py string) Result {
	rank := map[State]int{Retired: 4, Unreachable: 3, Unchecked: 2, OK: 1}
	worst := OK
	var parts, resolved []string
	formats := map[string]bool{}
	for _, f := range fs {
		formats[f.format] = true
		if rank[f.state] > rank[worst] {
			worst = f.state
		}
		resolved = append(resolved, f.resolved...)
	}
	for _, f := range fs {
		if (worst == OK || f.state != OK) && !slices.Contains(parts, f.detail) {
			parts = append(parts, f.detail)
		}
	}
	detail := strings.Join(parts, "; ")
	switch worst {
	case OK:
		api := "PEP 691 JSON"
		if formats["html"] {
			api = "PEP 503 HTML"
		}
		detail = "found " + detail + " on " + index + " (" + api + ")"
	case Retired:
		detail += " (" + index + ")"
	}
	r := pl.result(worst, detail)
	if worst == OK {
		r.Resolved = strings.Join(resolved, " ")
	}
	return r
}

func checkIndexRoot(ctx context.Context, c *checker, pl plan, readers []string) Result {
	u := pl.pin.Value
	if !strings.HasSuffix(u, "/") {
		u += "/"
	}
	var format string
	err := c.get(ctx, u, acceptSimple, func(resp *http.Response, _ []byte) error {
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		format = "PEP 503 HTML"
		if strings.HasSuffix(mt, "+json") {
			format = "PEP 691 JSON"
		}
		return nil
	})
	used := ""
	if len(readers) > 0 {
		used = " (" + strings.Join(readers, ", ") + " are looked up on it)"
	}
	return resultFromErr(pl, err, func() Result {
		return pl.result(OK, "the index answers ("+format+")"+used)
	}, "the index is gone")
}

// resultFromErr maps the typed errors to states; ok builds the success.
func resultFromErr(pl plan, err error, ok func() Result, gonePrefix string) Result {
	var gone *goneError
	var ue *unreachableError
	var unc *uncheckableError
	switch {
	case err == nil:
		return ok()
	case errors.As(err, &gone):
		return pl.result(Retired, gonePrefix+": "+gone.Reason)
	case errors.As(err, &ue):
		return pl.result(Unreachable, ue.Error())
	case errors.As(err, &unc):
		return pl.result(Unchecked, unc.Reason)
	}
	return pl.result(Unreachable, err.Error())
}
