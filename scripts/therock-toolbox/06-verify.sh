#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# therock-toolbox step "verify": prove the built stack works on this GPU, then freeze the
# working environment so a rebuild can reproduce it. Runs inside the box.
#
# Pins: GPU_TARGET, VERIFY_MODEL (a small public model for vLLM's generation check; empty:
# that check is reported as not verified). Each check records what it proved for the
# runner's report (hf_verified) or why it could not (hf_not_verified):
#   torch      device 0 is GPU_TARGET, GPU_TARGET is in torch's arch list, a matmul runs
#              on it and matches the CPU (../lib/verify_torch.py)
#   SDPA       the flash backend runs and matches the math one (verify_sdpa.py)
#   flash-attn one forward pass of flash_attn_func matches math SDPA (verify_fa.py)
#   vLLM       current_platform.is_rocm() (../lib/verify_vllm.py)
#   answers    vLLM answers haloforge verify's prompt set with VERIFY_MODEL (downloaded here
#              from Hugging Face) twice, eager and compiled (torch.compile and HIP graphs, as
#              `vllm serve` runs), each judged by haloforge verify against haloforge's
#              reference for the model, recorded once by transformers on the CPU in float32
#              where the model fits, else for the known answers and degenerate output
#              (../lib/vllm.sh); WRONG OUTPUT fails the step
#   triton     the venv's triton is still TheRock's (lib.sh triton_kept)
# Writes $HALOFORGE_STATE_DIR/therock-toolbox/requirements.lock (pip freeze).

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=./lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=../lib/vllm.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/vllm.sh"
hf_init "$@"
enter_box "$@"
load_toolbox_env
require_env GPU_TARGET
activate_venv
# Native gfx1151 kernels: a spoof would make the arch check lie (the runtime reports the spoofed target).
unset HSA_OVERRIDE_GFX_VERSION
hf_verify_begin
lib=$HALOFORGE_SCRIPTS_DIR/lib

log_step "torch on $GPU_TARGET: arch list and a kernel"
hf_run_checks env HALOFORGE_EXPECT_ARCH="$GPU_TARGET" "$PY" "$lib/verify_torch.py"

log_step "SDPA flash attention"
hf_run_checks env TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL=1 "$PY" "$HF_SCRIPT_DIR/verify_sdpa.py" "$GPU_TARGET"

log_step "flash-attention forward pass"
hf_run_checks env FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE "$PY" "$HF_SCRIPT_DIR/verify_fa.py"

log_step "AITER"
if is_dry_run || [[ -n "$(pip_installed_version amd-aiter)" ]]; then
  run "$PY" -c 'import aiter; print("aiter imported")'
  log_info "AITER imports; its kernels are not exercised (optional on $GPU_TARGET, never VLLM_ROCM_USE_AITER=1)"
else
  log_info "AITER not installed (optional on $GPU_TARGET): skipped"
fi

log_step "triton: still TheRock's"
triton_kept

log_step "vLLM: the ROCm platform"
hf_run_checks "$PY" "$lib/verify_vllm.py"
VLLM_CPU_REFERENCE=1 vllm_answers "$PY" || die "vLLM's answers are wrong on this stack (the WRONG OUTPUT above)"
hf_verify_end

log_step "Freeze the working environment"
lock=$HALOFORGE_STATE_DIR/$HALOFORGE_TRACK/requirements.lock
if is_dry_run; then
  printf '[dry-run] %s -m pip freeze --all > %s\n' "$PY" "$lock"
else
  {
    printf '# haloforge %s: working environment of box %s (%s), %s\n' \
      "$HALOFORGE_TRACK" "${TOOLBOX_NAME:-?}" "${TOOLBOX_IMAGE:-?}" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    printf '# reproduce: pip install --index-url %s --extra-index-url https://pypi.org/simple -r requirements.lock\n' "${TORCH_INDEX_URL:-${THEROCK_INDEX_URL:-<THEROCK_INDEX_URL>}}"
    printf '# (the wheels built here appear as "name @ file://…" in %s)\n' "$HALOFORGE_CACHE_DIR/wheels"
    "${PIP[@]}" freeze --all
  } | write_file "$lock"
  log_ok "$(grep -vc '^#' "$lock") packages frozen in $lock"
fi
