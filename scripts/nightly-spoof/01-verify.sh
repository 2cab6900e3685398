#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# nightly-spoof, step "verify": under the spoof, torch must report the spoofed target,
# launch a kernel, and vllm must import. The risk is shown first.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
# shellcheck source=../lib/vllm.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/vllm.sh"
hf_init "$@"

require_env NIGHTLY_IMAGE SPOOF_GFX_VERSION
spoof_risk_banner "$SPOOF_GFX_VERSION"
log_step "Verify $NIGHTLY_IMAGE under HSA_OVERRIDE_GFX_VERSION=$SPOOF_GFX_VERSION"
need_gpu_devices
expect=$(spoofed_target "$SPOOF_GFX_VERSION")
hf_verify_begin
mapfile -t gpu < <(gpu_flags)
mapfile -t check < <(torch_check_flags)
mapfile -t vchk < <(vllm_check_flags)
hf_run_checks "$(engine)" run --rm "${gpu[@]}" --ipc=host "${check[@]}" "${vchk[@]}" \
  -e HSA_OVERRIDE_GFX_VERSION="$SPOOF_GFX_VERSION" \
  -e HALOFORGE_EXPECT_ARCH="$expect" \
  "$NIGHTLY_IMAGE" python3 /haloforge/verify_torch.py
# What vLLM computes under the spoof: its answers, eager and compiled (lib/vllm.sh).
VLLM_ANSWERS_PY=/haloforge/verify_answers.py vllm_answers "$(engine)" run --rm "${gpu[@]}" --ipc=host "${check[@]}" "${vchk[@]}" \
  -e HSA_OVERRIDE_GFX_VERSION="$SPOOF_GFX_VERSION" --entrypoint python3 "$NIGHTLY_IMAGE" || die "vLLM's answers are wrong under the spoof (the WRONG OUTPUT above)"
hf_verify_end
is_dry_run || log_ok "the spoof works today; serve with $HF_SCRIPT_DIR/run_nightly_spoof.sh <model>"
