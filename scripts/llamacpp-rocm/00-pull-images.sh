#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# llamacpp-rocm, step "pull": pull every image the ladder may try, and fetch the prebuilt
# build of LLAMACPP_ROCM_PREBUILT_URL, checked against LLAMACPP_ROCM_PREBUILT_SHA256 before
# anything is unpacked, so a rung's time is spent on the GPU and not on the network.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
# shellcheck source=./ladder.sh
. "$(dirname "${BASH_SOURCE[0]}")/ladder.sh"
hf_init "$@"

require_env LLAMACPP_ROCM_IMAGE LLAMACPP_ROCM_NIGHTLY_IMAGE LLAMACPP_ROCM_PREBUILT_URL LLAMACPP_ROCM_PREBUILT_SHA256
for pin in LLAMACPP_ROCM_IMAGE LLAMACPP_ROCM_NIGHTLY_IMAGE; do
  image=${!pin}
  log_step "Pull $image ($pin)"
  case $image in
    *:latest | *nightl*) log_warn "$image floats: the rung's result may differ from the next pull" ;;
  esac
  pull_image "$image"
done

log_step "Fetch the prebuilt build $(basename "$LLAMACPP_ROCM_PREBUILT_URL")"
is_dry_run || require curl
is_dry_run || require python3
prebuilt_fetch
