#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# therock-aotriton, step "verify" (run-backend-check.sh): run backend-check.py in the venv with
# the guide's environment prefix; it fails unless SDPA prefers AOTriton and flash attention
# is usable and runs.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=./common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
hf_init "$@"
aot_paths

need_venv
aot_env
export PYTORCH_ROCM_ARCH=${GPU_TARGET:-gfx1151}
log_step "Backend check (TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL=1 PYTORCH_ROCM_ARCH=$PYTORCH_ROCM_ARCH TORCH_ROCM_AOTRITON_PREFER_DEFAULT=1 HIP_VISIBLE_DEVICES=$HIP_VISIBLE_DEVICES)"
hf_verify_begin
hf_run_checks env HALOFORGE_EXPECT_ARCH="$PYTORCH_ROCM_ARCH" "$AOT_PY" "$HALOFORGE_SCRIPTS_DIR/lib/verify_torch.py"
hf_run_checks "$AOT_PY" "$HF_SCRIPT_DIR/backend-check.py"
run "$AOT_PY" "$HF_SCRIPT_DIR/10-test_aotriton_direct.py"
hf_verify_end
