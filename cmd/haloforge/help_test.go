package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/haloforge/haloforge/internal/text"
)

// allCommands is every command of the CLI, groups and cobra's own
// (completion and its shells, help) included, the hidden ones left out.
func allCommands(root *cobra.Command) []*cobra.Command {
	root.InitDefaultCompletionCmd()
	out := []*cobra.Command{root}
	for i := 0; i < len(out); i++ {
		for _, c := range out[i].Commands() {
			if !c.Hidden {
				out = append(out, c)
			}
		}
	}
	return out
}

// sourceWords are the words help may print for cmd: those of its texts,
// its flags' usages and defaults, its subcommands' names and short texts,
// and a path's pieces (help breaks a path wider than a row after a '/').
func sourceWords(cmd *cobra.Command) map[string]bool {
	var texts []string
	texts = append(texts, cmd.Long, cmd.Short, cmd.UseLine(), cmd.Example, cmd.CommandPath(),
		"USAGE EXAMPLES COMMANDS FLAGS GLOBAL [COMMAND] COMMAND [--flags] --help says more about a command.")
	for _, s := range cmd.Commands() {
		texts = append(texts, s.Name(), s.Short)
	}
	add := func(f *pflag.Flag) {
		texts = append(texts, "--"+f.Name, "-"+f.Shorthand+",", flagText(f))
	}
	cmd.LocalFlags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	words := map[string]bool{"\\": true, "#": true}
	for _, t := range texts {
		for _, w := range strings.Fields(strings.ReplaceAll(t, "\t", " ")) {
			words[w] = true
			for _, p := range strings.SplitAfter(w, "/") {
				words[p] = true
			}
			// a piece may also end a path's first row with what went
			// before it: "/home/x/" of "/home/x/y"
			for i := range w {
				if w[i] == '/' {
					words[w[:i+1]] = true
					words[w[i+1:]] = true
				}
			}
		}
	}
	return words
}

// TestHelpFitsEveryWidth lays out every command's help, groups and
// cobra's own included, at 80 columns (a pipe, or a wider terminal) and at
// 60 and 40 (narrow terminals): no row is wider, none ends in spaces, and
// every word on it is a word of the command's texts, so that nothing was
// cut inside a word. The word check fails on a row cut at the width.
func TestHelpFitsEveryWidth(t *testing.T) {
	for _, cmd := range allCommands(newRoot()) {
		t.Run(strings.ReplaceAll(cmd.CommandPath(), " ", "_"), func(t *testing.T) {
			words := sourceWords(cmd)
			for _, width := range []int{80, 60, 40} {
				help := helpText(cmd, width, false)
				for _, row := range strings.Split(help, "\n") {
					if strings.TrimRight(row, " ") != row {
						t.Errorf("width %d: row ends in spaces: %q", width, row)
					}
					for _, w := range strings.Fields(row) {
						if !words[w] {
							t.Errorf("width %d: %q is not a word of the command's texts (cut?) in row %q", width, w, row)
						}
					}
					if ansi.StringWidth(row) <= width {
						continue
					}
					// Only a word no row holds may stick out on a narrow
					// terminal: a quoted string of an example, a value
					// with no '/' to break at.
					words := text.ShellWords(strings.TrimSuffix(strings.TrimSpace(row), " \\"))
					if len(words) > 1 || width >= 80 {
						t.Errorf("width %d: row of %d columns: %q", width, ansi.StringWidth(row), row)
					}
				}
			}
		})
	}
}

// TestHelpKeepsCommandsWhole: an example, copied from help at any width,
// is the example as written: rows broken between words with " \".
func TestHelpKeepsCommandsWhole(t *testing.T) {
	for _, cmd := range allCommands(newRoot()) {
		if cmd.Example == "" {
			continue
		}
		t.Run(strings.ReplaceAll(cmd.CommandPath(), " ", "_"), func(t *testing.T) {
			var want []string
			for _, l := range strings.Split(strings.Trim(cmd.Example, "\n"), "\n") {
				cmdPart, _, _ := strings.Cut(strings.TrimSpace(l), "  #")
				if cmdPart = strings.TrimSpace(cmdPart); cmdPart != "" && !strings.HasPrefix(cmdPart, "#") {
					want = append(want, strings.Join(strings.Fields(cmdPart), " "))
				}
			}
			for _, width := range []int{80, 50} {
				help := helpText(cmd, width, false)
				rows := strings.Split(help, "\n")
				start := slices.Index(rows, "  EXAMPLES") + 1
				end := start + 1
				for end < len(rows) && !(strings.HasPrefix(rows[end], "  ") && rows[end][2] != ' ') {
					end++
				}
				var got []string
				joined := ""
				for _, row := range rows[start:end] {
					row = strings.TrimSpace(row)
					if row == "" || strings.HasPrefix(row, "#") {
						continue
					}
					if cmdPart, _, ok := strings.Cut(row, "   #"); ok {
						row = strings.TrimSpace(cmdPart)
					}
					if rest, ok := strings.CutSuffix(row, " \\"); ok {
						joined += rest + " "
						continue
					}
					got = append(got, joined+row)
					joined = ""
				}
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("width %d: the examples read back as\n%s\nwant\n%s", width, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			}
		})
	}
}

// TestFlagText: a description starts with a capital unless its first word
// is a value written as such, and names its default once.
func TestFlagText(t *testing.T) {
	for _, tc := range []struct {
		name, usage, def, want string
	}{
		{"a plain word", "keep runs in DIR", "", "Keep runs in DIR"},
		{"a value", "ssh_config file to use", "", "ssh_config file to use"},
		{"a default", "deadline for the whole check (one request gets at most 10s)", "30s", "Deadline for the whole check (one request gets at most 10s) (default 30s)"},
		{"a default said already", "the port (default: the pin)", "8080", "The port (default: the pin)"},
		{"false is no default", "print JSON", "false", "Print JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := flagText(&pflag.Flag{Usage: tc.usage, DefValue: tc.def}); got != tc.want {
				t.Errorf("flagText = %q, want %q", got, tc.want)
			}
		})
	}
}
