#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# therock-toolbox step "aiter" (optional): AMD's AITER kernels as a wheel, built against the
# venv's torch. Runs inside the box.
#
# Why optional: AITER carries CDNA-only inline assembly (gfx90a/gfx942/gfx950); on gfx1151 it
# often fails to build (FAILURES.md gfx11-inline-asm-unsupported) and vLLM works without it.
# Never set VLLM_ROCM_USE_AITER=1 on gfx1151. HALOFORGE_SKIP_AITER=1 skips this step.
# Pins: AITER_REPO, AITER_REF, PYTORCH_ROCM_ARCH. The wheel is cached per cache key.

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=./lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
hf_init "$@"
log_info "optional step: AITER has CDNA-only inline assembly and often fails on gfx1151; vLLM works without it, and a failure here does not fail the build"
if [[ "${HALOFORGE_SKIP_AITER:-0}" == 1 ]]; then
  log_ok "HALOFORGE_SKIP_AITER=1: AITER skipped"
  exit 0
fi
enter_box "$@"
load_toolbox_env
require_env AITER_REPO AITER_REF PYTORCH_ROCM_ARCH
activate_venv

# On failure, say what it means before the log ends.
aiter_hint() {
  local code=$1
  ((code == 0)) && return 0
  log_warn "AITER did not build for $PYTORCH_ROCM_ARCH: expected on RDNA (gfx11); vLLM runs without it. Leave VLLM_ROCM_USE_AITER unset; HALOFORGE_SKIP_AITER=1 skips this step next time"
}
trap 'aiter_hint $?' EXIT

log_step "AITER at $AITER_REF"
src=$WORK_DIR/aiter
dir=$(cache_dir wheels)
if ! is_dry_run && WHEEL=$(cached_wheel "$dir" 'amd_aiter-*.whl'); then
  log_ok "reusing the cached AITER wheel $WHEEL (cache key $HALOFORGE_CACHE_KEY)"
else
  rocm_env
  git_at "$AITER_REPO" "$AITER_REF" "$src"
  retry -n 3 -d 5 -- git -C "$src" submodule update --init --recursive --depth 1
  build_wheel aiter 'amd_aiter-*.whl' "$src" \
    "PYTORCH_ROCM_ARCH=$PYTORCH_ROCM_ARCH" "GPU_ARCHS=$PYTORCH_ROCM_ARCH" \
    "ROCM_PATH=$ROCM_PATH" "ROCM_HOME=$ROCM_HOME" "MAX_JOBS=$(max_jobs)"
fi
install_wheel "$WHEEL"
run "$PY" -m pip show amd-aiter
