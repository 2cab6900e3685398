#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# therock-toolbox step "aiter" (optional): AMD's AITER kernels as a wheel, built against the
# venv's torch. Runs inside the box.
#
# Why optional: gfx1151 is experimental in AITER: it maps gfx1151 since v0.1.12
# (aiter/jit/utils/build_targets.py @v0.1.19) and its README @v0.1.19 lists gfx1151 (RDNA3.5)
# as "Experimental" ("Most CK and ASM kernels are CDNA-only"), and vLLM works without it.
# Keep VLLM_ROCM_USE_AITER unset unless you test a model with it. HALOFORGE_SKIP_AITER=1 skips
# this step. Before the build: AITER's [build-system] requires (pybind11, setuptools_scm,
# wheel, packaging, psutil, ninja, pandas, flydsl at v0.1.19), read from its pyproject.toml and
# held to scripts/lib/python-pins.txt; CK_DIR at its composable_kernel submodule, as kyuz0's
# Dockerfile.ubuntu-repoamd builds v0.1.19 for gfx1151. AITER_USE_SYSTEM_TRITON=1: without it
# AITER's setup.py (torch >= 2.9.1) uninstalls the venv's triton, TheRock's, and installs a
# generic one for ROCm 7.2 (ROCm/aiter setup.py, scripts/SOURCES.md), even when the build
# then fails; triton_kept checks it after the step.
# Pins: AITER_REPO, AITER_REF, PYTORCH_ROCM_ARCH. The wheel is cached per cache key.

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=./lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
hf_init "$@"
log_info "optional step: AITER's gfx1151 support is experimental upstream; vLLM works without it, and a failure here does not fail the build"
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
  log_warn "AITER did not build for $PYTORCH_ROCM_ARCH (the cause is above; gfx1151 is experimental in AITER); vLLM runs without it. Leave VLLM_ROCM_USE_AITER unset; HALOFORGE_SKIP_AITER=1 skips this step next time"
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
    "CK_DIR=$src/3rdparty/composable_kernel" AITER_USE_SYSTEM_TRITON=1 \
    "ROCM_PATH=$ROCM_PATH" "ROCM_HOME=$ROCM_HOME" "MAX_JOBS=$(max_jobs)"
fi
install_wheel "$WHEEL"
run "$PY" -m pip show amd-aiter
triton_kept
