# shellcheck shell=bash
# Body of start-vllm.sh (01-write-launcher.sh prepends LAUNCH_IMAGE, LAUNCH_PORT and LAUNCH_ENGINE).
#
# Usage: start-vllm.sh MODEL [vllm serve options...]
#   VLLM_GPU_MEMORY_UTILIZATION  fraction of GPU memory vLLM may take (default 0.85, at
#                                most 0.90: the APU shares that memory with the OS)
#   HF_HOME                      Hugging Face cache on the host (default ~/.cache/huggingface)
#   START_VLLM_DRY_RUN=1         print the command instead of running it
# shellcheck disable=SC2154 # LAUNCH_IMAGE, LAUNCH_PORT, LAUNCH_ENGINE come from the header.
# --entrypoint vllm: vllm/vllm-openai-rocm's own entrypoint is `vllm serve` (arguments after the
# image would follow it), rocm/vllm has none; with vllm as the entrypoint both run `serve MODEL`.
set -Eeuo pipefail

usage() {
  cat >&2 <<-'USAGE'
		Usage: start-vllm.sh MODEL [vllm serve options...]
		  VLLM_GPU_MEMORY_UTILIZATION  fraction of GPU memory for vLLM (default 0.85, at most 0.90)
		  HF_HOME                      Hugging Face cache on the host (default ~/.cache/huggingface)
		  START_VLLM_DRY_RUN=1         print the command instead of running it
	USAGE
  exit 2
}

# within_limit VALUE: a fraction in (0, 0.90].
within_limit() {
  awk -v v="$1" 'BEGIN { exit !(v ~ /^(0?\.[0-9]+|1(\.0+)?)$/ && v > 0 && v <= 0.90) }'
}

# gtt_gib: the GTT pool the kernel gives the iGPU, in GiB (empty when unknown).
gtt_gib() {
  local f
  for f in /sys/class/drm/card*/device/mem_info_gtt_total; do
    [[ -r "$f" ]] || continue
    awk '{ printf "%d\n", $1 / 1073741824 }' "$f"
    return 0
  done
}

[[ $# -ge 1 && "$1" != -h && "$1" != --help ]] || usage
model=$1
shift
util=${VLLM_GPU_MEMORY_UTILIZATION:-0.85}
if ! within_limit "$util"; then
  echo "VLLM_GPU_MEMORY_UTILIZATION=$util: use a fraction up to 0.90 on Strix Halo; above that the OS and vLLM fight over the same memory" >&2
  exit 2
fi
gtt=$(gtt_gib || true)
if [[ -n "$gtt" ]]; then
  echo "GPU memory (GTT) the kernel allows: ${gtt} GiB; vLLM may take ${util} of it."
  if ((gtt < 64)); then
    echo "hint: raise it with the kernel parameter ttm.pages_limit=<GiB x 262144> (124 GiB = 32505856) and keep the BIOS carve-out at 512 MB"
  fi
fi
cache=${HF_HOME:-$HOME/.cache/huggingface}
mkdir -p "$cache"
groups_flag=(--group-add keep-groups)
[[ "$(basename "$LAUNCH_ENGINE")" == podman* ]] || groups_flag=(--group-add video)
cmd=("$LAUNCH_ENGINE" run --rm -it
  --device /dev/kfd --device /dev/dri "${groups_flag[@]}"
  --security-opt seccomp=unconfined --ipc=host
  -p "$LAUNCH_PORT:8000"
  -v "$cache:/root/.cache/huggingface:z"
  -e HF_TOKEN
  --entrypoint vllm "$LAUNCH_IMAGE"
  serve "$model" --host 0.0.0.0 --port 8000 --gpu-memory-utilization "$util" "$@")
if [[ "${START_VLLM_DRY_RUN:-0}" == 1 ]]; then
  printf '%q ' "${cmd[@]}"
  printf '\n'
  exit 0
fi
exec "${cmd[@]}"
