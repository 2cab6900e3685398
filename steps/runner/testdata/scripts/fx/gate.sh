#!/usr/bin/env bash
# Waits until $HALOFORGE_CACHE_DIR/go exists (a test creates it), so a test
# can interrupt it first and resume it later.
set -Eeuo pipefail
echo "resume=${HALOFORGE_RESUME:-0}"
if [[ -e "${HALOFORGE_CACHE_DIR}/go" ]]; then
  echo "gate open"
  exit 0
fi
echo "ready"
sleep 60
