#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# run_nightly_spoof.sh: serve a model with the nightly vLLM image, spoofing the Radeon 8060S
# (gfx1151) as Navi31 (gfx1100) with HSA_OVERRIDE_GFX_VERSION=11.0.0 (seed spec, track C).
#
# Usage: run_nightly_spoof.sh MODEL [vllm serve options...]
#   HALOFORGE_ASSUME_YES=1       skip the confirmation (a non-interactive run never asks)
#   VLLM_GPU_MEMORY_UTILIZATION  default 0.85, at most 0.90
# The risk: RDNA3 kernels on RDNA 3.5 may crash with "Illegal instruction"; the image floats.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
hf_init "$@"

if [[ $# -lt 1 || "$1" == -h || "$1" == --help ]]; then
  sed -n '2,8s/^# \{0,1\}//p' "$HF_SCRIPT" >&2
  exit 2
fi
model=$1
shift
: "${SPOOF_GFX_VERSION:=11.0.0}"
: "${VLLM_PORT:=8000}"
require_env NIGHTLY_IMAGE
util=${VLLM_GPU_MEMORY_UTILIZATION:-0.85}
awk -v v="$util" 'BEGIN { exit !(v > 0 && v <= 0.90) }' \
  || die "VLLM_GPU_MEMORY_UTILIZATION=$util: use at most 0.90 on the unified-memory APU" 2

spoof_risk_banner "$SPOOF_GFX_VERSION"
log_warn "$NIGHTLY_IMAGE floats: a model that serves today may not tomorrow"
confirm_or_proceed "Run $model under the spoof?"

need_gpu_devices
mapfile -t gpu < <(gpu_flags)
cache=${HF_HOME:-$HOME/.cache/huggingface}
is_dry_run || mkdir -p "$cache"
run "$(engine)" run --rm -it "${gpu[@]}" --ipc=host \
  -e HSA_OVERRIDE_GFX_VERSION="$SPOOF_GFX_VERSION" -e HF_TOKEN \
  -p "$VLLM_PORT:8000" -v "$cache:/root/.cache/huggingface:z" \
  "$NIGHTLY_IMAGE" \
  vllm serve "$model" --host 0.0.0.0 --port 8000 --gpu-memory-utilization "$util" "$@"
