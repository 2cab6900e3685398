package tui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/haloforge/haloforge/detect/hostfix"
	"github.com/haloforge/haloforge/internal/text"
)

// HostFixer makes and applies the host fixes, for the host-fix screen, as
// doctor --plan and --apply make them.
type HostFixer interface {
	// HostFix plans the fixes for the detected machine, with what applying
	// them changes now.
	HostFix(ctx context.Context) (*HostFix, error)
	// ApplyHostFix makes exactly the changes the user confirmed (fix.Changes),
	// writing its progress to out; it runs with the terminal handed over,
	// since sudo asks for a password there. It never reboots.
	ApplyHostFix(ctx context.Context, fix *HostFix, out io.Writer) (*HostFixResult, error)
}

// HostFix is the host-fix plan as the host-fix screen shows it: the plan
// `haloforge doctor --plan` makes for the detected machine, and what
// applying it changes now, as `doctor --apply` shows it.
type HostFix struct {
	Plan *hostfix.Plan
	// Changes is hostfix.Preview's text: the file diffs and the commands run
	// as root. The user confirms exactly this; "" when it is not known here.
	Changes string
	// Applicable is true when applying would change something.
	Applicable bool
	// PreviewErr says why Changes could not be computed ("" when it was).
	PreviewErr string
	// Refusal says why this session never applies (the demo); "" when it can.
	Refusal string
}

// HostFixResult is what applying the host fixes did.
type HostFixResult struct {
	BackupDir string   // "" when nothing was changed
	Commands  []string // what was written and run, in order (the backup's manifest)
}

// Messages of the host-fix screen.
type (
	hostFixPlannedMsg struct {
		fix *HostFix
		err error
	}
	hostFixAppliedMsg struct {
		res    *HostFixResult
		output string // what the apply printed, its tail
		err    error
	}
)

// confirmWord is what the user types to apply, as `doctor --apply` asks.
const confirmWord = "APPLY"

// hostFixScreen shows the host fixes doctor found (the bootloader, each
// action with its command, the diffs and commands applying makes now), asks
// for APPLY, then applies them through the Backend with the terminal handed
// over, since sudo asks for its password there, and shows what it did.
type hostFixScreen struct {
	*common
	fix      *HostFix
	planning bool // the plan is being made
	applied  bool // an apply ran: its result (or error) is shown
	err      error
	result   *HostFixResult
	output   string
	note     string // the answer to the last key: a refusal, a wrong word
	confirm  prompt
	// exec hands the terminal to a command (tea.Exec); tests run it in place.
	exec   func(tea.ExecCommand, tea.ExecCallback) tea.Cmd
	lines  []string
	offset int
	w, h   int
}

// newHostFixScreen opens on the detected machine's host fixes (the
// detection screen's a).
func newHostFixScreen(c *common) *hostFixScreen {
	return &hostFixScreen{
		common: c, planning: true, exec: tea.Exec,
		confirm: newPrompt("Type "+confirmWord+" to make these changes: ", confirmWord, "apply", "cancel"),
	}
}

// Init plans the fixes for the detected machine.
func (s *hostFixScreen) Init() tea.Cmd { return s.plan() }

func (s *hostFixScreen) plan() tea.Cmd {
	s.planning = true
	s.layout()
	b, ok := role[HostFixer](s.common)
	if !ok {
		return send(hostFixPlannedMsg{err: errors.New("this session makes no host fixes: haloforge doctor --plan shows them")})
	}
	ctx := s.context()
	return func() tea.Msg {
		fix, err := b.HostFix(ctx)
		return hostFixPlannedMsg{fix: fix, err: err}
	}
}

func (s *hostFixScreen) SetSize(w, h int) {
	s.w, s.h = w, h
	s.confirm.SetWidth(max(w-40, 10))
	s.layout()
}

func (s *hostFixScreen) Crumb() string { return "host fixes" }

func (s *hostFixScreen) TakesText() bool { return s.confirm.IsOpen() }

