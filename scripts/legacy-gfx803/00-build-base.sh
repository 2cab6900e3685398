#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# legacy-gfx803, step "base": build toolbox/Dockerfile_rocm64_base (ROCm 6.4, Ubuntu 24.04,
# the gfx803 environment) as GFX803_LOCAL_BASE_IMAGE.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
# shellcheck source=./common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
hf_init "$@"

require_env GFX803_BASE_IMAGE GFX803_LOCAL_BASE_IMAGE
log_info "for Polaris cards (gfx803): not for Strix Halo; ROCm 6.4 no longer lists gfx803, so the image sets ROC_ENABLE_PRE_VEGA=1 and HSA_OVERRIDE_GFX_VERSION=8.0.3"
log_step "Build $GFX803_LOCAL_BASE_IMAGE from $GFX803_BASE_IMAGE"
mapfile -t args < <(build_args GFX803_BASE_IMAGE)
ctx=$HALOFORGE_CACHE_DIR/empty-context
is_dry_run || mkdir -p "$ctx"
build_image Dockerfile_rocm64_base "$GFX803_LOCAL_BASE_IMAGE" "$ctx" "${args[@]}"
fact_base_image "$GFX803_BASE_IMAGE"
