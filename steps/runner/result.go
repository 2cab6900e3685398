package runner

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"
)

// The outcome protocol of verify steps. A step that exits 0 has run to
// its end, which does not prove that what it built works. So every step
// gets ResultEnv, the path of its result file (<run-dir>/<step>.result,
// absent when the step starts), and may append lines to it:
//
//	verified<TAB>what was proven       (a kernel ran on gfx1151)
//	not-verified<TAB>why not           (offline: no model to generate with)
//
// After the step exits 0 the runner reads the file, at most
// maxResultBytes and maxResultLines, control characters stripped. A
// not-verified line, or a line that is neither form, makes the step's
// outcome steps.OutcomeNotVerified: not a failure (the run goes on and
// exits 0), never reported as passed. The file of a failed step is not read.
const (
	ResultEnv      = "HALOFORGE_RESULT_FILE"
	resultSuffix   = ".result"
	maxResultBytes = 64 << 10
	maxResultLines = 100
	maxResultText  = 512 // bytes of one verified or not-verified text
)

// Keywords of a result line.
const (
	resultVerified    = "verified"
	resultNotVerified = "not-verified"
)

// resultPath is where step writes its result file.
func (r *Runner) resultPath(step string) string {
	return filepath.Join(r.runDir, step+resultSuffix)
}

// stepResult is what a step's result file said.
type stepResult struct {
	verified    []string // what the step proved
	notVerified []string // what it could not check, and why
}

// readResult reads a step's result file. A file the step did not write is
// no result; a file that cannot be read as one (not a regular file, too
// long, a line of no known form) is reported as not verified, because
// nothing then says the step proved what it should.
func readResult(path string) stepResult {
	var res stepResult
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return res
	case err != nil:
		return stepResult{notVerified: []string{"the result file could not be read: " + clean(unwrapPath(err).Error())}}
	case !fi.Mode().IsRegular():
		return stepResult{notVerified: []string{"the result file is not a regular file"}}
	}
	// O_NONBLOCK and O_NOFOLLOW: a file swapped for a FIFO or a link
	// since the Lstat must not hang or redirect the runner.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return stepResult{notVerified: []string{"the result file could not be read: " + clean(unwrapPath(err).Error())}}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxResultBytes+1))
	if err != nil {
		return stepResult{notVerified: []string{"the result file could not be read: " + clean(unwrapPath(err).Error())}}
	}
	cut := len(b) > maxResultBytes
	if cut {
		b = b[:maxResultBytes]
		if i := strings.LastIndexByte(string(b), '\n'); i >= 0 {
			b = b[:i] // no half line
		}
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) > maxResultLines {
		lines, cut = lines[:maxResultLines], true
	}
	for i, l := range lines {
		l = strings.TrimSuffix(l, "\r")
		if strings.TrimSpace(l) == "" {
			continue
		}
		word, text, ok := strings.Cut(l, "\t")
		text = clean(text)
		switch {
		case ok && word == resultVerified && text != "":
			res.verified = append(res.verified, text)
		case ok && word == resultNotVerified && text != "":
			res.notVerified = append(res.notVerified, text)
		default:
			res.notVerified = append(res.notVerified, fmt.Sprintf("result line %d is not verified<TAB>… or not-verified<TAB>…: %q", i+1, clean(l)))
		}
	}
	if cut {
		res.notVerified = append(res.notVerified, fmt.Sprintf("the result file is longer than %d lines or %d KiB; the rest was not read", maxResultLines, maxResultBytes>>10))
	}
	return res
}

// clean makes a step's text safe for a terminal and a report: escape
// sequences and control characters out (tabs become spaces), invalid UTF-8
// replaced, at most maxResultText bytes.
func clean(s string) string {
	s = SanitizeLine(strings.ReplaceAll(s, "\t", " "), false)
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > maxResultText {
		s = strings.ToValidUTF8(s[:maxResultText], "") + "…"
	}
	return s
}
