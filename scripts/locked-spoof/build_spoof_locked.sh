#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# build_spoof_locked.sh (locked-spoof, step "image"): build toolbox/Dockerfile.spoof_locked,
# rocm/vllm-dev at the pinned digest with HSA_OVERRIDE_GFX_VERSION baked in (seed spec,
# track D). By hand: scripts/locked-spoof/build_spoof_locked.sh (pins from versions.env).
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
hf_init "$@"

require_env SPOOF_BASE_IMAGE SPOOF_BASE_DIGEST SPOOF_GFX_VERSION SPOOF_LOCKED_IMAGE
[[ "$SPOOF_BASE_DIGEST" =~ ^sha256:[0-9a-f]{64}$ ]] \
  || die "SPOOF_BASE_DIGEST must be sha256:<64 hex>, got '$SPOOF_BASE_DIGEST'" 2
spoofed_target "$SPOOF_GFX_VERSION" >/dev/null
base=$SPOOF_BASE_IMAGE@$SPOOF_BASE_DIGEST
spoof_risk_banner "$SPOOF_GFX_VERSION"
log_warn "$base is used by third parties but not documented by AMD; if the registry no longer serves it, pick a digest you pulled (nightly-spoof records them)"

log_step "Pull the locked base $base"
pull_image "$base"

log_step "Build $SPOOF_LOCKED_IMAGE"
mapfile -t args < <(build_args SPOOF_BASE_IMAGE SPOOF_BASE_DIGEST SPOOF_GFX_VERSION)
# The Dockerfile needs nothing from a context: an empty directory keeps the build
# independent of whatever sits next to it.
ctx=$HALOFORGE_CACHE_DIR/empty-context
is_dry_run || mkdir -p "$ctx"
build_image Dockerfile.spoof_locked "$SPOOF_LOCKED_IMAGE" "$ctx" "${args[@]}"
fact_base_image "$base"
is_dry_run || log_ok "built $SPOOF_LOCKED_IMAGE from $base"
