package hostfix

import (
	"fmt"
	"strings"
)

// maxDiffLines bounds the LCS table (at most 16 MB): configuration files are
// a few hundred lines; beyond this the diff lists the changed file whole.
const maxDiffLines = 2000

// unifiedDiff is a unified diff (3 lines of context) between two versions
// of a file, "" when they are equal. An absent file is "" with exists false.
func unifiedDiff(path string, before, after string, existedBefore bool) string {
	if before == after && existedBefore {
		return ""
	}
	a, b := splitLinesKeep(before), splitLinesKeep(after)
	from := "--- " + path
	if !existedBefore {
		from = "--- /dev/null"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s\n+++ %s\n", from, path)
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		fmt.Fprintf(&sb, "@@ -1,%d +1,%d @@\n", len(a), len(b))
		for _, l := range a {
			writeDiffLine(&sb, '-', l)
		}
		for _, l := range b {
			writeDiffLine(&sb, '+', l)
		}
		return sb.String()
	}
	ops := lcsOps(a, b)
	const ctx = 3
	// Group the edit script into hunks with context.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(0, i-ctx)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				end = min(len(ops), end+ctx)
				break
			}
			end = run
		}
		aStart, bStart, aN, bN := -1, -1, 0, 0
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				if aStart < 0 {
					aStart = o.ai
				}
				aN++
			}
			if o.kind != '-' {
				if bStart < 0 {
					bStart = o.bi
				}
				bN++
			}
		}
		fmt.Fprintf(&sb, "@@ -%s +%s @@\n", hunkRange(aStart, aN, ops[start].ai), hunkRange(bStart, bN, ops[start].bi))
		for _, o := range ops[start:end] {
			if o.kind == '+' {
				writeDiffLine(&sb, '+', b[o.bi])
			} else {
				writeDiffLine(&sb, o.kind, a[o.ai])
			}
		}
		i = end
	}
	return sb.String()
}

func hunkRange(start, n, at int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", at)
	}
	if n == 1 {
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func writeDiffLine(sb *strings.Builder, kind byte, l string) {
	sb.WriteByte(kind)
	if strings.HasSuffix(l, "\n") {
		sb.WriteString(l)
		return
	}
	sb.WriteString(l)
	sb.WriteString("\n\\ No newline at end of file\n")
}

type diffOp struct {
	kind   byte // ' ', '-', '+'
	ai, bi int  // line indexes; for '+' ai is the position in a, for '-' bi the position in b
}

// lcsOps is the edit script of a longest common subsequence.
func lcsOps(a, b []string) []diffOp {
	n, m := len(a), len(b)
	dp := make([][]int32, n+1)
	for i := range dp {
		dp[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, diffOp{' ', i, j})
			i++
			j++
		case i < n && (j == m || dp[i+1][j] >= dp[i][j+1]):
			ops = append(ops, diffOp{'-', i, j})
			i++
		default:
			ops = append(ops, diffOp{'+', i, j})
			j++
		}
	}
	return ops
}
