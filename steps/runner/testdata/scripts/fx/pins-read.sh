#!/usr/bin/env bash
# Loads the pins and the toolbox build variables as every real step does
# (scripts/lib/common.sh) and prints what it got.
# shellcheck source=/dev/null
. "$(dirname "${BASH_SOURCE[0]}")/../../../../../scripts/lib/common.sh"
hf_init "$@"
load_toolbox_env_file
echo "GPU_TARGET=${GPU_TARGET:-} WORK_DIR=${WORK_DIR:-} GPU_ARCHS=${GPU_ARCHS:-} HF_EVIL=${HF_EVIL-unset} PIN_NAMES=${HALOFORGE_PIN_NAMES-unset}"
