#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# therock-aotriton, step "bench" (05-attention-bench.sh, optional): time SDPA with AOTriton
# flash attention against the math backend, with AMD_SERIALIZE_KERNEL=0 (no extra
# synchronisation between kernels: the setting for timing, per the guide).
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=./common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
hf_init "$@"
aot_paths

need_venv
aot_env
export AMD_SERIALIZE_KERNEL=0
log_step "Attention benchmark (AMD_SERIALIZE_KERNEL=0)"
run "$AOT_PY" "$HF_SCRIPT_DIR/05-attention-bench.py"
