#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# llamacpp-distro: the step of `haloforge bench`: llama-bench in the track's box, its JSONL
# results in the run directory (../lib.sh bench_file). The arguments are the llama-bench command haloforge
# composed; the switch that turns mmap off is chosen here from the build's own --help
# (../../lib/llama.sh's llama_nommap_flags).

# shellcheck source=../../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../lib/common.sh"
# shellcheck source=../../lib/llama.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../lib/llama.sh"
# shellcheck source=../../llamacpp-distro/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../llamacpp-distro/lib.sh"
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
hf_init "$@"
distro_init
enter_box "$@"
args=("$@")
if ! is_dry_run; then
  mapfile -t nommap < <(llama-bench --help 2>&1 | llama_nommap_flags || true)
  args+=("${nommap[@]}")
fi
bench_run "$(bench_file)" "${args[@]}"
