#!/usr/bin/env bash
# Creates what a step may record as haloforge's, and records it as the
# helpers of scripts/lib/facts.sh do (created lines in the facts file):
# a marked directory, a file, the track's directory of the state dir, and
# what must not be admitted ($FX_HOME: a directory without the marker, a
# link, the home itself).
set -Eeuo pipefail
home=$FX_HOME
mkdir -p "$home/venv" "$home/theirs" "$HALOFORGE_STATE_DIR/fx"
printf '%s\n' "$HALOFORGE_OWNER" >"$home/venv/.haloforge-owner"
printf 'GGUF' >"$home/tiny.gguf"
printf 'data' >"$HALOFORGE_STATE_DIR/fx/backend"
ln -sfn "$home/venv" "$home/link"
{
  printf 'created\tdir\tvenv\t%s\n' "$home/venv"
  printf 'created\tfile\tmodel\t%s\n' "$home/tiny.gguf"
  printf 'created\tdir\tvenv\t%s\n' "$home/theirs"
  printf 'created\tdir\tvenv\t%s\n' "$home/link"
  printf 'created\tdir\tdata\t%s\n' "$home"
  printf 'created\tbox\thf-fx\tpodman\n'
  printf 'created\tdir\tdata\t/etc\n'
} >>"$HALOFORGE_FACTS_FILE"
echo created
