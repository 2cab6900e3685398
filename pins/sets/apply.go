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
	// Each round rewrites the pins that resolve wrongly; a rewrite can fix
	// others through their references, so a few rounds settle it.
	for round := 0; round < 4; round++ {
		f, err := pins.Parse(path, data)
		if err != nil {
			return nil, fmt.Errorf("rewriting %s: %w", path, err)
		}
		have := f.Values()
		lines := strings.SplitAfter(string(data), "\n")
		changed := false
		for _, p := range s.File.Pins {
			v, ok := have[p.Name]
			if ok && v == want[p.Name] {
				continue
			}
			if !ok {
				if !contains(added, p.Name) {
					added = append(added, p.Name)
				}
				continue
			}
			pin, _ := f.Get(p.Name)
			line, err := rewriteValue(lines[pin.Line-1], want[p.Name])
			if err != nil {
				return nil, &pins.Error{Path: path, Line: pin.Line, Reason: err.Error()}
			}
			lines[pin.Line-1] = line
			changed = true
		}
		data = []byte(strings.Join(lines, ""))
		if !changed {
			break
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
	f, err := pins.Parse(path, data)
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

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
