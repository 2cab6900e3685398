#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# therock-aotriton, step "env" (00-setup-env.sh): a Python venv with TheRock's ROCm SDK wheels
# for the GPU target, and the guide's environment persisted for the next activation.
# By hand: scripts/therock-aotriton/00-setup-env.sh, then: . "$THEROCK_AOTRITON_VENV/bin/activate"
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=./common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
hf_init "$@"
aot_paths

require_env PYTHON_VERSION THEROCK_INDEX_URL ROCM_VERSION GPU_TARGET
python=python$PYTHON_VERSION
need_tools git "$python"

# The index first: an unreachable one fails here in seconds, before anything is created.
if ! is_dry_run && ! url_reachable "$THEROCK_INDEX_URL" 15; then
  die "No matching distribution found: the wheel index $THEROCK_INDEX_URL is unreachable (network, proxy, or a retired index: see versions.env THEROCK_INDEX_URL)"
fi

log_step "Venv $AOT_VENV (Python $PYTHON_VERSION)"
if [[ -x "$AOT_PY" ]]; then
  log_ok "venv exists: $("$AOT_PY" --version)"
else
  run "$python" -m venv "$AOT_VENV"
fi
pip_install_pinned "$AOT_PY" pip setuptools wheel packaging

log_step "TheRock ROCm SDK $ROCM_VERSION for $GPU_TARGET from $THEROCK_INDEX_URL"
have=''
is_dry_run || have=$("$AOT_PY" -m rocm_sdk version 2>/dev/null || true)
if [[ "$have" == "$ROCM_VERSION" ]]; then
  log_ok "rocm $have already installed"
else
  # PyPI as an extra index for plain dependencies; the == pins keep ROCm from AMD's index.
  pip_install_recorded "$AOT_PY" --constraint "$HF_PYTHON_PINS" \
    --index-url "$THEROCK_INDEX_URL" --extra-index-url https://pypi.org/simple \
    "rocm[libraries,devel,device-$GPU_TARGET]==$ROCM_VERSION" "rocm-sdk-device-$GPU_TARGET==$ROCM_VERSION"
fi
run "$AOT_VENV/bin/rocm-sdk" init
if ! is_dry_run; then
  have=$("$AOT_PY" -m rocm_sdk version)
  [[ "$have" == "$ROCM_VERSION" ]] || die "rocm-sdk reports $have, the pin ROCM_VERSION is $ROCM_VERSION"
  root=$("$AOT_PY" -m rocm_sdk path --root)
  log_ok "ROCm SDK $have at $root"
else
  # shellcheck disable=SC2016 # shown literally: the dry run cannot ask rocm-sdk
  root='$('"$AOT_PY"' -m rocm_sdk path --root)'
fi

log_step "Persist the guide's environment ($AOT_ENV_FILE)"
# AMD_SERIALIZE_KERNEL=1 is the guide's debug-friendly default; the benchmark sets 0.
write_file "$AOT_ENV_FILE" <<ENV
# Written by haloforge therock-aotriton/00-setup-env.sh; sourced on venv activation.
export TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL=1
export PYTORCH_ROCM_ARCH=$GPU_TARGET
export TORCH_ROCM_AOTRITON_PREFER_DEFAULT=1
export HIP_VISIBLE_DEVICES=\${HIP_VISIBLE_DEVICES:-0}
export AMD_SERIALIZE_KERNEL=\${AMD_SERIALIZE_KERNEL:-1}
export ROCM_PATH="$root"
export ROCM_HOME="$root"
export HIP_DEVICE_LIB_PATH="$root/lib/llvm/amdgcn/bitcode"
ENV
marker='# haloforge therock-aotriton environment'
if is_dry_run; then
  printf '[dry-run] append to %s: . %s\n' "$AOT_VENV/bin/activate" "$AOT_ENV_FILE"
elif ! grep -qF "$marker" "$AOT_VENV/bin/activate"; then
  printf '\n%s\n[ -r %q ] && . %q\n' "$marker" "$AOT_ENV_FILE" "$AOT_ENV_FILE" >>"$AOT_VENV/bin/activate"
  log_ok "the variables apply on the next: . $AOT_VENV/bin/activate"
else
  log_ok "activation already sources $AOT_ENV_FILE"
fi
