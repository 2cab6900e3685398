package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
)

// lagLimit is how far (bytes) the screen copy may fall behind the log
// before its lines are dropped rather than shown late; the diagnosis still
// reads every line.
const lagLimit = 4 << 20

// gather is how long the processor lets a step's output accumulate between
// reads; no eye sees it, and it turns thousands of wake-ups into a few.
const gather = 2 * time.Millisecond

// streamResult is what a step's output amounted to.
type streamResult struct {
	bytes    int64
	lines    int
	tail     []string
	findings []diagnose.Finding
	err      error // the log could not be written: bytes were lost
}

// stream moves a step's output: the reader copies the pty to the log file
// and nothing else, so the child never waits for a screen or a regular
// expression; the processor follows the log file (the file is the buffer,
// so memory stays bounded and no byte escapes the diagnosis) and turns it
// into sanitised lines, findings and events.
type stream struct {
	r       *Runner
	step    steps.PlannedStep
	master  *os.File
	logf    *os.File
	logPath string

	written   atomic.Int64 // bytes in the log file
	lastWrite atomic.Int64 // unix nanoseconds of the last output
	notify    chan struct{}
	readDone  chan struct{}
	procDone  chan struct{}
	werr      error // set by read before readDone closes

	an      Analyzer
	seen    map[string]bool
	tail    [tailLines]string
	tailN   int
	lagging bool
	now     time.Time
	res     streamResult
	batch   []string // BatchLines: lines not sent yet
	batchNo int      // line number of batch[0]
}

func newStream(master, logf *os.File, logPath string, r *Runner, s steps.PlannedStep) *stream {
	st := &stream{r: r, step: s, master: master, logf: logf, logPath: logPath,
		notify: make(chan struct{}, 1), readDone: make(chan struct{}), procDone: make(chan struct{}), seen: map[string]bool{}}
	st.lastWrite.Store(time.Now().UnixNano())
	if r.o.Analyzer != nil {
		st.an = r.o.Analyzer(r.plan.Track.ID, s.ID)
	}
	return st
}

