#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# llamacpp-rocm, step "verify": report the ladder's recorded result: which strategy works,
# or that none did. It re-runs nothing.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=./ladder.sh
. "$(dirname "${BASH_SOURCE[0]}")/ladder.sh"
hf_init "$@"

tsv=$HALOFORGE_STATE_DIR/llamacpp-rocm/ladder.tsv
json=$HALOFORGE_STATE_DIR/llamacpp-rocm/ladder.json
log_step "Ladder results ($json)"
if is_dry_run; then
  log_info "[dry-run] would read $tsv and report the first rung with status success"
  exit 0
fi
[[ -s "$tsv" ]] || die "no ladder results yet: run the ladder step first (haloforge build --track llamacpp-rocm)"
winner='' proof='' answers=''
while IFS=$'\t' read -r id status secs image detail ans _; do
  printf '  %-18s %-8s %5ss  %s\n' "$id" "$status" "$secs" "$detail"
  if [[ "$status" == success && -z "$winner" ]]; then
    winner="$id ($image)" proof=$detail answers=$ans
  fi
done <"$tsv"
[[ -n "$winner" ]] || die "no rung worked on this box; llama.cpp's ROCm backend stays experimental here: use the llamacpp-vulkan track"
log_ok "works on this box: $winner"
log_info "answers: $answers"
hf_verified "llama.cpp generated tokens on the GPU with rung $winner: $proof (ladder.json; answers: ${answers%%:*})"
log_info "experimental: re-run the ladder after a kernel, firmware or image update; the result can change"
