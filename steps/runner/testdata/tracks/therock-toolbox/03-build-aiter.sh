#!/usr/bin/env bash
# 03-build-aiter of the fake therock-toolbox tree: see ../fixture-step.sh.
set -Eeuo pipefail
exec "$(dirname "$0")/../fixture-step.sh"
