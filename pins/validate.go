package pins

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

var (
	reSHA     = regexp.MustCompile(`^[0-9a-f]{40}$`)
	reTag     = regexp.MustCompile(`^(v?[0-9]+(\.[0-9]+)*([.+_-][0-9A-Za-z.+_-]*)?|b[0-9]+|[a-z][a-z0-9]*-[0-9]+(\.[0-9]+)+)$`)
	reRef     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/+-]*$`)
	reDigest  = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	reVersion = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+_-]*$`)
	reInt     = regexp.MustCompile(`^[0-9]{1,12}$`)
	reName    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)
	reGFX     = regexp.MustCompile(`^gfx[0-9a-f]{3,4}(;gfx[0-9a-f]{3,4})*$`)
	rePath    = regexp.MustCompile(`^[A-Za-z0-9._/~+@:=,-]+$`)
	// model: a Hugging Face repository ID (org/name) or an absolute local path.
	reModel = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}|/[A-Za-z0-9._/+@=,-]+)$`)
	// image: [registry[:port]/]path[:tag][@sha256:digest], lower-case path.
	reImage = regexp.MustCompile(`^(?P<name>([a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?/)*[a-z0-9]+([._-][a-z0-9]+)*)(:(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?(@(?P<digest>sha256:[0-9a-f]{64}))?$`)
)

// floatingTags are image tags that move by design.
var floatingTags = map[string]bool{"latest": true, "nightly": true, "main": true, "dev": true, "edge": true, "master": true}

// validate checks a value against its kind and says whether it floats.
func validate(s Spec, v string) (floating bool, err error) {
	if v == "" {
		if s.Optional {
			return false, nil
		}
		return false, fmt.Errorf("empty value (a %s is required)", s.Kind)
	}
	// No kind of pin starts with '-', and such a value would reach the
	// scripts' commands as an option (LLAMA_MODEL=--help, a name of -rf).
	if strings.HasPrefix(v, "-") {
		return false, fmt.Errorf("a value may not start with '-': the commands that use it would read it as an option")
	}
	switch s.Kind {
	case KindSHA:
		return false, must(reSHA.MatchString(v), "want a full 40-hex git commit SHA")
	case KindTag:
		return false, must(reTag.MatchString(v), "want a release tag such as v0.10.2 or b10590")
	case KindBranch:
		return true, validRef(v)
	case KindRef:
		if err := validRef(v); err != nil {
			return false, err
		}
		return !reSHA.MatchString(v) && !reTag.MatchString(v), nil
	case KindDigest:
		if strings.HasPrefix(v, "sha256:") && len(v) != len("sha256:")+64 {
			return false, fmt.Errorf("digest has %d hex digits, want 64", len(v)-len("sha256:"))
		}
		return false, must(reDigest.MatchString(v), "want sha256:<64 lower-case hex>")
	case KindImage:
		return validImage(v)
	case KindRepo:
		m := reImage.FindStringSubmatch(v)
		if m == nil || m[reImage.SubexpIndex("tag")] != "" || m[reImage.SubexpIndex("digest")] != "" {
			return false, fmt.Errorf("want an image repository without tag or digest, e.g. docker.io/rocm/vllm-dev")
		}
		return false, nil
	case KindURL:
		return false, validURL(v)
	case KindVersion:
		return false, must(reVersion.MatchString(v) && strings.ContainsAny(v, "0123456789"), "want a version such as 2.11.0+rocm7.14.0")
	case KindPath:
		return false, must(rePath.MatchString(v), "want a path without spaces or shell characters")
	case KindInt:
		return false, must(reInt.MatchString(v), "want a non-negative integer")
	case KindName:
		return false, must(reName.MatchString(v), "want a name of letters, digits, '.', '_' or '-'")
	case KindGFX:
		return false, must(reGFX.MatchString(v), "want LLVM targets such as gfx1151 (several separated by ';')")
	case KindModel:
		return false, must(reModel.MatchString(v) && !strings.Contains(v, ".."), "want a Hugging Face model ID such as Qwen/Qwen3-0.6B, or an absolute path")
	}
	return false, fmt.Errorf("unknown kind %q", s.Kind)
}

func must(ok bool, why string) error {
	if ok {
		return nil
	}
	return fmt.Errorf("%s", why)
}

func validRef(v string) error {
	if !reRef.MatchString(v) || strings.Contains(v, "..") || strings.HasSuffix(v, "/") || strings.HasSuffix(v, ".lock") {
		return fmt.Errorf("want a git commit, tag or branch name")
	}
	return nil
}

func validImage(v string) (bool, error) {
	m := reImage.FindStringSubmatch(v)
	if m == nil {
		return false, fmt.Errorf("want an image reference such as docker.io/library/ubuntu:24.04 or name@sha256:<digest>")
	}
	tag, digest := m[reImage.SubexpIndex("tag")], m[reImage.SubexpIndex("digest")]
	if digest != "" {
		return false, nil
	}
	if tag == "" {
		return true, nil // implicit :latest
	}
	return floatingTags[tag] || strings.Contains(tag, "nightl"), nil
}

// URL pins are fetched by pip, git and curl inside the step scripts, so a
// URL must name the host a reader sees and stay one inert word for a shell:
//   - only printable ASCII: a raw non-ASCII character is how a look-alike
//     host (a Cyrillic "е" in "rеpo.amd.com") passes for the real one. An
//     international host is still possible in its xn-- (punycode) form: it is
//     ASCII, and shown as written it cannot pass for an ASCII name, which is
//     the same defence browsers use for mixed-script hosts;
//   - none of the characters a shell gives a meaning to (; | & < > ( ) $ `
//     ' " \ * ! { } [ ] and white space), wherever they are: every script
//     quotes the value today, and this keeps it harmless in one that forgets;
//   - https only, a host of DNS labels (no IP-literal brackets, no percent
//     escapes that would hide what the host is), an optional numeric port, no
//     user or password.
func validURL(v string) error {
	for i, r := range v {
		switch {
		case r > 0x7e:
			return fmt.Errorf("non-ASCII character %q (%U) at byte %d: a look-alike host is refused; write an international host in its xn-- (punycode) form", r, r, i+1)
		case r <= ' ':
			return fmt.Errorf("white space or a control character at byte %d: want a URL without spaces", i+1)
		case !urlByte(byte(r)):
			return fmt.Errorf("character %q at byte %d: white space and the shell's special characters ; | & < > ( ) $ ` ' \" \\ * ! { } [ ] are not allowed in a URL pin", r, i+1)
		}
	}
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	if u.Scheme != "https" {
		return fmt.Errorf("want an https URL (got scheme %q): pins must not be fetched in clear text", u.Scheme)
	}
	if !strings.HasPrefix(v, "https://") || u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("want an https URL with a host, such as https://repo.amd.com/rocm/")
	}
	if u.User != nil {
		return fmt.Errorf("a user or password in a URL pin is not allowed: pins are shared and logged")
	}
	authority, _, _ := strings.Cut(strings.TrimPrefix(v, "https://"), "/")
	authority, _, _ = strings.Cut(authority, "?")
	authority, _, _ = strings.Cut(authority, "#")
	host, port, hasPort := strings.Cut(authority, ":")
	if !validHostname(host) {
		return fmt.Errorf("host %q: want a host name of ASCII letters, digits, '-' and '.'", host)
	}
	if hasPort && !validPort(port) {
		return fmt.Errorf("port %q: want a number from 1 to 65535", port)
	}
	return nil
}

// urlByte says whether an ASCII byte may appear in a URL pin: RFC 3986's
// characters without the shell's special ones (see validURL).
func urlByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("-._~:/?#@+,=%", c) >= 0
}

// validHostname accepts DNS labels (letters, digits, inner hyphens, 1 to 63
// bytes each, 253 in all); an all-digit name such as an IPv4 address passes.
func validHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535 && p[0] != '0' && p[0] != '+'
}
