#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# therock-toolbox step "flash-attention": ROCm's flash-attention fork with the Triton AMD
# backend, as a wheel built against the venv's torch, for your own flash_attn code. vLLM does
# not import it on ROCm: from v0.26 its ViT attention imports AITER's Triton kernels
# (aiter.ops.triton._triton_kernels.flash_attn_triton_amd, step "aiter") and its text
# attention is its own Triton/ROCm backends. Runs inside the box.
#
# Pins: FLASH_ATTENTION_REPO, FLASH_ATTENTION_REF (main_perf), PYTORCH_ROCM_ARCH.
# FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE makes setup.py skip the CK kernels (CDNA) and use
# Triton (setup.py @16d5154a line 65); FLASH_ATTENTION_FORCE_BUILD=TRUE builds from source
# instead of trying a prebuilt wheel from Dao-AILab's GitHub releases (line 61). The tree has
# no pyproject.toml, so its build requirements are PEP 517's setuptools and wheel; its
# setup.py also imports packaging (the pinned build tools of lib.sh). Cached per cache key.

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=./lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
hf_init "$@"
enter_box "$@"
load_toolbox_env
require_env FLASH_ATTENTION_REPO FLASH_ATTENTION_REF PYTORCH_ROCM_ARCH
activate_venv

log_step "flash-attention at $FLASH_ATTENTION_REF (Triton AMD)"
log_info "for your own flash_attn code: vLLM does not use this wheel on ROCm (its vision attention imports AITER's Triton flash attention, the aiter step; its text attention is vLLM's own)"
if ! is_dry_run && ! "$PY" -c 'import triton' 2>/dev/null; then
  log_warn "triton is not importable in the venv: flash-attention's Triton AMD backend needs it at run time (TheRock's torch normally brings it)"
fi
src=$WORK_DIR/flash-attention
dir=$(cache_dir wheels)
if ! is_dry_run && WHEEL=$(cached_wheel "$dir" 'flash_attn-*.whl'); then
  log_ok "reusing the cached flash-attention wheel $WHEEL (cache key $HALOFORGE_CACHE_KEY)"
else
  rocm_env
  git_at "$FLASH_ATTENTION_REPO" "$FLASH_ATTENTION_REF" "$src"
  build_wheel flash-attention 'flash_attn-*.whl' "$src" \
    FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE FLASH_ATTENTION_FORCE_BUILD=TRUE "PYTORCH_ROCM_ARCH=$PYTORCH_ROCM_ARCH" \
    "ROCM_PATH=$ROCM_PATH" "ROCM_HOME=$ROCM_HOME" "MAX_JOBS=$(max_jobs)"
fi
install_wheel "$WHEEL"
run env FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE "$PY" -c 'import flash_attn; print("flash_attn", flash_attn.__version__)'
triton_kept
