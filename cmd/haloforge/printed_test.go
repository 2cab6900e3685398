package main

// Every command haloforge prints runs as printed, with the flags the user
// gave. The `printed` testscript command reads what the last command
// printed, finds each haloforge command in it, checks that it carries the
// flags the flow was given (--state-dir, --root, --pins …) and runs it:
// as printed where that changes nothing, with --dry-run where it would
// build or start something, and without a terminal where it would ask
// before changing the host (so it stops at the question). A command that
// cobra or haloforge refuses as bad usage (an unknown flag, too many
// arguments, a backup of another system, a value the track needs) fails
// the script.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
	"mvdan.cc/sh/v3/shell"
)

// printedCommand is one haloforge command found in a command's output.
type printedCommand struct {
	line     string   // as printed
	args     []string // after "haloforge", shell-parsed, placeholders filled in
	redirect string   // "> FILE" at its end: where its output goes
}

// commandNames are the subcommands a printed command may start with.
func commandNames() []string {
	root := newRoot()
	root.InitDefaultCompletionCmd()
	var names []string
	for _, c := range root.Commands() {
		names = append(names, c.Name())
	}
	return names
}

// commandStart finds "haloforge SUBCOMMAND" where a command to type
// starts: at the start of a line, after a label ("next: ", "resume with:
// "), in backticks or after a parenthesis. A name in the middle of a
// sentence ("run haloforge doctor as the user who builds") is prose.
var commandStart = regexp.MustCompile("(^\\s*|: |`|\\()haloforge ([a-z][a-z-]*)")

// commandEnd is where a command printed in prose ends: a closing backtick,
// a " · " separator, a comment, a parenthesis that opens prose, a sentence
// that goes on.
var commandEnd = regexp.MustCompile("`|\\s+·\\s|\\s+#|\\s\\(|\\)|;\\s|,\\s|\\s+(and|then|or|to|which|shows|writes|prints)\\s")

// placeholder is a value the user fills in: <model>, <run-id>, or a word
// in capitals standing alone (SET, DIR, STEP).
var placeholder = regexp.MustCompile(`<[a-z][a-z0-9-]*>|(^|\s)[A-Z]+(\s|$)`)

// findPrinted extracts the haloforge commands of text, filling in the
// placeholders from subs; a placeholder without a value is an error (the
// script must say what a user would type there).
func findPrinted(text string, subs map[string]string) ([]printedCommand, error) {
	names := commandNames()
	var out []printedCommand
	// A command wrapped for the terminal continues with " \" on its next row.
	text = regexp.MustCompile(` \\\n\s*`).ReplaceAllString(text, " ")
	for _, l := range strings.Split(text, "\n") {
		for _, m := range commandStart.FindAllStringSubmatchIndex(l, -1) {
			if !slices.Contains(names, l[m[4]:m[5]]) {
				continue
			}
			rest := l[m[4]-len("haloforge "):]
			if e := commandEnd.FindStringIndex(rest); e != nil {
				rest = rest[:e[0]]
			}
			rest = strings.TrimRight(strings.TrimSpace(rest), ".,:")
			pc := printedCommand{line: rest}
			if before, after, ok := strings.Cut(rest, " > "); ok {
				rest, pc.redirect = before, strings.TrimSpace(after)
			}
			filled := placeholder.ReplaceAllStringFunc(rest, func(p string) string {
				word := strings.TrimSpace(p)
				if v, ok := subs[word]; ok {
					return strings.Replace(p, word, v, 1)
				}
				return p
			})
			if p := strings.TrimSpace(placeholder.FindString(filled)); p != "" {
				return nil, fmt.Errorf("%q: no value for %s (printed sub=%s=VALUE)", pc.line, p, p)
			}
			words, err := shell.Fields(filled, func(name string) string { return "$" + name })
			if err != nil {
				return nil, fmt.Errorf("%q does not parse as a shell command: %v", pc.line, err)
			}
			pc.args = words[1:]
			out = append(out, pc)
		}
	}
	return out, nil
}

// has reports whether args hold flag (with its value when value is not "").
func has(args []string, flag, value string) bool {
	for i, a := range args {
		if a == flag && (value == "" || i+1 < len(args) && samePath(args[i+1], value)) {
			return true
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok && (value == "" || samePath(v, value)) {
			return true
		}
	}
	return false
}

func samePath(a, b string) bool {
	if a == b {
		return true
	}
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// positionals are the arguments that are not flags or their values
// (flags here all take a value unless they are known switches).
func positionals(args []string) []string {
	switches := map[string]bool{"--json": true, "--dry-run": true, "--resume": true, "--plan": true, "--plain": true,
		"--ignore-checks": true, "--yes": true, "--offline": true, "--all": true, "-v": true, "--verbose": true,
		"--force": true, "--last": true, "--expose": true, "--no-smoke": true, "--verify": true, "--rollback": true}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case !strings.HasPrefix(a, "-") || a == "-":
			out = append(out, a)
		case strings.Contains(a, "=") || switches[a]:
		default:
			i++ // its value
		}
	}
	return out
}

