#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ollama: the step of `haloforge serve`: ollama serve in a container of the track's image. The
# arguments are the `podman run --rm --name …` haloforge composed (steps/serve), run as they
# are; a stop is `podman stop` of that container (../lib.sh).

# shellcheck source=../../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../lib/common.sh"
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
hf_init "$@"
serve_container "$@"
