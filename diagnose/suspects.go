package diagnose

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"unsafe"

	"github.com/haloforge/haloforge/internal/safefile"
)

// Suspect is a line that looks like the error of a failure no rule
// recognised: where a reader of the log would look first.
type Suspect struct {
	Line int    `json:"line"`
	Text string `json:"text"`
}

// suspectTail is how much of a log's end Suspects looks at line by line: a
// failure's error is near the end, and the rest of a 200 MB log only has
// its newlines counted.
const suspectTail = 4 << 20

// suspectCluster is how far back from the last error-looking line the
// first line of the same burst may be: a compiler error and the make,
// ninja or pip lines that report it come together.
const suspectCluster = 40

var (
	// strongError are the words tools put on the line that says what failed.
	strongError = regexp.MustCompile(`(^|[^\w-])(error|Error|ERROR)(:|\]|!| \d| [A-Z(])|\bFAILED\b|\bfatal( error)?:|\bFatal\b|` +
		`^Traceback \(most recent call last\)|\b\w*(Error|Exception): |\bKilled\b|Segmentation fault|\bAborted\b|` +
		`core dumped|\bpanic: |\bSIGSEGV\b|\bSIGABRT\b|exited with code [1-9]|died with <Signals`)
	// weakError are words that often, not always, carry the cause.
	weakError = regexp.MustCompile(`(?i)\b(cannot|can't|could not|unable to|failed|not found|no such file|permission denied|` +
		`undefined (symbol|reference)|out of memory|timed out|refused)\b`)
	// notError are the false friends: warning flags, zero counts and
	// success lines that hold the words above.
	notError = regexp.MustCompile(`-Werror|\b0 errors?\b|\bno errors?\b|(?i)\bwarning\b|error_|_error\b|errors=0|ignore-errors|` +
		`\b(Successfully|succeeded)\b|\b0 failed\b`)
)

// Suspects returns up to limit lines of the log at path that look like the
// error of its failure, earliest first: the burst of error-looking lines
// that ends last in the log, from its first line on, so a compiler's own
// message comes before the build tool's report of it. Lines that only look
// weakly like an error count when there is no strong one. It reads the
// last suspectTail bytes and, when it found suspects there, counts the
// lines before them, so the line numbers are the log's own. A directory, a
// bundle archive or a stream (a FIFO, a device) is not one log on disk,
// so it has no suspects.
func Suspects(path string, limit int) ([]Suspect, error) {
	if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() || isTarGz(path) {
		return nil, err
	}
	f, info, err := safefile.OpenRegular(path, safefile.Follow)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	start := max(0, info.Size()-suspectTail)
	tail := make([]byte, info.Size()-start)
	if _, err := f.ReadAt(tail, start); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	first := 1
	if start > 0 {
		// the first line is cut: drop it, and count it as a line before
		if i := bytes.IndexByte(tail, '\n'); i >= 0 {
			tail, first = tail[i+1:], 2
		}
	}
	// tail is not changed after this: its lines are read in place
	out := pickSuspects(strings.Split(unsafe.String(unsafe.SliceData(tail), len(tail)), "\n"), first, limit)
	if len(out) == 0 || start == 0 {
		return out, nil
	}
	before, err := countLines(io.NewSectionReader(f, 0, start))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range out {
		out[i].Line += before
	}
	return out, nil
}

// pickSuspects does Suspects' choosing on lines numbered from firstNo.
func pickSuspects(lines []string, firstNo, limit int) []Suspect {
	// Lines are cleaned when first looked at: on a failing log only the
	// last few are.
	clean := make([]lineText, len(lines))
	line := func(i int) *lineText {
		if l := &clean[i]; !l.cleaned {
			l.text, l.cleaned = cleanText(lines[i]), true
		}
		return &clean[i]
	}
	for _, strong := range []bool{true, false} {
		hit := func(i int) bool { return line(i).looksLikeError(strong) }
		last := -1
		for i := len(clean) - 1; i >= 0; i-- {
			if hit(i) {
				last = i
				break
			}
		}
		if last < 0 {
			continue
		}
		// walk back through the burst: each earlier hit within reach of the
		// burst's current start extends it
		from := last
		for i := last - 1; i >= 0 && from-i <= suspectCluster; i-- {
			if hit(i) {
				from = i
			}
		}
		var out []Suspect
		seen := map[string]bool{}
		for i := from; i <= last && len(out) < limit; i++ {
			if hit(i) && !seen[clean[i].text] {
				seen[clean[i].text] = true
				out = append(out, Suspect{Line: firstNo + i, Text: capValid(clean[i].text)})
			}
		}
		return out
	}
	return nil
}

// looksLike reports whether a clean line holds re's words and none of the
// false friends. It is the meaning looksLikeError implements faster.
func looksLike(re *regexp.Regexp, line string) bool {
	return line != "" && re.MatchString(line) && !notError.MatchString(line)
}

// cleanText is a raw line as a terminal shows it, without a CI timestamp
// and surrounding space. The result shares the line's bytes unless the
// line holds escapes.
func cleanText(raw string) string {
	b := cleanLine(unsafe.Slice(unsafe.StringData(raw), len(raw)))
	b = bytes.TrimSpace(stripTimestamp(b))
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// countLines counts the newlines r holds.
func countLines(r io.Reader) (int, error) {
	buf := make([]byte, 256<<10)
	n := 0
	for {
		k, err := r.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
