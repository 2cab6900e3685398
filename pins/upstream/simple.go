package upstream

import (
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// The simple repository API (PEP 503 HTML, PEP 691 JSON): what a project
// page lists, how file names carry name and version, and PEP 440 version
// equality. Parsers here see bytes from the network, so they are bounded and
// never trust the page's structure.

// Media types of PEP 691, and the Accept header pip itself sends: JSON
// first, HTML as the fallback every static index (AMD's included) serves.
const (
	mediaSimpleJSON = "application/vnd.pypi.simple.v1+json"
	mediaSimpleHTML = "application/vnd.pypi.simple.v1+html"
	acceptSimple    = mediaSimpleJSON + ", " + mediaSimpleHTML + ";q=0.2, text/html;q=0.01"
)

// IndexFile is one distribution file a project page lists.
type IndexFile struct {
	Filename       string
	URL            string
	SHA256         string // hex, "" when the page gives none
	RequiresPython string
	Yanked         bool
	YankedReason   string
}

// ProjectPage is a parsed project page.
type ProjectPage struct {
	Files  []IndexFile
	Format string // "json" (PEP 691) or "html" (PEP 503)
}

// maxFiles bounds what a page may list; the largest real pages (torch on
// download.pytorch.org) hold a few thousand files.
const maxFiles = 200000

// ParseProjectJSON reads a PEP 691 project page.
func ParseProjectJSON(data []byte) (*ProjectPage, error) {
	var doc struct {
		Meta struct {
			APIVersion string `json:"api-version"`
		} `json:"meta"`
		Files []struct {
			Filename       string            `json:"filename"`
			URL            string            `json:"url"`
			Hashes         map[string]string `json:"hashes"`
			RequiresPython *string           `json:"requires-python"`
			Yanked         json.RawMessage   `json:"yanked"`
		} `json:"files"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not a PEP 691 project page: %v", err)
	}
	if !strings.HasPrefix(doc.Meta.APIVersion, "1.") {
		return nil, fmt.Errorf("not a PEP 691 project page: api-version %q", doc.Meta.APIVersion)
	}
	if len(doc.Files) > maxFiles {
		return nil, fmt.Errorf("project page lists %d files (limit %d)", len(doc.Files), maxFiles)
	}
	page := &ProjectPage{Format: "json"}
	for _, f := range doc.Files {
		if f.Filename == "" {
			continue
		}
		file := IndexFile{Filename: f.Filename, URL: f.URL, SHA256: strings.ToLower(f.Hashes["sha256"])}
		if f.RequiresPython != nil {
			file.RequiresPython = *f.RequiresPython
		}
		// yanked is false, true, or a reason string (PEP 691).
		var b bool
		var reason string
		switch {
		case json.Unmarshal(f.Yanked, &b) == nil:
			file.Yanked = b
		case json.Unmarshal(f.Yanked, &reason) == nil:
			file.Yanked, file.YankedReason = true, reason
		}
		page.Files = append(page.Files, file)
	}
	return page, nil
}

var (
	reAnchorStart = regexp.MustCompile(`(?i)<a\s`)
	reAnchorEnd   = regexp.MustCompile(`(?i)</a`)
)

// ParseProjectHTML reads a PEP 503 project page: every <a> is a file, its
// href the URL (with an optional #sha256= fragment), data-yanked and
// data-requires-python as PEP 592 and PEP 503 define them. A small scanner,
// not a full HTML parser: index pages are generated and flat.
func ParseProjectHTML(data []byte, base *url.URL) (*ProjectPage, error) {
	page := &ProjectPage{Format: "html"}
	s := string(data)
	for _, loc := range reAnchorStart.FindAllStringIndex(s, maxFiles) {
		rest := s[loc[1]:]
		end := strings.IndexByte(rest, '>')
		if end < 0 {
			break
		}
		attrs := parseAttrs(rest[:end])
		text := rest[end+1:]
		// found on the raw bytes: lower-casing invalid UTF-8 changes lengths
		if close := reAnchorEnd.FindStringIndex(text); close != nil {
			text = text[:close[0]]
		} else {
			text = ""
		}
		href, ok := attrs["href"]
		if !ok || href == "" {
			continue
		}
		f := IndexFile{URL: href}
		u, err := url.Parse(href)
		if err == nil {
			if base != nil {
				u = base.ResolveReference(u)
			}
			f.URL = u.String()
			if h, ok := strings.CutPrefix(u.Fragment, "sha256="); ok {
				f.SHA256 = strings.ToLower(h)
			}
			if name, err := url.PathUnescape(path.Base(u.Path)); err == nil && looksLikeDist(name) {
				f.Filename = name
			}
		}
		if f.Filename == "" {
			f.Filename = strings.TrimSpace(html.UnescapeString(text))
		}
		if !looksLikeDist(f.Filename) {
			continue
		}
		if rp, ok := attrs["data-requires-python"]; ok {
			f.RequiresPython = rp
		}
		if y, ok := attrs["data-yanked"]; ok {
			f.Yanked, f.YankedReason = true, y
		}
		page.Files = append(page.Files, f)
	}
	return page, nil
}

// parseAttrs reads HTML attributes: name="v", name='v', name=v or a bare
// name. Values are unescaped; names are lower-cased.
func parseAttrs(s string) map[string]string {
	out := map[string]string{}
	i := 0
	for i < len(s) {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '/') {
			i++
		}
		start := i
		for i < len(s) && s[i] != '=' && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' {
			i++
		}
		name := strings.ToLower(s[start:i])
		if name == "" {
			i++
			continue
		}
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
		if i >= len(s) || s[i] != '=' {
			if _, seen := out[name]; !seen {
				out[name] = ""
			}
			continue
		}
		i++ // '='
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
		var val string
		if i < len(s) && (s[i] == '"' || s[i] == '\'') {
			q := s[i]
			i++
			start := i
			for i < len(s) && s[i] != q {
				i++
			}
			val = s[start:i]
			if i < len(s) {
				i++
			}
		} else {
			start := i
			for i < len(s) && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' {
				i++
			}
			val = s[start:i]
		}
		if _, seen := out[name]; !seen {
			out[name] = html.UnescapeString(val)
		}
	}
	return out
}

var distSuffixes = []string{".whl", ".tar.gz", ".zip", ".tar.bz2", ".tgz", ".tar.xz", ".tar"}

func looksLikeDist(name string) bool {
	if name == "" || strings.ContainsAny(name, "/\\\x00") {
		return false
	}
	for _, s := range distSuffixes {
		if strings.HasSuffix(strings.ToLower(name), s) && len(name) > len(s) {
			return true
		}
	}
	return false
}

var reNormalize = regexp.MustCompile(`[-_.]+`)

// NormalizeName is PEP 503's project name normalisation.
func NormalizeName(name string) string {
	return reNormalize.ReplaceAllString(strings.ToLower(name), "-")
}

// DistFile is what a distribution file's name says.
type DistFile struct {
	Project string // normalised
	Version string // as written
	Wheel   bool
	Python  []string // wheel python tags, e.g. cp312, py3
	ABI     []string
	Plat    []string
}

// ParseDistFilename splits a wheel name (PEP 427:
// name-version[-build]-python-abi-platform.whl) or an sdist name, given the
// project it belongs to (an sdist name is ambiguous without it).
func ParseDistFilename(filename, project string) (DistFile, bool) {
	norm := NormalizeName(project)
	lower := strings.ToLower(filename)
	if strings.HasSuffix(lower, ".whl") {
		parts := strings.Split(filename[:len(filename)-4], "-")
		if len(parts) != 5 && len(parts) != 6 {
			return DistFile{}, false
		}
		if NormalizeName(parts[0]) != norm {
			return DistFile{}, false
		}
		n := len(parts)
		return DistFile{Project: norm, Version: parts[1], Wheel: true,
			Python: strings.Split(parts[n-3], "."), ABI: strings.Split(parts[n-2], "."), Plat: strings.Split(parts[n-1], ".")}, true
	}
	for _, suf := range distSuffixes[1:] {
		if !strings.HasSuffix(lower, suf) {
			continue
		}
		stem := filename[:len(filename)-len(suf)]
		// the version starts after the last '-' whose prefix names the project
		for i := strings.LastIndexByte(stem, '-'); i > 0; i = strings.LastIndexByte(stem[:i], '-') {
			if NormalizeName(stem[:i]) == norm {
				// "rocm-sdk-core-7.14.0" names project rocm only if "sdk-core-7.14.0" were a version
				if _, ok := ParseVersion(stem[i+1:]); !ok {
					return DistFile{}, false
				}
				return DistFile{Project: norm, Version: stem[i+1:]}, true
			}
		}
		return DistFile{}, false
	}
	return DistFile{}, false
}

// pep440 is the version grammar of PEP 440 (appendix B, permissive form).
var pep440 = regexp.MustCompile(`^v?(?:([0-9]+)!)?([0-9]+(?:\.[0-9]+)*)` +
	`(?:[-_.]?(a|b|c|rc|alpha|beta|pre|preview)[-_.]?([0-9]+)?)?` +
	`(?:-([0-9]+)|[-_.]?(post|rev|r)[-_.]?([0-9]+)?)?` +
	`(?:[-_.]?(dev)[-_.]?([0-9]+)?)?` +
	`(?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?$`)

// Version is a parsed PEP 440 version in canonical parts.
type Version struct {
	Public string // canonical public version, release zeros trimmed
	Local  string // canonical local label ("" if none)
}

// ParseVersion parses a PEP 440 version; ok is false for anything else.
func ParseVersion(v string) (Version, bool) {
	m := pep440.FindStringSubmatch(strings.ToLower(strings.TrimSpace(v)))
	if m == nil {
		return Version{}, false
	}
	var sb strings.Builder
	if m[1] != "" && strings.TrimLeft(m[1], "0") != "" {
		sb.WriteString(trimInt(m[1]) + "!")
	}
	rel := strings.Split(m[2], ".")
	for len(rel) > 1 && strings.TrimLeft(rel[len(rel)-1], "0") == "" {
		rel = rel[:len(rel)-1]
	}
	for i, r := range rel {
		if i > 0 {
			sb.WriteByte('.')
		}
		sb.WriteString(trimInt(r))
	}
	if m[3] != "" {
		pre := map[string]string{"a": "a", "alpha": "a", "b": "b", "beta": "b", "c": "rc", "rc": "rc", "pre": "rc", "preview": "rc"}[m[3]]
		sb.WriteString(pre + trimInt(m[4]))
	}
	switch {
	case m[5] != "":
		sb.WriteString(".post" + trimInt(m[5]))
	case m[6] != "":
		sb.WriteString(".post" + trimInt(m[7]))
	}
	if m[8] != "" {
		sb.WriteString(".dev" + trimInt(m[9]))
	}
	return Version{Public: sb.String(), Local: reNormalize.ReplaceAllString(m[10], ".")}, true
}

func trimInt(s string) string {
	t := strings.TrimLeft(s, "0")
	if t == "" {
		return "0"
	}
	return t
}

// VersionMatches is pip's `==pin` test: equal public versions, and equal
// local labels when the pin has one (PEP 440: a pin without a local label
// matches any local label). Unparseable versions compare as strings.
func VersionMatches(pin, candidate string) bool {
	p, ok1 := ParseVersion(pin)
	c, ok2 := ParseVersion(candidate)
	if !ok1 || !ok2 {
		return pin == candidate
	}
	return p.Public == c.Public && (p.Local == "" || p.Local == c.Local)
}

// pythonTag turns PYTHON_VERSION ("3.12") into its CPython tag parts.
func pythonTag(pyVersion string) (major, minor int, ok bool) {
	a, b, found := strings.Cut(pyVersion, ".")
	if !found {
		return 0, 0, false
	}
	b, _, _ = strings.Cut(b, ".")
	ma, err1 := strconv.Atoi(a)
	mi, err2 := strconv.Atoi(b)
	return ma, mi, err1 == nil && err2 == nil
}

// Installable says whether pip on Linux x86_64 with Python pyVersion
// ("3.12"; "" = any) could install the file. Sdists always could.
func (d DistFile) Installable(pyVersion string) bool {
	if !d.Wheel {
		return true
	}
	if !d.platformOK() {
		return false
	}
	major, minor, ok := pythonTag(pyVersion)
	if !ok {
		return true
	}
	cp := fmt.Sprintf("cp%d%d", major, minor)
	abi3 := false
	for _, a := range d.ABI {
		if a == "abi3" {
			abi3 = true
		}
	}
	for _, t := range d.Python {
		switch {
		case t == cp, t == fmt.Sprintf("py%d", major), t == fmt.Sprintf("py%d%d", major, minor):
			return true
		case abi3 && strings.HasPrefix(t, fmt.Sprintf("cp%d", major)):
			// cp38-abi3 runs on every later CPython 3
			if n, err := strconv.Atoi(strings.TrimPrefix(t, fmt.Sprintf("cp%d", major))); err == nil && n <= minor {
				return true
			}
		}
	}
	return false
}

func (d DistFile) platformOK() bool {
	for _, p := range d.Plat {
		if p == "any" || (strings.HasSuffix(p, "_x86_64") && (strings.HasPrefix(p, "linux") || strings.HasPrefix(p, "manylinux"))) {
			return true
		}
	}
	return false
}

// pythonTags lists a page's distinct wheel python tags, for a detail line.
func pythonTags(files []DistFile) string {
	seen := map[string]bool{}
	var out []string
	for _, f := range files {
		if !f.Wheel {
			if !seen["sdist"] {
				seen["sdist"] = true
				out = append(out, "sdist")
			}
			continue
		}
		for _, t := range f.Python {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return strings.Join(out, ", ")
}