// needs says which of the flow's flags a printed command must carry: the
// state dir wherever it reads or writes state, the system and facts of a
// host fix, the pins and scripts wherever a track is planned or run.
func needs(args []string, flag string) bool {
	if len(args) == 0 {
		return false
	}
	sub := args[0]
	hostfix := has(args, "--apply", "") || has(args, "--rollback", "")
	trackRun := slices.Contains([]string{"build", "plan", "serve"}, sub) || sub == "bench" && has(args, "--track", "")
	switch flag {
	case "--state-dir":
		switch sub {
		case "doctor":
			return hostfix || has(args, "--verify", "") && len(positionals(args[1:])) == 0
		case "diagnose":
			return len(positionals(args[1:])) == 0
		case "pins":
			return len(args) > 1 && slices.Contains([]string{"lock", "use", "status"}, args[1])
		case "verify", "demo", "completion", "help", "cluster":
			return false
		case "bench":
			return trackRun
		}
		return true
	case "--root":
		return sub == "doctor" && (hostfix || has(args, "--plan", ""))
	case "--bundle":
		return sub == "doctor" && has(args, "--plan", "")
	case "--pins", "--scripts", "--set":
		return trackRun || sub == "pins" && len(args) > 1 && args[1] == "use" && flag == "--pins"
	}
	return false
}

// usageMarks are what a command says when it was typed wrong: cobra's and
// pflag's own errors and haloforge's refusals of flags that do not fit.
var usageMarks = regexp.MustCompile(`unknown flag|unknown shorthand flag|too many arguments|unknown command|flag needs an argument|invalid argument|accepts \d|is required|not of this machine|does not fit this system|looks like an option|goes with --`)

// safeArgs is how the test runs a printed command without changing this
// machine: a build, a server or a benchmark as a dry run; everything that
// asks before it changes the host runs as printed, without a terminal, so
// that it stops at its question.
func safeArgs(args []string) []string {
	out := slices.Clone(args)
	switch {
	case (args[0] == "build" || args[0] == "serve") && !has(args, "--dry-run", ""):
		out = append(out, "--dry-run")
	case args[0] == "bench" && has(args, "--track", "") && !has(args, "--dry-run", ""):
		out = append(out, "--dry-run")
	case args[0] == "cluster" && len(args) > 1 && args[1] == "up" && !has(args, "--dry-run", ""):
		out = append(out, "--dry-run")
	}
	return out
}

// printedCheck is what a flow was given and expects of the commands it
// printed (see printedCmd for the testscript words).
type printedCheck struct {
	subs      map[string]string
	carry     [][2]string
	oks       []*regexp.Regexp
	want      int // -1: any number but none
	unchecked bool
}

// parsePrintedArgs reads printed's words into a check.
func parsePrintedArgs(args []string) (printedCheck, error) {
	pc := printedCheck{subs: map[string]string{}, want: -1}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "carry":
			f, val, _ := strings.Cut(v, "=")
			pc.carry = append(pc.carry, [2]string{f, val})
		case "sub":
			p, val, _ := strings.Cut(v, "=")
			pc.subs[p] = val
		case "ok":
			pc.oks = append(pc.oks, regexp.MustCompile(v))
		case "unchecked":
			// The flow does not check this host (pins use): a build it
			// names may stop at a check here, and it need not say so.
			pc.unchecked = true
		case "want":
			if _, err := fmt.Sscan(v, &pc.want); err != nil {
				return pc, err
			}
		default:
			return pc, fmt.Errorf("printed: unknown argument %q", a)
		}
	}
	return pc, nil
}

// haloforgeRunner runs haloforge with args and returns what it printed and its
// exit code (an error only when it could not run at all).
type haloforgeRunner func(args []string) (stdout, stderr string, code int, err error)

