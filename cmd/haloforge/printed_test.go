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

// commandStart finds "haloforge SUBCOMMAND" where a command starts: at the
// start of a line or after a space, backtick, colon or parenthesis.
var commandStart = regexp.MustCompile("(^|[\\s`(:])haloforge ([a-z][a-z-]*)")

// commandEnd is where a command printed in prose ends: a closing backtick,
// a " · " separator, a comment, a parenthesis that opens prose, a sentence
// that goes on.
var commandEnd = regexp.MustCompile("`|\\s+·\\s|\\s+#|\\s\\(|\\)|;\\s|,\\s|\\s+(and|then|or|to|which|shows|writes|prints)\\s")

// placeholder is a value the user fills in: <model>, <run-id>.
var placeholder = regexp.MustCompile(`<[a-z][a-z0-9-]*>`)

// findPrinted extracts the haloforge commands of text, filling in the
// placeholders from subs; a placeholder without a value is an error (the
// script must say what a user would type there).
func findPrinted(text string, subs map[string]string) ([]printedCommand, error) {
	names := commandNames()
	var out []printedCommand
	for _, l := range strings.Split(text, "\n") {
		for _, m := range commandStart.FindAllStringSubmatchIndex(l, -1) {
			if !slices.Contains(names, l[m[4]:m[5]]) {
				continue
			}
			rest := l[m[2]:]
			if rest != "" && strings.ContainsRune(" \t`(:", rune(rest[0])) {
				rest = rest[1:]
			}
			if e := commandEnd.FindStringIndex(rest); e != nil {
				rest = rest[:e[0]]
			}
			rest = strings.TrimRight(strings.TrimSpace(rest), ".,:")
			pc := printedCommand{line: rest}
			if before, after, ok := strings.Cut(rest, " > "); ok {
				rest, pc.redirect = before, strings.TrimSpace(after)
			}
			filled := placeholder.ReplaceAllStringFunc(rest, func(p string) string {
				if v, ok := subs[p]; ok {
					return v
				}
				return p
			})
			if p := placeholder.FindString(filled); p != "" {
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

// printedCmd is the testscript command
//
//	printed [carry=FLAG=VALUE]... [sub=<placeholder>=VALUE]... [ok=REGEXP]... [want=N]
//
// It checks and runs every haloforge command the last command printed (on
// stdout and stderr), and prints one line per command: "ran: COMMAND → exit
// N". carry names a flag the flow was given, which every printed command
// that acts on it must carry with the same value; ok is a refusal (exit 2)
// the script expects at the first step that would change the host ("no
// terminal to confirm"); want is how many commands the output must hold,
// so that a script cannot pass on an output with none.
func printedCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! printed")
	}
	text := ts.ReadFile("stdout") + "\n" + ts.ReadFile("stderr")
	subs := map[string]string{}
	var carry [][2]string
	var oks []*regexp.Regexp
	want := -1
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "carry":
			f, val, _ := strings.Cut(v, "=")
			carry = append(carry, [2]string{f, val})
		case "sub":
			p, val, _ := strings.Cut(v, "=")
			subs[p] = val
		case "ok":
			oks = append(oks, regexp.MustCompile(v))
		case "want":
			_, err := fmt.Sscan(v, &want)
			ts.Check(err)
		default:
			ts.Fatalf("printed: unknown argument %q", a)
		}
	}
	cmds, err := findPrinted(text, subs)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	if want >= 0 && len(cmds) != want {
		var lines []string
		for _, c := range cmds {
			lines = append(lines, c.line)
		}
		ts.Fatalf("found %d printed commands, want %d:\n%s", len(cmds), want, strings.Join(lines, "\n"))
	}
	if len(cmds) == 0 {
		ts.Fatalf("no haloforge command in the output")
	}
	var report strings.Builder
	var bad []string
	for _, c := range cmds {
		for _, f := range carry {
			if needs(c.args, f[0]) && !has(c.args, f[0], f[1]) {
				bad = append(bad, fmt.Sprintf("%q lacks %s %s, which the flow was given", c.line, f[0], f[1]))
			}
		}
		run := safeArgs(c.args)
		err := ts.Exec("haloforge", run...)
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			ts.Fatalf("%q: %v", c.line, err)
		}
		stdout, stderr := ts.ReadFile("stdout"), ts.ReadFile("stderr")
		if c.redirect != "" {
			ts.Check(os.WriteFile(ts.MkAbs(c.redirect), []byte(stdout), 0o644))
		}
		expected := slices.ContainsFunc(oks, func(re *regexp.Regexp) bool { return re.MatchString(stderr) })
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
		if slices.Contains(run, "--dry-run") && !slices.Contains(c.args, "--dry-run") {
			if m := regexp.MustCompile(`needs \S+, which is empty`).FindString(stdout + stderr); m != "" {
				bad = append(bad, fmt.Sprintf("%q would stop at once: %s", c.line, m))
			}
			if strings.Contains(stdout+stderr, "not blocking (--ignore-checks or --dry-run)") &&
				!has(c.args, "--ignore-checks", "") && !strings.Contains(text, "--ignore-checks") {
				bad = append(bad, fmt.Sprintf("%q is blocked by a failing check here, and the output never says so (--ignore-checks, haloforge doctor)", c.line))
			}
		}
		fmt.Fprintf(&report, "ran: haloforge %s → exit %d\n", strings.Join(run, " "), code)
	}
	fmt.Fprint(ts.Stdout(), report.String())
	if len(bad) > 0 {
		ts.Fatalf("printed commands that do not run as printed:\n%s", strings.Join(bad, "\n"))
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}
