#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# therock-toolbox: the step of `haloforge serve`: vllm serve in the track's box, with the box's venv
# (VENV_DIR, /opt/venv) first on PATH. The arguments are the command haloforge composed
# (steps/serve), run as they are; the stop reaches the engine in the box (../lib.sh).

# shellcheck source=../../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../lib/common.sh"
# shellcheck source=../../therock-toolbox/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../therock-toolbox/lib.sh"
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
hf_init "$@"

# serve_prepare: inside the box, the venv vLLM was built into; native gfx1151 kernels.
serve_prepare() {
  load_toolbox_env
  activate_venv
  unset HSA_OVERRIDE_GFX_VERSION
}

serve_in_box "$@"
