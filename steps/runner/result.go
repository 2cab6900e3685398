package runner

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
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
// maxResultBytes and maxResultLines, each text made printable. A
// not-verified line, or a line that is neither form, makes the step's
// outcome steps.OutcomeNotVerified: not a failure (the run goes on and
// exits 0), never reported as passed. The file of a failed step is not read.
const (
	ResultEnv      = "HALOFORGE_RESULT_FILE"
	resultSuffix   = ".result"
	maxResultBytes = 64 << 10
	maxResultLines = 100
	maxResultText  = 512 // characters of one verified or not-verified text
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
	// A FIFO or a link where the step should have written its file must
	// not hang or redirect the runner.
	f, _, err := safefile.OpenRegular(path, safefile.NoFollow)
	var nr *safefile.NotRegularError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return res
	case errors.As(err, &nr):
		return stepResult{notVerified: []string{"the result file is " + safefile.Kind(nr.Mode) + ", not a regular file"}}
	case err != nil:
		return stepResult{notVerified: []string{"the result file could not be read: " + text.Printable(safefile.Cause(err).Error(), maxResultText)}}
	}
	defer f.Close()
	// Its beginning only: what the step proved before the bound still counts.
	b, err := io.ReadAll(io.LimitReader(f, maxResultBytes+1))
	if err != nil {
		return stepResult{notVerified: []string{"the result file could not be read: " + text.Printable(safefile.Cause(err).Error(), maxResultText)}}
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
		word, msg, ok := strings.Cut(l, "\t")
		msg = text.Printable(msg, maxResultText)
		switch {
		case ok && word == resultVerified && msg != "":
			res.verified = append(res.verified, msg)
		case ok && word == resultNotVerified && msg != "":
			res.notVerified = append(res.notVerified, msg)
		default:
			res.notVerified = append(res.notVerified, fmt.Sprintf("result line %d is not verified<TAB>… or not-verified<TAB>…: %q", i+1, text.Printable(l, maxResultText)))
		}
	}
	if cut {
		res.notVerified = append(res.notVerified, fmt.Sprintf("the result file is longer than %d lines or %d KiB; the rest was not read", maxResultLines, maxResultBytes>>10))
	}
	return res
}