func (s *hostFixScreen) ShortHelp() []key.Binding {
	if s.confirm.IsOpen() {
		return s.confirm.Help(s.Keys)
	}
	b := []key.Binding{s.Keys.Up, s.Keys.Down}
	if s.canConfirm() {
		b = append(b, withHelp(s.Keys.Apply, "apply (type "+confirmWord+")"))
	}
	return append(b, s.Keys.Back, s.Keys.Help, s.Keys.Quit)
}

func (s *hostFixScreen) FullHelp() [][]key.Binding {
	return [][]key.Binding{s.ShortHelp(), pageHelp(s.Keys)}
}

// canConfirm is true when the APPLY question can be asked: there is
// something to apply, or the demo, which asks and then refuses.
func (s *hostFixScreen) canConfirm() bool {
	return !s.planning && !s.applied && s.fix != nil && (s.fix.Applicable || (s.fix.Refusal != "" && haloforgeWouldApply(s.fix.Plan)))
}

// haloforgeWouldApply says whether the plan holds a change haloforge makes
// itself (not advice, not kernel arguments it must leave to the user): the
// demo asks for APPLY only then, as a real machine would.
func haloforgeWouldApply(p *hostfix.Plan) bool {
	if p == nil {
		return false
	}
	applied, _ := p.Counts()
	if applied > 0 {
		return true
	}
	return false
}

func (s *hostFixScreen) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case hostFixPlannedMsg:
		s.planning, s.fix, s.err = false, msg.fix, msg.err
		s.layout()
	case hostFixAppliedMsg:
		return s.appliedResult(msg)
	case tea.KeyPressMsg:
		if s.confirm.IsOpen() {
			return s.confirmKey(msg)
		}
		return s.onKey(msg)
	}
	return nil
}

func (s *hostFixScreen) onKey(k tea.KeyPressMsg) tea.Cmd {
	if s.scroll(k) {
		return nil
	}
	switch {
	case key.Matches(k, s.Keys.Back):
		return closeScreen
	case key.Matches(k, s.Keys.Apply), key.Matches(k, s.Keys.Enter):
		if !s.canConfirm() {
			return nil
		}
		s.note = ""
		s.confirm.SetValue("")
		cmd := s.confirm.Open()
		s.layout()
		return cmd
	}
	return nil
}

// scroll moves the view for the scroll keys; the arrows and page keys
// scroll while the prompt is open too (they type nothing).
func (s *hostFixScreen) scroll(k tea.KeyPressMsg) bool {
	switch {
	case k.Code == tea.KeyUp || k.Code == tea.KeyDown || k.Code == tea.KeyPgUp || k.Code == tea.KeyPgDown:
		scrollBy(s.Keys, k, &s.offset, s.room())
	case s.confirm.IsOpen():
		return false
	default:
		if !scrollBy(s.Keys, k, &s.offset, s.room()) {
			return false
		}
	}
	s.offset = clampOffset(s.offset, len(s.lines), s.room())
	return true
}

func (s *hostFixScreen) confirmKey(k tea.KeyPressMsg) tea.Cmd {
	if s.scroll(k) {
		return nil
	}
	res, cmd := s.confirm.Key(k, s.Keys)
	switch res {
	case promptCancelled:
		s.note = "Not applied: nothing was changed."
		s.layout()
	case promptSubmitted:
		return s.submit()
	}
	return cmd
}

// submit takes the typed word: APPLY applies (the demo refuses), anything
// else asks again.
func (s *hostFixScreen) submit() tea.Cmd {
	if strings.TrimSpace(s.confirm.Value()) != confirmWord {
		s.note = "Type " + confirmWord + " in capitals to go ahead, or esc to cancel; nothing was changed."
		s.confirm.SetValue("")
		s.layout()
		return nil
	}
	s.confirm.Close()
	if s.fix.Refusal != "" {
		s.note = s.fix.Refusal
		s.layout()
		return nil
	}
	s.note = "Applying: the terminal is handed to the apply while it runs (sudo may ask for your password)."
	s.layout()
	b, _ := role[HostFixer](s.common) // the plan came from it
	a := &applyExec{ctx: context.WithoutCancel(s.context()), backend: b, fix: s.fix}
	return s.exec(a, func(error) tea.Msg { return a.msg() })
}

