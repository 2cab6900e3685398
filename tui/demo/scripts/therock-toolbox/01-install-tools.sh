#!/usr/bin/env bash
# Demo step of haloforge's therock-toolbox track: replays real logs (see
# ../logs/SOURCES.md) instead of building anything. Safe to run anywhere.
set -Eeuo pipefail
# shellcheck source=SCRIPTDIR/../lib/replay.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/replay.sh"

replaying "pip bootstrap, comfyui-rocm#62"
replay tools.log 4
