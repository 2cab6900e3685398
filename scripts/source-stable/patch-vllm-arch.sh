#!/bin/sh
# shellcheck source-path=SCRIPTDIR
# patch-vllm-arch.sh FILE TARGET AWK: make TARGET (gfx1151) part of vLLM's
# set(HIP_SUPPORTED_ARCHS "…") in FILE (CMakeLists.txt), fail-closed, with the list_add.awk
# of scripts/lib (the same patcher the therock-toolbox track uses). Runs inside the image
# build, where only POSIX sh is promised. Reports exactly one of:
#   patch vllm-hip-archs: applied (FILE: TARGET added)
#   patch vllm-hip-archs: already present upstream (FILE)
#   patch vllm-hip-archs: anchor not found in FILE: set(HIP_SUPPORTED_ARCHS "…")   (exit 1)
set -eu
file=$1 target=$2 awkf=$3
[ -f "$file" ] || {
  echo "patch vllm-hip-archs: anchor not found in $file: file does not exist" >&2
  exit 1
}
tmp=$(mktemp "$file.hfpatch.XXXXXX")
code=0
awk -v var=HIP_SUPPORTED_ARCHS -v item="$target" -f "$awkf" "$file" >"$tmp" || code=$?
case $code in
  0)
    cat "$tmp" >"$file"
    rm -f "$tmp"
    echo "patch vllm-hip-archs: applied ($file: $target added)"
    ;;
  10)
    rm -f "$tmp"
    echo "patch vllm-hip-archs: already present upstream ($file)"
    ;;
  *)
    rm -f "$tmp"
    echo "patch vllm-hip-archs: anchor not found in $file: set(HIP_SUPPORTED_ARCHS \"…\")" >&2
    exit 1
    ;;
esac
