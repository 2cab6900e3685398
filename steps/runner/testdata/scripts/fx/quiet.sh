#!/usr/bin/env bash
# Prints one line, then nothing for a while: a stall.
set -Eeuo pipefail
echo "starting"
sleep "${FX_QUIET:-1}"
echo "finished"
