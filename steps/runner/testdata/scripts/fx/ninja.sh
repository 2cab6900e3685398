#!/usr/bin/env bash
# Builds FX_OBJECTS objects (default 30) with a real ninja, each taking
# FX_OBJECT_S seconds (default 0.05): on the runner's pty ninja redraws its
# [N/M] status line in place, as it does for a real compile.
set -Eeuo pipefail
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
{
  printf 'rule obj\n  command = sleep %s && touch $out\n  description = Building C object $out\n' "${FX_OBJECT_S:-0.05}"
  for i in $(seq 1 "${FX_OBJECTS:-30}"); do
    printf 'build o%03d.o: obj\n' "$i"
  done
} >"$dir/build.ninja"
cd "$dir"
ninja -j1