func (s *hostFixScreen) appliedResult(msg hostFixAppliedMsg) tea.Cmd {
	s.note = ""
	if errors.Is(msg.err, hostfix.ErrChanged) {
		// The system changed after the user looked: show the changes as
		// they are now and ask again.
		s.note = "The system changed since you looked, so nothing was applied: here are the changes now."
		s.offset = 0
		return s.plan()
	}
	s.applied, s.result, s.output, s.err = true, msg.res, msg.output, msg.err
	s.offset = 0
	s.layout()
	return nil
}

// room is how many lines of the text fit above the two footer lines.
func (s *hostFixScreen) room() int { return max(s.h-2, 1) }

// layout renders the whole text at the current width and clamps the scroll.
func (s *hostFixScreen) layout() {
	width := max(s.w, 20)
	switch {
	case s.planning:
		s.lines = []string{"Planning the host fixes: the bootloader, the kernel arguments, modprobe.d and groups…"}
	case s.applied:
		s.lines = s.resultLines(width)
	case s.err != nil:
		s.lines = wrapLines(s.Styles.Fail.Render("Planning the host fixes failed: "+text.Sanitize(s.err.Error())), width)
	default:
		s.lines = hostFixLines(s.fix, width, s.Styles)
	}
	s.offset = clampOffset(s.offset, len(s.lines), s.room())
}

func (s *hostFixScreen) View() string {
	last := s.hint()
	if s.confirm.IsOpen() {
		last = s.confirm.View()
	}
	return pagedView(s.Styles, s.lines, s.offset, s.room(), s.w, "↑/↓", s.note, last)
}

// pagedView is a screen of text lines scrolled to offset, room lines high,
// above two footer lines: where the view is in the text (for the scroll
// keys named) with a note, and a last line (a hint or a question).
func pagedView(st Styles, lines []string, offset, room, width int, keys, note, last string) string {
	visible, off := window(lines, offset, room)
	body := strings.Join(visible, "\n") + strings.Repeat("\n", max(room-len(visible), 0))
	pos := ""
	if len(lines) > room {
		pos = st.Subtle.Render(fmt.Sprintf("%s %d–%d of %d   ", keys, off+1, off+len(visible), len(lines)))
	}
	if note != "" {
		note = st.Warn.Render(note)
	}
	return body + "\n" + ansiCut(pos+note, width) + "\n" + ansiCut(last, width)
}

// hint says what the keys do now.
func (s *hostFixScreen) hint() string {
	st := s.Styles
	switch {
	case s.planning:
		return st.Subtle.Render("esc: back")
	case s.applied:
		return st.Subtle.Render("esc: back to the checks")
	case s.canConfirm():
		return st.Subtle.Render("a: apply these changes (you type " + confirmWord + ")   esc: back")
	case s.fix != nil && s.fix.PreviewErr == "" && s.err == nil:
		return st.Subtle.Render("Nothing for haloforge to change here.   esc: back")
	}
	return st.Subtle.Render("esc: back")
}

// resultLines say what the apply did, or why it failed, then its output.
func (s *hostFixScreen) resultLines(width int) []string {
	st := s.Styles
	var out []string
	switch {
	case s.err != nil:
		out = append(out, wrapLines(st.Fail.Render("✗ Applying the host fixes failed: "+text.Sanitize(s.err.Error())), width)...)
	case s.result == nil || s.result.BackupDir == "":
		out = append(out, st.OK.Render("✓ Nothing was changed: the system already matches the plan."))
	default:
		r := s.result
		out = append(out, st.OK.Render("✓ Host fixes applied. Nothing was rebooted."), "")
		out = append(out, wrapLines("Backup: "+text.Sanitize(r.BackupDir), width)...)
		out = append(out, "Done:")
		for _, c := range r.Commands {
			out = append(out, commandLines(text.Sanitize(c), width, 2)...)
		}
		out = append(out, "", st.Bold.Render("Next: reboot, then run haloforge doctor --verify"))
		out = append(out, commandLines("To undo: haloforge doctor --rollback "+text.Sanitize(r.BackupDir), width, 0)...)
	}
	if s.output != "" {
		out = append(out, "", st.Subtle.Render("What the apply printed:"))
		for _, l := range strings.Split(strings.TrimRight(s.output, "\n"), "\n") {
			out = append(out, hardLines("  "+text.Sanitize(l), width, 4, func(l string) string { return st.Subtle.Render(l) })...)
		}
	}
	return out
}

