#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# vllm-image: the step of `haloforge bench`: `vllm bench serve` in a container of the track's
# image, on the host network, against a server `haloforge serve` runs. The arguments are the
# `podman run …` haloforge composed; vLLM writes its JSON result where they say.

# shellcheck source=../../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../lib/common.sh"
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
hf_init "$@"
bench_args "$@"
bench_run "$(bench_file).txt" "${BENCH_ARGS[@]}"
