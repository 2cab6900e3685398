#!/usr/bin/env bash
# Prints how many processes tagged $FX_TAG are alive.
set -Eeuo pipefail
echo "alive=$(pgrep -fc -- "${FX_TAG:?}-" || true)"
