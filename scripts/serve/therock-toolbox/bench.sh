#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# therock-toolbox: the step of `haloforge bench`: `vllm bench serve` from the box's venv against a
# server `haloforge serve` runs. The arguments are the command haloforge composed; vLLM
# writes its JSON result where they say (--result-dir, --result-filename).

# shellcheck source=../../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../lib/common.sh"
# shellcheck source=../../therock-toolbox/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../therock-toolbox/lib.sh"
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
hf_init "$@"
enter_box "$@"
load_toolbox_env
activate_venv
bench_args "$@"
bench_run "$(bench_file).txt" "${BENCH_ARGS[@]}"