// read copies the pty to the log until every holder of the pty is gone
// (EIO) or the drain deadline passes.
func (st *stream) read() {
	defer close(st.readDone)
	buf := make([]byte, 128<<10)
	for {
		n, err := st.master.Read(buf)
		if n > 0 {
			st.lastWrite.Store(time.Now().UnixNano())
			if st.werr == nil {
				if _, werr := st.logf.Write(buf[:n]); werr != nil {
					// Keep reading so the child is not blocked; the run fails.
					st.werr = fmt.Errorf("log %s: %w", st.logPath, unwrapPath(werr))
				} else {
					st.written.Add(int64(n))
				}
			}
			select {
			case st.notify <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

// process follows the log file until the reader is done and all of it is
// read, then ends the analysis.
func (st *stream) process() {
	defer close(st.procDone)
	san := &Sanitizer{KeepColor: st.r.o.KeepColor, MaxLine: st.r.o.MaxLine}
	rf, err := os.Open(st.logPath)
	if err != nil {
		<-st.readDone
		st.res.err = fmt.Errorf("follow log: %w", err)
		return
	}
	defer rf.Close()
	tick := time.NewTicker(st.r.o.StallCheck)
	defer tick.Stop()
	buf := make([]byte, 256<<10)
	var off int64
	finished := false
	for {
		if avail := st.written.Load() - off; avail > 0 {
			n, err := rf.ReadAt(buf[:min(avail, int64(len(buf)))], off)
			if n > 0 {
				st.now, st.lagging = time.Now(), st.written.Load()-off > lagLimit
				san.Write(buf[:n], st.line)
				st.sendBatch()
				off += int64(n)
				if n < len(buf)/2 && !finished {
					// Let output gather: waking for every pty read costs more
					// CPU than the lines themselves, and that CPU is the child's.
					time.Sleep(gather)
				}
			}
			if err != nil && !errors.Is(err, io.EOF) {
				st.res.err = fmt.Errorf("follow log: %w", err)
				<-st.readDone
				break
			}
			continue
		}
		if finished {
			break
		}
		select {
		case <-st.notify:
		case <-st.readDone:
			finished = true
		case <-tick.C:
			st.idle()
		}
	}
	st.now, st.lagging = time.Now(), false
	san.Flush(st.line)
	st.sendBatch()
	st.res.bytes = off
	st.end()
}

// line takes one sanitised line to the diagnosis, the tail and the screen.
func (st *stream) line(l Line) {
	st.tail[st.tailN%tailLines] = l.Text
	st.tailN++
	st.res.lines = l.No
	switch {
	case st.lagging:
		st.r.dropped++
	case st.r.o.BatchLines:
		st.addToBatch(l)
	case st.r.o.KeepColor:
		st.r.sendLine(Event{Kind: EventLine, Step: st.step.ID, Line: l.Color, LineNo: l.No, Cut: l.Cut, At: st.now})
	default:
		st.r.sendLine(Event{Kind: EventLine, Step: st.step.ID, Line: l.Text, LineNo: l.No, Cut: l.Cut, At: st.now})
	}
	// The line goes out before its finding, so a screen shows the cause first.
	if st.an != nil {
		if f := st.an.Line(l.No, l.Text); f != nil {
			st.finding(*f)
			st.queued()
		}
	}
}

func (st *stream) addToBatch(l Line) {
	if len(st.batch) == 0 {
		st.batchNo = l.No
	}
	text := l.Text
	if st.r.o.KeepColor {
		text = l.Color
	}
	if l.Cut > 0 {
		text += fmt.Sprintf(" … (%d more bytes in the log)", l.Cut)
	}
	st.batch = append(st.batch, text)
}

// sendBatch hands the lines gathered so far to the consumer, or drops them.
func (st *stream) sendBatch() {
	if len(st.batch) == 0 {
		return
	}
	st.r.sendLine(Event{Kind: EventLine, Step: st.step.ID, Lines: st.batch, LineNo: st.batchNo, At: st.now})
	st.batch = nil // the consumer owns the sent slice
}

func (st *stream) idle() {
	since := time.Since(time.Unix(0, st.lastWrite.Load()))
	if st.an == nil || since < st.r.o.StallCheck {
		return
	}
	if f := st.an.Idle(since); f != nil {
		st.finding(*f)
		st.queued()
	}
}

// queued takes the findings an analyser holds back when one line starts
// several families at once (diagnose.Matcher's Next).
func (st *stream) queued() {
	q, ok := st.an.(interface{ Next() *diagnose.Finding })
	if !ok {
		return
	}
	for f := q.Next(); f != nil; f = q.Next() {
		st.finding(*f)
	}
}

func (st *stream) finding(f diagnose.Finding) {
	st.sendBatch() // the lines before the finding go first
	f.Step = st.step.ID
	if !st.seen[f.Family] {
		st.seen[f.Family] = true
		st.res.findings = append(st.res.findings, f)
	}
	st.r.send(Event{Kind: EventFinding, Step: st.step.ID, Finding: &f})
}

// end asks the analyser for its final word; families it reports that were
// not announced live are announced now.
func (st *stream) end() {
	if st.an == nil {
		return
	}
	final := st.an.End()
	if len(final) == 0 {
		return
	}
	byFamily := map[string]bool{}
	out := make([]diagnose.Finding, 0, len(final)+len(st.res.findings))
	for _, f := range final {
		f.Step = st.step.ID
		byFamily[f.Family] = true
		out = append(out, f)
		if !st.seen[f.Family] {
			st.seen[f.Family] = true
			st.r.send(Event{Kind: EventFinding, Step: st.step.ID, Finding: &f})
		}
	}
	for _, f := range st.res.findings {
		if !byFamily[f.Family] {
			out = append(out, f)
		}
	}
	st.res.findings = out
}

// result waits for the stream to end and returns what it saw.
func (st *stream) result() streamResult {
	<-st.procDone
	res := st.res
	res.err = errors.Join(st.werr, res.err)
	if res.findings == nil {
		res.findings = []diagnose.Finding{}
	}
	n := min(st.tailN, tailLines)
	res.tail = make([]string, 0, n)
	for i := st.tailN - n; i < st.tailN; i++ {
		res.tail = append(res.tail, st.tail[i%tailLines])
	}
	return res
}
