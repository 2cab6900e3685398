package text

import (
	"bufio"
	"io"
	"strings"
	"unicode/utf8"
)

// DefaultMaxLine is how many bytes of a line the screen copy keeps; the log
// keeps every byte.
const DefaultMaxLine = 8 << 10

// maxSGR bounds one kept colour sequence; longer ones are dropped.
const maxSGR = 64

// maxCarry bounds the colour state carried from one line to the next.
const maxCarry = 128

// Line is one screen line cut from a raw terminal stream.
type Line struct {
	No    int    // 1-based line number in the raw stream (counts '\n')
	Text  string // printable text only: what the diagnosis matches
	Color string // Text with its SGR colours kept; "" unless KeepColor
	Cut   int    // bytes of text dropped because the line was over MaxLine
}

// parser states; the names follow the ECMA-48 / vt100.net DEC parser.
type sanState uint8

const (
	stGround    sanState = iota
	stEsc                // after ESC
	stEscInter           // ESC followed by intermediates (0x20-0x2F)
	stCSI                // ESC [
	stString             // OSC, DCS, SOS, PM or APC body: swallowed
	stStringEsc          // ESC inside a string: ST if '\' follows
)

// Sanitizer turns a raw pty byte stream into lines that are safe to put on
// a screen or in a report: no cursor movement, erase, titles, clipboard
// (OSC 52), hyperlinks, DCS/APC/PM/SOS strings, bells or other C0 and C1
// controls, no bidi controls (U+202E and the rest of Unicode's
// Bidi_Control); '\r' redraws collapse to the last one, '\b' overwrites;
// invalid UTF-8 becomes U+FFFD. Sequences split across writes are handled,
// and memory stays bounded whatever the input. The zero value is ready to
// use. It parses as an ECMA-48 terminal does (the vt100.net DEC parser),
// so what it keeps is what a terminal would show, minus what could move,
// hide or reorder text.
type Sanitizer struct {
	KeepColor bool // keep well-formed SGR (colour) sequences in Line.Color
	MaxLine   int  // bytes of text kept per line; 0 means DefaultMaxLine

	st       sanState
	cr       bool // saw '\r': a '\n' ends the line, anything else redraws it
	seq      []byte
	seqBad   bool // the CSI sequence cannot be a kept SGR
	utf      [utf8.UTFMax]byte
	un, need int
	text     []byte
	color    []byte
	lastRune int // bytes of the last rune appended to color; 0 after an SGR
	sgr      bool
	carry    []byte // SGR sequences active at the end of the previous line
	hadCtl   bool   // the line held escape sequences or controls
	cut      int
	lineNo   int
	literal  bool // text, not a terminal stream: '\r' and '\b' are dropped, never applied

	// OnLine, when set, takes each line instead of emit, as bytes valid
	// only during the call: the runner batches lines without a string per
	// line. screen is the line with its colours (KeepColor), nil when it
	// is text.
	OnLine func(no int, text, screen []byte, cut int)
}

// Write feeds raw bytes and calls emit for every line they complete.
func (s *Sanitizer) Write(p []byte, emit func(Line)) {
	for i := 0; i < len(p); {
		if s.st == stGround && s.un == 0 && !s.cr {
			j := i
			for j < len(p) && p[j] >= 0x20 && p[j] < 0x7f {
				j++
			}
			if j > i {
				if n := s.wholeLine(p, i, j, emit); n > 0 {
					i = n
					continue
				}
				s.appendText(p[i:j])
				i = j
				continue
			}
		}
		s.step(p[i], emit)
		i++
	}
}