// hostFixLines renders the plan: the bootloader, each action with its
// command, what APPLY changes now, and what is left to the user.
func hostFixLines(fix *HostFix, width int, st Styles) []string {
	p := fix.Plan
	var out []string
	add := func(ls ...string) { out = append(out, ls...) }
	add(st.Title.Render("Host fixes") + st.Subtle.Render(" for "+text.Sanitize(cmp.Or(p.Source, "this machine"))))
	byHand := manualArgs(p)
	switch {
	case p.Bootloader == hostfix.BootUnknown:
		add(wrapLines("Bootloader: "+st.Warn.Render("could not be identified")+st.Subtle.Render(" ("+text.Sanitize(p.Boot.Reason)+")"), width)...)
	default:
		add(wrapLines("Bootloader: "+st.Bold.Render(text.Sanitize(p.Bootloader))+" — "+text.Sanitize(p.Boot.Reason), width)...)
	}
	// Kernel arguments haloforge cannot set on this boot setup: said
	// plainly, with how to set them by hand: first when that is all there
	// is to do, else after what APPLY changes (with a pointer here).
	handFirst := len(byHand) > 0 && !haloforgeWouldApply(p)
	switch {
	case handFirst:
		add("")
		add(byHandLines(p, byHand, width, st)...)
	case len(byHand) > 0:
		add(wrapLines(st.Warn.Render("! haloforge sets no kernel argument here: you set "+strings.Join(byHand, " ")+" by hand (how: By hand, below)."), width)...)
	case p.Boot.Problem != "":
		add(wrapLines(st.Warn.Render("! haloforge will not change the kernel command line here: "+text.Sanitize(p.Boot.Problem)), width)...)
	}
	if len(p.Actions) == 0 {
		add("", "Nothing to change: no warning or failing check has a host fix.")
		return out
	}
	add("", st.Bold.Render("Actions"))
	for i, a := range p.Actions {
		tag := a.Kind
		if a.Advice {
			tag += ", you do it"
		}
		add(hangLines(fmt.Sprintf("%2d. %s", i+1, text.Sanitize(a.Change)), width, 4)...)
		add(st.Subtle.Render("    " + tag + " · check " + text.Sanitize(a.Check.Label())))
		for _, c := range strings.Split(a.Command, "\n") {
			if c != "" {
				add(commandLines(text.Sanitize(c), width, 6)...)
			}
		}
	}
	add("")
	switch {
	case fix.Changes != "" && fix.Applicable:
		add(st.Bold.Render("What "+confirmWord+" changes now") + st.Subtle.Render(" (as haloforge doctor --apply shows it)"))
		add(changeLines(fix.Changes, width, st)...)
	case fix.Changes != "":
		add(st.Bold.Render("Nothing for haloforge to change here") + st.Subtle.Render(" (as haloforge doctor --apply sees it)"))
		add(changeLines(fix.Changes, width, st)...)
	case fix.PreviewErr != "":
		add(wrapLines(st.Warn.Render("! What applying changes is not known here: "+text.Sanitize(fix.PreviewErr)), width)...)
		add(commandLines("haloforge doctor --plan --json > plan.json && haloforge doctor --apply plan.json", width, 2)...)
	}
	if len(byHand) > 0 && !handFirst {
		add("", st.Bold.Render("By hand"))
		add(byHandLines(p, byHand, width, st)...)
	}
	for _, sk := range p.Skipped {
		add(hangLines(st.Subtle.Render("Not a host change: "+text.Sanitize(sk.Check.Label())+", "+text.Sanitize(sk.Status)+": "+text.Sanitize(sk.Reason)), width, 2)...)
	}
	for _, n := range p.Notes {
		add(hangLines("Note: "+text.Sanitize(n), width, 2)...)
	}
	if fix.Refusal != "" {
		add(wrapLines(st.Warn.Render(text.Sanitize(fix.Refusal)), width)...)
	}
	if fix.Refusal != "" && haloforgeWouldApply(p) {
		add(wrapLines(st.Subtle.Render("On your machine, this screen shows the exact diffs and commands; after you type "+
			confirmWord+", the terminal goes to sudo for what needs root, every file is backed up first, and nothing is rebooted."), width)...)
	}
	if p.Reboot && (len(byHand) == 0 || haloforgeWouldApply(p)) { // else step 2 above says it
		add("")
		add(wrapLines("A reboot is needed for the kernel changes; haloforge never reboots. After it: haloforge doctor --verify", width)...)
	}
	return out
}

