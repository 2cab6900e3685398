package hostfix

import "strings"

// token is one kernel parameter (or, in a GRUB file, one shell expansion)
// inside a command-line string, by byte offsets.
type token struct {
	start, end int
	key, value string
	hasValue   bool
	expansion  string // the variable a $VAR or ${VAR…} expansion refers to; "" for a parameter
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isIdent(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// scanTokens splits a command line the way the kernel does (blanks outside
// double quotes). With expand, `$VAR` and `${…}` at the start of a token
// are shell expansions (a GRUB value in double quotes): each is a token of
// its own, even when a parameter follows it without a blank.
func scanTokens(s string, expand bool) []token {
	var out []token
	for i := 0; i < len(s); {
		if isBlank(s[i]) {
			i++
			continue
		}
		if expand && s[i] == '$' {
			if t, ok := scanExpansion(s, i); ok {
				out = append(out, t)
				i = t.end
				continue
			}
		}
		start := i
		quoted := false
		for i < len(s) && (quoted || !isBlank(s[i])) {
			if s[i] == '"' {
				quoted = !quoted
			}
			i++
		}
		t := token{start: start, end: i}
		word := s[start:i]
		t.key, t.value, t.hasValue = strings.Cut(word, "=")
		t.value = strings.Trim(t.value, `"`)
		out = append(out, t)
	}
	return out
}

// scanExpansion reads $NAME or ${…} (braces balanced) starting at s[i].
func scanExpansion(s string, i int) (token, bool) {
	if i+1 >= len(s) {
		return token{}, false
	}
	if s[i+1] == '{' {
		depth := 0
		for j := i + 1; j < len(s); j++ {
			switch s[j] {
			case '{':
				depth++
			case '}':
				depth--
				if depth == 0 {
					name := i + 2
					k := name
					for k < j && isIdent(s[k]) {
						k++
					}
					return token{start: i, end: j + 1, expansion: s[name:k] + "?"}, true
				}
			}
		}
		return token{}, false
	}
	k := i + 1
	for k < len(s) && isIdent(s[k]) {
		k++
	}
	if k == i+1 {
		return token{}, false
	}
	return token{start: i, end: k, expansion: s[i+1 : k]}, true
}

// expansionVar is the variable an expansion token refers to.
func (t token) expansionVar() string { return strings.TrimSuffix(t.expansion, "?") }

// removeKey deletes every parameter named key from a command-line string,
// each with one adjacent run of blanks (the following one; the preceding
// one for the last parameter), so that every other byte stays as it was.
func removeKey(s, key string, expand bool) string {
	toks := scanTokens(s, expand)
	for i := len(toks) - 1; i >= 0; i-- {
		t := toks[i]
		if t.expansion != "" || t.key != key {
			continue
		}
		start, end := t.start, t.end
		j := end
		for j < len(s) && isBlank(s[j]) && s[j] != '\n' {
			j++
		}
		switch {
		case j < len(s) && s[j] != '\n' && j > end:
			end = j // a parameter follows: take the blanks after this one
		case start > 0 && isBlank(s[start-1]) && s[start-1] != '\n':
			for start > 0 && isBlank(s[start-1]) && s[start-1] != '\n' {
				start--
			}
		}
		s = s[:start] + s[end:]
	}
	return s
}

// appendArg adds a parameter after the last one, keeping trailing blanks.
func appendArg(s, arg string) string {
	end := len(s)
	for end > 0 && isBlank(s[end-1]) {
		end--
	}
	if end == 0 {
		return arg + s
	}
	return s[:end] + " " + arg + s[end:]
}

// params lists the parameters (not expansions) of a command-line string.
func params(s string, expand bool) []token {
	var out []token
	for _, t := range scanTokens(s, expand) {
		if t.expansion == "" {
			out = append(out, t)
		}
	}
	return out
}

// satisfied reports whether a list of parameters already has what the
// argument asks for: exactly one key=value for set, none for remove.
func satisfied(ps []token, a KernelArg) bool {
	n, match := 0, 0
	for _, p := range ps {
		if p.key == a.Key {
			n++
			if a.Op == OpSet && p.hasValue && p.value == a.Value {
				match++
			}
		}
	}
	if a.Op == OpRemove {
		return n == 0
	}
	return n == 1 && match == 1
}