// wholeLine is the fast path for the common case: nothing pending and
// p[i:j], printable ASCII, ends the line. It returns where the next line
// starts, or 0 when the slow path must handle it.
func (s *Sanitizer) wholeLine(p []byte, i, j int, emit func(Line)) int {
	if len(s.text) > 0 || s.cut > 0 || s.hadCtl || len(s.carry) > 0 || j-i > s.maxLine() {
		return 0
	}
	next := 0
	switch {
	case j+1 < len(p) && p[j] == '\r' && p[j+1] == '\n':
		next = j + 2
	case j < len(p) && p[j] == '\n':
		next = j + 1
	default:
		return 0
	}
	s.lineNo++
	if s.OnLine != nil {
		s.OnLine(s.lineNo, p[i:j], nil, 0)
		return next
	}
	l := Line{No: s.lineNo, Text: string(p[i:j])}
	if s.KeepColor {
		l.Color = l.Text
	}
	emit(l)
	return next
}

// Flush ends the stream: the unterminated last line, if any, is emitted and
// an unfinished escape sequence is dropped.
func (s *Sanitizer) Flush(emit func(Line)) {
	if s.un > 0 {
		s.un = 0
		s.appendRune(utf8.RuneError)
	}
	s.st, s.cr = stGround, false
	if len(s.text) > 0 || s.cut > 0 {
		s.emit(emit)
	}
	s.resetLine()
}

// Pending is the text of the line not ended yet (a prompt waits there,
// without its newline).
func (s *Sanitizer) Pending() string { return string(s.text) }

// LinesSeen is how many '\n' the stream held so far.
func (s *Sanitizer) LinesSeen() int { return s.lineNo }

func (s *Sanitizer) maxLine() int {
	if s.MaxLine > 0 {
		return s.MaxLine
	}
	return DefaultMaxLine
}

func (s *Sanitizer) step(b byte, emit func(Line)) {
	switch s.st {
	case stGround:
		s.ground(b, emit)
	case stEsc:
		s.esc(b, emit)
	case stEscInter:
		switch {
		case b >= 0x20 && b <= 0x2f:
		case b >= 0x30 && b <= 0x7e:
			s.st = stGround
		default:
			s.abort(b, emit)
		}
	case stCSI:
		s.csi(b, emit)
	case stString:
		switch b {
		case 0x07, 0x18, 0x1a: // BEL ends an OSC; CAN and SUB cancel
			s.st = stGround
		case 0x1b:
			s.st = stStringEsc
		case '\n':
			// An unterminated string must not swallow the rest of the log.
			s.abort(b, emit)
		}
	case stStringEsc:
		if b == '\\' {
			s.st = stGround
			return
		}
		s.st = stEsc
		s.esc(b, emit)
	}
}

// abort drops a malformed sequence and handles b as ordinary input.
func (s *Sanitizer) abort(b byte, emit func(Line)) {
	s.st = stGround
	if b == 0x18 || b == 0x1a {
		return
	}
	s.ground(b, emit)
}

func (s *Sanitizer) ground(b byte, emit func(Line)) {
	if s.un > 0 {
		if b >= 0x80 && b <= 0xbf {
			s.utf[s.un] = b
			s.un++
			if s.un == s.need {
				s.finishRune()
			}
			return
		}
		s.un = 0
		s.appendRune(utf8.RuneError)
	}
	if s.cr {
		switch b {
		case '\n':
			s.cr = false
			s.endLine(emit)
			return
		case '\r':
			return
		}
		s.cr = false
		s.redraw()
	}
	switch {
	case b == 0x1b:
		s.st, s.hadCtl = stEsc, true
	case b == '\n':
		s.endLine(emit)
	case b == '\r' && !s.literal:
		s.cr = true
	case b == '\t':
		s.appendText([]byte{'\t'})
	case b == 0x08 && !s.literal:
		s.backspace()
	case b < 0x20 || b == 0x7f:
		s.hadCtl = true // NUL, BEL and the other controls never reach a screen
	case b < 0x80:
		s.appendText([]byte{b})
	default:
		s.startRune(b)
	}
}

