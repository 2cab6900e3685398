# Adds item to every CMake list literal `set(var "a;b;c")` in a file (patch_list_add in
# patch.sh). Prints the file; exit 0 = changed, 10 = already present everywhere,
# 11 = no such set() line. A trailing \r (CRLF file) stays where it was.
function key(t) {
	sub(/^gfx/, "", t)
	return sprintf("%08d%s", length(t), t)
}
BEGIN { found = 0; changed = 0 }
{
	line = $0
	pat = "^[ \t]*set[ \t]*\\([ \t]*" var "[ \t]+\"[^\"]*\""
	if (match(line, pat)) {
		found++
		head = substr(line, 1, RSTART + RLENGTH - 1)
		tail = substr(line, RSTART + RLENGTH)
		q = index(head, "\"")
		prefix = substr(head, 1, q)
		list = substr(head, q + 1, length(head) - q - 1)
		n = split(list, items, ";")
		have = 0
		for (i = 1; i <= n; i++) if (items[i] == item) have = 1
		if (!have) {
			out = ""; placed = 0
			for (i = 1; i <= n; i++) {
				if (!placed && items[i] != "" && key(item) < key(items[i])) {
					out = out (out == "" ? "" : ";") item; placed = 1
				}
				if (items[i] != "") out = out (out == "" ? "" : ";") items[i]
			}
			if (!placed) out = out (out == "" ? "" : ";") item
			line = prefix out "\"" tail
			changed++
		}
	}
	print line
}
END {
	if (!found) exit 11
	if (!changed) exit 10
	exit 0
}
