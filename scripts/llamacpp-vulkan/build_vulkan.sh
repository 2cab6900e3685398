#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# build_vulkan.sh (llamacpp-vulkan, step "image"): build llama.cpp at the pinned release
# with GGML_VULKAN=ON from toolbox/Dockerfile.vulkan (seed spec, track E).
# By hand: scripts/llamacpp-vulkan/build_vulkan.sh (pins from versions.env).
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
hf_init "$@"

require_env VULKAN_BASE_IMAGE LLAMACPP_REPO LLAMACPP_REF VULKAN_IMAGE
[[ "$LLAMACPP_REF" =~ ^b[0-9]+$ ]] \
  || log_warn "LLAMACPP_REF=$LLAMACPP_REF is not a release tag (bNNNN); a branch makes the build float"
log_step "Build $VULKAN_IMAGE (llama.cpp $LLAMACPP_REF, GGML_VULKAN=ON)"
mapfile -t args < <(build_args VULKAN_BASE_IMAGE LLAMACPP_REPO LLAMACPP_REF)
ctx=$HALOFORGE_CACHE_DIR/empty-context
is_dry_run || mkdir -p "$ctx"
build_image Dockerfile.vulkan "$VULKAN_IMAGE" "$ctx" "${args[@]}"
fact_base_image "$VULKAN_BASE_IMAGE"
hf_fact_remote "$LLAMACPP_REPO" "$LLAMACPP_REF"
is_dry_run || log_ok "built $VULKAN_IMAGE"
