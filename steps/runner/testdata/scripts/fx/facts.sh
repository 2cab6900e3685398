#!/usr/bin/env bash
# Records facts as the helpers do (one twice), plus lines that are not facts
# ($FX_FACTS names a file whose lines are appended as they are), then exits
# $FX_EXIT.
set -Eeuo pipefail
d=$(printf 'a%.0s' {1..64})
{
  printf 'image\tdocker.io/rocm/vllm-dev:nightly\tsha256:%s\n' "$d"
  printf 'image\tdocker.io/rocm/vllm-dev:nightly\tsha256:%s\n' "$d"
  printf 'git\thttps://github.com/vllm-project/vllm.git\tmain\t%s\n' "$(printf 'b%.0s' {1..40})"
  printf 'wheel\ttorch==2.11.0+rocm7.14.0\thttps://repo.example/torch.whl\t%s\n' "$(printf 'c%.0s' {1..64})"
  if [[ -n "${FX_FACTS:-}" ]]; then
    cat "$FX_FACTS"
  fi
} >>"$HALOFORGE_FACTS_FILE"
echo "recorded"
exit "${FX_EXIT:-0}"