// manualArgs are the kernel arguments of the plan that haloforge cannot
// set on this boot setup (an unknown bootloader, NixOS, …): the user sets
// them by hand.
func manualArgs(p *hostfix.Plan) []string {
	if p.Boot.Editable() {
		return nil
	}
	var args []string
	for _, a := range p.Actions {
		if a.Kind == hostfix.KindKernelArg && a.Arg != nil && a.Arg.Op != "remove" {
			args = append(args, text.Sanitize(a.Arg.String()))
		}
	}
	return args
}

// byHandLines say what to do by hand when haloforge cannot set the kernel
// arguments: which ones, where each common bootloader keeps them, and the
// reboot and check after.
func byHandLines(p *hostfix.Plan, args []string, width int, st Styles) []string {
	var out []string
	why := "haloforge cannot tell which file or tool sets the kernel command line on this machine, so it changes none."
	if p.Bootloader != hostfix.BootUnknown && p.Boot.Problem != "" {
		why = "haloforge does not set kernel arguments here: " + text.Sanitize(p.Boot.Problem) + "."
	}
	out = append(out, wrapLines(st.Warn.Render("! "+why)+" Set them by hand:", width)...)
	out = append(out, "  1. Add to the kernel command line:")
	out = append(out, commandLines(strings.Join(args, " "), width, 7)...)
	if p.Bootloader == hostfix.BootUnknown {
		// Where the common bootloaders keep them: prose wraps, commands
		// go on lines of their own and break only between words.
		joined := strings.Join(args, " ")
		appends := ""
		for _, a := range args {
			appends += " --append=" + a
		}
		for _, how := range [][2]string{
			{"GRUB (Debian, Ubuntu): add them to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub, then", "sudo update-grub"},
			{"GRUB with grubby (Fedora):", "sudo grubby --update-kernel=ALL --args='" + joined + "'"},
			{"systemd-boot: add them to /etc/kernel/cmdline, or to the options line of each /boot/loader/entries/*.conf", ""},
			{"rpm-ostree (Silverblue, Bazzite):", "sudo rpm-ostree kargs" + appends},
		} {
			out = append(out, hangLines(st.Subtle.Render("     · "+how[0]), width, 7)...)
			if how[1] != "" {
				out = append(out, commandLines(how[1], width, 9)...)
			}
		}
	}
	out = append(out, "  2. Reboot, then check with: haloforge doctor --verify")
	return out
}

