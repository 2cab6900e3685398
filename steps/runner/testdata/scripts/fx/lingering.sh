#!/usr/bin/env bash
# Leaves a child that is already on its way out, as sudo's monitor process
# is for a few milliseconds after `sudo podman exec` returns: a setsid
# child (so the pty's hang-up does not end it) that exits after
# $FX_LINGER seconds; then the script fails with a last line of its own.
set -Eeuo pipefail
setsid bash -c 'sleep "$1"' "${FX_TAG:?}-lingering" "${FX_LINGER:-0.1}" </dev/null >/dev/null 2>&1 &
echo "error: the reason, as the step's last line"
exit 3
