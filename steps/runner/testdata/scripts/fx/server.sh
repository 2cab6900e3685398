#!/usr/bin/env bash
# A long-lived step in the manner of a server: prints its arguments, one per
# line in brackets, starts a child that would outlive it, says "listening",
# then waits until it is stopped. Its pids go to $HALOFORGE_RUN_DIR/pids.
set -Eeuo pipefail
for a in "$@"; do printf 'arg [%s]\n' "$a"; done
pids="${HALOFORGE_RUN_DIR}/pids"
: >"${pids}"
echo "$$" >>"${pids}"
bash -c 'trap "" HUP; echo $$ >>"$1"; exec sleep 600' _ "${pids}" &
while [[ $(wc -l <"${pids}") -lt 2 ]]; do sleep 0.05; done
echo "listening"
wait