// changeLines renders hostfix.Preview's text: diffs coloured and cut at the
// width, commands wrapped as shell commands, the rest as prose.
func changeLines(preview string, width int, st Styles) []string {
	var out []string
	section := ""
	for _, l := range strings.Split(strings.TrimRight(text.Sanitize(preview), "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "--- "):
			section = "diff"
		case strings.HasPrefix(l, "Commands, as root:"):
			section = "commands"
			out = append(out, "  "+l)
			continue
		case !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "-") &&
			!strings.HasPrefix(l, "@@") && !strings.HasPrefix(l, `\`):
			section = ""
		}
		switch section {
		case "diff":
			out = append(out, hardLines("  "+l, width, 3, diffStyle(l, st))...)
		case "commands":
			cmd, why, _ := strings.Cut(strings.TrimSpace(l), "    # ")
			out = append(out, commandLines(cmd, width, 4)...)
			if why != "" {
				out = append(out, hangLines(st.Subtle.Render("      # "+why), width, 8)...)
			}
		default:
			out = append(out, hangLines("  "+l, width, 4)...)
		}
	}
	return out
}

// diffStyle colours a unified diff line by its first character.
func diffStyle(l string, st Styles) func(string) string {
	style := st.Subtle
	switch {
	case strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "+++ "):
		style = st.Bold
	case strings.HasPrefix(l, "@@"):
	case strings.HasPrefix(l, "+"):
		style = st.OK
	case strings.HasPrefix(l, "-"):
		style = st.Fail.UnsetBold()
	default:
		return plainText
	}
	return func(s string) string { return style.Render(s) }
}

// plainText leaves a line as it is.
func plainText(s string) string { return s }

// wrapLines wraps prose at the width.
func wrapLines(s string, width int) []string { return strings.Split(wrap(s, width), "\n") }

// hangLines wraps prose at the width, continuation lines indented by
// indent, so that numbered items read as blocks. A word is never cut
// inside: one wider than the room breaks only after a '/' (wrap).
func hangLines(s string, width, indent int) []string {
	lines := wrapLines(s, max(width-indent, 10))
	for i := 1; i < len(lines); i++ {
		lines[i] = strings.Repeat(" ", indent) + lines[i]
	}
	return lines
}

// hardLines cuts a line that must keep every character (a diff line, a
// command's output) at the width, continuation lines indented by indent.
func hardLines(l string, width, indent int, style func(string) string) []string {
	room := max(width-indent, 10)
	first := ansi.Truncate(l, width, "")
	out := []string{style(first)}
	for rest := ansi.TruncateLeft(l, ansi.StringWidth(first), ""); rest != ""; {
		piece := ansi.Truncate(rest, room, "")
		out = append(out, strings.Repeat(" ", indent)+style(piece))
		rest = ansi.TruncateLeft(rest, ansi.StringWidth(piece), "")
	}
	return out
}

// commandLines shows a shell command at the width without breaking it:
// it breaks only between words outside quotes and ends each broken line
// with " \", so that the lines still read (and paste) as the one command
// (text.CommandRows). A single word wider than the screen is cut where it
// must be.
func commandLines(cmd string, width, indent int) []string {
	if strings.TrimSpace(cmd) == "" {
		return nil
	}
	var cut []string
	for _, l := range text.CommandRows(strings.Repeat(" ", indent)+cmd, width) {
		cut = append(cut, hardLines(l, width, indent+4, plainText)...)
	}
	return cut
}

// applyExec runs the apply with the terminal handed over (tea.Exec): the
// wizard's screen steps aside, sudo asks for its password on the terminal,
// and the apply's progress shows there as it happens, its tail kept for the
// result. Errors travel in the message, not as the exec's error.
type applyExec struct {
	ctx     context.Context
	backend HostFixer
	fix     *HostFix
	out     io.Writer
	log     tailBuffer
	res     *HostFixResult
	err     error
}

func (a *applyExec) SetStdin(io.Reader)    {} // sudo reads the password from the terminal itself
func (a *applyExec) SetStdout(w io.Writer) { a.out = w }
func (a *applyExec) SetStderr(io.Writer)   {}

// Run applies; it always returns nil, so that Bubble Tea takes the screen back.
func (a *applyExec) Run() error {
	term := a.out
	if term == nil {
		term = io.Discard
	}
	fmt.Fprintln(term, "\nhaloforge: applying the host fixes you confirmed (sudo may ask for your password)…")
	a.res, a.err = a.backend.ApplyHostFix(a.ctx, a.fix, io.MultiWriter(term, &a.log))
	return nil
}

// msg is the apply's outcome; its output starts with the changes the
// user saw already, which the result does not repeat.
func (a *applyExec) msg() tea.Msg {
	out := strings.TrimPrefix(a.log.String(), a.fix.Changes)
	return hostFixAppliedMsg{res: a.res, output: out, err: a.err}
}

// tailBuffer keeps the last bytes written to it (bounded memory for any
// output), cut at a line start.
type tailBuffer struct{ buf []byte }

const applyOutputKeep = 32 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*applyOutputKeep {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-applyOutputKeep:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	b := t.buf
	if len(b) > applyOutputKeep {
		b = b[len(b)-applyOutputKeep:]
		if i := strings.IndexByte(string(b), '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}