func (s *Sanitizer) esc(b byte, emit func(Line)) {
	switch {
	case b == '[':
		s.st, s.seq, s.seqBad = stCSI, s.seq[:0], false
	case b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_':
		s.st = stString
	case b >= 0x20 && b <= 0x2f:
		s.st = stEscInter
	case b >= 0x30 && b <= 0x7e:
		s.st = stGround // a two-byte sequence (ESC 7, ESC M, ESC c …): dropped
	default:
		s.abort(b, emit)
	}
}

func (s *Sanitizer) csi(b byte, emit func(Line)) {
	switch {
	case b >= 0x30 && b <= 0x3f:
		if (b < '0' || b > ';') || len(s.seq) >= maxSGR {
			s.seqBad = true // private markers (<=>?) or too long: not a plain SGR
		} else {
			s.seq = append(s.seq, b)
		}
	case b >= 0x20 && b <= 0x2f:
		s.seqBad = true
	case b >= 0x40 && b <= 0x7e:
		s.st = stGround
		if b == 'm' && !s.seqBad && s.KeepColor {
			s.appendSGR()
		}
	default:
		s.abort(b, emit)
	}
}

func (s *Sanitizer) startRune(b byte) {
	switch {
	case b >= 0xc2 && b <= 0xdf:
		s.need = 2
	case b >= 0xe0 && b <= 0xef:
		s.need = 3
	case b >= 0xf0 && b <= 0xf4:
		s.need = 4
	default:
		s.appendRune(utf8.RuneError)
		return
	}
	s.utf[0], s.un = b, 1
}

func (s *Sanitizer) finishRune() {
	n := s.un
	s.un = 0
	r, size := utf8.DecodeRune(s.utf[:n])
	switch {
	case r == utf8.RuneError || size != n:
		s.appendRune(utf8.RuneError) // overlong forms and surrogates
	case r >= 0x80 && r <= 0x9f:
		s.hadCtl = true // C1 controls: U+009B is a CSI on some terminals
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		// Unicode's Bidi_Control set: embeddings, overrides, isolates and
		// marks reorder what follows on screen ("Trojan source").
		s.hadCtl = true
	default:
		s.appendText(s.utf[:n])
	}
}

func (s *Sanitizer) appendRune(r rune) {
	var b [utf8.UTFMax]byte
	n := utf8.EncodeRune(b[:], r)
	s.appendText(b[:n])
}

// appendText adds printable bytes (whole runes) within the line cap.
func (s *Sanitizer) appendText(p []byte) {
	room := s.maxLine() - len(s.text)
	if room <= 0 {
		s.cut += len(p)
		return
	}
	if len(p) > room {
		keep := room
		for keep > 0 && !utf8.RuneStart(p[keep]) {
			keep--
		}
		s.cut += len(p) - keep
		p = p[:keep]
	}
	s.text = append(s.text, p...)
	if s.KeepColor {
		s.color = append(s.color, p...)
		_, size := utf8.DecodeLastRune(p)
		s.lastRune = size
	}
}

// backspace removes the last character, as a terminal would overwrite it.
func (s *Sanitizer) backspace() {
	if len(s.text) == 0 {
		return
	}
	_, size := utf8.DecodeLastRune(s.text)
	s.text = s.text[:len(s.text)-size]
	if s.KeepColor && s.lastRune > 0 {
		s.color = s.color[:len(s.color)-s.lastRune]
		s.lastRune = 0
	}
}

func (s *Sanitizer) appendSGR() {
	if len(s.color) > 2*s.maxLine() {
		return
	}
	if len(s.seq) > 0 {
		if s.seq = keptSGR(s.seq); len(s.seq) == 0 {
			return // only attributes a step may not set (empty, it would reset)
		}
	}
	s.color = append(s.color, "\x1b["...)
	s.color = append(s.color, s.seq...)
	s.color = append(s.color, 'm')
	s.lastRune, s.sgr = 0, true
	if isReset(s.seq) {
		s.carry = s.carry[:0]
		return
	}
	if len(s.carry)+len(s.seq)+3 <= maxCarry {
		s.carry = append(s.carry, "\x1b["...)
		s.carry = append(s.carry, s.seq...)
		s.carry = append(s.carry, 'm')
	}
}

