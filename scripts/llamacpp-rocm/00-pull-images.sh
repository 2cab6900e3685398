#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# llamacpp-rocm, step "pull": pull every image the ladder may try, so a rung's time is
# spent on the GPU and not on the registry.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
hf_init "$@"

require_env LLAMACPP_ROCM_IMAGE LLAMACPP_ROCM_NIGHTLY_IMAGE
for pin in LLAMACPP_ROCM_IMAGE LLAMACPP_ROCM_NIGHTLY_IMAGE; do
  image=${!pin}
  log_step "Pull $image ($pin)"
  case $image in
    *:latest | *nightl*) log_warn "$image floats: the rung's result may differ from the next pull" ;;
  esac
  pull_image "$image"
done
