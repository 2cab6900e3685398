#!/usr/bin/env bash
# A verify step speaking the outcome protocol: it says what it proved and,
# with FX_NOT_VERIFIED, what it could not check; FX_EXIT is its exit code.
set -Eeuo pipefail
result="${HALOFORGE_RESULT_FILE:?run by haloforge}"
if [[ -e "$result" ]]; then
  echo "result file exists at start"
  exit 9
fi
echo "checking the stack"
printf 'verified\t%s\n' "torch sees gfx1151 and a kernel ran" >>"$result"
if [[ -n "${FX_NOT_VERIFIED:-}" ]]; then
  echo "not verified: ${FX_NOT_VERIFIED}"
  printf 'not-verified\t%s\n' "$FX_NOT_VERIFIED" >>"$result"
fi
exit "${FX_EXIT:-0}"
