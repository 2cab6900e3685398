package detect

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/haloforge/haloforge/internal/text"
)

// promptRe matches a shell prompt that starts a pasted command line:
// "$ cmd", "# cmd", "user@host:~$ cmd", "❯ cmd", "PS> cmd".
// A conda or venv prefix such as "(base) " may come first.
var promptRe = regexp.MustCompile(`^(?:\([\w.-]+\)\s+)?(?:\S*@\S*?[:~]?\S*[$#%]|[$#%❯➜>]|PS\S*>)\s+(.*)$`)

// promptOnlyRe is a prompt with nothing typed after it.
var promptOnlyRe = regexp.MustCompile(`^(?:\S*@\S*?[:~]?\S*[$#%]|[$%❯➜])$`)

// pasted is text as a user pastes it, cleaned line by line: no ANSI, no
// carriage-return redraws, no trailing spaces, no markdown quote markers.
type pasted struct {
	lines    []string // cleaned lines, prompts and comment-only lines removed
	commands []string // commands seen after a prompt, in order
}

// cleanLine is a pasted line as a terminal showed it (the one sanitiser:
// no escape sequences, controls or bidi overrides, the last redraw), without
// trailing space or a markdown quote marker. Every fact parsed from a
// paste or a bundle comes from such lines, so none brings hostile bytes
// to a report.
func cleanLine(l string) string {
	l = strings.TrimRight(text.Screen(l), " \t")
	if strings.HasPrefix(l, "> ") || l == ">" {
		l = strings.TrimPrefix(strings.TrimPrefix(l, ">"), " ")
	}
	return l
}

// parsePasted cleans text and separates the commands typed at a prompt from
// the output. A line that is only a `#` comment is dropped; so are `...`
// elisions that people put in excerpts.
func parsePasted(s string) pasted {
	var p pasted
	for _, raw := range strings.Split(s, "\n") {
		l := cleanLine(raw)
		t := strings.TrimSpace(l)
		if t == "" || t == "..." || t == "…" || strings.HasPrefix(t, "```") {
			if t == "" {
				p.lines = append(p.lines, "")
			}
			continue
		}
		if mayBePrompt(t) {
			if promptOnlyRe.MatchString(t) {
				continue // an empty prompt at the end of a paste
			}
			if m := promptRe.FindStringSubmatch(t); m != nil && looksLikeCommand(m[1]) {
				p.commands = append(p.commands, m[1])
				continue
			}
		}
		if strings.HasPrefix(t, "#") {
			continue
		}
		p.lines = append(p.lines, l)
	}
	return p
}

// mayBePrompt is a cheap test that keeps the prompt regexps off most lines:
// analysis must stay well under its 5 ms budget on 600-line rocminfo dumps.
func mayBePrompt(t string) bool {
	switch t[0] {
	case '$', '#', '%', '>':
		return true
	}
	if strings.HasPrefix(t, "❯") || strings.HasPrefix(t, "➜") || strings.HasPrefix(t, "PS") {
		return true
	}
	return strings.Contains(t, "@") && strings.ContainsAny(t, "$#%")
}

// looksLikeCommand tells a typed command from output that happens to start
// with "# " or "$ ": commands start with a program name.
var commandRe = regexp.MustCompile(`^(?:sudo\s+)?[A-Za-z_./][\w./+-]*(?:\s|$)`)

func looksLikeCommand(s string) bool {
	return commandRe.MatchString(s) && !strings.Contains(strings.Fields(s + " x")[0], "=")
}

// stripComment drops a trailing "  # note" that authors add to pasted values.
func stripComment(s string) string {
	if i := strings.Index(s, " #"); i >= 0 {
		return strings.TrimRight(s[:i], " \t")
	}
	if i := strings.Index(s, "\t#"); i >= 0 {
		return strings.TrimRight(s[:i], " \t")
	}
	return s
}

// leadingInt parses the decimal number at the start of s ("5510(0x1586)" -> 5510).
func leadingInt(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end == 0 {
		return 0, false
	}
	v, err := strconv.ParseInt(s[:end], 10, 64)
	return v, err == nil
}

func ptr[T any](v T) *T { return &v }
