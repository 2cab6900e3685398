package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/haloforge/haloforge/internal/text"
)

// Help is haloforge's own layout, not a library's: every line fits the
// terminal, at most helpMax columns, and a pipe or a file gets helpMax
// (not the width of some other terminal, nor lines padded with spaces).
// Prose wraps between words, an example only between its shell words with
// " \" continuations (so that a copied example still runs), and a command
// or flag row wraps its description under its own column. Nothing is cut.

// helpMax is the widest help gets: the classic terminal, and what gh and
// gum keep their help within.
const helpMax = 80

// helpMin is the narrowest layout; a terminal narrower still wraps it.
const helpMin = 40

// Help's indents: a section title by 2, its rows by 4.
const (
	helpTitleIndent = "  "
	helpRowIndent   = "    "
	helpKeyGap      = 2
)

// termWidth is the width of the terminal w writes to, or 0 when it is not
// a terminal (a pipe, a file).
func termWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return cols
}

// helpWidth is the width help is laid out for on w. On a terminal the
// last column stays free: a row that fills it leaves the cursor waiting
// to wrap, and some terminals (and tmux's copy) take it as wrapped.
func helpWidth(w io.Writer) int {
	if cols := termWidth(w); cols > 0 {
		return min(max(cols-1, helpMin), helpMax)
	}
	return helpMax
}

// printHelp is every command's --help (and `haloforge help CMD`).
func printHelp(cmd *cobra.Command, _ []string) {
	out := cmd.OutOrStdout()
	_, _ = io.WriteString(out, helpText(cmd, helpWidth(out), colorOut(cmd)))
}

// helpText lays out cmd's help for width; bold marks the section titles.
func helpText(cmd *cobra.Command, width int, bold bool) string {
	var b strings.Builder
	title := func(t string) {
		if bold {
			t = "\x1b[1m" + t + "\x1b[0m"
		}
		b.WriteString("\n" + helpTitleIndent + t + "\n\n")
	}
	b.WriteString("\n")
	for _, r := range longRows(cmp.Or(cmd.Long, cmd.Short), width) {
		b.WriteString(r + "\n")
	}

	title("USAGE")
	for _, r := range text.Wrap(helpRowIndent+usageLine(cmd), width, "  ") {
		b.WriteString(r + "\n")
	}

	if ex := strings.Trim(cmd.Example, "\n"); ex != "" {
		title("EXAMPLES")
		for _, l := range strings.Split(ex, "\n") {
			l = helpRowIndent + strings.TrimSpace(l)
			if strings.HasPrefix(strings.TrimSpace(l), "#") {
				b.WriteString(strings.Join(text.FixRows(l, width), "\n") + "\n")
				continue
			}
			// A comment that does not fit beside its command goes above it.
			if words := text.ShellWords(l); len(l) > width && len(words) > 1 && strings.HasPrefix(words[len(words)-1], "#") {
				comment := words[len(words)-1]
				b.WriteString(strings.Join(text.FixRows(helpRowIndent+comment, width), "\n") + "\n")
				l = helpRowIndent + strings.Join(words[:len(words)-1], " ")
			}
			for _, r := range text.CommandRows(l, width) {
				b.WriteString(r + "\n")
			}
		}
	}

	if subs := subcommands(cmd); len(subs) > 0 {
		title("COMMANDS")
		var rows [][2]string
		for _, s := range subs {
			rows = append(rows, [2]string{s.Name(), s.Short})
		}
		b.WriteString(helpTable(rows, width))
	}

	local, global := helpFlags(cmd)
	if len(local) > 0 {
		title("FLAGS")
		b.WriteString(helpTable(local, width))
	}
	if len(global) > 0 {
		title("GLOBAL FLAGS")
		b.WriteString(helpTable(global, width))
	}
	if len(subcommands(cmd)) > 0 {
		b.WriteString("\n")
		for _, r := range text.Wrap(helpTitleIndent+cmd.CommandPath()+" COMMAND --help says more about a command.", width, "") {
			b.WriteString(r + "\n")
		}
	}
	b.WriteString("\n")
	return b.String()
}

// usageLine is the command's usage, with [--flags] once at its end.
func usageLine(cmd *cobra.Command) string {
	u := cmd.UseLine()
	u = strings.TrimSuffix(u, " [flags]")
	switch {
	case !cmd.HasAvailableSubCommands() || strings.Contains(u, "COMMAND"):
	case cmd.Runnable():
		u += " [COMMAND]"
	default:
		u += " COMMAND"
	}
	if cmd.HasAvailableFlags() {
		u += " [--flags]"
	}
	return u
}

// subcommands are the commands a group's help lists: not hidden, and not
// cobra's own help command (every command has --help).
func subcommands(cmd *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, s := range cmd.Commands() {
		if s.IsAvailableCommand() && s.Name() != "help" {
			out = append(out, s)
		}
	}
	return out
}

