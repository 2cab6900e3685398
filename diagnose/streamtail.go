package diagnose

import (
	"bytes"
	"io"
	"strings"
)

// streamTail passes a stream through and keeps its last max bytes and the
// count of its newlines, so that a log read from a pipe gets the same
// suspect lines as a file (Suspects reads a file's tail from disk). Its
// memory is bounded whatever the stream's length: at most about 2×max.
type streamTail struct {
	r        io.Reader
	max      int
	buf      []byte
	dropped  bool // bytes before buf were passed on and forgotten
	newlines int
}

func newStreamTail(r io.Reader, max int) *streamTail { return &streamTail{r: r, max: max} }

func (t *streamTail) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.keep(p[:n])
	}
	return n, err
}

func (t *streamTail) keep(b []byte) {
	t.newlines += bytes.Count(b, []byte{'\n'})
	if len(b) >= t.max {
		t.dropped = t.dropped || len(t.buf) > 0 || len(b) > t.max
		t.buf = append(t.buf[:0], b[len(b)-t.max:]...)
		return
	}
	t.buf = append(t.buf, b...)
	if len(t.buf) > 2*t.max {
		n := copy(t.buf, t.buf[len(t.buf)-t.max:])
		t.buf, t.dropped = t.buf[:n], true
	}
}

// suspects are the stream's suspect lines (as Suspects finds them in a
// file), numbered as lines of the whole stream.
func (t *streamTail) suspects(limit int) []Suspect {
	tail, dropped := t.buf, t.dropped
	if len(tail) > t.max {
		tail, dropped = tail[len(tail)-t.max:], true
	}
	first := t.newlines - bytes.Count(tail, []byte{'\n'}) + 1
	if dropped {
		// the first line is cut: drop it, and count it as a line before
		i := bytes.IndexByte(tail, '\n')
		if i < 0 {
			return nil
		}
		tail, first = tail[i+1:], first+1
	}
	return pickSuspects(strings.Split(string(tail), "\n"), first, limit)
}
