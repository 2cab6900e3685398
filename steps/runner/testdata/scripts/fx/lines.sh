#!/usr/bin/env bash
# Prints FX_LINES numbered lines of 100 bytes as fast as it can, then the
# time it took in nanoseconds to $HALOFORGE_RUN_DIR/child-ns.
set -Eeuo pipefail
start=$(date +%s%N)
awk -v n="${FX_LINES:-1000}" 'BEGIN { pad = sprintf("%90s", ""); for (i = 1; i <= n; i++) printf "%08d %s\n", i, pad }'
end=$(date +%s%N)
echo $((end - start)) >"${HALOFORGE_RUN_DIR}/child-ns"
