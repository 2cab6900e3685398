// Package pins reads versions.env: a shell-compatible file that the step
// scripts `source`, parsed strictly here so that nothing but plain
// assignments of known, validated values ever reaches a shell.
package pins

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// maxLine bounds a line: real pins are short, and a huge line is a sign of a
// corrupted or hostile file.
const maxLine = 4096

// Error is a problem at a position in a pins file.
type Error struct {
	Path      string
	Line, Col int
	Reason    string
}

func (e *Error) Error() string {
	if e.Col > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.Path, e.Line, e.Col, e.Reason)
	}
	return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Reason)
}

// Pin is one NAME=value line.
type Pin struct {
	Name     string
	Value    string // resolved: ${REF}s expanded
	Raw      string // as written, unquoted, references kept as ${NAME}
	Line     int
	Col      int
	Kind     Kind
	Floating bool   // not reproducible: a branch, :latest, :nightly
	Comment  string // the comment line(s) right above it: its source
	refs     []string
}

// File is a parsed pins file, pins in file order.
type File struct {
	Path   string
	Pins   []Pin
	lookup func(string) (Spec, bool) // the names it may define; nil: the pins
}

// spec is the spec of a name the file may define.
func (f *File) spec(name string) (Spec, bool) {
	if f.lookup == nil {
		return Lookup(name)
	}
	return f.lookup(name)
}

// Parse parses and validates versions.env content. Nothing in it is ever
// executed: the shell syntax tree is only inspected.
func Parse(path string, data []byte) (*File, error) { return parse(path, data, Lookup) }

// parse is Parse against the names lookup knows (the pins, or toolbox.env's
// build variables).
func parse(path string, data []byte, lookup func(string) (Spec, bool)) (*File, error) {
	if err := checkBytes(path, data); err != nil {
		return nil, err
	}
	parser := syntax.NewParser(syntax.KeepComments(true), syntax.Variant(syntax.LangBash))
	tree, err := parser.Parse(bytes.NewReader(data), path)
	if err != nil {
		var pe syntax.ParseError
		if errors.As(err, &pe) {
			if e := openQuote(path, data, int(pe.Pos.Line())); e != nil {
				return nil, e
			}
			return nil, &Error{Path: path, Line: int(pe.Pos.Line()), Col: int(pe.Pos.Col()), Reason: "not valid shell: " + pe.Text}
		}
		return nil, &Error{Path: path, Line: 1, Reason: err.Error()}
	}
	if e := multiLineQuote(path, tree); e != nil {
		return nil, e
	}
	f := &File{Path: path, lookup: lookup}
	comments := commentsByLine(data)
	var errs []error
	lastLine := 0
	for _, st := range tree.Stmts {
		line := int(st.Pos().Line())
		if line == lastLine {
			errs = append(errs, posErr(path, st.Pos(), "one assignment per line: `;`, `&&` and similar are not allowed"))
			continue
		}
		lastLine = line
		p, err := statement(path, st, lookup)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.Comment = comments[p.Line-1]
		f.Pins = append(f.Pins, p)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := f.resolve(); err != nil {
		return nil, err
	}
	return f, nil
}

// unclosedQuote is the reason given at a quote that its line does not close.
func unclosedQuote(q byte) string {
	return fmt.Sprintf("not valid shell: the %c opened here is not closed on this line (a value must fit on one line)", q)
}

// openQuote finds the first quote that a line opens and does not close,
// at or above the line where the shell parser failed. Values never span
// lines, so that quote is where the error really is: the parser pairs it
// with a quote lines further down and notices a problem only there.
func openQuote(path string, data []byte, failLine int) error {
	for i, line := range bytes.Split(data, []byte("\n")) {
		if i+1 > failLine {
			break
		}
		if col, q := unclosedOn(line); col > 0 {
			return &Error{Path: path, Line: i + 1, Col: col, Reason: unclosedQuote(q)}
		}
	}
	return nil
}

// unclosedOn returns the 1-based column and the quote character of a quote
// the line leaves open, or 0. It knows just enough shell to find quotes:
// comments, backslash escapes, '…', $'…' and "…".
func unclosedOn(line []byte) (int, byte) {
	var quote byte // 0 outside quotes; '\'', '$' for $'…', or '"'
	open, wordStart := 0, true
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch quote {
		case 0:
			switch {
			case c == '#' && wordStart:
				return 0, 0
			case c == '\\':
				i++
			case c == '\'' && i > 0 && line[i-1] == '$':
				quote, open = '$', i-1 // at the $, as the parser reports $'…'
			case c == '\'' || c == '"':
				quote, open = c, i
			}
			wordStart = bytes.IndexByte([]byte(" \t;&|()<>"), c) >= 0
		case '\'':
			if c == '\'' {
				quote = 0
			}
		default: // '"' and $'…' both take backslash escapes
			switch {
			case c == '\\':
				i++
			case c == '"' && quote == '"', c == '\'' && quote == '$':
				quote = 0
			}
		}
	}
	switch quote {
	case 0:
		return 0, 0
	case '$':
		return open + 1, '\''
	}
	return open + 1, quote
}