// helpFlags are the rows of the command's flags (its own and its group's)
// and of the global ones (the root's, which every command takes). The
// shell-completion commands make nothing of the global flags, so they list
// none.
func helpFlags(cmd *cobra.Command) (local, global [][2]string) {
	row := func(f *pflag.Flag) [2]string {
		key := "--" + f.Name
		if f.Shorthand != "" {
			key = "-" + f.Shorthand + ", " + key
		}
		return [2]string{key, flagText(f)}
	}
	root := cmd.Root()
	isGlobal := func(f *pflag.Flag) bool { return cmd != root && root.PersistentFlags().Lookup(f.Name) == f }
	quiet := false
	for c := cmd; c != nil; c = c.Parent() {
		quiet = quiet || c.Name() == "completion" || c.Name() == cobra.ShellCompRequestCmd
	}
	var all []*pflag.Flag
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) { all = append(all, f) })
	cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) { all = append(all, f) })
	slices.SortFunc(all, func(a, b *pflag.Flag) int { return strings.Compare(a.Name, b.Name) })
	for _, f := range all {
		switch {
		case f.Hidden:
		case !isGlobal(f):
			local = append(local, row(f))
		case !quiet:
			global = append(global, row(f))
		}
	}
	return local, global
}

// flagText is a flag's description as help shows it: a first word that is
// a plain word capitalised (a value such as ssh_config or a `command` is
// left as written), and its default named when it has one worth naming.
func flagText(f *pflag.Flag) string {
	u := strings.TrimSpace(f.Usage)
	first, _, _ := strings.Cut(u, " ")
	if first != "" && strings.IndexFunc(first, func(r rune) bool { return r < 'a' || r > 'z' }) < 0 {
		r := []rune(u)
		r[0] = unicode.ToUpper(r[0])
		u = string(r)
	}
	switch f.DefValue {
	case "", "false", "0", "[]", "0s":
	default:
		if !strings.Contains(u, "default") {
			u += " (default " + f.DefValue + ")"
		}
	}
	return u
}

// helpTable lays out key and description rows: the descriptions in one
// column after the widest key that leaves them room, each wrapped under
// it; a key too wide for that puts its description on the next row.
func helpTable(rows [][2]string, width int) string {
	keyCol := 0
	limit := width / 3 // the descriptions keep two thirds of the line
	for _, r := range rows {
		if n := len(r[0]) + helpKeyGap; n <= limit {
			keyCol = max(keyCol, n)
		}
	}
	keyCol = max(keyCol, 8)
	pad := helpRowIndent + strings.Repeat(" ", keyCol)
	var b strings.Builder
	for _, r := range rows {
		key := helpRowIndent + r[0]
		lines := text.Wrap(pad+r[1], width, "")
		if len(r[0])+helpKeyGap > keyCol {
			b.WriteString(key + "\n")
		} else {
			lines[0] = key + lines[0][len(key):]
		}
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// longRows lays out a command's long text: prose wraps between words; an
// indented line is a command (wrapped between its shell words) or, when
// two spaces or more part its columns, a table row that wraps under its
// last column (on a terminal too narrow for that, it wraps as prose).
func longRows(long string, width int) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(long, "\n"), "\n") {
		l = strings.ReplaceAll(l, "\t", "    ")
		if strings.TrimSpace(l) == "" {
			out = append(out, "")
			continue
		}
		l = helpTitleIndent + l
		body := strings.TrimLeft(l, " ")
		indented := len(l)-len(body) > len(helpTitleIndent)
		switch {
		case !indented:
			out = append(out, text.Wrap(l, width, "")...)
		case strings.Contains(body, "  ") && strings.LastIndex(l, "  ")+2 > width-24:
			out = append(out, text.Wrap(l, width, "    ")...)
		case strings.Contains(body, "  ") && strings.LastIndex(l, "  ")+2 <= width-24:
			col := strings.LastIndex(l, "  ") + 2
			rows := text.Wrap(strings.Repeat(" ", col)+l[col:], width, "")
			rows[0] = l[:col] + rows[0][col:]
			out = append(out, rows...)
		default:
			out = append(out, text.CommandRows(l, width)...)
		}
	}
	return out
}

// helpCommand is `haloforge help [COMMAND]`: the same help as --help.
func helpCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]",
		Short: "Help about any command",
		Long:  "help COMMAND prints the same help as haloforge COMMAND --help.",
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil || target == nil || len(rest) > 0 {
				return usageErr(fmt.Errorf("no command %q (haloforge --help lists the commands)", strings.Join(args, " ")))
			}
			target.InitDefaultHelpFlag()
			printHelp(target, nil)
			return nil
		},
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			cmd, _, err := root.Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, s := range subcommands(cmd) {
				if strings.HasPrefix(s.Name(), toComplete) {
					names = append(names, s.Name()+"\t"+s.Short)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	}
}
