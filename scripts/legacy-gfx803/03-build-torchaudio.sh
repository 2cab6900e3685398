#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# legacy-gfx803, step "audio": the torchaudio stage on top of the torch stage.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
# shellcheck source=./common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
hf_init "$@"

log_step "Build the torchaudio stage ($GFX803_AUDIO_REF) on the cached torch stage"
build_stage audio
hf_fact_remote https://github.com/pytorch/audio.git "$GFX803_AUDIO_REF"