// multiLineQuote refuses a quoted part that spans lines in a file the shell
// parser accepted: an unbalanced quote that happened to pair with a quote
// further down. Reporting it alone keeps the later, misparsed lines out of
// the message.
func multiLineQuote(path string, tree *syntax.File) error {
	var found error
	syntax.Walk(tree, func(n syntax.Node) bool {
		if found != nil {
			return false
		}
		var q byte
		switch n.(type) {
		case *syntax.SglQuoted:
			q = '\''
		case *syntax.DblQuoted:
			q = '"'
		default:
			return true
		}
		if n.Pos().Line() != n.End().Line() {
			found = &Error{Path: path, Line: int(n.Pos().Line()), Col: int(n.Pos().Col()), Reason: unclosedQuote(q)}
		}
		return false
	})
	return found
}

// checkBytes refuses what a text editor would not produce, before the shell
// parser sees it, with the line it happens on.
func checkBytes(path string, data []byte) error {
	if bytes.HasPrefix(data, []byte("\ufeff")) {
		return &Error{Path: path, Line: 1, Col: 1, Reason: "UTF-8 byte-order mark: `source` would read it as part of the first word; save the file without a BOM"}
	}
	for i, line := range bytes.Split(data, []byte("\n")) {
		n := i + 1
		switch {
		case len(line) > maxLine:
			return &Error{Path: path, Line: n, Reason: fmt.Sprintf("line is %d bytes long (limit %d): not a pins file", len(line), maxLine)}
		case bytes.IndexByte(line, 0) >= 0:
			return &Error{Path: path, Line: n, Col: bytes.IndexByte(line, 0) + 1, Reason: "NUL byte: binary data, not a pins file"}
		case !utf8.Valid(line):
			return &Error{Path: path, Line: n, Reason: "invalid UTF-8: binary data, not a pins file"}
		case bytes.HasSuffix(line, []byte("\r")):
			return &Error{Path: path, Line: n, Col: len(line), Reason: "CRLF line ending: `source` would put a carriage return into the value; convert the file with dos2unix"}
		}
		for j, c := range line {
			if c < 0x20 && c != '\t' {
				return &Error{Path: path, Line: n, Col: j + 1, Reason: fmt.Sprintf("control character 0x%02x", c)}
			}
		}
	}
	return nil
}

// commentsByLine maps a line index to the comment block ending just above it.
func commentsByLine(data []byte) map[int]string {
	out := map[int]string{}
	var block []string
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(t, "#")), "----"):
			// a section rule ("# ---- shared ----"): a heading, not the
			// source of the pin below
			block = nil
		case strings.HasPrefix(t, "#"):
			block = append(block, strings.TrimSpace(strings.TrimPrefix(t, "#")))
		case t == "":
			block = nil
		default:
			out[i] = strings.Join(block, " ")
			block = nil
		}
	}
	return out
}

func posErr(path string, p syntax.Pos, reason string) error {
	return &Error{Path: path, Line: int(p.Line()), Col: int(p.Col()), Reason: reason}
}

