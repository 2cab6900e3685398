#!/usr/bin/env bash
# Demo step of haloforge's therock-toolbox track: replays real logs (see
# ../logs/SOURCES.md) instead of building anything. Safe to run anywhere.
set -Eeuo pipefail
# shellcheck source=SCRIPTDIR/../lib/replay.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/replay.sh"

# gfx1151 is experimental in AITER (its README @v0.1.19: most CK and ASM
# kernels are CDNA-only); the replayed log is a build that reached such
# inline assembly and stopped with "instruction not supported on this GPU"
# (family gfx11-inline-asm-unsupported). The step is optional, so the run
# goes on.
replaying "HIP build with CDNA-only inline asm, vllm#6565"
replay aiter.log 8
exit 1
