#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# therock-toolbox step "verify": the built stack works on this GPU, then the working
# environment is frozen so a rebuild can reproduce it. Runs inside the box.
#
# Pins: GPU_TARGET. Checks: torch sees device 0 as GPU_TARGET (gcnArchName); SDPA runs on
# the flash backend (verify_torch.py, like the AOTriton seed's backend-check.py);
# flash_attn and (when installed) aiter import; vllm --help and import vllm.
# Writes $HALOFORGE_STATE_DIR/therock-toolbox/requirements.lock (pip freeze).

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=./lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
hf_init "$@"
enter_box "$@"
load_toolbox_env
require_env GPU_TARGET
activate_venv
# Native gfx1151 kernels: a spoof would make the arch check lie (FACTS.md).
unset HSA_OVERRIDE_GFX_VERSION

log_step "torch on $GPU_TARGET and SDPA flash attention"
run env TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL=1 "$PY" "$HF_SCRIPT_DIR/verify_torch.py" "$GPU_TARGET"

log_step "flash-attention, AITER"
run env FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE "$PY" -c 'import flash_attn; print("flash_attn", flash_attn.__version__)'
if is_dry_run || [[ -n "$(pip_installed_version amd-aiter)" ]]; then
  run "$PY" -c 'import aiter; print("aiter imported")'
else
  log_info "AITER not installed (optional on $GPU_TARGET): skipped"
fi

log_step "vLLM"
run vllm --help
run "$PY" -c 'import vllm; print("vllm", vllm.__version__)'

log_step "Freeze the working environment"
lock=$HALOFORGE_STATE_DIR/$HALOFORGE_TRACK/requirements.lock
if is_dry_run; then
  printf '[dry-run] %s -m pip freeze --all > %s\n' "$PY" "$lock"
else
  {
    printf '# haloforge %s: working environment of box %s (%s), %s\n' \
      "$HALOFORGE_TRACK" "${TOOLBOX_NAME:-?}" "${TOOLBOX_IMAGE:-?}" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    printf '# reproduce: pip install --index-url %s --extra-index-url https://pypi.org/simple -r requirements.lock\n' "${THEROCK_INDEX_URL:-<THEROCK_INDEX_URL>}"
    printf '# (the wheels built here appear as "name @ file://…" in %s)\n' "$HALOFORGE_CACHE_DIR/wheels"
    "${PIP[@]}" freeze --all
  } | write_file "$lock"
  log_ok "$(grep -vc '^#' "$lock") packages frozen in $lock"
fi