// statement accepts exactly `NAME=word` with no redirection or command.
func statement(path string, st *syntax.Stmt, lookup func(string) (Spec, bool)) (Pin, error) {
	switch {
	case st.Negated, st.Background, st.Coprocess, st.Disown:
		return Pin{}, posErr(path, st.Pos(), "only NAME=value lines are allowed")
	case len(st.Redirs) > 0:
		return Pin{}, posErr(path, st.Redirs[0].Pos(), "redirections are not allowed")
	}
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok {
		return Pin{}, posErr(path, st.Pos(), "only NAME=value lines are allowed; found "+describe(st.Cmd))
	}
	if len(call.Args) > 0 {
		return Pin{}, posErr(path, call.Args[0].Pos(), fmt.Sprintf("only NAME=value lines are allowed; found the command %q", wordText(call.Args[0])))
	}
	if len(call.Assigns) != 1 {
		return Pin{}, posErr(path, st.Pos(), "one assignment per line")
	}
	a := call.Assigns[0]
	if a.Append || a.Naked || a.Index != nil || a.Array != nil || a.Name == nil {
		return Pin{}, posErr(path, a.Pos(), "only plain NAME=value assignments are allowed")
	}
	name := a.Name.Value
	spec, known := lookup(name)
	if !known {
		return Pin{}, posErr(path, a.Pos(), fmt.Sprintf("unknown name %s (known names: haloforge pins check --help)", name))
	}
	raw, refs, err := wordValue(path, a.Value)
	if err != nil {
		return Pin{}, err
	}
	return Pin{Name: name, Raw: raw, Line: int(a.Pos().Line()), Col: int(a.Pos().Col()), Kind: spec.Kind, refs: refs}, nil
}

func describe(c syntax.Command) string {
	switch c.(type) {
	case *syntax.BinaryCmd:
		return "`&&`, `||` or a pipe"
	case *syntax.DeclClause:
		return "a declaration (export/declare/local/readonly); haloforge exports pins itself"
	case *syntax.ArithmCmd:
		return "arithmetic"
	case *syntax.Subshell, *syntax.Block:
		return "a command group"
	case *syntax.FuncDecl:
		return "a function"
	case nil:
		return "nothing"
	}
	return "a shell statement"
}

func wordText(w *syntax.Word) string {
	var sb strings.Builder
	syntax.NewPrinter().Print(&sb, w)
	return sb.String()
}

// wordValue flattens a word made only of literals, quotes and plain
// ${NAME} references into its raw text, refusing any expansion that runs
// something or computes something.
func wordValue(path string, w *syntax.Word) (string, []string, error) {
	if w == nil {
		return "", nil, nil
	}
	var sb strings.Builder
	var refs []string
	var walk func(parts []syntax.WordPart, quoted bool) error
	walk = func(parts []syntax.WordPart, quoted bool) error {
		for _, part := range parts {
			switch p := part.(type) {
			case *syntax.Lit:
				v := p.Value
				if !quoted && strings.ContainsAny(v, "*?[]{}~") {
					return posErr(path, p.Pos(), "glob or brace characters must be quoted")
				}
				if strings.Contains(v, `\`) {
					return posErr(path, p.Pos(), "backslash escapes are not allowed")
				}
				sb.WriteString(v)
			case *syntax.SglQuoted:
				if p.Dollar {
					return posErr(path, p.Pos(), "$'…' strings are not allowed")
				}
				if strings.ContainsAny(p.Value, "$`\\") {
					return posErr(path, p.Pos(), "`$`, backticks and backslashes are not allowed in values")
				}
				sb.WriteString(p.Value)
			case *syntax.DblQuoted:
				if p.Dollar {
					return posErr(path, p.Pos(), "$\"…\" strings are not allowed")
				}
				if err := walk(p.Parts, true); err != nil {
					return err
				}
			case *syntax.ParamExp:
				if !plainParam(p) {
					return posErr(path, p.Pos(), "only plain ${NAME} references are allowed, not parameter operators")
				}
				refs = append(refs, p.Param.Value)
				sb.WriteString("${" + p.Param.Value + "}")
			case *syntax.CmdSubst:
				if p.Backquotes {
					return posErr(path, p.Pos(), "backticks (command substitution) are not allowed")
				}
				return posErr(path, p.Pos(), "command substitution $(…) is not allowed")
			case *syntax.ArithmExp:
				return posErr(path, p.Pos(), "arithmetic $((…)) is not allowed")
			case *syntax.ProcSubst:
				return posErr(path, p.Pos(), "process substitution is not allowed")
			case *syntax.ExtGlob:
				return posErr(path, p.Pos(), "extended globs are not allowed")
			default:
				return posErr(path, part.Pos(), "this kind of expansion is not allowed")
			}
		}
		return nil
	}
	if err := walk(w.Parts, false); err != nil {
		return "", nil, err
	}
	return sb.String(), refs, nil
}

