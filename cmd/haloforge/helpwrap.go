package main

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpWidth is the terminal width help must fit without the terminal
// breaking its lines: fang renders flag and command descriptions unwrapped,
// and wraps the long description at hyphens ("--" / "from"), so haloforge
// wraps them itself, between words, before fang sees them.
const helpWidth = 80

// fang's help layout: the long text is indented by 2; flag and command
// rows by 4, then the key column, then 2 spaces at least.
const (
	helpLongIndent = 2
	helpRowIndent  = 4
	helpKeyGap     = 2
	helpMinKey     = 10 // fang's minSpace
)

// wrapHelp wraps the long descriptions and the flag usages of root and
// every command below it to helpWidth. A flag's usage gets line breaks
// (fang aligns the rows under the first; cobra's shell completion keeps the
// first line only). The root's command list is left as fang lays it out:
// its key column is each command's usage line.
func wrapHelp(root *cobra.Command) {
	// Commands() sorts a command's children the first time it is called;
	// that would reorder "did you mean" suggestions (closest first, in the
	// order commands were added), so the walk leaves the order alone.
	sorting := cobra.EnableCommandSorting
	cobra.EnableCommandSorting = false
	defer func() { cobra.EnableCommandSorting = sorting }()
	seen := map[*pflag.Flag]bool{}
	keys := longestKey(root)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Long = wrapWords(c.Long, helpWidth-helpLongIndent-2)
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if !seen[f] {
					seen[f] = true
					f.Usage = wrapWords(f.Usage, helpWidth-helpRowIndent-keys)
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// flagKey is the flag as fang's FLAGS column shows it.
func flagKey(f *pflag.Flag) string {
	if f.Shorthand != "" {
		return "-" + f.Shorthand + " --" + f.Name
	}
	return "--" + f.Name
}

// longestKey is the widest FLAGS column of any command below root, so a
// flag shared by several commands (the persistent ones) fits in all.
func longestKey(root *cobra.Command) int {
	key := helpMinKey
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) { key = max(key, len(flagKey(f))+helpKeyGap) })
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return key
}

// wrapWords breaks each line of text longer than width between words; a
// continuation keeps the line's indentation. A word wider than width stays
// whole (a path, a URL). Lines that fit are left as they are.
func wrapWords(text string, width int) string {
	if text == "" || width < 20 {
		return text
	}
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if ansi.StringWidth(line) <= width {
			out = append(out, line)
			continue
		}
		indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
		row := ""
		for _, w := range strings.Fields(line) {
			switch {
			case row == "":
				row = indent + w
			case ansi.StringWidth(row)+1+ansi.StringWidth(w) <= width:
				row += " " + w
			default:
				out = append(out, row)
				row = indent + w
			}
		}
		out = append(out, row)
	}
	return strings.Join(out, "\n")
}