// keptSGR drops, in place, the SGR attributes that hide or disguise text:
// blink (5, 6), reverse (7) and conceal (8), with which a step could hide
// its own later lines on screen (the log keeps them). Colours stay,
// including 38;5;N and 38;2;R;G;B, whose 5 and 2 are not attributes.
// A sequence left with nothing is returned empty.
func keptSGR(seq []byte) []byte {
	params := strings.Split(string(seq), ";")
	out := params[:0]
	for i := 0; i < len(params); i++ {
		p := params[i]
		switch p {
		case "5", "6", "7", "8":
			continue
		case "38", "48", "58":
			n := 0 // the colour's own fields
			if i+1 < len(params) && params[i+1] == "5" {
				n = 2
			} else if i+1 < len(params) && params[i+1] == "2" {
				n = 4
			}
			end := min(i+n, len(params)-1)
			out = append(out, params[i:end+1]...)
			i = end
			continue
		}
		out = append(out, p)
	}
	return append(seq[:0], strings.Join(out, ";")...)
}

func isReset(params []byte) bool {
	for _, c := range params {
		if c != '0' && c != ';' {
			return false
		}
	}
	return true
}

// redraw starts the line again: a '\r' not followed by '\n' is a progress
// bar or spinner redrawing itself, and only its last state matters.
func (s *Sanitizer) redraw() {
	s.text, s.cut = s.text[:0], 0
	if s.KeepColor {
		s.color = append(s.color[:0], s.carry...)
		s.lastRune, s.sgr = 0, len(s.carry) > 0
	}
}

func (s *Sanitizer) endLine(emit func(Line)) {
	if len(s.text) > 0 || s.cut > 0 || !s.hadCtl {
		s.emit(emit)
	}
	s.lineNo++
	s.resetLine()
}

func (s *Sanitizer) emit(emit func(Line)) {
	var screen []byte
	if s.KeepColor {
		if s.sgr {
			s.color = append(s.color, "\x1b[0m"...)
		}
		screen = s.color
	}
	if s.OnLine != nil {
		s.OnLine(s.lineNo+1, s.text, screen, s.cut)
		return
	}
	l := Line{No: s.lineNo + 1, Text: string(s.text), Cut: s.cut}
	if s.KeepColor {
		l.Color = string(screen)
	}
	emit(l)
}

func (s *Sanitizer) resetLine() {
	s.text, s.cut, s.hadCtl = s.text[:0], 0, false
	// Long lines grew the buffers; give the memory back.
	if cap(s.text) > 4*s.maxLine() {
		s.text = nil
	}
	if s.KeepColor {
		s.color = append(s.color[:0], s.carry...)
		s.lastRune, s.sgr = 0, len(s.carry) > 0
	}
}

// WriteScreen copies a raw terminal stream (a step's log) to w as a screen
// shows it, a line at a time: Sanitizer's lines, with their colours when
// keepColor; the last line without its newline ends with one. Memory stays
// bounded whatever r holds.
func WriteScreen(w io.Writer, r io.Reader, keepColor bool) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var werr error
	emit := func(l Line) {
		if werr != nil {
			return
		}
		s := l.Text
		if keepColor {
			s = l.Color
		}
		if _, err := bw.WriteString(s); err != nil {
			werr = err
			return
		}
		werr = bw.WriteByte('\n')
	}
	s := Sanitizer{KeepColor: keepColor}
	buf := make([]byte, 64<<10)
	for werr == nil {
		n, err := r.Read(buf)
		s.Write(buf[:n], emit)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	s.Flush(emit)
	if werr != nil {
		return werr
	}
	return bw.Flush()
}