func plainParam(p *syntax.ParamExp) bool {
	return p.Param != nil && p.NestedParam == nil && !p.Excl && !p.Length && !p.Width && !p.IsSet &&
		p.Index == nil && p.Slice == nil && p.Repl == nil && p.Exp == nil && p.Names == 0 &&
		len(p.Modifiers) == 0 && p.Flags == nil && isName(p.Param.Value)
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// resolve checks duplicates and references, expands references to earlier
// names, validates every value by its kind and flags floating values.
func (f *File) resolve() error {
	values := map[string]string{}
	first := map[string]int{}
	invalid := map[string]bool{} // refused already: names that refer to them are not blamed again
	var errs []error
	for i := range f.Pins {
		p := &f.Pins[i]
		if l, dup := first[p.Name]; dup {
			errs = append(errs, &Error{Path: f.Path, Line: p.Line, Col: p.Col, Reason: fmt.Sprintf("duplicate %s (first defined on line %d)", p.Name, l)})
			continue
		}
		first[p.Name] = p.Line
		if slices.ContainsFunc(p.refs, func(r string) bool { return invalid[r] }) {
			invalid[p.Name] = true
			continue
		}
		v, err := expand(p.Raw, p.refs, values)
		if err != nil {
			invalid[p.Name] = true
			errs = append(errs, &Error{Path: f.Path, Line: p.Line, Col: p.Col, Reason: fmt.Sprintf("%s: %v", p.Name, err)})
			continue
		}
		p.Value = v
		spec, _ := f.spec(p.Name)
		floating, err := validate(spec, v)
		if err != nil {
			invalid[p.Name] = true
			errs = append(errs, &Error{Path: f.Path, Line: p.Line, Col: p.Col, Reason: fmt.Sprintf("%s=%q: %v", p.Name, v, err)})
			continue
		}
		p.Floating = floating
		values[p.Name] = v
	}
	return errors.Join(errs...)
}

func expand(raw string, refs []string, values map[string]string) (string, error) {
	out := raw
	for _, r := range refs {
		v, ok := values[r]
		if !ok {
			return "", fmt.Errorf("refers to ${%s}, which is not defined on an earlier line", r)
		}
		out = strings.Replace(out, "${"+r+"}", v, 1)
	}
	return out, nil
}

// Values maps every name to its resolved value.
func (f *File) Values() map[string]string {
	m := make(map[string]string, len(f.Pins))
	for _, p := range f.Pins {
		m[p.Name] = p.Value
	}
	return m
}

// Get returns a pin by name.
func (f *File) Get(name string) (Pin, bool) {
	for _, p := range f.Pins {
		if p.Name == name {
			return p, true
		}
	}
	return Pin{}, false
}

// Floating lists the names whose values are not reproducible.
func (f *File) Floating() []string {
	var out []string
	for _, p := range f.Pins {
		if p.Floating {
			out = append(out, p.Name)
		}
	}
	return out
}

// Set applies a `--set NAME=VALUE` override with the same validation as the
// file; names that refer to NAME follow the new value.
func (f *File) Set(assign string) error {
	name, value, ok := strings.Cut(assign, "=")
	if !ok || !isName(name) {
		return fmt.Errorf("--set %q: want NAME=VALUE", assign)
	}
	if _, known := Lookup(name); !known {
		return fmt.Errorf("--set %s: unknown name", name)
	}
	if strings.ContainsAny(value, "$`\\\n\r\x00") {
		return fmt.Errorf("--set %s: `$`, backticks, backslashes and control characters are not allowed", name)
	}
	spec, _ := Lookup(name)
	if _, err := validate(spec, value); err != nil {
		return fmt.Errorf("--set %s=%q: %w", name, value, err)
	}
	c := f.clone()
	found := false
	for i := range c.Pins {
		if c.Pins[i].Name == name {
			c.Pins[i].Raw, c.Pins[i].refs, found = value, nil, true
		}
	}
	if !found {
		c.Pins = append(c.Pins, Pin{Name: name, Raw: value, Kind: spec.Kind, Comment: "set on the command line"})
	}
	c.Path = f.Path
	if err := c.resolve(); err != nil {
		return fmt.Errorf("--set %s: %w", name, err)
	}
	*f = *c
	return nil
}

func (f *File) clone() *File {
	c := &File{Path: f.Path, Pins: make([]Pin, len(f.Pins)), lookup: f.lookup}
	copy(c.Pins, f.Pins)
	for i := range c.Pins {
		c.Pins[i].refs = append([]string(nil), f.Pins[i].refs...)
	}
	return c
}

// Names lists the defined names, sorted.
func (f *File) Names() []string {
	var out []string
	for _, p := range f.Pins {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}
