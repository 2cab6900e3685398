#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# vllm-image, step "verify": inside the pinned image, torch must see the GPU as the
# expected target, launch a kernel, and vllm must import.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
hf_init "$@"

require_env VLLM_IMAGE GPU_TARGET
log_step "Verify torch and vLLM in $VLLM_IMAGE"
need_gpu_devices
mapfile -t gpu < <(gpu_flags)
mapfile -t check < <(torch_check_flags)
run "$(engine)" run --rm "${gpu[@]}" --ipc=host "${check[@]}" \
  -e HALOFORGE_EXPECT_ARCH="$GPU_TARGET" -e HALOFORGE_CHECK_VLLM=1 \
  "$VLLM_IMAGE" python3 /haloforge/verify_torch.py
is_dry_run || log_ok "vLLM image works: start it with $HALOFORGE_STATE_DIR/vllm-image/start-vllm.sh <model>"
