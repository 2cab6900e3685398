# Reads llama-bench's markdown table (its default output) and prints one line per result:
#   <test> TAB <tokens per second>
# e.g. "pp512\t721.33" and "tg128\t63.10". Columns are found by their header names, so
# extra columns (fa, n_ubatch, dev, mmap…) and their order do not matter; "± stddev" is
# dropped. Exit 1 when no result row was found.
function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
/^[ \t]*\|/ {
	n = split($0, cell, "|")
	if (!testcol) {
		for (i = 2; i < n; i++) {
			h = trim(cell[i])
			if (h == "test") testcol = i
			if (h == "t/s") tpscol = i
		}
		if (!(testcol && tpscol)) testcol = tpscol = 0
		next
	}
	t = trim(cell[testcol])
	if (t == "" || t ~ /^-+:?$/ || t ~ /^:?-+:?$/) next
	v = trim(cell[tpscol])
	sub(/[ \t]*±.*/, "", v)
	if (v !~ /^[0-9]+(\.[0-9]+)?$/) next
	printf "%s\t%s\n", t, v
	found++
	next
}
# A line that is not part of a table ends it: the next table has its own header.
{ if (testcol) testcol = tpscol = 0 }
END { exit found ? 0 : 1 }
