#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# nightly-spoof, step "pull": pull the floating nightly vLLM image and record the digest it
# was today, so a run that works can be locked with the locked-spoof track.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
hf_init "$@"

require_env NIGHTLY_IMAGE
log_step "Pull $NIGHTLY_IMAGE"
log_warn "$NIGHTLY_IMAGE floats: what you pull today is not what you pulled yesterday (not reproducible)"
case $NIGHTLY_IMAGE in
  *rocm/vllm-dev:*)
    # vLLM docs: rocm/vllm-dev is deprecated in favour of vllm/vllm-openai-rocm (scripts/SOURCES.md).
    log_warn "rocm/vllm-dev is deprecated upstream (vllm/vllm-openai-rocm replaces it): its nightly tag may stop moving or be gone; vllm/vllm-openai-rocm carries gfx1151 kernels itself and needs no spoof (its entrypoint is vllm serve: give it the model, no spoof variables)"
    ;;
esac
# A floating tag is pulled every time: "present" says nothing about "current".
retry -n 3 -d 15 -- "$(engine)" pull "$NIGHTLY_IMAGE"
hf_fact_image "$NIGHTLY_IMAGE" "$(engine)"

is_dry_run && exit 0
digest=$(image_digest "$NIGHTLY_IMAGE")
dir=$(state_dir_for nightly-spoof)
printf '%s %s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$NIGHTLY_IMAGE" "${digest:-unknown}" >>"$dir/pulled.log"
if [[ -n "$digest" ]]; then
  log_ok "today's $NIGHTLY_IMAGE is $digest"
  log_info "if it works for you, lock it: haloforge build --track locked-spoof --set SPOOF_BASE_IMAGE=${NIGHTLY_IMAGE%:*} --set SPOOF_BASE_DIGEST=$digest"
fi
