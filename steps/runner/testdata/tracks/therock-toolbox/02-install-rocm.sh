#!/usr/bin/env bash
# 02-install-rocm of the fake therock-toolbox tree: see ../fixture-step.sh.
set -Eeuo pipefail
exec "$(dirname "$0")/../fixture-step.sh"
