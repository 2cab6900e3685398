#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# llamacpp-vulkan: the step of `haloforge bench`: llama-bench in a container of the track's
# image, its JSONL results in $HALOFORGE_BENCH_FILE. The arguments are the `podman run …`
# haloforge composed (the image's llama.cpp tag takes -mmp 0).

# shellcheck source=../../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../lib/common.sh"
# shellcheck source=../../lib/llama.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../lib/llama.sh"
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
hf_init "$@"
args=("$@")
if ! is_dry_run; then
  image=''
  for a in "$@"; do
    [[ $a == llama-bench ]] && break
    image=$a # the word before the command is the image
  done
  mapfile -t nommap < <(podman run --rm "$image" llama-bench --help 2>&1 | llama_nommap_flags || true)
  args+=("${nommap[@]}")
fi
bench_run "$(bench_file)" "${args[@]}"
