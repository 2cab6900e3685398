#!/usr/bin/env bash
# Starts six processes that outlive the script, each tagged in argv with
# $FX_TAG: a plain & job, nohup,
# setsid with stdio to /dev/null, a double fork, a child that ignores TERM
# and HUP, and a setsid child that keeps the pty; then exits with $FX_EXIT.
set -Eeuo pipefail
tag=${FX_TAG:?}
loop='while :; do sleep 0.2; done'
bash -c "$loop" "$tag-plain" &
nohup bash -c "$loop" "$tag-nohup" >/dev/null 2>&1 &
setsid bash -c "$loop" "$tag-setsid" </dev/null >/dev/null 2>&1 &
(bash -c "$loop" "$tag-doublefork" </dev/null >/dev/null 2>&1 &)
bash -c "trap '' TERM HUP; $loop" "$tag-ignterm" &
setsid bash -c "trap '' HUP; while :; do echo leftover; sleep 0.2; done" "$tag-setsid-pty" &
sleep 0.5
echo "started six"
exit "${FX_EXIT:-0}"
