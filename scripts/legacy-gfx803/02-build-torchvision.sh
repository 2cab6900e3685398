#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# legacy-gfx803, step "vision": the torchvision stage, built with PYTHONNOUSERSITE=1 PYTHONPATH=
# on top of the torch stage (whose source tree is already removed): one torch per process.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
# shellcheck source=./common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
hf_init "$@"

log_step "Build the torchvision stage ($GFX803_VISION_REF) on the cached torch stage"
build_stage vision
hf_fact_remote https://github.com/pytorch/vision.git "$GFX803_VISION_REF"
