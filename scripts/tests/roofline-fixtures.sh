#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Remakes the real fixtures of bench's roofline tests (steps/bench/testdata), as root:
#   - tiny-moe.gguf: a mixture-of-experts GGUF that python3-gguf's own writer makes
#     (scripts/tests/tiny_moe_model.py: qwen3moe, 8 experts, 2 used per token);
#   - llama-bench-moe-lavapipe.jsonl: the real llama-bench of Debian sid (llama.cpp-tools) on
#     that model, on the Vulkan backend's lavapipe device (llvmpipe: a real Vulkan device on
#     the CPU; no GPU here), -o jsonl, prompt 64 and generation 16 at depths 0 and 256.
# Both are made in a throwaway podman container of the Debian sid base image (sid-image.sh);
# nothing is installed on the host beyond what sid-image.sh needs. Run it under the machine
# lock: flock /work/lanes/.heavy.lock scripts/tests/roofline-fixtures.sh [OUT_DIR]
# OUT_DIR defaults to steps/bench/testdata. The GGUF is deterministic for the seed; the
# llama-bench figures are this machine's (lavapipe on the CPU: no speed claim). Takes about a
# minute with the sid image cached (apt inside the container, then the benchmark).

# shellcheck source=./sid-image.sh
. "$(dirname "${BASH_SOURCE[0]}")/sid-image.sh"
set -Eeuo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${1:-$REPO/steps/bench/testdata}
[[ $(id -u) -eq 0 ]] || {
  printf 'roofline-fixtures.sh: run as root (rootful podman, as sid-image.sh needs)\n' >&2
  exit 2
}
mkdir -p "$OUT"
image=$(sid_image)
work=$(mktemp -d /var/tmp/haloforge-roofline.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tests" "$work/llamacpp-distro"
install -m 0644 "$REPO/scripts/tests/tiny_moe_model.py" "$work/tests/tiny_moe_model.py"
install -m 0644 "$REPO/scripts/llamacpp-distro/tiny_model.py" "$work/llamacpp-distro/tiny_model.py"

# In the container: the packages, the model, then llama-bench on lavapipe. A plain container
# lists no Vulkan device until GGML_VK_VISIBLE_DEVICES selects llvmpipe.
podman run --rm --network host -v "$work:/work:Z" "$image" bash -ec '
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq python3-gguf python3-numpy llama.cpp-tools libggml0-backend-vulkan mesa-vulkan-drivers >/dev/null
  python3 /work/tests/tiny_moe_model.py /work/tiny-moe.gguf
  export GGML_VK_VISIBLE_DEVICES=0
  llama-bench --list-devices
  llama-bench -m /work/tiny-moe.gguf -p 64 -n 16 -d 0,256 -r 3 -fa 1 -ngl 99 -o jsonl >/work/bench.jsonl
  dpkg-query -W python3-gguf llama.cpp-tools mesa-vulkan-drivers >/work/versions.txt
'
# The model's own path inside the container is kept as llama-bench printed it.
install -m 0644 "$work/tiny-moe.gguf" "$OUT/tiny-moe.gguf"
install -m 0644 "$work/bench.jsonl" "$OUT/llama-bench-moe-lavapipe.jsonl"
printf 'roofline fixtures in %s, made with:\n' "$OUT"
cat "$work/versions.txt"
