#!/usr/bin/env bash
# shellcheck disable=SC2016 # the single-quoted programs expand in the inner shells
# Leaves processes that a process-group kill or a hang-up would miss:
# grandchildren that ignore SIGTERM and SIGHUP, and a daemon in its own
# session. Their pids go to $HALOFORGE_RUN_DIR/pids; then it says "ready".
set -Eeuo pipefail
pids="${HALOFORGE_RUN_DIR}/pids"
: >"${pids}"
echo "${PPID}" >"${HALOFORGE_RUN_DIR}/supervisor"
bash -c 'trap "" TERM HUP; echo $$ >>"$1"; while :; do sleep 0.2; done' _ "${pids}" &
bash -c 'trap "" TERM HUP; bash -c '\''trap "" TERM HUP; echo $$ >>"$1"; exec sleep 600'\'' _ "$1" & echo $$ >>"$1"; wait' _ "${pids}" &
setsid bash -c 'trap "" TERM HUP; echo $$ >>"$1"; exec sleep 600' _ "${pids}" </dev/null >/dev/null 2>&1 &
while [[ $(wc -l <"${pids}") -lt 4 ]]; do sleep 0.05; done
trap '' TERM
echo "ready"
touch "${HALOFORGE_RUN_DIR}/ready"
wait
