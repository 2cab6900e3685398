#!/usr/bin/env bash
# Demo step of haloforge's therock-toolbox track: replays real logs (see
# ../logs/SOURCES.md) instead of building anything. Safe to run anywhere.
set -Eeuo pipefail
# shellcheck source=SCRIPTDIR/../lib/replay.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/replay.sh"

replaying "vLLM ROCm configure, vllm#15709"
replay vllm-configure.log 12
replaying "vLLM hipify, pytorch#175701, vllm#10855"
replay vllm-hipify.log 10
