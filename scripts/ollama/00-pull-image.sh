#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ollama, step "pull": fetch the official Ollama image of OLLAMA_BACKEND at the pinned
# release: the -rocm image for rocm, the plain one (with the Vulkan engine) for vulkan.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
hf_init "$@"

ollama_engine
log_step "Pull $OLLAMA_RUN_IMAGE (OLLAMA_BACKEND=${OLLAMA_BACKEND:-rocm})"
case $OLLAMA_RUN_IMAGE in
  *:rocm | *:latest | */ollama) log_warn "$OLLAMA_RUN_IMAGE floats with every release; pin a versioned tag such as ollama/ollama:0.32.15-rocm" ;;
esac
pull_image "$OLLAMA_RUN_IMAGE"
