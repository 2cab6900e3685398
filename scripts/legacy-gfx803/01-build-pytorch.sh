#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# legacy-gfx803, step "pytorch": the torch stage: ROCm PyTorch at GFX803_PYTORCH_REF with the
# CMake >= 4 fixes (cmake4-fixes.sh), hipified, built for gfx803, installed, source removed.
# Hours the first time; a re-run with the same pins is a cache hit.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
# shellcheck source=./common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
hf_init "$@"

[[ "$GFX803_PYTORCH_REF" =~ ^[0-9a-f]{40}$ ]] || log_warn "GFX803_PYTORCH_REF=$GFX803_PYTORCH_REF is a branch: the layer cache keeps the first build; use --no-cache by hand to pick up new commits"
log_step "Build the torch stage ($GFX803_PYTORCH_REPO $GFX803_PYTORCH_REF)"
build_stage torch
fact_image_commit localhost/haloforge/gfx803-stage-torch /opt/venv/pytorch.commit "$GFX803_PYTORCH_REPO" "$GFX803_PYTORCH_REF"
