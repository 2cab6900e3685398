#!/usr/bin/env bash
# Succeeds at once but leaves a process behind that ignores the hang-up and
# keeps the pty open (its pid goes to $HALOFORGE_RUN_DIR/pids).
set -Eeuo pipefail
bash -c 'trap "" HUP; while :; do sleep 0.2; done' &
echo "$!" >"${HALOFORGE_RUN_DIR}/pids"
echo "left one behind"