// checkPrinted finds the commands of text, checks each carries the flow's
// flags, runs it safely with run, and returns one report line per command
// and what does not run as printed.
func checkPrinted(text string, pc printedCheck, run haloforgeRunner, write func(name, data string) error) (report string, bad []string, err error) {
	cmds, err := findPrinted(text, pc.subs)
	if err != nil {
		return "", nil, err
	}
	if pc.want >= 0 && len(cmds) != pc.want || len(cmds) == 0 {
		var lines []string
		for _, c := range cmds {
			lines = append(lines, c.line)
		}
		return "", nil, fmt.Errorf("found %d printed commands, want %d:\n%s", len(cmds), pc.want, strings.Join(lines, "\n"))
	}
	var b strings.Builder
	for _, c := range cmds {
		for _, f := range pc.carry {
			if needs(c.args, f[0]) && !has(c.args, f[0], f[1]) {
				bad = append(bad, fmt.Sprintf("%q lacks %s %s, which the flow was given", c.line, f[0], f[1]))
			}
		}
		args := safeArgs(c.args)
		stdout, stderr, code, err := run(args)
		if err != nil {
			return "", nil, fmt.Errorf("%q: %w", c.line, err)
		}
		if c.redirect != "" {
			if err := write(c.redirect, stdout); err != nil {
				return "", nil, err
			}
		}
		expected := slices.ContainsFunc(pc.oks, func(re *regexp.Regexp) bool { return re.MatchString(stderr) })
		switch {
		case usageMarks.MatchString(stderr) && !expected:
			bad = append(bad, fmt.Sprintf("%q is refused as typed: %s", c.line, firstLine(stderr)))
		case code == 2 && !expected:
			bad = append(bad, fmt.Sprintf("%q exits 2: %s", c.line, firstLine(stderr)))
		case code > 2:
			bad = append(bad, fmt.Sprintf("%q exits %d: %s", c.line, code, firstLine(stderr)))
		}
		// A dry run says what the real run would refuse: a value the
		// track needs and the command lacks, or checks that block it
		// unless the flow said how to get past them.
		if slices.Contains(args, "--dry-run") && !slices.Contains(c.args, "--dry-run") {
			if m := regexp.MustCompile(`needs \S+, which is empty`).FindString(stdout + stderr); m != "" {
				bad = append(bad, fmt.Sprintf("%q would stop at once: %s", c.line, m))
			}
			if strings.Contains(stdout+stderr, "not blocking (--ignore-checks or --dry-run)") && !pc.unchecked &&
				!has(c.args, "--ignore-checks", "") && !strings.Contains(text, "--ignore-checks") {
				bad = append(bad, fmt.Sprintf("%q is blocked by a failing check here, and the output never says so (--ignore-checks, haloforge doctor)", c.line))
			}
		}
		fmt.Fprintf(&b, "ran: haloforge %s → exit %d\n", strings.Join(args, " "), code)
	}
	return b.String(), bad, nil
}

// printedCmd is the testscript command
//
//	printed [carry=FLAG=VALUE]... [sub=<placeholder>=VALUE]... [ok=REGEXP]... [want=N] [unchecked]
//
// It checks and runs every haloforge command the last command printed (on
// stdout and stderr), and prints one line per command: "ran: COMMAND → exit
// N". carry names a flag the flow was given, which every printed command
// that acts on it must carry with the same value; ok is a refusal (exit 2)
// the script expects at the first step that would change the host ("no
// terminal to confirm"); want is how many commands the output must hold
// (at least one always), so that a script cannot pass on an output with
// none; unchecked says the flow never looked at this host's checks, so a
// build it names need not warn that they fail here.
func printedCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! printed")
	}
	text := ts.ReadFile("stdout") + "\n" + ts.ReadFile("stderr")
	pc, err := parsePrintedArgs(args)
	ts.Check(err)
	run := func(args []string) (string, string, int, error) {
		err := ts.Exec("haloforge", args...)
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			return ts.ReadFile("stdout"), ts.ReadFile("stderr"), ee.ExitCode(), nil
		case err != nil:
			return "", "", 0, err
		}
		return ts.ReadFile("stdout"), ts.ReadFile("stderr"), 0, nil
	}
	write := func(name, data string) error { return os.WriteFile(ts.MkAbs(name), []byte(data), 0o644) }
	report, bad, err := checkPrinted(text, pc, run, write)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	fmt.Fprint(ts.Stdout(), report)
	if len(bad) > 0 {
		ts.Fatalf("printed commands that do not run as printed:\n%s", strings.Join(bad, "\n"))
	}
}

// binaryRunner runs the built binary bin in dir with env, without a
// terminal, for a test outside testscript (the tmux tests).
func binaryRunner(bin, dir string, env []string) haloforgeRunner {
	return func(args []string) (string, string, int, error) {
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = dir, env
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return stdout.String(), stderr.String(), ee.ExitCode(), nil
		}
		return stdout.String(), stderr.String(), 0, err
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}
