package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
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
	dropped  int   // screen lines not shown at the end of the step
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
	stopRead  atomic.Bool
	abandoned chan struct{} // closed when stopReader gave up on the reader

	supervisor int         // the step's supervisor's pid: its descendants are the step
	slave      string      // the pty's slave device, /dev/pts/N
	waiting    atomic.Bool // announced as waiting for input, and silent since
	askedAt    int64       // lastWrite when the wait was announced (processor only)
	masterMu   sync.Mutex  // held to write to master, or to close it (shut)
	masterShut bool

	// The progress (progress.go), read from the last lines of a chunk and
	// the open line at most every Options.ProgressEvery; nil when off.
	prog      *progressTracker
	recent    string // the text of the last chunk's lines
	recentSp  []span // its last recentLines lines
	progAt    time.Time
	progDirty bool   // lines came since the last look
	openSent  string // the open line last sent

	an      Analyzer
	seen    map[string]bool
	tail    [tailLines]string
	tailN   int
	lagging bool
	res     streamResult
	batch   batch
	dropped int // screen lines not shown since the last Lines that got through
}

// batch holds the lines of one chunk in one buffer until flush, so that a
// whole chunk costs one string instead of one or two per line.
type batch struct {
	buf   []byte
	lines []span
}

// span locates one line in batch.buf: buf[text0:text1] is what the
// diagnosis and the tail read, buf[screen0:screen1] what a screen shows
// (the same text, or its copy with colours); cut is the bytes only the log has.
type span struct {
	no, cut                        int
	text0, text1, screen0, screen1 int
}

func newStream(master, logf *os.File, logPath string, r *Runner, s steps.PlannedStep) *stream {
	st := &stream{r: r, step: s, master: master, logf: logf, logPath: logPath,
		notify: make(chan struct{}, 1), readDone: make(chan struct{}), procDone: make(chan struct{}),
		abandoned: make(chan struct{}), seen: map[string]bool{}}
	st.lastWrite.Store(time.Now().UnixNano())
	if r.o.Analyzer != nil {
		st.an = r.o.Analyzer(r.plan.Track.ID, s.ID)
	}
	if r.o.ProgressEvery > 0 {
		st.prog = newProgressTracker()
	}
	return st
}

// read copies the pty to the log until every holder of the pty is gone
// (EIO) or the runner stops it after the supervisor exited.
func (st *stream) read() {
	defer close(st.readDone)
	// One thread for the whole copy: unlocked, the goroutine came back from
	// each ppoll on whichever thread had a P, hopping between threads and
	// CPUs (perf showed the reader on five threads). Locked, it resumes on
	// its own thread and keeps its CPU's cache: BenchmarkThroughput went
	// from 0.76-0.80x to 0.90-1.0x script(1) on 2 cores.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fd := int(st.master.Fd()) // detaches the descriptor from the netpoller
	if err := unix.SetNonblock(fd, true); err != nil {
		st.werr = fmt.Errorf("pty: %w", err)
		return
	}
	buf := make([]byte, 128<<10)
	for {
		n, err := readNow(fd, buf)
		if errors.Is(err, unix.EAGAIN) {
			if err := waitReadable(fd); err != nil && !errors.Is(err, unix.EINTR) {
				return
			}
			continue
		}
		if st.stopRead.Load() {
			return // bytes past the drain deadline, or the wake-up byte
		}
		if n > 0 {
			st.got(buf[:n])
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			return // EIO: the last process holding the pty is gone
		}
	}
}

