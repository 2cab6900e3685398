#!/usr/bin/env bash
# Demo step of haloforge's therock-toolbox track: replays real logs (see
# ../logs/SOURCES.md) instead of building anything. Safe to run anywhere.
set -Eeuo pipefail
# shellcheck source=SCRIPTDIR/../lib/replay.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/replay.sh"

# The first run ends the way ROCm#4909 did: torch imports, then the
# interpreter aborts at exit with a double free (family
# therock-amdsmi-double-free). Once the fix is applied (demo.ApplyFix writes
# the marker below) the same step passes.
fixed="$(demo_state_dir)/demo/amdsmi-fix-applied"

replaying "TheRock torch wheel install, TheRock#2877"
replay rocm-install.log 5
replaying "rocm-sdk test, TheRock#2877, #1627, #2601"
replay rocm-sdk-test.log 4
if [[ ! -e $fixed ]]; then
  replaying "import torch in the same venv, ROCm#4909"
  replay rocm-fail.log 3
  # 134 = 128 + SIGABRT, what the shell reports after "Aborted (core dumped)".
  exit 134
fi
replaying "the GPU check after the fix, ROCm#5853"
replay verify.log 2
