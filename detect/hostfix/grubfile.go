package hostfix

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// GRUB's kernel command-line variables. GRUB_CMDLINE_LINUX goes on every
// entry, recovery mode included; GRUB_CMDLINE_LINUX_DEFAULT only on the
// normal entries (Debian's and Fedora's 10_linux). haloforge adds to
// _DEFAULT so that the recovery entry boots without its arguments: a way
// back if a setting ever stops a machine from booting.
const (
	grubLinux   = "GRUB_CMDLINE_LINUX"
	grubDefault = "GRUB_CMDLINE_LINUX_DEFAULT"
)

var grubAssignRe = regexp.MustCompile(`^([ \t]*(?:export[ \t]+)?)(GRUB_CMDLINE_LINUX(?:_DEFAULT)?)=(.*)$`)

// errGrubTooComplex says an assignment cannot be edited safely (escaped
// quotes, command substitution, a value spread over lines…).
var errGrubTooComplex = errors.New("too complex to edit safely")

// grubAssign is one GRUB_CMDLINE_LINUX[_DEFAULT]= line of a file.
type grubAssign struct {
	line       int // index into the file's lines
	name       string
	valStart   int // byte offsets of the value inside the line, quotes excluded
	valEnd     int
	doubleQuot bool // the value is in double quotes: $expansions apply
}

// grubFile is /etc/default/grub or a /etc/default/grub.d/*.cfg drop-in,
// split into lines that keep their own line endings.
type grubFile struct {
	path    string
	lines   []string
	assigns []grubAssign
}

// parseGrubFile finds the command-line assignments. Any assignment it cannot
// read exactly is an error: haloforge then edits nothing and prints the
// arguments for the user to add by hand.
func parseGrubFile(path string, data []byte) (*grubFile, error) {
	g := &grubFile{path: path, lines: splitLinesKeep(string(data))}
	for i, l := range g.lines {
		body := strings.TrimRight(l, "\r\n")
		m := grubAssignRe.FindStringSubmatchIndex(body)
		if m == nil {
			continue
		}
		a := grubAssign{line: i, name: body[m[4]:m[5]]}
		rest := body[m[6]:]
		off := m[6]
		switch {
		case strings.HasPrefix(rest, `"`):
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("%s:%d: %s: %w (the value goes on past the line)", path, i+1, a.name, errGrubTooComplex)
			}
			val := rest[1 : 1+end]
			if strings.ContainsAny(val, "\\`") || strings.Contains(val, "$(") {
				return nil, fmt.Errorf("%s:%d: %s: %w (escapes or command substitution)", path, i+1, a.name, errGrubTooComplex)
			}
			a.valStart, a.valEnd, a.doubleQuot = off+1, off+1+end, true
			rest = rest[2+end:]
		case strings.HasPrefix(rest, `'`):
			end := strings.IndexByte(rest[1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("%s:%d: %s: %w (the value goes on past the line)", path, i+1, a.name, errGrubTooComplex)
			}
			a.valStart, a.valEnd = off+1, off+1+end
			rest = rest[2+end:]
		default:
			n := 0
			for n < len(rest) && !isBlank(rest[n]) && rest[n] != '#' && rest[n] != ';' {
				n++
			}
			if strings.ContainsAny(rest[:n], "\"'\\`$") {
				return nil, fmt.Errorf("%s:%d: %s: %w (mixed quoting)", path, i+1, a.name, errGrubTooComplex)
			}
			a.valStart, a.valEnd = off, off+n
			rest = rest[n:]
		}
		trail := strings.TrimLeft(rest, " \t")
		if trail != "" && !strings.HasPrefix(trail, "#") {
			return nil, fmt.Errorf("%s:%d: %s: %w (more shell after the value)", path, i+1, a.name, errGrubTooComplex)
		}
		if !a.doubleQuot && a.valEnd > a.valStart && strings.ContainsAny(body[a.valStart:a.valEnd], " \t") && body[a.valStart-1] != '\'' {
			return nil, fmt.Errorf("%s:%d: %s: %w", path, i+1, a.name, errGrubTooComplex)
		}
		if strings.Count(body[a.valStart:a.valEnd], `"`)%2 == 1 {
			return nil, fmt.Errorf("%s:%d: %s: %w (an unbalanced quote)", path, i+1, a.name, errGrubTooComplex)
		}
		g.assigns = append(g.assigns, a)
	}
	return g, nil
}

