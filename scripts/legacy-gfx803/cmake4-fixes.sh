#!/bin/sh
# shellcheck source-path=SCRIPTDIR
# cmake4-fixes.sh PYTORCH_DIR: the CMake >= 4 fixes of the gfx803 workflow, fail-closed and
# idempotent. CMake 4 refuses cmake_minimum_required(VERSION < 3.5) ("Compatibility with
# CMake < 3.5 has been removed": the cmake4-policy-version-minimum failure), and PyTorch's
# requirements pull CMake 4 from pip. Exactly the third_party files the workflow lists get
# their minimum raised to 3.5; gloo's types.h gets the <cstdint> newer compilers want.
#
# Every file is checked before any is written: one missing anchor changes nothing and
# exits 1. Each file reports "applied", "already present" or "anchor not found". CRLF kept.
set -eu

root=${1:?usage: cmake4-fixes.sh PYTORCH_DIR}
MIN=3.5
CMAKE_FILES="third_party/protobuf/cmake/CMakeLists.txt
third_party/psimd/CMakeLists.txt
third_party/FP16/CMakeLists.txt
third_party/NNPACK/CMakeLists.txt
third_party/ittapi/CMakeLists.txt
third_party/gloo/CMakeLists.txt
third_party/ideep/mkl-dnn/CMakeLists.txt"
GLOO_TYPES=third_party/gloo/gloo/types.h

# bump_min FILE: print FILE with every cmake_minimum_required(VERSION x) below MIN raised
# to MIN (the rest of the call kept). Exit 0 changed, 10 already fine, 11 no such call.
bump_min() {
  awk -v min="$MIN" '
		function lt(a, b,   x, y, i, n) {
			n = split(a, x, "."); split(b, y, ".")
			for (i = 1; i <= 3; i++) { if ((x[i] + 0) != (y[i] + 0)) return (x[i] + 0) < (y[i] + 0) }
			return 0
		}
		{
			line = $0
			if (match(tolower(line), /^[ \t]*cmake_minimum_required[ \t]*\([ \t]*version[ \t]+[0-9][0-9.]*/)) {
				found = 1
				head = substr(line, 1, RSTART + RLENGTH - 1)
				tail = substr(line, RSTART + RLENGTH)
				match(head, /[0-9][0-9.]*$/)
				ver = substr(head, RSTART)
				if (lt(ver, min)) {
					line = substr(head, 1, RSTART - 1) min tail
					changed = 1
				}
			}
			print line
		}
		END { if (!found) exit 11; if (!changed) exit 10 }
	' "$1"
}

# add_cstdint FILE: print FILE with #include <cstdint> before its first #include.
# Exit 0 changed, 10 already there, 11 no #include to anchor on.
add_cstdint() {
  awk '
		/^[ \t]*#[ \t]*include[ \t]*<cstdint>/ { have = 1 }
		{ lines[NR] = $0 }
		!first && /^[ \t]*#[ \t]*include/ { first = NR }
		END {
			if (have) exit 10
			if (!first) exit 11
			cr = (lines[first] ~ /\r$/) ? "\r" : ""
			for (i = 1; i <= NR; i++) {
				if (i == first) print "#include <cstdint>" cr
				print lines[i]
			}
		}
	' "$1"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0 bad=0
plan() { # FILE KIND: stage the patched copy of FILE in $work, remember the outcome
  n=$((n + 1))
  f=$root/$1
  code=0
  if [ ! -f "$f" ]; then
    echo "patch cmake4 $1: anchor not found in $f: file does not exist" >&2
    bad=1
    return 0
  fi
  "$2" "$f" >"$work/$n" || code=$?
  case $code in
    0) echo "$1" >"$work/$n.apply" ;;
    10) echo "patch cmake4 $1: already present ($f)" ;;
    *)
      echo "patch cmake4 $1: anchor not found in $f: cmake_minimum_required(VERSION …) / #include" >&2
      bad=1
      ;;
  esac
}
for rel in $CMAKE_FILES; do plan "$rel" bump_min; done
plan "$GLOO_TYPES" add_cstdint
if [ "$bad" -ne 0 ]; then
  echo "cmake4-fixes: nothing changed: fix the anchors above (did PyTorch move these files?)" >&2
  exit 1
fi
i=0
for rel in $CMAKE_FILES $GLOO_TYPES; do
  i=$((i + 1))
  [ -f "$work/$i.apply" ] || continue
  cat "$work/$i" >"$root/$rel"
  echo "patch cmake4 $rel: applied ($root/$rel)"
done
