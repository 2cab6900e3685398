#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# llamacpp-distro: the step of `haloforge serve`: llama-server in the track's box. The
# arguments are the command haloforge composed (steps/serve), run as they are; the stop
# reaches the engine in the box (../lib.sh).

# shellcheck source=../../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../lib/common.sh"
# shellcheck source=../../llamacpp-distro/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../llamacpp-distro/lib.sh"
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
hf_init "$@"
distro_init
serve_in_box "$@"