// splitLinesKeep splits text into lines that keep their "\n".
func splitLinesKeep(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

func (g *grubFile) value(a grubAssign) string { return g.lines[a.line][a.valStart:a.valEnd] }

// setValue replaces an assignment's value; in a bare (unquoted) assignment
// that now needs quotes, the value is put in double quotes.
func (g *grubFile) setValue(a grubAssign, v string) {
	l := g.lines[a.line]
	quoteIt := !a.doubleQuot && l[a.valStart-1] != '\'' && strings.ContainsAny(v, " \t")
	if quoteIt {
		v = `"` + v + `"`
	}
	g.lines[a.line] = l[:a.valStart] + v + l[a.valEnd:]
}

func (g *grubFile) bytes() []byte { return []byte(strings.Join(g.lines, "")) }

// grubConfig is /etc/default/grub and its drop-ins, in the order
// grub-mkconfig sources them (the main file first).
type grubConfig struct {
	files []*grubFile
}

// effective simulates the assignments and returns the parameters the normal
// boot entries get: GRUB_CMDLINE_LINUX then GRUB_CMDLINE_LINUX_DEFAULT.
// An expansion of either variable stands for its value so far; any other
// expansion is unknown and left out.
func (c *grubConfig) effective() []token {
	vars := map[string][]token{}
	for _, f := range c.files {
		for _, a := range f.assigns {
			var next []token
			for _, t := range scanTokens(f.value(a), a.doubleQuot) {
				if t.expansion != "" {
					next = append(next, vars[t.expansionVar()]...)
					continue
				}
				next = append(next, t)
			}
			vars[a.name] = next
		}
	}
	return append(append([]token{}, vars[grubLinux]...), vars[grubDefault]...)
}

// lineChange is one line of one file before and after an edit ("" before:
// the line is new; "" after: it is deleted).
type lineChange struct {
	path, before, after string
}

// apply makes one argument true in the configuration and returns the lines
// it changed. Set removes the key wherever it is and appends key=value to the
// last GRUB_CMDLINE_LINUX_DEFAULT assignment (the one that wins), or adds
// that assignment to the main file when there is none.
func (c *grubConfig) apply(a KernelArg) []lineChange {
	if satisfied(c.effective(), a) {
		return nil
	}
	var changes []lineChange
	before := map[*grubFile]map[int]string{}
	touch := func(f *grubFile, line int) {
		if before[f] == nil {
			before[f] = map[int]string{}
		}
		if _, ok := before[f][line]; !ok {
			before[f][line] = f.lines[line]
		}
	}
	for _, f := range c.files {
		for _, as := range f.assigns {
			v := f.value(as)
			if nv := removeKey(v, a.Key, as.doubleQuot); nv != v {
				touch(f, as.line)
				f.setValue(as, nv)
				c.reparse(f)
			}
		}
	}
	if a.Op == OpSet {
		f, as, ok := c.lastAssign(grubDefault)
		if ok {
			touch(f, as.line)
			f.setValue(as, appendArg(f.value(as), a.String()))
			c.reparse(f)
		} else {
			main := c.files[0]
			if n := len(main.lines); n > 0 && !strings.HasSuffix(main.lines[n-1], "\n") {
				touch(main, n-1)
				main.lines[n-1] += "\n"
			}
			line := grubDefault + `="` + a.String() + `"` + "\n"
			main.lines = append(main.lines, line)
			c.reparse(main)
			changes = append(changes, lineChange{path: main.path, after: line})
		}
	}
	var out []lineChange
	for _, f := range c.files {
		for line := 0; line < len(f.lines); line++ {
			if b, ok := before[f][line]; ok && b != f.lines[line] {
				out = append(out, lineChange{path: f.path, before: b, after: f.lines[line]})
			}
		}
	}
	return append(out, changes...)
}

func (c *grubConfig) reparse(f *grubFile) {
	// Re-reading our own edit cannot fail: values only lose or gain plain
	// parameters, and a bare value that needs quotes got them.
	g, err := parseGrubFile(f.path, f.bytes())
	if err != nil {
		panic("hostfix: an edit made a GRUB file unreadable: " + err.Error())
	}
	*f = *g
}

func (c *grubConfig) lastAssign(name string) (*grubFile, grubAssign, bool) {
	for i := len(c.files) - 1; i >= 0; i-- {
		f := c.files[i]
		for j := len(f.assigns) - 1; j >= 0; j-- {
			if f.assigns[j].name == name {
				return f, f.assigns[j], true
			}
		}
	}
	return nil, grubAssign{}, false
}
