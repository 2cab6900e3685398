#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ollama, step "pull": fetch the official Ollama ROCm image at the pinned release.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
hf_init "$@"

require_env OLLAMA_IMAGE
log_step "Pull $OLLAMA_IMAGE"
[[ "$OLLAMA_IMAGE" == *:rocm ]] && log_warn "$OLLAMA_IMAGE floats with every release; pin a versioned tag such as ollama/ollama:0.32.15-rocm"
pull_image "$OLLAMA_IMAGE"
