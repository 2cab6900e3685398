package sets

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/haloforge/haloforge/pins"
	"mvdan.cc/sh/v3/syntax"
)

// Apply writes the set's values into a versions.env's content and returns
// the new content. Everything else stays as it was: comments, blank lines,
// order, quoting of untouched lines, and `${NAME}` references whose value
// already comes out right (TORCH_VERSION=2.13.0+rocm${ROCM_VERSION} stays
// when ROCM_VERSION changes to what the set wants). A changed pin keeps its
// line and the comment above it; names the file lacks are appended in one
// marked block. The result is parsed again and must resolve to exactly the
// set's values.
func Apply(path string, orig []byte, s Set, now time.Time) ([]byte, error) {
	if _, err := pins.Parse(path, orig); err != nil {
		return nil, err
	}
	want := s.Values()
	data := orig
	var added []string
	// One rewrite a round, in file order: a rewrite can fix a later pin
	// through its ${REF}, which then keeps its form.
	for round := 0; round <= len(s.File.Pins); round++ {
		f, err := pins.Parse(path, data)
		if err != nil {
			return nil, fmt.Errorf("rewriting %s: %w", path, err)
		}
		have := f.Values()
		next := pins.Pin{}
		for _, p := range f.Pins {
			if w, inSet := want[p.Name]; inSet && have[p.Name] != w {
				next = p
				break
			}
		}
		if next.Name == "" {
			break
		}
		lines := strings.SplitAfter(string(data), "\n")
		line, err := rewriteValue(lines[next.Line-1], want[next.Name])
		if err != nil {
			return nil, &pins.Error{Path: path, Line: next.Line, Reason: err.Error()}
		}
		lines[next.Line-1] = line
		data = []byte(strings.Join(lines, ""))
	}
	f, err := pins.Parse(path, data)
	if err != nil {
		return nil, fmt.Errorf("rewriting %s: %w", path, err)
	}
	for _, p := range s.File.Pins {
		// An empty value needs no line: an absent pin is empty already.
		if _, ok := f.Get(p.Name); !ok && want[p.Name] != "" {
			added = append(added, p.Name)
		}
	}
	if len(added) > 0 {
		var b bytes.Buffer
		b.Write(data)
		if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "\n# ---- added by `haloforge pins use %s` on %s ----\n", s.ID, now.UTC().Format("2006-01-02"))
		fmt.Fprintf(&b, "# %s (%s)\n", s.Title, s.Evidence[0])
		for _, n := range added {
			fmt.Fprintf(&b, "%s=%s\n", n, quote(want[n]))
		}
		data = b.Bytes()
	}
	f, err = pins.Parse(path, data)
	if err != nil {
		return nil, fmt.Errorf("rewriting %s: %w", path, err)
	}
	have := f.Values()
	for _, p := range s.File.Pins {
		if have[p.Name] != want[p.Name] {
			return nil, fmt.Errorf("rewriting %s: %s would be %q, not the set's %q (a reference to it from an earlier line?)", path, p.Name, have[p.Name], want[p.Name])
		}
	}
	return data, nil
}

// rewriteValue replaces the value word of a NAME=value line, keeping the
// name, any indentation and a trailing comment.
func rewriteValue(line, value string) (string, error) {
	body := strings.TrimSuffix(line, "\n")
	f, err := syntax.NewParser(syntax.KeepComments(true)).Parse(strings.NewReader(body), "")
	if err != nil || len(f.Stmts) != 1 {
		return "", fmt.Errorf("cannot rewrite this line")
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) != 1 {
		return "", fmt.Errorf("cannot rewrite this line")
	}
	a := call.Assigns[0]
	start := int(a.Name.End().Offset()) + 1 // after '='
	end := start
	if a.Value != nil {
		end = int(a.Value.End().Offset())
	}
	if start > len(body) || end > len(body) || body[start-1] != '=' {
		return "", fmt.Errorf("cannot rewrite this line")
	}
	return body[:start] + quote(value) + body[end:] + strings.TrimPrefix(line, body), nil
}

var reBare = regexp.MustCompile(`^[A-Za-z0-9._/:@+=,%-]*$`)

// quote writes a validated value so that `source` reads it back unchanged.
func quote(v string) string {
	if reBare.MatchString(v) {
		return v
	}
	return "'" + v + "'"
}
