# Reads llama-bench's markdown table and prints the backends its result rows ran on (the
# "backend" column, e.g. "Vulkan", "ROCm", "ROCm,Vulkan" or "CPU"), each distinct value once,
# comma separated. Exit 1 when no row names a backend.
function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
/^[ \t]*\|/ {
	n = split($0, cell, "|")
	if (!bcol) {
		for (i = 2; i < n; i++) if (trim(cell[i]) == "backend") bcol = i
		next
	}
	b = trim(cell[bcol])
	if (b == "" || b ~ /^:?-+:?$/) next
	if (!(b in seen)) { seen[b] = 1; out = out (out == "" ? "" : ",") b }
	next
}
{ bcol = 0 }
END { if (out == "") exit 1; print out }
