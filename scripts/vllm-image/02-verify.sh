#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# vllm-image, step "verify": inside the pinned image, torch must see the GPU as the
# expected target with that target in its arch list and run a kernel; vLLM must detect the
# ROCm platform; then its answers with VERIFY_MODEL, eager and compiled (lib/vllm.sh
# vllm_answers: haloforge verify's prompt set, judged for the known answers and degenerate
# output; WRONG OUTPUT fails the step; not verified, with the reason, when no model is given or
# it cannot be downloaded). The CPU reference of a vLLM model is recorded in the
# therock-toolbox track's venv, not in an image.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
# shellcheck source=../lib/vllm.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/vllm.sh"
hf_init "$@"

require_env VLLM_IMAGE GPU_TARGET
log_step "Verify torch and vLLM in $VLLM_IMAGE"
need_gpu_devices
hf_verify_begin
mapfile -t gpu < <(gpu_flags)
mapfile -t check < <(torch_check_flags)
mapfile -t vchk < <(vllm_check_flags)
# --entrypoint python3: vllm/vllm-openai-rocm would otherwise run `vllm serve` on the arguments.
hf_run_checks "$(engine)" run --rm "${gpu[@]}" --ipc=host "${check[@]}" "${vchk[@]}" \
  -e HALOFORGE_EXPECT_ARCH="$GPU_TARGET" \
  --entrypoint python3 "$VLLM_IMAGE" /haloforge/verify_torch.py
VLLM_ANSWERS_PY=/haloforge/verify_answers.py vllm_answers "$(engine)" run --rm "${gpu[@]}" --ipc=host "${check[@]}" "${vchk[@]}" \
  --entrypoint python3 "$VLLM_IMAGE" || die "vLLM's answers are wrong on this stack (the WRONG OUTPUT above)"
hf_verify_end
is_dry_run || log_ok "vLLM image works: start it with $HALOFORGE_STATE_DIR/vllm-image/start-vllm.sh <model>"
