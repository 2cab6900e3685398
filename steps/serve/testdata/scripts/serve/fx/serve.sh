#!/usr/bin/env bash
# A stand-in for a server step in the watch's tests (the engine itself cannot run in a unit
# test): it replays a real recorded engine log ($FX_LOG, one line every $FX_GAP seconds),
# then runs until it is stopped, as a server does; SIGTERM ends it with 0. With FX_EXIT=N
# it exits N after the log instead, as an engine that dies; with FX_BUSY=1 it works the CPU
# without printing, as an engine loading a model quietly; with FX_REQUESTS=N it prints the
# request lines in $FX_REQUEST_LOG N times a second, as a server that answers requests. Its
# arguments are printed first.
set -Eeuo pipefail
trap 'echo "stand-in: stopped"; exit 0' TERM INT HUP
echo "stand-in: args: $*"
echo "$$" >"${HALOFORGE_RUN_DIR}/serve.pid"
while IFS= read -r line; do
  printf '%s\n' "$line"
  sleep "${FX_GAP:-0.01}"
done <"${FX_LOG}"
if [[ -n "${FX_EXIT:-}" ]]; then
  exit "$FX_EXIT"
fi
if [[ -n "${FX_BUSY:-}" ]]; then
  while :; do :; done
fi
if [[ -n "${FX_REQUESTS:-}" ]]; then
  gap=$(awk -v n="$FX_REQUESTS" 'BEGIN { printf "%.3f", 1 / n }')
  while :; do
    cat "$FX_REQUEST_LOG"
    sleep "$gap"
  done
fi
while :; do sleep 0.1; done
