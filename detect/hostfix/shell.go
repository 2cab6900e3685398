package hostfix

import (
	"path/filepath"
	"strings"
)

// shellQuote quotes a word for a POSIX shell: bare when it is plainly safe,
// else in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,/:=+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellJoin is an argv as one copyable shell line.
func shellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = shellQuote(a)
	}
	return strings.Join(out, " ")
}

// sedDelims are tried in order: the first one absent from both lines is used.
const sedDelims = "|#,@%~!"

// breEscape escapes a literal for a GNU sed basic regular expression.
func breEscape(s string, delim byte) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if strings.IndexByte(`\.*[]^$`, c) >= 0 || c == delim {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// replEscape escapes a literal for the replacement part of sed's s command.
func replEscape(s string, delim byte) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' || c == '&' || c == delim {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

func pickDelim(lines ...string) byte {
	for i := 0; i < len(sedDelims); i++ {
		d := sedDelims[i]
		clean := true
		for _, l := range lines {
			if strings.IndexByte(l, d) >= 0 {
				clean = false
			}
		}
		if clean {
			return d
		}
	}
	return '|'
}

// sedScript is the sed program that turns the line before into the line
// after: an exact whole-line substitution, a deletion, or an append at the
// end of the file. Running it twice changes nothing the second time.
func sedScript(c lineChange) string {
	before := strings.TrimRight(c.before, "\n")
	after := strings.TrimRight(c.after, "\n")
	d := pickDelim(before, after)
	switch {
	case c.before == "":
		return "$a " + after
	case c.after == "":
		return `\` + string(d) + "^" + breEscape(before, d) + "$" + string(d) + "d"
	}
	return "s" + string(d) + "^" + breEscape(before, d) + "$" + string(d) + replEscape(after, d) + string(d)
}

// lineCommands are the exact shell commands, one per file, that make the
// line changes on the files of the system e was read from (under its --root
// directory when it is not this machine); prefix is "sudo " when root is
// needed. A file that does not exist yet (create) is written whole with tee.
func lineCommands(prefix string, e *Evidence, changes []lineChange, create map[string]string) []string {
	var out []string
	var order []string
	byFile := map[string][]string{}
	for _, c := range changes {
		if content, ok := create[c.path]; ok {
			if _, done := byFile[c.path]; !done {
				order = append(order, c.path)
				byFile[c.path] = nil
				out = append(out, "printf '%s\\n' "+shellQuote(strings.TrimRight(content, "\n"))+" | "+prefix+"tee "+shellQuote(e.hostPath(c.path))+" >/dev/null")
			}
			continue
		}
		if c.before != "" && c.after == c.before+"\n" {
			continue // the newline sed's "$a" adds by itself
		}
		if _, seen := byFile[c.path]; !seen {
			order = append(order, c.path)
		}
		byFile[c.path] = append(byFile[c.path], sedScript(c))
	}
	for _, p := range order {
		scripts := byFile[p]
		if len(scripts) == 0 {
			continue
		}
		args := []string{prefix + "sed", "-i"}
		for _, s := range scripts {
			args = append(args, "-e", shellQuote(s))
		}
		args = append(args, shellQuote(e.hostPath(p)))
		out = append(out, strings.Join(args, " "))
	}
	return out
}

// chrootDir is the directory the system lives under when it is not this
// machine (--root), "" for this machine or a bundle alone.
func (e *Evidence) chrootDir() string {
	if e == nil || e.Root == "" || filepath.Clean(e.Root) == "/" {
		return ""
	}
	return e.Root
}

// hostPath is a system path as a command typed here reaches it: under the
// --root directory when the system lives there.
func (e *Evidence) hostPath(p string) string {
	if r := e.chrootDir(); r != "" {
		return filepath.Join(r, p)
	}
	return p
}

// sudo starts a by-hand command that runs a tool of the system as root:
// inside the --root directory with chroot, as --apply runs it, when the
// system lives there.
func (e *Evidence) sudo() string {
	if r := e.chrootDir(); r != "" {
		return "sudo chroot " + shellQuote(r) + " "
	}
	return "sudo "
}
