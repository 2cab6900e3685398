package pins

import "strings"

// Short shortens a pin value for people as git does: a 40-hex commit SHA
// and a sha256 digest (bare or after an image's @) keep their first 12
// hex digits; any other value is returned as it is.
func Short(v string) string {
	if len(v) == 40 && strings.Trim(v, "0123456789abcdef") == "" {
		return v[:12]
	}
	if rest, ok := strings.CutPrefix(v, "sha256:"); ok && len(rest) == 64 {
		return "sha256:" + rest[:12]
	}
	if i := strings.Index(v, "@sha256:"); i >= 0 && len(v)-i-8 == 64 {
		return v[:i+8+12]
	}
	return v
}
