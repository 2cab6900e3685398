#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Demo serve step: replays a real llama-server run (logs/llama-server.log: the llamacpp-distro
# proof, Debian sid's llama.cpp on lavapipe, 2026-11-24) at a believable pace, as a server: it
# says when it listens (a marker the demo's recorded probes read), plays the lines of the first
# request, then runs until it is stopped. Nothing is installed or started.
set -Eeuo pipefail
# shellcheck source=../../lib/replay.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../lib/replay.sh"
log=$demo_logs/llama-server.log
marker=$(demo_state_dir)/demo/serve-listening
rm -f "$marker"
stopping() {
  grep -E 'stopping the server|the server stopped' "$log" || true
  rm -f "$marker"
  exit 0
}
trap stopping TERM INT HUP
replaying "llama-server of the llamacpp-distro proof, Debian sid on lavapipe"
# The start-up, up to the line that says it listens.
while IFS= read -r line; do
  printf '%s\n' "$line"
  demo_sleep $((150000 / demo_speed))
  if [[ $line == *"listening on"* ]]; then
    mkdir -p "$(dirname "$marker")"
    : >"$marker"
    break
  fi
done <"$log"
# The first request's lines, once the smoke request has had time to come.
demo_sleep $((400000 / demo_speed))
grep -E ' slot ' "$log" || true
while :; do demo_sleep 200000; done