// readNow reads what the pty holds without blocking and without telling
// the Go scheduler, which is what makes it cheap: a pty hands out at most
// 4 KiB per read, and through syscall.Read every one of them enters and
// leaves the scheduler's syscall state, which on a 2-core machine woke
// sysmon and other threads often enough to cost the child 15-20 % of its
// speed (BenchmarkThroughput; a plain syscall.Read loop reached 0.74x
// script(1), this one 0.82x). It never blocks (O_NONBLOCK), so holding
// the P through it is as harmless as any short computation.
func readNow(fd int, buf []byte) (int, error) {
	var p unsafe.Pointer
	if len(buf) > 0 {
		p = unsafe.Pointer(&buf[0])
	}
	n, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(p), uintptr(len(buf)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// waitReadable blocks, as an ordinary syscall the scheduler knows about,
// until the pty has output or is hung up.
func waitReadable(fd int) error {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	_, err := unix.Ppoll(fds, nil, nil)
	return err
}

// got puts a chunk of output in the log, then tells the processor.
func (st *stream) got(p []byte) {
	st.lastWrite.Store(time.Now().UnixNano())
	if st.waiting.Load() {
		st.waiting.Store(false) // it answered, or went on
	}
	if st.werr == nil {
		if _, werr := st.logf.Write(p); werr != nil {
			// Keep reading so the child is not blocked; the run fails.
			st.werr = fmt.Errorf("log %s: %w", st.logPath, safefile.Cause(werr))
		} else {
			st.written.Add(int64(len(p)))
		}
	}
	select {
	case st.notify <- struct{}{}:
	default:
	}
}

// stopReader ends a reader that is still blocked after the supervisor
// exited, because a process it left behind keeps the pty open: it waits
// up to drain for EIO, then writes a byte into the pty so the blocked read
// returns and sees the stop.
func (st *stream) stopReader(slaveName string, drain time.Duration) {
	select {
	case <-st.readDone:
		return
	case <-time.After(drain):
	}
	st.stopRead.Store(true)
	if f, err := os.OpenFile(slaveName, os.O_WRONLY|syscall.O_NOCTTY, 0); err == nil {
		_, _ = f.Write([]byte{'\n'})
		f.Close()
	}
	select {
	case <-st.readDone:
	case <-time.After(5 * time.Second):
		// The pty would not take the byte: leave the reader blocked (it
		// exits with the process) rather than the run.
		close(st.abandoned)
	}
}

// waitReader returns once the reader is done or abandoned.
func (st *stream) waitReader() {
	select {
	case <-st.readDone:
	case <-st.abandoned:
	}
}

// process follows the log file until the reader is done and all of it is
// read, then ends the analysis.
func (st *stream) process() {
	defer close(st.procDone)
	yieldToTheStep()
	san := &text.Sanitizer{KeepColor: st.r.o.KeepColor, MaxLine: st.r.o.MaxLine, OnLine: st.add}
	rf, err := os.Open(st.logPath)
	if err != nil {
		st.waitReader()
		st.res.err = fmt.Errorf("follow log: %w", err)
		return
	}
	defer rf.Close()
	tick := time.NewTicker(st.r.o.StallCheck)
	defer tick.Stop()
	input := time.NewTicker(inputCheck)
	defer input.Stop()
	var progressTick <-chan time.Time
	if st.prog != nil {
		t := time.NewTicker(st.r.o.ProgressEvery)
		defer t.Stop()
		progressTick = t.C
	}
	buf := make([]byte, 256<<10)
	var off int64
	finished := false
	for {
		if avail := st.written.Load() - off; avail > 0 {
			n, err := rf.ReadAt(buf[:min(avail, int64(len(buf)))], off)
			if n > 0 {
				st.lagging = st.written.Load()-off > lagLimit
				san.Write(buf[:n], nil)
				st.flush()
				st.progress(san, false)
				off += int64(n)
				if n < len(buf)/2 && !finished {
					// Let output gather: waking for every pty read costs more
					// CPU than the lines themselves, and that CPU is the child's.
					time.Sleep(gather)
				}
			}
			if err != nil && !errors.Is(err, io.EOF) {
				st.res.err = fmt.Errorf("follow log: %w", err)
				st.waitReader()
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
		case <-st.abandoned:
			finished = true
		case <-tick.C:
			st.idle()
		case <-input.C:
			st.checkInput(san.Pending())
		case <-progressTick:
			st.progress(san, true)
		}
	}
	st.lagging = false
	san.Flush(nil)
	st.flush()
	st.res.bytes = off
	st.end()
}

// processorNice is the nice value of the processor's thread. On a busy or
// small machine the sanitiser and the diagnosis compete for CPU with the
// step itself and with the pty reader it waits on; the processor can lag
// (the log file is its buffer, and a lagging screen drops lines, not bytes),
// so it is the one that should wait. Measured with BenchmarkThroughput on
// 2 cores: 43-52 MB/s against 38-44 MB/s at the default priority. Not 19:
// against a compiler using every core, nice 10 still gets about a tenth of
// a core (CFS weights 110 against 1024), some 10 MB/s of output, far above
// what a build prints; nice 19 would get a sixtieth and freeze the screen.
const processorNice = 10

// yieldToTheStep gives the calling goroutine a thread of its own at
// processorNice. The goroutine never unlocks the thread, so the runtime
// ends the thread with it (or, for the main thread, parks it for good) and
// the lower priority reaches no other code; threads the runtime creates
// meanwhile come from its template thread, not from this one
// (runtime.LockOSThread docs, runtime.newm). A refusal (seccomp, say)
// leaves the default priority: slower, not wrong.
func yieldToTheStep() {
	runtime.LockOSThread()
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), processorNice)
}

// add keeps one sanitised line of the chunk being read (the Sanitizer's
// sink: text and screen are valid only during the call). screen is the
// line with its colours, nil when it is the text itself.
func (st *stream) add(no int, text, screen []byte, cut int) {
	b := &st.batch
	t0 := len(b.buf)
	b.buf = append(b.buf, text...)
	t1 := len(b.buf)
	s0 := t0
	s1 := t1
	if screen != nil {
		s0 = t1
		b.buf = append(b.buf, screen...)
		s1 = len(b.buf)
	}
	b.lines = append(b.lines, span{no: no, cut: cut, text0: t0, text1: t1, screen0: s0, screen1: s1})
}

// flush is the one way lines leave the stream: it feeds the chunk's lines
// to the tail and the diagnosis, sends them as one Lines event (or counts
// them as dropped while the screen lags), then the findings they made, so
// that a screen shows the cause before the diagnosis of it.
func (st *stream) flush() {
	b := &st.batch
	if len(b.lines) == 0 {
		return
	}
	all := string(b.buf)
	if st.prog != nil {
		// Only the chunk's last lines, for progress: a copy of a few spans
		// per chunk, whatever its size.
		st.recent = all
		st.recentSp = append(st.recentSp[:0], b.lines[max(0, len(b.lines)-recentLines):]...)
		st.progDirty = true
		// These lines end the open line a consumer shows: one open again
		// is news, even with the same text (the same prompt twice).
		st.openSent = ""
	}
	var found []diagnose.Finding
	cut := false
	for _, l := range b.lines {
		text := all[l.text0:l.text1]
		st.tail[st.tailN%tailLines] = text
		st.tailN++
		st.res.lines = l.no
		cut = cut || l.cut > 0
		if st.an != nil {
			found = append(found, st.an.Line(l.no, text)...)
		}
	}
	if st.lagging {
		st.dropped += len(b.lines)
	} else {
		e := Lines{Step: st.step.ID, First: b.lines[0].no, Text: make([]string, len(b.lines))}
		if cut {
			e.Cut = make([]int, len(b.lines))
		}
		for i, l := range b.lines {
			e.Text[i] = all[l.screen0:l.screen1]
			if cut {
				e.Cut[i] = l.cut
			}
		}
		st.sendLines(e)
	}
	b.buf, b.lines = b.buf[:0], b.lines[:0]
	for _, f := range found {
		st.finding(f)
	}
}

// progress reads the progress of the lines that came since the last look
// and of the open line, at most every Options.ProgressEvery, and offers
// what changed; idle is the ticker's call, which looks at the open line
// even when nothing was read.
func (st *stream) progress(san *text.Sanitizer, idle bool) {
	if st.prog == nil {
		return
	}
	now := time.Now()
	if now.Sub(st.progAt) < st.r.o.ProgressEvery {
		return
	}
	if !st.progDirty && !idle {
		return
	}
	st.progAt = now
	open := san.Pending()
	for _, l := range st.recentSp {
		if r, ok := parseProgress(st.recent[l.text0:l.text1]); ok {
			st.prog.see(r, now)
		}
	}
	if r, ok := parseProgress(open); ok {
		st.prog.see(r, now)
	}
	st.recent, st.recentSp, st.progDirty = "", st.recentSp[:0], false
	if open != st.openSent && st.r.offer(OpenLine{Step: st.step.ID, Text: open}) {
		st.openSent = open
	}
	p, ok := st.prog.progress(now)
	if !st.prog.changed(p, ok) {
		return
	}
	p.Step = st.step.ID
	if ok {
		p.RunETA = st.r.runETA(st.r.stepIdx, now.Sub(st.r.stepStart), p.ETA)
	}
	if st.r.offer(p) {
		st.prog.sent, st.prog.sentAny = p, ok
	}
}

// sendLines hands lines to the consumer unless it is behind; then they are
// counted, and the next Lines that gets through (or StepFinished) says so.
func (st *stream) sendLines(e Lines) {
	e.Dropped = st.dropped
	if st.r.offer(e) {
		st.dropped = 0
	} else {
		st.dropped += len(e.Text)
	}
}

func (st *stream) idle() {
	since := time.Since(time.Unix(0, st.lastWrite.Load()))
	if st.an == nil || since < st.r.o.StallCheck {
		return
	}
	for _, f := range st.an.Idle(since) {
		st.finding(f)
	}
}

func (st *stream) finding(f diagnose.Finding) {
	f.Step = st.step.ID
	if !st.seen[f.Family] {
		st.seen[f.Family] = true
		st.res.findings = append(st.res.findings, f)
	}
	st.r.send(Found{Step: st.step.ID, Finding: f})
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
			st.r.send(Found{Step: st.step.ID, Finding: f})
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
	res.dropped = st.dropped
	select {
	case <-st.readDone: // werr is final
		res.err = errors.Join(st.werr, res.err)
	default:
		res.err = errors.Join(errors.New("the pty reader did not stop; output after the step ended may be missing"), res.err)
	}
	if res.findings == nil {
		res.findings = []diagnose.Finding{}
	}
	n := min(st.tailN, tailLines)
	res.tail = make([]string, 0, n)
	for i := st.tailN - n; i < st.tailN; i++ {
		res.tail = append(res.tail, strings.Clone(st.tail[i%tailLines])) // not the whole chunk it came from
	}
	return res
}
